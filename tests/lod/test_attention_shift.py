"""Topic-shift detection: the centroid rule against a plain reference, thresholds, fallbacks."""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import membrane
import membrane.lod._default
from membrane import config
from membrane.errors import InvalidInputError
from membrane.lod import (
    LOD_ATTENTION_SHIFT_COSINE_THRESHOLD,
    LocalEmbedder,
    compute_attention_shift,
    compute_attention_shift_with_embeddings,
    explain_attention_shift,
)


def _reference_distance(recent: Sequence[Sequence[float]], current: Sequence[float]) -> float:
    """Obviously correct and slow: unit vectors, their mean, one minus the cosine."""
    units = []
    for v in recent:
        n = math.sqrt(sum(x * x for x in v))
        units.append([x / n for x in v])
    centroid = [sum(col) / len(units) for col in zip(*units, strict=True)]
    dot = sum(a * b for a, b in zip(centroid, current, strict=True))
    nc = math.sqrt(sum(x * x for x in centroid))
    nv = math.sqrt(sum(x * x for x in current))
    return 1.0 - dot / (nc * nv)


finite = st.floats(min_value=-10, max_value=10, allow_nan=False).filter(lambda x: abs(x) > 1e-3)


@given(
    st.integers(min_value=2, max_value=6).flatmap(
        lambda dim: st.tuples(
            st.lists(st.lists(finite, min_size=dim, max_size=dim), min_size=1, max_size=5),
            st.lists(finite, min_size=dim, max_size=dim),
        )
    ),
    st.floats(min_value=0.05, max_value=1.95),
)
def test_matches_the_reference_rule(
    vectors: tuple[list[list[float]], list[float]], threshold: float
) -> None:
    recent, current = vectors
    centroid_norm = math.sqrt(
        sum(
            (sum(v[i] / math.sqrt(sum(x * x for x in v)) for v in recent) / len(recent)) ** 2
            for i in range(len(current))
        )
    )
    assume(centroid_norm > 1e-6)
    distance = _reference_distance(recent, current)
    assume(abs(distance - threshold) > 1e-9)
    got = compute_attention_shift_with_embeddings(recent, current, threshold)
    assert got is (distance >= threshold)


def test_direction_not_length_decides() -> None:
    recent = [[2.0, 0.0], [0.0, 5.0]]
    # The centroid of the unit vectors is (0.5, 0.5): (1, 1) is at distance 0, (1, -1) at 1.
    assert compute_attention_shift_with_embeddings(recent, [3.0, 3.0]) is False
    assert compute_attention_shift_with_embeddings(recent, [1.0, -1.0]) is True
    assert compute_attention_shift_with_embeddings(recent, [1.0, -1.0], threshold=1.01) is False


def test_the_threshold_itself_counts_as_a_shift() -> None:
    # cos((1,0),(0.6,0.8)) = 0.6, so the distance is 0.4 (exact in binary up to rounding).
    distance = 1.0 - 0.6
    assert compute_attention_shift_with_embeddings([[1.0, 0.0]], [0.6, 0.8], distance) is True
    assert compute_attention_shift_with_embeddings([[1.0, 0.0]], [0.6, 0.8], 0.41) is False


def test_nothing_to_compare_is_no_shift() -> None:
    assert compute_attention_shift_with_embeddings([], [1.0, 0.0]) is False
    assert compute_attention_shift_with_embeddings([[1.0, 0.0]], [0.0, 0.0]) is False
    assert compute_attention_shift_with_embeddings([[0.0, 0.0]], [1.0, 0.0]) is False
    # Opposite recent messages cancel out: no centroid, no answer.
    assert compute_attention_shift_with_embeddings([[1.0, 0.0], [-1.0, 0.0]], [0.0, 1.0]) is False


def test_vectors_of_different_length_are_rejected() -> None:
    with pytest.raises(InvalidInputError, match="one length"):
        compute_attention_shift_with_embeddings([[1.0, 0.0, 0.0]], [1.0, 0.0])


def test_without_numpy_the_answer_is_false(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numpy", None)
    assert compute_attention_shift_with_embeddings([[1.0, 0.0]], [0.0, 1.0]) is False

    def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0]] * (len(texts) - 1) + [[0.0, 1.0]]

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "numpy" else real(name, *a),
    )
    assert compute_attention_shift(["a"], "b", embedder=embed) is False


def _axis_embedder(calls: list[list[str]]) -> Any:
    """Texts about cooking point one way, anything else the other way."""

    def embed(texts: list[str]) -> list[list[float]]:
        calls.append(list(texts))
        return [[1.0, 0.0] if "cook" in t else [0.0, 1.0] for t in texts]

    return embed


def test_one_call_embeds_recent_and_current_together() -> None:
    calls: list[list[str]] = []
    embed = _axis_embedder(calls)
    assert compute_attention_shift(["I cook pasta", "cook rice how?"], "Fix my car", embedder=embed)
    assert not compute_attention_shift(["I cook pasta"], "cook beans?", embedder=embed)
    assert calls == [
        ["I cook pasta", "cook rice how?", "Fix my car"],
        ["I cook pasta", "cook beans?"],
    ]


def test_embedder_none_means_nothing_is_embedded_and_no_shift() -> None:
    recent = ["How does pytest discover tests?"]
    assert compute_attention_shift(recent, "Kubernetes?", embedder=None) is False
    assert explain_attention_shift(recent, "Kubernetes?", embedder=None) == (
        None,
        "no embedder was passed (embedder=, e.g. membrane.lod.local_embedder())",
    )


