from __future__ import annotations

import base64
import math
import struct
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.errors import InvalidInputError
from membrane.longform import (
    DEFAULT_MIN_SCORE,
    RELATIVE_FLOOR,
    ScoredRow,
    decode_vector,
    encode_vector,
    numpy_available,
    search_top_k,
)
from membrane.longform import vector as vector_module

from .helpers import subprocess_env

# The wire format, pinned. Each literal is base64 of the vector divided by its L2 norm and
# packed as little-endian float32 (struct format "<f"); test_fixtures_follow_the_definition
# recomputes them from that definition. A change in byte order, float width, normalisation or
# base64 alphabet breaks these, and with them every store written by another implementation.
WIRE_FIXTURES: list[tuple[list[float], str]] = [
    ([3.0, 4.0], "mpkZP83MTD8="),
    ([1.0, 0.0, 0.0], "AACAPwAAAAAAAAAA"),
    ([-1.0, 2.0, -2.0], "q6qqvquqKj+rqiq/"),
    ([0.001, 0.001, 0.001, 0.001], "AAAAPwAAAD8AAAA/AAAAPw=="),
    ([1.0, 1.0, 1.0], "Os0TPzrNEz86zRM/"),
    ([1.5, -2.5, 0.25, 8.0, -0.125], "BEw0Plk/lr5bZfA8W2VwP1tlcLw="),
    ([0.0, 0.0], "AAAAAAAAAAA="),
]


def by_definition(vector: list[float]) -> str:
    norm = math.sqrt(sum(x * x for x in vector))
    unit = [x / norm for x in vector] if norm else [0.0] * len(vector)
    return base64.b64encode(b"".join(struct.pack("<f", x) for x in unit)).decode("ascii")


@pytest.mark.parametrize(("vector", "encoded"), WIRE_FIXTURES)
def test_encode_matches_the_pinned_bytes(vector: list[float], encoded: str) -> None:
    assert encode_vector(vector) == encoded


@pytest.mark.parametrize(("vector", "encoded"), WIRE_FIXTURES)
def test_fixtures_follow_the_definition(vector: list[float], encoded: str) -> None:
    assert by_definition(vector) == encoded


@pytest.mark.parametrize(("vector", "encoded"), WIRE_FIXTURES)
def test_decode_reads_the_pinned_bytes(vector: list[float], encoded: str) -> None:
    raw = base64.b64decode(encoded)
    assert decode_vector(encoded) == list(struct.unpack(f"<{len(raw) // 4}f", raw))
    assert len(raw) == 4 * len(vector)


def test_first_fixture_is_little_endian() -> None:
    # 0.6 as float32 is 0x3F19999A; little-endian puts the low byte first.
    assert base64.b64decode("mpkZP83MTD8=")[:4] == bytes([0x9A, 0x99, 0x19, 0x3F])


@pytest.mark.parametrize(
    "vector",
    [[0.0, 0.0, 0.0], [math.nan, 1.0, 2.0], [math.inf, 1.0], [-math.inf, 0.0, 0.0]],
)
def test_zero_and_non_finite_vectors_encode_as_zeros(vector: list[float]) -> None:
    assert decode_vector(encode_vector(vector)) == [0.0] * len(vector)


def test_overflowing_squares_encode_as_zeros_as_published() -> None:
    # The squares of 3e300 overflow to inf, so the norm is infinite and the vector is treated
    # like a zero vector (the published arithmetic; math.hypot would have scaled instead).
    assert encode_vector([3e300, 4e300]) == "AAAAAAAAAAA="
    assert encode_vector([3e150, 4e150]) == "mpkZP83MTD8="


def test_encode_rejects_empty_and_text() -> None:
    with pytest.raises(InvalidInputError):
        encode_vector([])
    with pytest.raises(TypeError):
        encode_vector("0.1,0.2")


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "not base64!",
        "AAAAAAA=",  # 5 bytes: not a whole number of float32 values
        "mpkZP83MTD8",  # missing padding
        "mpkZ P83MTD8=",  # embedded space
        "\u00e9\u00e9\u00e9\u00e9",  # non-ASCII
        None,
        7,
        b"",
    ],
)
def test_decode_returns_none_for_anything_unusable(bad: Any) -> None:
    assert decode_vector(bad) is None
    # The control: four zero bytes are a valid one-element vector.
    assert decode_vector("AAAAAA==") == [0.0]


finite_components = st.floats(
    min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False, width=64
)
vectors = st.lists(finite_components, min_size=1, max_size=64).filter(
    lambda v: math.hypot(*v) > 1e-30
)


