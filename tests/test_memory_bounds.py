"""Every cache is bounded by bytes of real memory, and its count of them is not below it."""

from __future__ import annotations

import gc
import sys
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane import ContextCompiler, InvalidInputError
from membrane.config import DEFAULT_CACHE_BYTES
from membrane.memo import (
    clear_memos,
    memo_bytes,
    memoised,
    memos_held_bytes,
    pieces_bytes,
    strings_bytes,
)
from membrane.prompt_text import fold_char
from membrane.stages.history import HistoryTracker
from membrane.tokenizers import count_tokens

_WORDS = (
    *("harbor", "lantern", "cobalt", "meadow", "falcon", "granite", "willow", "osprey"),
    *("cedar", "topaz", "bramble", "quartz", "heron", "marigold", "obsidian", "sycamore"),
    *("juniper", "basalt", "tamarind", "kestrel", "saffron"),
)


def _chat(messages: int, seed: int) -> list[dict[str, Any]]:
    """Messages of a few sentences, each naming a code of its own and varied words."""
    out = []
    for i in range(messages):
        words = [_WORDS[(seed * 7 + i * 3 + k) % len(_WORDS)] for k in range(24)]
        text = (
            f"Order {seed}-{i}-KX went to {words[0].title()} today. "
            + " ".join(words[1:12])
            + ". "
            + " ".join(words[12:])
            + f" and the tag is T{seed * 1000 + i}."
        )
        out.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
    return out


def _traced(run: Any) -> tuple[Any, int]:
    """What ``run()`` returns, and the bytes still traced once the memos are emptied."""
    count_tokens("The encoding is loaded before anything is traced.")
    # So are the compiler's modules: they load on first use, once per process.
    warm = ContextCompiler(1_000, model_id="openai/gpt-4o")  # the capability map too
    warm.compile([], "Warm up.", conversation_messages=_chat(4, seed=99))
    clear_memos()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        value = run()
        clear_memos()
        fold_char.cache_clear()  # a few thousand characters, process-wide, not ours to count
        gc.collect()
        return value, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


@pytest.fixture(autouse=True)
def _empty_memos() -> Iterator[None]:
    clear_memos()
    yield
    clear_memos()


def test_a_tracker_counts_at_least_the_memory_it_holds() -> None:
    history = _chat(240, seed=3)

    def build() -> HistoryTracker:
        tracker = HistoryTracker(900, 450, count_tokens, 3, 40, line_room=160)
        for upto in range(2, len(history) + 1, 2):
            tracker.update(history[:upto], "h")
            tracker.forget_lines(160)
        tracker.postings.get("harbor")  # a look-up, as recall makes
        return tracker

    tracker, real = _traced(build)
    assert tracker.cut > 100  # most of the chat was dropped: passages, postings, lines
    counted = tracker.held_bytes()
    assert real <= counted <= 1.6 * real, (real, counted)


def test_a_process_memo_holds_at_most_its_share() -> None:
    share = 256 * 1024 / memo_bytes()

    @memoised(share, pieces_bytes)
    def words(text: str) -> tuple[str, ...]:
        return tuple(text.split())

    def fill() -> None:
        for i in range(3_000):
            words(f"sentence {i} " + "with a few more words in it " * 4)

    _, real = _traced(fill)
    # The memo's own count, and the real memory behind it, stay within its 256 KiB.
    assert memos_held_bytes() == 0  # emptied by _traced
    assert real <= 256 * 1024, real


def test_the_process_memos_count_at_least_what_emptying_them_frees() -> None:
    """Each production memo's own count of its entries (memory bodies, stated words, sentence
    splits, ...) covers the memory its entries hold: emptying them frees no more."""
    from membrane import MemoryItem

    history = _chat(120, seed=5)
    compiler = ContextCompiler(2_500, model_id="openai/gpt-4o")
    count_tokens("The encoding is loaded before anything is traced.")
    compiler.compile([], "Warm up.", conversation_messages=_chat(4, seed=99))
    clear_memos()
    gc.collect()
    tracemalloc.start()
    try:
        for upto in range(2, len(history) + 1, 2):
            words = [_WORDS[(upto + k) % len(_WORDS)] for k in range(5)]
            memories = [
                MemoryItem(f"m{upto}-{k}", f"Fact {upto} about {w}.") for k, w in enumerate(words)
            ]
            question = "Where did the order go?"
            compiler.compile(memories, question, conversation_messages=history[:upto])
        gc.collect()
        held = memos_held_bytes()
        before = tracemalloc.get_traced_memory()[0]
        clear_memos()
        gc.collect()
        freed = before - tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held > 0
    assert freed <= held, (freed, held)


def test_a_compilers_caches_stay_within_cache_bytes() -> None:
    cache = 512 * 1024
    compiler = ContextCompiler(1_500, model_id="openai/gpt-4o", token_scale=1.0, cache_bytes=cache)
    chats = [_chat(60, seed) for seed in range(12)]

    def serve() -> None:
        for n, chat in enumerate(chats):
            for upto in range(0, len(chat), 2):
                compiler.compile(
                    [],
                    chat[upto]["content"],
                    conversation_messages=chat[:upto],
                    conversation_id=f"c{n}",
                )

    _, real = _traced(serve)
    window = compiler._window
    assert len(window._trackers) < len(chats)  # the bound made room by dropping trackers
    counted = window._trackers.total_bytes + window._system_texts.total_bytes
    assert counted <= cache - cache // 4
    assert compiler._counters.held_bytes <= cache // 4
    # What is still held: the caches, and the conversations' values in the in-process store.
    stored = sum(len(raw) + 200 for raw, _, _ in compiler.state_store._data.values())
    assert real <= 1.25 * cache + stored, (real, stored)


def test_cache_bytes_is_an_option_with_a_default() -> None:
    assert ContextCompiler(1_000).cache_bytes == DEFAULT_CACHE_BYTES
    assert ContextCompiler(1_000, cache_bytes=0).cache_bytes == 0
    with pytest.raises(InvalidInputError, match="cache_bytes"):
        ContextCompiler(1_000, cache_bytes=-1)


def test_the_proofs_of_validated_histories_are_bounded_by_their_share() -> None:
    """What each conversation's last validation proved (a hash state and the pickled messages
    after the last whole chunk) is a cache like the others: a twentieth of three quarters of
    ``cache_bytes``, counted generously."""
    cache = 512 * 1024
    compiler = ContextCompiler(1_500, token_scale=1.0, cache_bytes=cache)
    for n in range(40):
        chat = _chat(60, seed=n)
        compiler.compile([], "And then?", conversation_messages=chat, conversation_id=f"c{n}")
    proofs = compiler._window.proofs
    share = (cache - cache // 4) // 20
    assert 0 < proofs.total_bytes <= share
    assert len(proofs) < 40  # the bound made room by dropping the oldest
    kept = [proofs.get(f"c{n}") for n in range(40)]
    assert kept[-1] is not None and kept[0] is None
    assert all(p.held_bytes() > len(p.content.tail) for p in kept if p and p.content)


@given(st.lists(st.text(max_size=30) | st.integers() | st.floats(allow_nan=False), max_size=12))
def test_strings_are_counted_at_the_bytes_they_hold(items: list[object]) -> None:
    """The joined-length count of ASCII strings is what sizing each one gives, and anything
    else (non-ASCII text, numbers) is sized one by one."""
    assert strings_bytes(items) == sum(sys.getsizeof(item) for item in items)
    assert strings_bytes(tuple(items)) == strings_bytes(items)
