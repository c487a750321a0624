"""fastembed's own code path, loaded from a local directory, never from the network."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from typing import Any

import pytest

import membrane.lod._default
from membrane.errors import EmbedderUnavailable, InvalidInputError
from membrane.lod import FastembedEmbedder, LocalEmbedder, fastembed_embedder

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_fastembed_runs_the_shipped_model_from_a_directory(
    fastembed_dir: Path,
    embedder: LocalEmbedder,
    reference: dict[str, Any],
    no_network: list[str],
) -> None:
    model = fastembed_embedder(MINILM, specific_model_path=fastembed_dir)
    texts: list[str] = reference["texts"]
    vectors = model(texts)
    ours = embedder(texts)
    assert len(vectors) == len(texts)
    for text, theirs, mine, ref in zip(texts, vectors, ours, reference["decoded"], strict=True):
        assert len(theirs) == 384
        assert _cosine(theirs, ref) >= 0.98, text
        # Same ONNX file, same tokenizer, same pooling: the two paths agree to float precision.
        assert _cosine(theirs, mine) >= 0.99999, text
    assert no_network == []


def test_batch_size_one_makes_vectors_batch_independent(fastembed_dir: Path) -> None:
    model = fastembed_embedder(MINILM, specific_model_path=fastembed_dir)
    texts = ["ok", "How does pytest discover tests?", "The cat sat on the warm windowsill."]
    together = model(texts)
    alone = [model([t])[0] for t in texts]
    assert together == alone
    assert model([]) == []


def test_a_named_model_that_is_not_on_disk_fails_at_construction_not_download(
    tmp_path: Path, no_network: list[str]
) -> None:
    with pytest.raises(EmbedderUnavailable, match="never downloads") as info:
        fastembed_embedder("BAAI/bge-small-en-v1.5", cache_dir=tmp_path / "empty-cache")
    assert info.value.embedder == "BAAI/bge-small-en-v1.5"
    assert 'pip install "membrane-aol[embed]"' in str(info.value)
    assert no_network == []


def test_the_default_without_its_model_runs_the_embed_extras_model(
    tmp_path: Path, embedder: LocalEmbedder, no_network: list[str]
) -> None:
    model = fastembed_embedder(cache_dir=tmp_path / "empty-cache")  # the seed's default
    assert model.fallback is not None
    assert "all-MiniLM-L6-v2" in repr(model)
    texts = ["How does pytest discover tests?", "ok"]
    assert [list(v) for v in model(texts)] == embedder(texts)
    assert model.attention_shift_threshold == embedder.attention_shift_threshold
    assert no_network == []


def test_a_model_on_disk_is_loaded_at_construction(fastembed_dir: Path) -> None:
    model = fastembed_embedder(MINILM, specific_model_path=fastembed_dir, threads=1)
    assert isinstance(model, FastembedEmbedder)
    assert model._model is not None and model.fallback is None
    assert MINILM in repr(model)


def test_without_fastembed_or_the_embed_extra_the_error_names_both(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "fastembed", None)
    with pytest.raises(EmbedderUnavailable, match=r"membrane-aol\[lod\]"):
        fastembed_embedder(MINILM)
    monkeypatch.setattr(membrane.lod._default, "_SHARED", [])
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "onnxruntime" else real(name, *a),
    )
    with pytest.raises(EmbedderUnavailable) as info:
        fastembed_embedder()
    assert "membrane-aol[lod]" in str(info.value) and "membrane-aol[embed]" in str(info.value)


@pytest.mark.parametrize("batch_size", [0, -3, True, 2.0])
def test_batch_size_must_be_a_positive_int(batch_size: Any) -> None:
    with pytest.raises(InvalidInputError) as info:
        fastembed_embedder(batch_size=batch_size)
    assert info.value.field == "batch_size"
