"""LongformStore.search and its cached float32 matrices: the same rows, order and scores as
``search_top_k`` over the same chapters, through writes, evictions and foreign writers."""

from __future__ import annotations

import base64
import math
import os
import random
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from membrane.errors import InvalidInputError
from membrane.longform import (
    ChapterSummary,
    LongformStore,
    VectorCache,
    encode_vector,
    search_top_k,
)

from . import strategies as S

# At least 200 generated libraries (1-ulp neighbours included); more when CI asks for more.
EXAMPLES = max(200, int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", "0")))


def reference(
    store: LongformStore,
    query: list[float],
    *,
    before: int | None = None,
    exclude: frozenset[int] = frozenset(),
    **options: Any,
) -> list[tuple[int, float]]:
    """The pure-Python search over the store's chapters in chapter order."""
    rows = [
        (c.number, c.embedding)
        for c in store.iter_chapters()
        if c.embedding is not None
        and (before is None or c.number < before)
        and c.number not in exclude
    ]
    hits = search_top_k(query, rows, lambda r: r[1], use_numpy=False, **options)
    return [(hit.row[0], hit.score) for hit in hits]


def cached(store: LongformStore, query: list[float], **options: Any) -> list[tuple[int, float]]:
    before = options.pop("before", None)
    exclude = options.pop("exclude", frozenset())
    hits = store.search(query, before_chapter=before, exclude=exclude, use_numpy=True, **options)
    return [(hit.row.number, hit.score) for hit in hits]


def same(a: list[tuple[int, float]], b: list[tuple[int, float]]) -> bool:
    return [n for n, _ in a] == [n for n, _ in b] and all(
        x.hex() == y.hex() for (_, x), (_, y) in zip(a, b, strict=True)
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LongformStore]:
    with LongformStore(tmp_path / "book.db") as opened:
        yield opened


@st.composite
def library(draw: st.DrawFn) -> tuple[int, list[str | None], list[float], dict[str, Any]]:
    """Stored wire values (chapter i + 1 holds values[i]), many of them 1-ulp neighbours of
    each other, a query that is often one of them, and search options."""
    dim = draw(st.sampled_from([1, 2, 3, 8, 33]))
    values: list[str | None] = []
    while len(values) < draw(st.integers(1, 30)):
        kind = draw(st.sampled_from(["dupes", "dupes", "vector", "other-dim", "none", "nan"]))
        if kind == "dupes":
            values.extend(S.wire(v) for v in draw(S.near_duplicate_rows(dim)))
        elif kind == "vector":
            values.append(S.wire(draw(S.components(dim))))
        elif kind == "other-dim":
            values.append(encode_vector([1.0] * (dim + 1)))
        elif kind == "nan":
            values.append(S.wire([math.nan] * dim))
        else:
            values.append(None)
    stored = [v for v in values if v is not None and len(v) == len(S.wire([0.0] * dim))]
    if stored and draw(st.booleans()):
        raw = base64.b64decode(draw(st.sampled_from(stored)))
        query = list(struct.unpack(f"<{dim}f", raw))
    else:
        query = draw(S.components(dim))
    options = {
        "k": draw(st.integers(0, 8)),
        "min_score": draw(st.sampled_from([0.2, 0.0, -1.0, 0.5, 0.999999])),
        "relative_floor": draw(st.sampled_from([0.88, 0.0, 1.0, 0.99999])),
    }
    if draw(st.booleans()):
        options["before"] = draw(st.integers(1, len(values) + 1))
    if draw(st.booleans()):
        options["exclude"] = frozenset(draw(st.lists(st.integers(1, len(values)), max_size=5)))
    return dim, values, query, options


def _put(store: LongformStore, values: list[str | None], first: int = 1) -> None:
    store.put_chapters(
        ChapterSummary(first + i, f"chapter {first + i}", "", value)
        for i, value in enumerate(values)
    )


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(case=library())
def test_cached_search_is_search_top_k_on_near_duplicates(
    case: tuple[int, list[str | None], list[float], dict[str, Any]],
) -> None:
    _, values, query, options = case
    with LongformStore(":memory:") as store:
        _put(store, values)
        expected = reference(store, query, **options)
        assert same(cached(store, query, **dict(options)), expected)
        # Twice: the second query reads the kept matrix.
        assert same(cached(store, query, **dict(options)), expected)
        pure = store.search(
            query,
            k=options["k"],
            min_score=options["min_score"],
            relative_floor=options["relative_floor"],
            before_chapter=options.get("before"),
            exclude=options.get("exclude", ()),
            use_numpy=False,
        )
        assert same([(h.row.number, h.score) for h in pure], expected)


write = st.one_of(
    st.tuples(st.just("put"), st.integers(1, 40), st.integers(0, 10**6)),
    st.tuples(st.just("clear"), st.integers(1, 40), st.just(0)),
    st.tuples(st.just("other-dim"), st.integers(1, 40), st.just(0)),
    st.tuples(st.just("dupe"), st.integers(1, 40), st.integers(1, 40)),
)


@settings(
    max_examples=EXAMPLES // 2,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(st.tuples(write, st.booleans()), min_size=1, max_size=40))
def test_writes_update_the_matrix_in_place(steps: list[tuple[tuple[str, int, int], bool]]) -> None:
    dim = 6
    with LongformStore(":memory:") as store:
        _put(store, [encode_vector(spread_vector(n, dim)) for n in range(1, 11)])
        query = spread_vector(3, dim)
        expected = reference(store, query, k=5, min_score=-1.0)
        assert same(cached(store, query, k=5, min_score=-1.0), expected)
        document = store.vector_cache.get(store._owner)
        assert document is not None
        for (kind, number, seed), ask in steps:
            if kind == "put":
                store.put_chapter(number, "text", embedding=spread_vector(seed, dim))
            elif kind == "clear":
                store.put_chapter(number, "text", embedding=None)
            elif kind == "other-dim":
                store.put_chapter(number, "text", embedding=spread_vector(number, dim + 2))
            else:
                source = store.get_chapter(seed)
                embedding = source.embedding if source is not None else None
                store.put_chapter(number, "text", embedding=embedding)
            if ask:
                for options in ({"k": 5, "min_score": -1.0}, {"k": 3}, {"k": 8, "before": 20}):
                    expected = reference(store, query, **options)
                    assert same(cached(store, query, **dict(options)), expected)
        # Every write patched the same matrices: nothing was rebuilt.
        assert store.vector_cache.get(store._owner) is document


def spread_vector(seed: int, dim: int) -> list[float]:
    """A vector with components spread over [-1, 1], the same for the same seed."""
    rng = random.Random(seed)
    return [rng.uniform(-1.0, 1.0) for _ in range(dim)]


def test_a_write_by_another_connection_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    with LongformStore(path) as reader, LongformStore(path) as writer:
        _put(writer, [encode_vector(spread_vector(n, 4)) for n in range(1, 6)])
        query = spread_vector(99, 4)
        assert same(cached(reader, query, k=3, min_score=-1.0),
                    reference(reader, query, k=3, min_score=-1.0))  # fmt: skip
        loaded = reader.vector_cache.get(reader._owner)
        writer.put_chapter(7, "new", embedding=query)
        hits = cached(reader, query, k=3, min_score=-1.0)
        assert hits[0][0] == 7
        assert same(hits, reference(reader, query, k=3, min_score=-1.0))
        # The reader could not patch a foreign write: it reloaded.
        assert reader.vector_cache.get(reader._owner) is not loaded
        # Its own writes after that are patched again.
        reloaded = reader.vector_cache.get(reader._owner)
        reader.put_chapter(8, "mine", embedding=spread_vector(8, 4))
        assert same(cached(reader, query, k=4, min_score=-1.0),
                    reference(reader, query, k=4, min_score=-1.0))  # fmt: skip
        assert reader.vector_cache.get(reader._owner) is reloaded


def test_a_shared_cache_evicts_the_least_recently_used_document(tmp_path: Path) -> None:
    dim = 32
    # rows (with the 1/8 headroom a load reserves), norms and chapter numbers
    one_document = 225 * (dim * 4 + 16)
    cache = VectorCache(max_bytes=int(one_document * 1.5))
    stores = [LongformStore(tmp_path / f"book{i}.db", vector_cache=cache) for i in range(3)]
    try:
        for i, store in enumerate(stores):
            _put(store, [encode_vector(spread_vector(1000 * i + n, dim)) for n in range(200)])
        query = spread_vector(7, dim)
        for store in stores:
            assert same(cached(store, query, k=4, min_score=-1.0),
                        reference(store, query, k=4, min_score=-1.0))  # fmt: skip
            assert cache.bytes_used <= cache.max_bytes
        # Only the last one queried is still held.
        assert len(cache) == 1
        assert cache.get(stores[2]._owner) is not None
        assert cache.get(stores[0]._owner) is None
    finally:
        for store in stores:
            store.close()
    assert len(cache) == 0


def test_a_document_larger_than_the_bound_is_searched_but_not_kept(tmp_path: Path) -> None:
    with LongformStore(tmp_path / "big.db", vector_cache=VectorCache(max_bytes=0)) as store:
        _put(store, [encode_vector(spread_vector(n, 8)) for n in range(50)])
        query = spread_vector(3, 8)
        assert same(cached(store, query, k=6, min_score=-1.0),
                    reference(store, query, k=6, min_score=-1.0))  # fmt: skip
        assert store.vector_cache.bytes_used == 0


def test_memory_block_retrieval_is_the_same_with_and_without_the_cache(
    store: LongformStore,
) -> None:
    _put(store, [encode_vector(spread_vector(n % 7, 12)) for n in range(1, 120)])
    query = spread_vector(3, 12)
    with_cache = store.memory_block(119, query_embedding=query, min_score=0.0, use_numpy=None)
    without = store.memory_block(119, query_embedding=query, min_score=0.0, use_numpy=False)
    assert with_cache.retrieval_scores == without.retrieval_scores
    assert with_cache.retrieval_scores  # the case retrieves something
    assert with_cache.render() == without.render()


def test_search_arguments_are_checked(store: LongformStore) -> None:
    with pytest.raises(InvalidInputError):
        store.search([1.0], k=-1)
    with pytest.raises(InvalidInputError):
        store.search([1.0], exclude=[0])
    with pytest.raises(TypeError):
        store.search("1.0")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        VectorCache(max_bytes=-1)
    assert store.search([1.0, 0.0]) == []
