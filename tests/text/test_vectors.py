"""Vectors kept as float16: cosine close to the exact one, the same with or without NumPy."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from membrane.text import _vectors
from membrane.text._vectors import pack, similarities
from membrane.text.semantic import cosine

component = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_subnormal=False)
vectors = st.integers(min_value=2, max_value=48).flatmap(
    lambda n: st.lists(st.lists(component, min_size=n, max_size=n), min_size=2, max_size=6)
)


def _python_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_vectors, "_NUMPY", [None])


@given(vectors)
def test_float16_cosine_is_within_a_thousandth_of_the_exact_one(rows: list[list[float]]) -> None:
    query, *texts = rows
    exact = [cosine(query, t) for t in texts]
    assume(all(cosine(v, v) > 0.5 for v in rows))  # skip vectors too small to have a direction
    assume(all(max(map(abs, v)) < 1e3 * sorted(map(abs, v))[-2] + 1e-300 for v in rows))
    got = similarities(pack(query), [pack(t) for t in texts])
    assert all(abs(a - b) < 2e-3 for a, b in zip(got, exact, strict=True))


@given(vectors)
def test_numpy_and_plain_python_agree(rows: list[list[float]]) -> None:
    query, *texts = (pack(v) for v in rows)
    with_numpy = similarities(query, texts)
    saved = list(_vectors._NUMPY)
    _vectors._NUMPY[:] = [None]
    try:
        plain = similarities(query, texts)
    finally:
        _vectors._NUMPY[:] = saved
    assert all(
        math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
        for a, b in zip(with_numpy, plain, strict=True)
    )


def test_packed_vectors_are_small_and_scale_free() -> None:
    v = [0.25, -0.5, 0.125] * 128
    packed = pack(v)
    assert len(packed.data) == 2 * 384  # float16: 768 bytes for 384 dimensions
    assert pack([x * 2**20 for x in v]).data == packed.data  # scaled by a power of two
    assert similarities(packed, [pack([x * 1e9 for x in v])]) == pytest.approx([1.0])


def test_zero_and_mismatched_vectors_have_no_similarity(monkeypatch: pytest.MonkeyPatch) -> None:
    for _ in range(2):
        query = pack([1.0, 0.0])
        assert similarities(query, [pack([0.0, 0.0]), pack([1.0, 0.0, 0.0]), pack([2.0, 0.0])]) == [
            0.0,
            0.0,
            1.0,
        ]
        assert similarities(pack([0.0, 0.0]), [query]) == [0.0]
        assert similarities(query, []) == []
        _python_only(monkeypatch)


def test_non_finite_values_are_refused() -> None:
    with pytest.raises(ValueError, match="non-finite"):
        pack([1.0, float("nan")])
    with pytest.raises(ValueError, match="non-finite"):
        pack([float("inf"), 0.0])
