"""Fixtures for the embedder tests: the reference vectors, the shipped model, a closed network."""

from __future__ import annotations

import base64
import json
import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from membrane.lod import LocalEmbedder, local_embedder
from membrane.lod._local import tokenizer_json as _tokenizer_json

REFERENCE_FILE = Path(__file__).with_name("minilm_reference.json")


@pytest.fixture(scope="session")
def reference() -> dict[str, Any]:
    """Texts and fp32 sentence-transformers vectors (made by benchmarks/embedder_choice.py)."""
    data: dict[str, Any] = json.loads(REFERENCE_FILE.read_text(encoding="utf-8"))
    data["decoded"] = [
        list(struct.unpack(f"<{len(raw) // 4}f", raw))
        for raw in (base64.b64decode(v) for v in data["vectors"])
    ]
    return data


@pytest.fixture(scope="session")
def embedder() -> LocalEmbedder:
    model = local_embedder()
    model.load()
    return model


class NetworkAttempt(AssertionError):
    """Raised by the guard: something tried to reach the network."""


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every connect, name lookup or new socket fails and is recorded."""
    attempts: list[str] = []

    def refuse(what: str) -> Any:
        def blocked(*args: Any, **kwargs: Any) -> Any:
            attempts.append(f"{what}{args[:2]!r}")
            raise NetworkAttempt(f"network use in a test: {what}")

        return blocked

    monkeypatch.setattr(socket.socket, "connect", refuse("connect"))
    monkeypatch.setattr(socket.socket, "connect_ex", refuse("connect_ex"))
    monkeypatch.setattr(socket, "create_connection", refuse("create_connection"))
    monkeypatch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
    yield attempts


def write_fastembed_dir(target: Path, model_file: Path) -> Path:
    """A model directory fastembed loads through ``specific_model_path``: the shipped files."""
    target.mkdir(parents=True, exist_ok=True)
    (target / "model.onnx").symlink_to(model_file)
    (target / "tokenizer.json").write_text(_tokenizer_json(), encoding="utf-8")
    special = {
        "unk_token": "[UNK]",
        "sep_token": "[SEP]",
        "pad_token": "[PAD]",
        "cls_token": "[CLS]",
        "mask_token": "[MASK]",
    }
    (target / "special_tokens_map.json").write_text(json.dumps(special), encoding="utf-8")
    settings = {"do_lower_case": True, "model_max_length": 256, **special}
    (target / "tokenizer_config.json").write_text(json.dumps(settings), encoding="utf-8")
    return target


@pytest.fixture
def fastembed_dir(tmp_path: Path, embedder: LocalEmbedder) -> Path:
    return write_fastembed_dir(tmp_path / "all-MiniLM-L6-v2", embedder.model_path)


@pytest.fixture(autouse=True)
def _fastembed_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # fastembed's default cache is shared by every process on the machine; tests get their own.
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path / "fastembed-cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
