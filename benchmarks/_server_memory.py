"""What the compiler keeps per conversation, and how far a process's memory grows with many.

Both parts run in a fresh Python process of their own (``python -m benchmarks.server_costs
--child ...``), so no earlier measurement's memos or allocations are counted.

- :func:`bytes_per_conversation`: one compiler, one conversation of ``messages`` long messages
  (``benchmarks._long_messages``) compiled turn by turn under ``tracemalloc``. The messages are
  parsed from JSON inside the traced window and the caller's list is dropped at the end, so a
  message the compiler still holds is counted. Reported: everything still traced (``total``),
  that less the process-wide text memos (``without_memos``), that less the compiler's token
  counts too (``state``: the trackers, system texts, checked prefixes and the in-process store),
  and the trackers' own count of their bytes (``tracker_count``, which must not be below what
  ``state`` finds). The caller passes ``history_version`` (each turn's number), as a server with
  long conversations would.
- :func:`rss_growth`: ``conversations`` chats of ``messages`` messages through one compiler with
  ``cache_bytes``, turn by turn; the process's resident memory before (after a warm-up chat)
  and after, against the documented bound: ``cache_bytes`` plus the process-wide memos
  (``membrane.memo.memo_bytes()``).
"""

from __future__ import annotations

import gc
import json
import resource
import time
import tracemalloc
from typing import Any

from benchmarks._long_messages import long_message_chat

__all__ = ["bytes_per_conversation", "rss_growth"]

BUDGET = 8000


def _compiler(cache_bytes: int | None = None) -> Any:
    from membrane import ContextCompiler
    from membrane.config import DEFAULT_CACHE_BYTES

    return ContextCompiler(
        BUDGET,
        model_id="openai/gpt-4o",
        token_scale=1.0,
        cache_bytes=DEFAULT_CACHE_BYTES if cache_bytes is None else cache_bytes,
    )


def _warm(compiler: Any, conversation: str) -> None:
    """A chat of its own seed: loads the encoding and fills the memos' fixed parts."""
    for history, question in long_message_chat(24, 9_999).turns():
        compiler.compile([], question, conversation_messages=history, conversation_id=conversation)


def _run_chat(compiler: Any, raw: str, conversation: str) -> None:
    """Every user turn of the chat in ``raw`` (JSON), parsed here, the list dropped after."""
    messages = json.loads(raw)
    for version, at in enumerate(range(0, len(messages), 2)):
        compiler.compile(
            [],
            messages[at]["content"],
            conversation_messages=messages[:at],
            conversation_id=conversation,
            history_version=version,
        )


def _forget_counts(compiler: Any) -> None:
    for memo in compiler._counters._memos.values():
        memo.shrink(0)


def bytes_per_conversation(messages: int) -> dict[str, Any]:
    from membrane.memo import clear_memos

    raw = json.dumps(long_message_chat(messages, 4_242).messages)
    text = sum(len(m["content"].encode()) for m in json.loads(raw))
    compiler = _compiler()
    _warm(compiler, "warm")
    compiler.forget("warm")
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    _run_chat(compiler, raw, "measured")
    elapsed = time.perf_counter() - t0
    gc.collect()
    total = tracemalloc.get_traced_memory()[0] - base
    clear_memos()
    gc.collect()
    without_memos = tracemalloc.get_traced_memory()[0] - base
    _forget_counts(compiler)
    gc.collect()
    state = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    trackers = list(compiler._window._trackers._data.values())
    counted = sum(tracker.held_bytes() for tracker in trackers)
    return {
        "messages": messages,
        "text_bytes": text,
        "total_bytes": total,
        "without_memos_bytes": without_memos,
        "state_bytes": state,
        "tracker_count_bytes": counted,
        "state_over_text": state / text,
        "total_over_text": total / text,
        "seconds": elapsed,
    }


def _rss() -> int:
    """Resident memory now, in bytes (Linux /proc; else the peak from getrusage)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * resource.getpagesize()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def rss_growth(conversations: int, messages: int, cache_bytes: int) -> dict[str, Any]:
    from membrane.memo import memo_bytes, memos_held_bytes

    compiler = _compiler(cache_bytes)
    _warm(compiler, "warm")
    gc.collect()
    before = _rss()
    t0 = time.perf_counter()
    text = 0
    for i in range(conversations):
        raw = json.dumps(long_message_chat(messages, 20_000 + i).messages)
        text += len(raw)
        _run_chat(compiler, raw, f"c{i}")
    gc.collect()
    after = _rss()
    bound = cache_bytes + memo_bytes()
    held = compiler._window._trackers.total_bytes + compiler._window._system_texts.total_bytes
    return {
        "conversations": conversations,
        "messages_per_conversation": messages,
        "cache_bytes": cache_bytes,
        "memo_bytes": memo_bytes(),
        "bound_bytes": bound,
        "rss_growth_bytes": after - before,
        "rss_growth_over_bound": (after - before) / bound,
        "trackers_kept": len(compiler._window._trackers),
        "caches_count_bytes": held + compiler._counters.held_bytes,
        "memos_count_bytes": memos_held_bytes(),
        "store_entries": len(compiler.state_store._data)
        if hasattr(compiler.state_store, "_data")
        else None,
        "json_text_bytes": text,
        "seconds": time.perf_counter() - t0,
    }
