"""The static embedder: WordLlama's bundled table read by Membrane, checked, offline, exact."""

from __future__ import annotations

import hashlib
import importlib.util
import math
from pathlib import Path
from typing import Any

import pytest

from membrane import ContextCompiler
from membrane.errors import EmbedderUnavailable
from membrane.lod import WORDLLAMA_256_SHA256, StaticEmbedder, static_embedder
from tests.lod.samples import QUESTION, memories

TEXTS = [
    "How does pytest discover tests?",
    "Pytest collects files named test_*.py and functions whose names start with test.",
    "Cooking delicious pasta at home",
    "",
    "Der Zug nach München fährt um 14:05 von Gleis 7.",
]


@pytest.fixture(scope="module")
def model() -> StaticEmbedder:
    embedder = static_embedder()
    embedder.load()
    return embedder


def _cosine(a: Any, b: Any) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_vectors_are_wordllamas_own(model: StaticEmbedder) -> None:
    """The same vectors as the package's own inference code, given the same files."""
    import numpy as np
    from wordllama.inference import WordLlamaInference

    from tokenizers import Tokenizer

    _, table, _ = model._parts()
    tokenizer = Tokenizer.from_file(str(model.tokenizer_path))
    theirs = WordLlamaInference(np.asarray(table, dtype=np.float32), tokenizer)
    texts = [t for t in TEXTS if t]
    expected = theirs.embed(texts, norm=True)
    for mine, ref in zip(model(texts), expected, strict=True):
        assert len(mine) == 256
        assert _cosine(mine, ref) > 0.99999


def test_related_texts_are_closer_than_unrelated(model: StaticEmbedder) -> None:
    question, answer, pasta, *_ = model(TEXTS)
    assert _cosine(question, answer) > 0.6 > 0.2 > _cosine(question, pasta)


def test_a_text_gets_the_same_bytes_alone_or_in_any_batch(model: StaticEmbedder) -> None:
    together = model(TEXTS)
    assert [model([t])[0] for t in TEXTS] == together
    assert model(list(reversed(TEXTS))) == list(reversed(together))
    assert model([]) == []
    assert model([""]) == [[0.0] * 256]  # a blank text has no direction


def test_the_default_files_are_the_pinned_ones(model: StaticEmbedder) -> None:
    digest = hashlib.sha256(model.weights_path.read_bytes()).hexdigest()
    assert digest == WORDLLAMA_256_SHA256 == model.expected_sha256


def test_an_altered_table_or_tokenizer_is_refused(tmp_path: Path, model: StaticEmbedder) -> None:
    table = tmp_path / "table.safetensors"
    table.write_bytes(model.weights_path.read_bytes()[:-2] + b"\x00\x01")
    with pytest.raises(EmbedderUnavailable, match="sha256"):
        static_embedder(table)([QUESTION])
    words = tmp_path / "tokenizer.json"
    words.write_text(model.tokenizer_path.read_text(encoding="utf-8") + " ", encoding="utf-8")
    with pytest.raises(EmbedderUnavailable, match="sha256"):
        static_embedder(tokenizer_path=words)([QUESTION])


def test_an_unverified_file_that_is_no_table_is_a_typed_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\x04\x00\x00\x00\x00\x00\x00\x00{}  ")
    with pytest.raises(EmbedderUnavailable, match="not a word-vector table"):
        static_embedder(junk, expected_sha256=None)(["x"])


def test_missing_files_and_packages_are_reported_at_construction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(EmbedderUnavailable, match="no model file"):
        static_embedder(tmp_path / "nothing.safetensors")
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "wordllama" else real(name, *a),
    )
    with pytest.raises(EmbedderUnavailable, match=r'pip install "membrane-aol\[static\]"'):
        static_embedder()


def test_it_ranks_inside_the_compiler_offline(model: StaticEmbedder, no_network: list[str]) -> None:
    result = ContextCompiler(max_tokens=160, embedder=model).compile(memories(), QUESTION)
    assert result.metadata["semantic_ranking"] is True
    assert no_network == []
