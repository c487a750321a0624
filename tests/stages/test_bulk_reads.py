"""Bulk reads (issue 35, point 21): a history replayed whole and a huge offer are read once,
in one go where that is cheaper, and fill no memo; what they give is what the ordinary
path gives."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from membrane import ContextCompiler, memo
from membrane.records import MemoryItem
from membrane.stages import final, values
from membrane.stages.history import HistoryTracker
from membrane.stages.history import _cut as cut
from membrane.stages.history._index import could_earn_line, index_line
from membrane.stages.history._passages import PASSAGE_WORDS, passages_of
from membrane.stages.history._replay import LONG_REPLAY_MESSAGES
from membrane.text import sentences
from membrane.text.sentences import split_sentences
from membrane.text.sketch import TermSketch
from membrane.tokenizers import MemoizedCounter, TiktokenAdapter, count_each
from membrane.tokenizers import count_tokens as tiktoken_count

OVERHEAD = 3


class _WordCounter:
    """Counts words; notes each text counted alone and each batch counted at once."""

    name = "words"

    def __init__(self) -> None:
        self.alone: list[str] = []
        self.batches: list[int] = []

    def count(self, text: str) -> int:
        self.alone.append(text)
        return len(text.split())

    def count_each(self, texts: Sequence[str]) -> list[int]:
        self.batches.append(len(texts))
        return [len(text.split()) for text in texts]


def _history(n: int) -> list[dict[str, Any]]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"Parcel PX-{i * 37 % 1000} left {['Oslo', 'Lima', 'Pune'][i % 3]} "
            f"on day {i}. It was {['late', 'early', 'on time'][i % 3]}.",
        }
        for i in range(n)
    ]


def _tracker(count: Any, room: int | None = 200) -> HistoryTracker:
    return HistoryTracker(300, 150, count, OVERHEAD, 40, line_room=room)


def test_a_long_replay_counts_its_texts_in_one_batch_and_memoises_none() -> None:
    inner = _WordCounter()
    counter = MemoizedCounter(inner)
    history = _history(400)
    tracker = _tracker(counter.count)
    tracker.update(history, "h")
    assert inner.batches == [len(history)]
    texts = {m["content"] for m in history}
    # The index lines made at the end are counted alone; no replayed message text is.
    assert not texts & set(inner.alone)
    assert len(counter) < len(history) // 4


def test_a_long_replay_ends_where_one_fed_turn_by_turn_does() -> None:
    history = _history(400)
    long = _tracker(MemoizedCounter(_WordCounter()).count)
    long.update(history, "h")
    stepwise = _tracker(MemoizedCounter(_WordCounter()).count)
    for stop in range(2, len(history) + 1, 2):
        stepwise.update(history[:stop], "h")
        stepwise.forget_lines(200)
    long.forget_lines(200)
    assert long.unit_tokens == stepwise.unit_tokens
    assert (long.cut, long.events, long.lines) == (stepwise.cut, stepwise.events, stepwise.lines)
    assert list(long.passages) == list(stepwise.passages)
    assert long.stats.to_text() == stepwise.stats.to_text()  # type: ignore[attr-defined]


def test_a_long_replay_reads_words_and_sentences_without_the_memos(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The memoised readers are not called for the replayed messages (the sentence splitter
    only for the few messages the index looks at in the end)."""
    calls = {"words": 0, "split": 0}
    words, split = cut.content_words, sentences._split

    def counted_words(text: str) -> tuple[str, ...]:
        calls["words"] += 1
        return words(text)

    def counted_split(text: str) -> tuple[str, ...]:
        calls["split"] += 1
        return split(text)

    monkeypatch.setattr(cut, "content_words", counted_words)
    monkeypatch.setattr(sentences, "_split", counted_split)
    tracker = _tracker(tiktoken_count)
    history = _history(300)
    assert len(history) >= LONG_REPLAY_MESSAGES
    tracker.update(history, "h")
    assert calls["words"] == 0
    assert calls["split"] < len(history) // 10
    # A later turn reads its new messages through the memos, sentence by sentence: the
    # question and the answer, two sentences each.
    calls["split"] = 0
    tracker.update([*history, *_history(2)], "h")
    assert calls["words"] == 4
    assert calls["split"] >= 2


def test_count_each_gives_the_counts_the_memo_gives() -> None:
    texts = [m["content"] for m in _history(50)] + ["", "a\n\nb. C!", "  x  ", "[Mem:3] note"]
    memoised = MemoizedCounter(TiktokenAdapter())
    assert count_each(MemoizedCounter(TiktokenAdapter()).count, texts) == [
        memoised.count(t) for t in texts
    ]
    assert count_each(len, texts) == [len(t) for t in texts]  # any callable: one by one


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["Hi.", "Yes!", "Is it?", "the", "Oslo", "\n", "a-b", " "])))
def test_a_text_shorter_than_a_passage_is_one_passage_of_its_sentences(parts: list[str]) -> None:
    text = " ".join(parts)
    found = passages_of(0, 0, "user", text, memoise=False)
    sentences = split_sentences(text)
    if len(text.split()) >= PASSAGE_WORDS:
        return
    assert found == passages_of(0, 0, "user", text)
    if not sentences:
        assert found == []
    else:
        assert [p.sentences for p in found] == [tuple(sentences)]


def test_a_message_the_index_skips_unread_earns_no_line() -> None:
    stats = TermSketch()
    for i in range(30):
        stats.add(f"the courier went to the depot at dawn {i % 2}")
    for text in [
        "The courier went to the depot.",
        "At dawn the courier went.",
        "Depot KX-7 at Tromso.",
        "Münchën depot.",
    ]:
        if not could_earn_line(text, stats):
            assert index_line(0, "user", text, stats, tiktoken_count, 40) is None
    assert not could_earn_line("The courier went to the depot.", stats)
    assert could_earn_line("Depot KX-7 at Tromso.", stats)


def _offer_compile(bulk: int) -> tuple[list[Any], int]:
    memo.clear_memos()
    compiler = ContextCompiler(600)
    memories = [
        MemoryItem(id=f"m{i}", content=f"Crate {i} of batch B{i % 7} is stored in room {i}.")
        for i in range(60)
    ]
    result = compiler.compile(memories, "Where is crate 42 of batch B0?")
    return result.messages, memo.memos_held_bytes()


def test_a_huge_offer_fills_no_memo_and_compiles_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ordinary, held_ordinary = _offer_compile(memo.BULK_ITEMS)
    from membrane.request import _offer

    for module in (final, values, _offer):
        monkeypatch.setattr(module, "BULK_ITEMS", 10)
    bulk, held_bulk = _offer_compile(10)
    assert bulk == ordinary
    assert held_bulk < held_ordinary / 2


def test_skipped_memo_writes_still_read_and_compute_the_same() -> None:
    memo.clear_memos()
    before = memo.memos_held_bytes()
    with memo.skip_memo_writes():
        assert memo.writes_skipped()
        assert split_sentences("One. Two!") == ["One.", "Two!"]
    assert not memo.writes_skipped()
    assert memo.memos_held_bytes() == before
    with memo.skip_memo_writes(False):
        assert not memo.writes_skipped()
    split_sentences("One. Two!")
    assert memo.memos_held_bytes() > before
