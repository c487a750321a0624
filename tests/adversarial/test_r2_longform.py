"""Issue 35, point 20 (and the long-form half of point 16): vectors a store did not write.

A stored vector that is not unit-length (a wire string from a writer that does not normalise)
used to be scored by its raw dot product: one such row outscored every honest hit and, through
the relative floor, hid every other chapter. It is now scored by its cosine on every search
path. A query holding ``None`` or a complex number raises ``InvalidInputError`` naming the
component; an int too large for a float reads as an infinity (the vector encodes as zeros),
never as ``OverflowError``.
"""

from __future__ import annotations

import base64
import math
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.errors import InvalidInputError
from membrane.longform import LongformStore, encode_vector, search_top_k

_HONEST = {
    1: [0.9, 0.1, 0.0, 0.1],
    2: [0.8, 0.3, 0.1, 0.0],
    3: [0.85, 0.0, 0.2, 0.2],
    4: [0.0, 0.0, 1.0, 0.0],
}
_QUERY = [1.0, 0.1, 0.05, 0.05]


def _wire(values: list[float]) -> str:
    """Little-endian float32, base64, as another writer stores a vector (not normalised)."""
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode("ascii")


def _cosine(a: list[float], b: list[float]) -> float:
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(math.fsum(x * x for x in a) * math.fsum(y * y for y in b))


# The foreign row points elsewhere (cosine 0.32 with the query) but is 40 units long.
_FOREIGN = [4.0, 0.0, 0.0, 40.0]


def _store(tmp_path: Path) -> LongformStore:
    store = LongformStore(str(tmp_path / "book.db"))
    for number, vector in _HONEST.items():
        store.put_chapter(number, f"Chapter {number}.", embedding=vector)
    store.put_chapter(5, "Chapter 5, stored by another tool.", embedding=_wire(_FOREIGN))
    return store


@pytest.mark.parametrize("use_numpy", [False, True])
def test_20_a_foreign_row_no_longer_hides_every_chapter(tmp_path: Path, use_numpy: bool) -> None:
    with _store(tmp_path) as store:
        hits = store.search(_QUERY, use_numpy=use_numpy, min_score=0.0)
        assert [h.row.number for h in hits] == [1, 3, 2]
        for hit in hits:
            assert hit.score == pytest.approx(_cosine(_QUERY, _HONEST[hit.row.number]), abs=1e-6)
        everything = store.search(_QUERY, use_numpy=use_numpy, min_score=-1.0, relative_floor=0)
        scores = {h.row.number: h.score for h in everything}
        assert scores[5] == pytest.approx(_cosine(_QUERY, _FOREIGN), abs=1e-6)
        block = store.memory_block(9, recent_chapters=0, query_embedding=_QUERY, min_score=0.0)
        # Chapter 1 is in the skeleton (skeleton_chapters(9, 9) == [1]), so it is not retrieved.
        assert list(block.retrieval_scores) == [3, 2]


@pytest.mark.parametrize("use_numpy", [False, True])
def test_20_search_top_k_scores_foreign_rows_by_cosine(use_numpy: bool) -> None:
    rows = [(f"c{n}", encode_vector(v)) for n, v in _HONEST.items()]
    rows += [(f"pad{i}", encode_vector([0.0, 0.0, 0.0, 1.0])) for i in range(70)]
    rows.insert(0, ("foreign", _wire(_FOREIGN)))
    hits = search_top_k(_QUERY, rows, lambda r: r[1], use_numpy=use_numpy)
    assert [h.row[0] for h in hits] == ["c1", "c3", "c2"]


_COMPONENT = st.floats(-10.0, 10.0, allow_nan=False, width=32)
_ROW = st.lists(_COMPONENT, min_size=3, max_size=3).filter(lambda v: any(abs(x) > 0.01 for x in v))


@given(
    vectors=st.lists(
        st.lists(_COMPONENT, min_size=3, max_size=3).filter(
            lambda v: any(abs(x) > 0.01 for x in v)
        ),
        min_size=1,
        max_size=80,
    ),
    scales=st.lists(st.sampled_from([1.0, 1.0, 0.001, 0.5, 3.0, 1e6]), min_size=80, max_size=80),
    query=st.lists(_COMPONENT, min_size=3, max_size=3).filter(any),
)
def test_20_every_score_is_a_cosine_on_both_paths(
    vectors: list[list[float]], scales: list[float], query: list[float]
) -> None:
    rows: list[tuple[int, str]] = []
    for i, (vector, scale) in enumerate(zip(vectors, scales, strict=False)):
        stored = encode_vector(vector) if scale == 1.0 else None
        if stored is None:
            norm = math.sqrt(math.fsum(x * x for x in vector))
            stored = _wire([x / norm * scale for x in vector])
        rows.append((i, stored))
    options: dict[str, Any] = {"k": 100, "min_score": -2.0, "relative_floor": 0.0}
    pure = search_top_k(query, rows, lambda r: r[1], use_numpy=False, **options)
    fast = search_top_k(query, rows, lambda r: r[1], use_numpy=True, **options)
    assert [(h.row[0], h.score.hex()) for h in pure] == [(h.row[0], h.score.hex()) for h in fast]
    for hit in pure:
        assert hit.score == pytest.approx(_cosine(query, vectors[hit.row[0]]), abs=1e-5)


@pytest.mark.parametrize("bad", [None, 1j, "0.5"])
def test_20_a_query_component_that_is_not_a_number_is_named(tmp_path: Path, bad: object) -> None:
    rows = [("a", encode_vector([1.0, 0.0]))]
    with pytest.raises(InvalidInputError) as raised:
        search_top_k([0.5, bad], rows, lambda r: r[1])  # type: ignore[list-item]
    assert raised.value.field == "query[1]"
    with LongformStore(str(tmp_path / "q.db")) as store:
        store.put_chapter(1, "One.", embedding=[1.0, 0.0])
        with pytest.raises(InvalidInputError) as raised:
            store.search([bad, 1.0])  # type: ignore[list-item]
        assert raised.value.field == "query[0]"
        with pytest.raises(InvalidInputError) as raised:
            store.memory_block(3, query_embedding=[1.0, bad])  # type: ignore[list-item]
        assert raised.value.field == "query_embedding[1]"
        with pytest.raises(InvalidInputError) as raised:
            store.put_chapter(2, "Two.", embedding=[1.0, bad])  # type: ignore[list-item]
        assert raised.value.field == "embedding[1]"


def test_16_a_huge_int_reads_as_an_infinity(tmp_path: Path) -> None:
    huge = 10**400
    assert encode_vector([huge, 1.0]) == encode_vector([math.inf, 1.0]) == _wire([0.0, 0.0])
    rows = [("a", encode_vector([1.0, 0.0]))]
    assert search_top_k([huge, 1.0], rows, lambda r: r[1]) == []
    with LongformStore(str(tmp_path / "h.db")) as store:
        store.put_chapter(1, "One.", embedding=[-huge, 1.0])
        assert store.get_chapter(1).embedding == _wire([0.0, 0.0])  # type: ignore[union-attr]
        assert store.search([huge, 1.0]) == []
