from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from membrane.errors import InvalidInputError, StoreUnavailable
from membrane.longform import (
    SCHEMA_VERSION,
    BlockLabels,
    ChapterSummary,
    Entity,
    LongformStore,
    decode_vector,
    encode_vector,
    estimate_tokens,
    plan_thread_ops,
    skeleton_chapters,
)
from membrane.tokenizers import TiktokenAdapter

from .helpers import subprocess_env

TOPICS = 8
DIM = 16


def topic_of(number: int) -> int:
    return (number * 7) % TOPICS


def embedding_for(number: int) -> list[float]:
    rng = random.Random(number)
    vec = [rng.gauss(0.0, 0.05) for _ in range(DIM)]
    vec[topic_of(number)] += 1.0
    return vec


def summary_for(number: int) -> str:
    return (
        f"In chapter {number} the crew follows lead {topic_of(number)}; "
        + "they argue, repair the hull and sail on. " * 3
    ).strip()


def fill_book(store: LongformStore, chapters: int) -> None:
    store.put_chapters(
        ChapterSummary(n, summary_for(n), f"Chapter {n}", encode_vector(embedding_for(n)))
        for n in range(1, chapters + 1)
    )
    store.put_entities(
        Entity(
            f"Sailor {i}",
            f"a deckhand, loyal to the captain ({i})",
            importance=i % 5,
            last_seen_chapter=i,
        )
        for i in range(60)
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LongformStore]:
    with LongformStore(tmp_path / "book.db") as opened:
        yield opened


# ---------------------------------------------------------------- basic storage


def test_chapters_round_trip_and_upsert(store: LongformStore) -> None:
    store.put_chapter(2, "Second.", title="Two", embedding=[3.0, 4.0])
    store.put_chapter(1, "First.")
    assert store.get_chapter(2) == ChapterSummary(2, "Second.", "Two", "mpkZP83MTD8=")
    assert store.get_chapter(1) == ChapterSummary(1, "First.", "", None)
    assert store.get_chapter(3) is None
    store.put_chapter(2, "Second, rewritten.")
    assert store.get_chapter(2) == ChapterSummary(2, "Second, rewritten.", "", None)
    assert [c.number for c in store.get_chapters([2, 1, 2, 9])] == [1, 2]
    assert [c.number for c in store.iter_chapters()] == [1, 2]
    assert (store.chapter_count(), store.latest_chapter()) == (2, 2)


def test_empty_store(store: LongformStore) -> None:
    assert (store.chapter_count(), store.latest_chapter()) == (0, 0)
    assert store.entities() == []
    assert store.threads() == []


def test_embedding_given_as_wire_text_is_validated(store: LongformStore) -> None:
    store.put_chapter(1, "s", embedding="mpkZP83MTD8=")
    stored = store.get_chapter(1)
    assert stored is not None and decode_vector(stored.embedding or "") is not None
    with pytest.raises(InvalidInputError, match="wire-format"):
        store.put_chapter(2, "s", embedding="not a vector")


@pytest.mark.parametrize("number", [0, -1, 1.5, True, "3"])
def test_chapter_numbers_are_checked(store: LongformStore, number: object) -> None:
    with pytest.raises(InvalidInputError):
        store.put_chapter(number, "s")  # type: ignore[arg-type]


def test_put_chapters_rejects_other_objects(store: LongformStore) -> None:
    with pytest.raises(InvalidInputError) as info:
        store.put_chapters([ChapterSummary(1, "a"), (2, "b")])  # type: ignore[list-item]
    assert info.value.field == "chapters[1]"
    assert store.chapter_count() == 0  # the valid first row was rolled back with the rest


def test_entities_are_ordered_by_importance(store: LongformStore) -> None:
    store.put_entity("Mara", "captain", importance=5, last_seen_chapter=3)
    store.put_entity("Ilse", "navigator", importance=5, last_seen_chapter=9)
    store.put_entity("Tomas", "cook", importance=1)
    store.put_entity("Mara", "captain, wounded", importance=4, last_seen_chapter=10)
    assert [e.name for e in store.entities()] == ["Ilse", "Mara", "Tomas"]
    assert store.entities(limit=1) == [Entity("Ilse", "navigator", 5.0, 9, 0)]
    with pytest.raises(InvalidInputError):
        store.put_entity("", "nameless")