def test_without_an_embedder_the_embed_extras_model_decides(no_network: list[str]) -> None:
    recent = ["What's the best Python testing framework?", "How does pytest discover tests?"]
    assert compute_attention_shift(recent, "How do I deploy to Kubernetes?") is True
    assert compute_attention_shift(recent, "Can pytest run the tests in parallel?") is False
    shared = membrane.lod.default_embedder()
    assert shared is not None and shared is membrane.lod.default_embedder()  # one copy per process
    assert no_network == []


def test_without_the_embed_extra_the_default_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(membrane.lod._default, "_SHARED", [])
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "onnxruntime" else real(name, *a),
    )
    verdict, reason = explain_attention_shift(["How does pytest work?"], "Kubernetes?")
    assert verdict is None
    assert reason is not None and 'pip install "membrane-aol[embed]"' in reason
    assert compute_attention_shift(["How does pytest work?"], "Kubernetes?") is False


def test_an_embedder_that_is_not_callable_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="embedder must be callable"):
        compute_attention_shift(["a"], "b", embedder="bge")  # type: ignore[arg-type]


def test_blank_input_is_no_shift_and_is_not_embedded() -> None:
    calls: list[list[str]] = []
    embed = _axis_embedder(calls)
    assert compute_attention_shift([], "Fix my car", embedder=embed) is False
    assert compute_attention_shift(["  ", ""], "Fix my car", embedder=embed) is False
    assert compute_attention_shift(["I cook pasta"], "   ", embedder=embed) is False
    assert calls == []


def test_a_failing_or_miscounting_embedder_means_no_shift() -> None:
    def broken(texts: list[str]) -> list[list[float]]:
        raise RuntimeError("model offline")

    def short(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0]]

    assert compute_attention_shift(["I cook pasta"], "Fix my car", embedder=broken) is False
    assert compute_attention_shift(["I cook pasta"], "Fix my car", embedder=short) is False


def test_threshold_order_argument_then_environment_then_embedder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Distance 0.5 between the centroid (1, 0) and (0.5, 0.866...).
    def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0]] * (len(texts) - 1) + [[0.5, math.sqrt(3) / 2]]

    embed.attention_shift_threshold = 0.6  # type: ignore[attr-defined]
    monkeypatch.delenv("LOD_ATTENTION_SHIFT_COSINE_THRESHOLD", raising=False)
    assert compute_attention_shift(["a"], "b", embedder=embed) is False  # 0.5 < 0.6
    assert compute_attention_shift(["a"], "b", 0.45, embedder=embed) is True
    monkeypatch.setenv("LOD_ATTENTION_SHIFT_COSINE_THRESHOLD", "0.4")
    assert compute_attention_shift(["a"], "b", embedder=embed) is True  # env 0.4 wins
    assert compute_attention_shift(["a"], "b", 0.55, embedder=embed) is False
    del embed.attention_shift_threshold  # type: ignore[attr-defined]
    monkeypatch.delenv("LOD_ATTENTION_SHIFT_COSINE_THRESHOLD")
    assert compute_attention_shift(["a"], "b", embedder=embed) is True  # 0.35 default


@pytest.mark.parametrize("raw", ["abc", "0", "-0.2", "2.5"])
def test_a_bad_threshold_variable_is_a_clear_error(
    raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOD_ATTENTION_SHIFT_COSINE_THRESHOLD", raw)
    with pytest.raises(ValueError, match="LOD_ATTENTION_SHIFT_COSINE_THRESHOLD"):
        config.lod_attention_shift_cosine_threshold()


def test_the_constant_is_the_seed_default_and_exported_at_the_root(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LOD_ATTENTION_SHIFT_COSINE_THRESHOLD", raising=False)
    assert LOD_ATTENTION_SHIFT_COSINE_THRESHOLD == 0.35
    assert config.lod_attention_shift_cosine_threshold() == 0.35
    monkeypatch.setenv("LOD_ATTENTION_SHIFT_COSINE_THRESHOLD", "0.5")
    assert config.lod_attention_shift_cosine_threshold() == 0.5
    assert membrane.LOD_ATTENTION_SHIFT_COSINE_THRESHOLD == LOD_ATTENTION_SHIFT_COSINE_THRESHOLD
    assert membrane.compute_attention_shift is compute_attention_shift
    assert membrane.compute_attention_shift_with_embeddings is (
        compute_attention_shift_with_embeddings
    )


def test_local_embedder_separates_the_labelled_pairs(
    embedder: LocalEmbedder, reference: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOD_ATTENTION_SHIFT_COSINE_THRESHOLD", raising=False)
    cases = reference["shift_cases"]
    assert len(cases) == 16 and sum(c["shift"] for c in cases) == 8
    threshold = embedder.attention_shift_threshold
    for case in cases:
        # The fp32 reference model puts every pair on the side its label says...
        assert (case["reference_distance"] >= threshold) is case["shift"], case["current"]
        # ...and so does the shipped path, through the public function.
        got = compute_attention_shift(case["recent"], case["current"], embedder=embedder)
        assert got is case["shift"], case["current"]


def test_the_seed_threshold_calls_follow_ups_shifts_with_this_model(
    reference: dict[str, Any],
) -> None:
    # Why the local embedder brings its own threshold: at 0.35 most continuations count as
    # shifts (the reference distances of the eight follow-up questions are 0.35 to 0.87).
    follow_ups = [c["reference_distance"] for c in reference["shift_cases"] if not c["shift"]]
    assert sum(d >= 0.35 for d in follow_ups) >= 7
