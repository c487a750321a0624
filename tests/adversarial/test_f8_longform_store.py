"""LongformStore: clear errors for bad arguments, damaged files detected, shared by threads
(issue 11, point 8, the store's part).

Before: ``description=None`` and ``title=None`` surfaced as ``StoreUnavailable`` (a NOT NULL
constraint), a chapter number over 64 bits as ``OverflowError``, a lone surrogate as
``UnicodeEncodeError``, ``importance="high"`` as a bare ``ValueError``; a file truncated to
0 bytes opened as a new empty store; a summary another program stored as a BLOB rendered as
``b'...'``. Now every bad argument raises :class:`InvalidInputError` naming it before SQLite
is called, and nothing is written.
"""

from __future__ import annotations

import math
import random
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.errors import InvalidInputError, StoreUnavailable
from membrane.longform import (
    ChapterSummary,
    Entity,
    LongformStore,
    encode_vector,
    plan_thread_ops,
    search_top_k,
)


@pytest.fixture
def store() -> Iterator[LongformStore]:
    with LongformStore(":memory:") as opened:
        yield opened


def _snapshot(store: LongformStore) -> tuple[list[ChapterSummary], list[Entity]]:
    return list(store.iter_chapters()), store.entities()


_NAN, _INF, _HUGE = math.nan, math.inf, 2**70
# (method, positional arguments, keyword arguments, the field the error must name)
BAD_CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any], str]] = [
    ("put_entity", ("Mara", None), {}, "description"),
    ("put_chapter", (2, "x"), {"title": None}, "title"),
    ("put_chapter", (2, None), {}, "summary"),
    ("put_entity", ("", "d"), {}, "name"),
    ("put_chapter", (2**63, "x"), {}, "number"),
    ("put_chapter", (0, "x"), {}, "number"),
    ("get_chapter", (2**63,), {}, "number"),
    ("memory_block", (2**64,), {}, "chapter"),
    ("put_chapter", (2, "a\ud800b"), {}, "summary"),
    ("put_chapter", (2, "a"), {"title": "\udfff"}, "title"),
    ("put_entity", ("M", "\udc80"), {}, "description"),
    ("put_entity", ("M\ud800", "d"), {}, "name"),
    ("put_entity", ("M", "d"), {"importance": "high"}, "importance"),
    ("put_entity", ("M", "d"), {"importance": _NAN}, "importance"),
    ("put_entity", ("M", "d"), {"importance": _INF}, "importance"),
    ("put_entity", ("M", "d"), {"last_seen_chapter": "x"}, "last_seen_chapter"),
    ("put_entity", ("M", "d"), {"last_seen_chapter": _HUGE}, "last_seen_chapter"),
    ("put_entity", ("M", "d"), {"first_seen_chapter": -1}, "first_seen_chapter"),
    ("entities", (-5,), {}, "limit"),
    ("entities", ("x",), {}, "limit"),
    ("entities", (), {"before_chapter": _HUGE}, "before_chapter"),
    ("search", ([1.0, 0.0],), {"before_chapter": _HUGE}, "before_chapter"),
    ("memory_block", (3,), {"total": "x"}, "total"),
    ("memory_block", (3,), {"total": 0}, "total"),
    ("memory_block", (3,), {"entity_limit": _HUGE}, "entity_limit"),
    ("put_chapters", ([ChapterSummary(2, "ok"), object()],), {}, "chapters[1]"),
    ("put_chapters", ([ChapterSummary(2, "ok", None)],), {}, "chapters[0].title"),
    ("put_entities", ([Entity("A", 5)],), {}, "entities[0].description"),
]


@pytest.mark.parametrize(("method", "args", "kwargs", "field"), BAD_CALLS)
def test_bad_arguments_raise_invalid_input_naming_the_field(
    store: LongformStore, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], field: str
) -> None:
    store.put_chapter(1, "Mara signs on.", embedding=[1.0, 0.0])
    store.put_entity("Mara", "first mate", importance=2.0)
    before = _snapshot(store)
    with pytest.raises(InvalidInputError) as info:
        getattr(store, method)(*args, **kwargs)
    assert type(info.value) is InvalidInputError
    assert info.value.field == field
    assert _snapshot(store) == before  # nothing was written


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"path": None}, "path"), ({"timeout": -1}, "timeout"), ({"timeout": "x"}, "timeout")],
)
def test_bad_constructor_arguments(kwargs: dict[str, Any], field: str) -> None:
    call = {"path": ":memory:", **kwargs}
    with pytest.raises(InvalidInputError) as info:
        LongformStore(call.pop("path"), **call)
    assert info.value.field == field


_ANYTHING = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.text(max_size=8),
    st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=2),
    st.binary(max_size=4),
)


@given(number=_ANYTHING, summary=_ANYTHING, title=_ANYTHING)
def test_any_chapter_is_stored_or_refused_with_a_named_field(
    number: Any, summary: Any, title: Any
) -> None:
    with LongformStore(":memory:") as store:
        try:
            store.put_chapter(number, summary, title=title)
        except InvalidInputError as exc:
            assert exc.field in ("number", "summary", "title")
            assert store.chapter_count() == 0
            return
        assert store.get_chapter(number) == ChapterSummary(number, summary, title)