def test_entities_first_seen_later_stay_out_of_earlier_blocks(store: LongformStore) -> None:
    store.put_entity("Mara", "captain", importance=1, first_seen_chapter=1)
    store.put_entity("Oren", "stowaway", importance=9, first_seen_chapter=30)
    store.put_entity("Ilse", "navigator")  # undated: always eligible
    assert [e.name for e in store.entities(before_chapter=30)] == ["Mara", "Ilse"]
    assert [e.name for e in store.entities(before_chapter=31)] == ["Oren", "Mara", "Ilse"]
    early = [e.name for e in store.memory_block(10).result.entity.kept]
    late = [e.name for e in store.memory_block(40).result.entity.kept]
    assert (early, late) == (["Mara", "Ilse"], ["Oren", "Mara", "Ilse"])


# ---------------------------------------------------------------- schema, durability, locking


def test_schema_is_versioned_and_wal(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    with LongformStore(path) as first:
        assert first.schema_version() == SCHEMA_VERSION == 1
        first.put_chapter(1, "kept")
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"chapters", "entities", "threads"} <= tables
    with LongformStore(path) as again:
        assert again.get_chapter(1) == ChapterSummary(1, "kept")


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA user_version = 99")
    raw.close()
    with pytest.raises(StoreUnavailable, match="newer") as info:
        LongformStore(path)
    assert info.value.store == f"sqlite:{path}"


def test_unopenable_path_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable):
        LongformStore(tmp_path / "missing-dir" / "book.db")


def test_a_failed_bulk_write_stores_nothing(store: LongformStore) -> None:
    store.put_chapter(1, "before")

    def chapters() -> Iterator[ChapterSummary]:
        yield ChapterSummary(2, "two")
        yield ChapterSummary(3, "three")
        raise RuntimeError("the summariser crashed")

    with pytest.raises(RuntimeError, match="crashed"):
        store.put_chapters(chapters())
    assert [c.number for c in store.iter_chapters()] == [1]