@given(vectors)
def test_round_trip_within_float32_precision(vector: list[float]) -> None:
    decoded = decode_vector(encode_vector(vector))
    assert decoded is not None
    norm = math.hypot(*vector)
    for got, original in zip(decoded, vector, strict=True):
        expected = original / norm
        # float32 keeps 24 significant bits; below 2**-126 it is subnormal with a fixed step.
        assert abs(got - expected) <= abs(expected) * 2.0**-24 + 2.0**-149
    assert math.isclose(math.hypot(*decoded), 1.0, rel_tol=1e-6)


@given(vectors)
def test_encoding_is_the_definition(vector: list[float]) -> None:
    raw = base64.b64decode(encode_vector(vector))
    norm = math.hypot(*vector)
    assert raw == struct.pack(f"<{len(vector)}f", *(x / norm for x in vector))


# ---------------------------------------------------------------- search_top_k


def rows_of(vectors: list[list[float]]) -> list[tuple[str, str]]:
    return [(f"r{i}", encode_vector(v)) for i, v in enumerate(vectors)]


def embedding(row: tuple[str, str]) -> str:
    return row[1]


def names(hits: list[ScoredRow[tuple[str, str]]]) -> list[str]:
    return [hit.row[0] for hit in hits]


@pytest.mark.parametrize("use_numpy", [False, True])
def test_search_orders_by_score_and_applies_both_floors(use_numpy: bool) -> None:
    rows = rows_of(
        [
            [1.0, 0.0, 0.0],  # 1.0
            [0.9, 0.1, 0.0],  # ~0.994
            [0.0, 1.0, 0.0],  # 0.0: under the absolute floor
            [0.8, 0.6, 0.0],  # 0.8: under 0.88 * best
            [0.95, 0.3, 0.0],  # ~0.954
        ]
    )
    hits = search_top_k([1.0, 0.0, 0.0], rows, embedding, use_numpy=use_numpy)
    assert names(hits) == ["r0", "r1", "r4"]
    assert hits[0].score == pytest.approx(1.0)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert names(search_top_k([1.0, 0.0, 0.0], rows, embedding, k=2, use_numpy=use_numpy)) == [
        "r0",
        "r1",
    ]
    relaxed = search_top_k([1, 0, 0], rows, embedding, relative_floor=0.0, use_numpy=use_numpy)
    assert names(relaxed) == ["r0", "r1", "r4", "r3"]


@pytest.mark.parametrize("use_numpy", [False, True])
def test_search_skips_bad_rows_and_other_dimensions(use_numpy: bool) -> None:
    rows: list[tuple[str, Any]] = [
        ("wrong-dim", encode_vector([1.0, 0.0])),
        ("corrupt", "%%%"),
        ("odd-length", "AAAAAAA="),
        ("missing", None),
        ("nan", "AADAfwAAAAAAAAAA"),
        ("good", encode_vector([1.0, 0.2, 0.0])),
    ]
    hits = search_top_k([1.0, 0.0, 0.0], rows, lambda r: r[1], use_numpy=use_numpy)
    assert [h.row[0] for h in hits] == ["good"]


@pytest.mark.parametrize("use_numpy", [False, True])
def test_search_survives_extreme_stored_values(use_numpy: bool) -> None:
    # Rows written by other tools may be unnormalised or hold infinities; the float32 product
    # overflows on them, which must neither warn (warnings are errors here) nor change hits.
    # An unnormalised row is scored by its cosine: the huge one no longer wins.
    big = base64.b64encode(struct.pack("<3f", 3e38, 3e38, -3e38)).decode()
    inf = base64.b64encode(struct.pack("<3f", math.inf, 1.0, 0.0)).decode()
    tiny = base64.b64encode(struct.pack("<3f", 1e-45, 1e-45, 0.0)).decode()
    rows = [("big", big), ("inf", inf), ("tiny", tiny), ("unit", encode_vector([1.0, 1.0, 0.0]))]
    hits = search_top_k([1.0, 1.0, 0.0], rows, lambda r: r[1], use_numpy=use_numpy)
    assert [h.row[0] for h in hits] == ["tiny", "unit"]
    assert [h.score for h in hits] == pytest.approx([1.0, 1.0])
    everything = search_top_k(
        [1.0, 1.0, 0.0],
        rows,
        lambda r: r[1],
        min_score=-1e39,
        relative_floor=0.0,
        use_numpy=use_numpy,
    )
    assert [h.row[0] for h in everything] == ["tiny", "unit", "big"]
    assert everything[2].score == pytest.approx(2 / math.sqrt(6))


@pytest.mark.parametrize("use_numpy", [False, True])
def test_search_keeps_input_order_on_equal_scores(use_numpy: bool) -> None:
    rows = rows_of([[0.0, 1.0], [1.0, 1.0], [2.0, 2.0], [1.0, 1.0]])
    hits = search_top_k([1.0, 1.0], rows, embedding, use_numpy=use_numpy)
    assert names(hits) == ["r1", "r2", "r3"]