@given(name=_ANYTHING, description=_ANYTHING, importance=_ANYTHING, seen=_ANYTHING)
def test_any_entity_is_stored_or_refused_with_a_named_field(
    name: Any, description: Any, importance: Any, seen: Any
) -> None:
    with LongformStore(":memory:") as store:
        try:
            store.put_entity(name, description, importance=importance, last_seen_chapter=seen)
        except InvalidInputError as exc:
            assert exc.field in ("name", "description", "importance", "last_seen_chapter")
            assert store.entities() == []
            return
        [stored] = store.entities()
        assert (stored.name, stored.description, stored.last_seen_chapter) == (
            name,
            description,
            seen,
        )
        assert stored.importance == float(importance)


# -- damaged files ----------------------------------------------------------------------------


def test_a_store_truncated_to_zero_bytes_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "book.db"
    with LongformStore(path) as store:
        store.put_chapter(1, "Mara signs on.")
    path.write_bytes(b"")
    with pytest.raises(StoreUnavailable, match="exists but is empty") as info:
        LongformStore(path)
    assert "delete it" in str(info.value)
    assert path.stat().st_size == 0  # left as found, not turned into a new store
    path.unlink()
    with LongformStore(path) as fresh:  # a new path still makes a new store
        assert fresh.chapter_count() == 0


def test_text_stored_as_a_blob_reads_back_as_text(tmp_path: Path) -> None:
    path = tmp_path / "book.db"
    with LongformStore(path) as store:
        store.put_chapter(1, "placeholder", title="One")
        store.put_entity("Mara", "placeholder")
        plan = plan_thread_ops(
            [{"summary": "x"}], store.known_threads(1), chapter_number=1, total_chapters=9
        )
        store.apply_thread_plan(plan, 1)
    other = sqlite3.connect(path)  # another program writes BLOBs into the TEXT columns
    other.execute("UPDATE chapters SET summary = ?, title = ?", (b"Mara signs on.", b"\xffOne"))
    other.execute("UPDATE entities SET description = ?", (b"first mate",))
    other.execute("UPDATE threads SET summary = ?", (b"Who sent the letter?",))
    other.commit()
    other.close()
    with LongformStore(path) as store:
        assert store.get_chapter(1) == ChapterSummary(1, "Mara signs on.", "\ufffdOne")
        assert store.entities()[0].description == "first mate"
        assert store.threads()[0].summary == "Who sent the letter?"
        text = store.memory_block(2).render()
    assert "Ch.1: Mara signs on." in text and "Mara: first mate" in text
    assert "b'" not in text


# -- one store shared by threads ----------------------------------------------------------------

THREADS = 8
BATCHES = 12
BATCH = 5


def _vector(number: int) -> list[float]:
    angle = number * 0.37
    return [math.cos(angle), math.sin(angle), 0.25]


def test_one_store_shared_by_threads_serialises_whole_calls(tmp_path: Path) -> None:
    """What docs/longform.md says: one LongformStore may be shared by threads; each call is
    one transaction and the calls are serialised, so readers see whole writes only."""
    store = LongformStore(tmp_path / "shared.db")
    errors: list[BaseException] = []
    barrier = threading.Barrier(THREADS)

    def worker(t: int) -> None:
        rng = random.Random(t)
        try:
            barrier.wait()
            for b in range(BATCHES):
                first = 1 + (t * BATCHES + b) * BATCH
                numbers = range(first, first + BATCH)
                store.put_chapters(
                    [ChapterSummary(n, f"chapter {n}", embedding=encode_vector(_vector(n)))
                     for n in numbers]
                )  # fmt: skip
                store.put_entities([Entity(f"e{t}-{b}-{i}", f"thing {i}", i) for i in range(3)])
                count = store.chapter_count()
                assert count % BATCH == 0, f"saw part of a write: {count} chapters"
                assert len(store.entities()) % 3 == 0
                chapter = rng.randint(2, THREADS * BATCHES * BATCH)
                block = store.memory_block(chapter, total=600, query_embedding=_vector(chapter))
                assert block.used_tokens <= 600 - block.reserved_tokens
                hits = store.search(_vector(chapter), k=3)
                assert all(hit.row.summary == f"chapter {hit.row.number}" for hit in hits)
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=300)
    assert not errors, errors[0]
    total = THREADS * BATCHES * BATCH
    assert [c.number for c in store.iter_chapters()] == list(range(1, total + 1))
    assert len(store.entities()) == THREADS * BATCHES * 3
    # The cached search over what the threads wrote equals a search over the rows themselves.
    rows = list(store.iter_chapters())
    query = _vector(7)
    expected = search_top_k(query, rows, lambda c: c.embedding, k=5, use_numpy=False)
    got = store.search(query, k=5)
    assert [h.row.number for h in got] == [h.row.number for h in expected]
    store.close()