def test_a_process_killed_mid_write_loses_only_that_write(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    script = textwrap.dedent(
        f"""
        import os
        from membrane.longform import ChapterSummary, LongformStore
        store = LongformStore({str(path)!r})
        store.put_chapters(ChapterSummary(n, "committed " * 50) for n in range(1, 11))
        def rows():
            for n in range(11, 2000):
                if n == 1500:
                    os._exit(3)  # no rollback, no close: as if the machine pulled the plug
                # ~10 KB rows, so uncommitted pages spill into the WAL before the crash
                yield ChapterSummary(n, "pending " * 1200)
        store.put_chapters(rows())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=subprocess_env(), timeout=120, capture_output=True
    )
    assert done.returncode == 3, done.stderr
    with LongformStore(path) as reopened:
        assert reopened.chapter_count() == 10
        assert reopened.latest_chapter() == 10
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_locked_database_raises_store_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    LongformStore(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with LongformStore(path, timeout=0.05) as blocked:
            assert blocked.chapter_count() == 0  # readers are not blocked in WAL mode
            with pytest.raises(StoreUnavailable, match="locked"):
                blocked.put_chapter(1, "waits for the lock and gives up")
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_one_writer_many_readers_see_whole_transactions(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    LongformStore(path).close()
    pairs = 150
    errors: list[BaseException] = []
    writer_done = threading.Event()

    def writer() -> None:
        try:
            with LongformStore(path) as own:
                for k in range(pairs):
                    own.put_chapters(
                        [
                            ChapterSummary(2 * k + 1, f"odd {k}"),
                            ChapterSummary(2 * k + 2, f"even {k}"),
                        ]
                    )
        except BaseException as exc:
            errors.append(exc)
        finally:
            writer_done.set()

    def reader() -> None:
        try:
            with LongformStore(path) as own:
                while not writer_done.is_set():
                    count = own.chapter_count()
                    assert count % 2 == 0, f"saw half a transaction: {count} chapters"
                    block = own.memory_block(max(1, count + 1), total=800)
                    assert block.used_tokens <= 800 - block.reserved_tokens
                    numbers = [c.number for c in own.iter_chapters()]
                    assert numbers == list(range(1, len(numbers) + 1))
                    assert len(numbers) % 2 == 0
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer)] + [
        threading.Thread(target=reader) for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[0]
    with LongformStore(path) as final:
        assert final.chapter_count() == 2 * pairs


def test_one_store_object_can_be_shared_by_threads(store: LongformStore) -> None:
    def write(offset: int) -> None:
        for n in range(offset, offset + 50):
            store.put_chapter(n, f"chapter {n}")
            assert store.get_chapter(n) is not None

    threads = [threading.Thread(target=write, args=(1 + 50 * i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert store.chapter_count() == 200


# ---------------------------------------------------------------- threads


def test_thread_lifecycle(store: LongformStore) -> None:
    opened = plan_thread_ops(
        [
            {"summary": "Who sent the letter?", "deadline_chapter": 6},
            {"summary": "The locked chest"},
        ],
        store.known_threads(2),
        chapter_number=2,
        total_chapters=20,
    )
    ids = store.apply_thread_plan(opened, chapter_number=2)
    assert len(ids) == 2
    known = store.known_threads(3)
    assert [t.summary for t in known] == ["Who sent the letter?", "The locked chest"]
    assert [t.deadline_chapter for t in known] == [6, 20]  # no deadline given: the ending

    step = plan_thread_ops(
        [
            {"action": "progress", "ref": "T2", "summary": "The chest has no keyhole"},
            {"action": "resolve", "ref": "T1", "summary": "Her brother", "resolution_note": "ch5"},
        ],
        known,
        chapter_number=5,
        total_chapters=20,
    )
    store.apply_thread_plan(step, chapter_number=5)
    everything = {t.summary: t for t in store.threads()}
    letter, chest = everything["Who sent the letter?"], everything["The locked chest"]
    assert (letter.status, letter.resolved_at_chapter, letter.resolution_note) == (
        "resolved",
        5,
        "ch5",
    )
    assert (chest.status, chest.last_activated_chapter) == ("progressing", 5)
    assert [t.id for t in store.threads(unresolved_only=True)] == [chest.id]
    assert [t.id for t in store.known_threads(6)] == [chest.id]


def test_a_stale_plan_is_refused_whole(store: LongformStore) -> None:
    store.apply_thread_plan(plan_thread_ops([{"summary": "a"}], [], 1, 10), chapter_number=1)
    known = store.known_threads(2)
    close = plan_thread_ops([{"action": "resolve", "ref": "T1", "summary": "done"}], known, 2, 10)
    store.apply_thread_plan(close, chapter_number=2)
    stale = plan_thread_ops(
        [{"summary": "new one"}, {"action": "progress", "ref": "T1", "summary": "again"}],
        known,
        3,
        10,
    )
    with pytest.raises(InvalidInputError, match="not an unresolved thread"):
        store.apply_thread_plan(stale, chapter_number=3)
    assert [t.summary for t in store.threads()] == ["a"]  # "new one" was rolled back too


# ---------------------------------------------------------------- the memory block


def test_memory_block_sections(store: LongformStore) -> None:
    fill_book(store, 300)
    query = [0.0] * DIM
    query[3] = 1.0
    block = store.memory_block(300, total=6000, query_embedding=query)
    result = block.result
    assert block.recent_from == 280
    assert block.skeleton_chapters == tuple(skeleton_chapters(300, 280))
    # Recent: the 20 chapters before 300, in reading order.
    assert [c.number for c in result.recent.kept] == list(range(280, 300))
    # Skeleton: a subset of the sampled chapters, in reading order.
    skeleton = [c.number for c in result.skeleton.kept]
    assert skeleton == sorted(skeleton) and set(skeleton) <= set(block.skeleton_chapters)
    # Retrieval: older chapters on topic 3, none from the recent window or the skeleton.
    retrieved = [c.number for c in result.retrieval.kept]
    assert retrieved
    assert all(topic_of(n) == 3 for n in retrieved)
    assert all(n < 280 and n not in block.skeleton_chapters for n in retrieved)
    assert set(block.retrieval_scores) >= set(retrieved)
    assert all(score > 0.9 for score in block.retrieval_scores.values())
    # Entities by importance.
    importances = [e.importance for e in result.entity.kept]
    assert importances == sorted(importances, reverse=True)


def test_memory_block_fits_and_renders_within_the_total(store: LongformStore) -> None:
    fill_book(store, 300)
    for total in (400, 1500, 6000):
        block = store.memory_block(250, total=total)
        text = block.render()
        assert block.used_tokens + block.reserved_tokens <= total
        assert estimate_tokens(text) <= total
        assert text.startswith(block.labels.entity)
        assert "Ch.249: " in text


def test_memory_block_size_is_flat_as_the_book_grows(store: LongformStore) -> None:
    fill_book(store, 600)
    sizes = [estimate_tokens(store.memory_block(n, total=3000).render()) for n in (100, 300, 600)]
    assert max(sizes) <= 3000
    # Once the skeleton holds its 12 entries the block stops growing: chapter 600 costs what
    # chapter 300 costs, to within a few tokens of longer chapter numbers.
    assert abs(sizes[2] - sizes[1]) <= 5
    assert sizes[0] < sizes[1]  # at chapter 100 the skeleton has only 8 entries


def test_memory_block_early_chapters(store: LongformStore) -> None:
    assert store.memory_block(1).render() == ""
    store.put_chapter(1, "Lin boards the ferry.")
    block = store.memory_block(2)
    assert block.render() == "## The latest chapters\nCh.1: Lin boards the ferry.\n"
    assert block.skeleton_chapters == ()


def test_memory_block_labels_and_counter(store: LongformStore) -> None:
    fill_book(store, 50)
    labels = BlockLabels(
        entity="## 人物",
        recent="## 最近の章",
        skeleton="## あらすじ",
        retrieval="## 関連する章",
        chapter_line="第{number}章：{summary}",
        entity_line="{name}／{description}",
    )
    counter = TiktokenAdapter("cl100k_base")
    block = store.memory_block(50, total=2000, labels=labels, counter=counter)
    assert block.result.counter_name == "cl100k_base"
    text = block.render()
    assert "## 最近の章\n第30章：" in text
    assert counter.count(text) <= 2000


def test_memory_block_rejects_bad_arguments(store: LongformStore) -> None:
    with pytest.raises(InvalidInputError):
        store.memory_block(0)
    with pytest.raises(InvalidInputError):
        store.memory_block(5, recent_chapters=-1)
    with pytest.raises(InvalidInputError, match="headings"):
        store.memory_block(5, total=5)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chapter=st.integers(1, 320), total=st.integers(40, 5000), recent=st.integers(0, 40))
def test_block_never_exceeds_its_total(
    filled: LongformStore, chapter: int, total: int, recent: int
) -> None:
    block = filled.memory_block(
        chapter, total=total, recent_chapters=recent, query_embedding=embedding_for(chapter)
    )
    assert block.used_tokens + block.reserved_tokens <= total
    assert estimate_tokens(block.render()) <= total


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LongformStore]:
    with LongformStore(tmp_path_factory.mktemp("book") / "filled.db") as opened:
        fill_book(opened, 300)
        yield opened


@pytest.mark.parametrize("count", [0, 1, 2, 3, 7, 12, 13, 50])
def test_coarse_to_fine_order_is_a_spread_permutation(count: int) -> None:
    from membrane.longform.store import _coarse_to_fine

    order = _coarse_to_fine(count)
    assert sorted(order) == list(range(count))
    if count >= 2:
        # The first two picks are the two ends' representatives: the start and the middle.
        assert order[:2] == [0, count // 2]


def test_a_trimmed_skeleton_still_spans_the_book(store: LongformStore) -> None:
    store.put_chapters(ChapterSummary(n, f"{n} " + "long summary " * 40) for n in range(1, 400))
    block = store.memory_block(400, total=1400, recent_chapters=5)
    kept = [c.number for c in block.result.skeleton.kept]
    assert 0 < len(kept) < len(block.skeleton_chapters)  # trimmed ...
    assert kept[0] == 1 and kept[-1] > 400 // 2  # ... but not to the first half of the book