def test_search_degenerate_queries_return_nothing() -> None:
    rows = rows_of([[1.0, 0.0]])
    assert search_top_k([0.0, 0.0], rows, embedding) == []
    assert search_top_k([math.nan, 1.0], rows, embedding) == []
    assert search_top_k([1.0, 0.0], rows, embedding, k=0) == []
    assert search_top_k([1.0, 0.0], [], embedding) == []


def test_search_defaults() -> None:
    assert (DEFAULT_MIN_SCORE, RELATIVE_FLOOR) == (0.2, 0.88)
    rows = rows_of([[1.0, 0.01 * i] for i in range(10)])
    assert len(search_top_k([1.0, 0.0], rows, embedding)) == 6


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"k": -1}, "k"),
        ({"k": 1.5}, "k"),
        ({"min_score": math.nan}, "min_score"),
        ({"relative_floor": 1.5}, "relative_floor"),
        ({"relative_floor": -0.1}, "relative_floor"),
    ],
)
def test_search_rejects_bad_arguments(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        search_top_k([1.0], rows_of([[1.0]]), embedding, **kwargs)
    assert info.value.field == field


def test_decode_keeps_non_finite_components_and_reads_bytes() -> None:
    nan, inf = decode_vector("AADAfw=="), decode_vector("AACAfw==")
    assert nan is not None and math.isnan(nan[0])
    assert inf == [math.inf]
    assert decode_vector(b"mpkZP83MTD8=") == decode_vector("mpkZP83MTD8=")


@pytest.mark.parametrize("use_numpy", [False, True])
def test_search_skips_rows_holding_nan_or_infinity(use_numpy: bool) -> None:
    rows = [("nan", "AADAfwAAAAA="), ("ok", encode_vector([1.0, 0.0]))]
    hits = search_top_k([1.0, 0.0], rows, lambda r: r[1], use_numpy=use_numpy)
    assert [h.row[0] for h in hits] == ["ok"]


def test_a_negative_best_score_fails_its_own_relative_floor() -> None:
    # The published rule multiplies whatever the best score is: with a negative best,
    # best * 0.88 lies above it and nothing passes; relative_floor=1.0 keeps the best.
    rows = rows_of([[-1.0, 0.0], [-1.0, -0.5]])
    assert search_top_k([1.0, 0.0], rows, embedding, min_score=-2.0) == []
    hits = search_top_k([1.0, 0.0], rows, embedding, min_score=-2.0, relative_floor=1.0)
    assert names(hits) == ["r1"]


def test_a_zero_query_scores_every_row_zero() -> None:
    rows = rows_of([[1.0, 0.0], [0.0, 1.0]])
    assert search_top_k([0.0, 0.0], rows, embedding) == []
    hits = search_top_k([0.0, 0.0], rows, embedding, min_score=0.0)
    assert [(h.row[0], h.score) for h in hits] == [("r0", 0.0), ("r1", 0.0)]


# Vectors on a coarse integer grid give exact ties and scores that sit right on the floors.
def grid_vectors(dim: int) -> st.SearchStrategy[list[float]]:
    return st.lists(st.integers(-3, 3).map(float), min_size=dim, max_size=dim)


B64_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


@st.composite
def mutated(draw: st.DrawFn, encoded: str) -> str:
    """The same text with one character replaced: same length, often no longer valid."""
    position = draw(st.integers(0, len(encoded) - 1))
    char = draw(st.sampled_from(B64_CHARS[:3] + "=!" + B64_CHARS[-2:]))
    return encoded[:position] + char + encoded[position + 1 :]


@st.composite
def search_cases(draw: st.DrawFn) -> tuple[list[float], list[tuple[str, Any]], dict[str, Any]]:
    # Dimensions 3, 4 and 5 cover base64 with no padding, "==" and "=".
    dim = draw(st.sampled_from([3, 4, 5]))
    query = draw(grid_vectors(dim).filter(any))
    rows: list[tuple[str, Any]] = []
    for i in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(["grid", "grid", "grid", "float", "dim", "mutant", "junk"]))
        if kind == "grid":
            rows.append((f"r{i}", encode_vector(draw(grid_vectors(dim)))))
        elif kind == "float":
            vec = draw(st.lists(finite_components, min_size=dim, max_size=dim))
            rows.append((f"r{i}", encode_vector(vec)))
        elif kind == "dim":
            rows.append((f"r{i}", encode_vector([*draw(grid_vectors(dim)), 1.0])))
        elif kind == "mutant":
            rows.append((f"r{i}", draw(mutated(encode_vector(draw(grid_vectors(dim)))))))
        else:
            rows.append((f"r{i}", draw(st.sampled_from(["", "!!", "AAAAAAA=", None, 7]))))
    kwargs = {
        "k": draw(st.integers(0, 8)),
        "min_score": draw(st.sampled_from([0.2, 0.0, -1.0, 0.5, 1 / 3])),
        "relative_floor": draw(st.sampled_from([0.88, 0.0, 1.0, 0.5])),
    }
    return query, rows, kwargs


def reference_search(
    query: list[float], rows: list[tuple[str, Any]], k: int, min_score: float, relative_floor: float
) -> list[tuple[str, float]]:
    squares = 0.0
    for x in query:
        squares += x * x
    norm = squares**0.5
    unit = [x / norm for x in query]
    scored = []
    for index, (name, encoded) in enumerate(rows):
        vec = decode_vector(encoded)
        if vec is None or len(vec) != len(unit) or not all(map(math.isfinite, vec)):
            continue
        # The same arithmetic as the library (float64, left to right), so that scores sitting
        # exactly on a floor fall on the same side; this reference checks the selection rules.
        score = 0.0
        for a, b in zip(unit, vec, strict=True):
            score += a * b
        # A row its writer did not normalise is scored by its cosine (the squares of float32
        # values are exact, so fsum gives the correctly rounded norm).
        row_norm = math.sqrt(math.fsum(v * v for v in vec))
        if row_norm and abs(row_norm - 1.0) > 1e-3:
            score /= row_norm
        if score >= min_score:
            scored.append((index, name, score))
    scored.sort(key=lambda t: (-t[2], t[0]))
    if not scored:
        return []
    floor = scored[0][2] * relative_floor
    return [(name, score) for _, name, score in scored if score >= floor][:k]


@given(search_cases())
def test_pure_search_matches_the_reference(
    case: tuple[list[float], list[tuple[str, Any]], dict[str, Any]],
) -> None:
    query, rows, kwargs = case
    hits = search_top_k(query, rows, lambda r: r[1], use_numpy=False, **kwargs)
    assert [(h.row[0], h.score) for h in hits] == reference_search(query, rows, **kwargs)


@given(search_cases())
def test_numpy_and_pure_search_agree_exactly(
    case: tuple[list[float], list[tuple[str, Any]], dict[str, Any]],
) -> None:
    query, rows, kwargs = case
    pure = search_top_k(query, rows, lambda r: r[1], use_numpy=False, **kwargs)
    fast = search_top_k(query, rows, lambda r: r[1], use_numpy=True, **kwargs)
    assert [(h.row, h.score) for h in fast] == [(h.row, h.score) for h in pure]


@given(st.integers(0, 2**32 - 1), st.integers(1, 200), st.sampled_from([8, 64, 384]))
def test_numpy_and_pure_agree_on_realistic_vectors(seed: int, count: int, dim: int) -> None:
    import numpy as np

    rng = np.random.default_rng(seed)
    topic = rng.normal(size=dim)
    # Rows are the topic plus noise of random strength, so many score near each other.
    noise = rng.uniform(0.2, 3.0, size=(count, 1))
    matrix = topic + rng.normal(size=(count, dim)) * noise
    rows = [(i, encode_vector(vec.tolist())) for i, vec in enumerate(matrix)]
    query = (topic + rng.normal(size=dim) * 0.5).tolist()
    for k in (1, 6, 50):
        pure = search_top_k(query, rows, lambda r: r[1], k=k, use_numpy=False)
        fast = search_top_k(query, rows, lambda r: r[1], k=k, use_numpy=True)
        assert [(h.row[0], h.score) for h in fast] == [(h.row[0], h.score) for h in pure]


def test_automatic_choice_without_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numpy", None)
    assert not numpy_available()
    rows = rows_of([[1.0, 0.01 * i] for i in range(100)])
    hits = search_top_k([1.0, 0.0], rows, embedding)
    assert names(hits) == ["r0", "r1", "r2", "r3", "r4", "r5"]
    with pytest.raises(ModuleNotFoundError, match="pip install numpy"):
        search_top_k([1.0, 0.0], rows, embedding, use_numpy=True)


def test_search_works_in_a_process_where_numpy_cannot_be_imported() -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["numpy"] = None  # any import of numpy now fails
        from membrane.longform import encode_vector, search_top_k
        rows = [(i, encode_vector([1.0, 0.01 * i])) for i in range(500)]
        hits = search_top_k([1.0, 0.0], rows, lambda r: r[1], k=3)
        print([h.row[0] for h in hits])
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=subprocess_env(),
    )
    assert out.stdout.strip() == "[0, 1, 2]"


def test_numpy_is_not_chosen_for_small_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> list[tuple[int, float]]:
        raise AssertionError("the NumPy path should not run for a handful of rows")

    monkeypatch.setattr(vector_module, "_search_numpy", fail)
    rows = rows_of([[1.0, 0.0]] * (vector_module.NUMPY_MIN_ROWS - 1))
    assert len(search_top_k([1.0, 0.0], rows, embedding)) == 6
