"""A worker that never saw a conversation resumes it from the state store, byte for byte.

Each turn is compiled three ways: by the worker that saw every turn, by a fresh worker whose
store holds what that worker had saved (it restores the tracker), and by a fresh worker whose
store holds the same minus the saved tracker (it replays the history). All three send the same
messages, with the in-process store and with a real redis-server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from membrane import ContextCompiler, InMemoryStateStore, RedisStateStore
from membrane.caches import LRUCache
from membrane.compile_state import conversation_key
from membrane.stages.window import SHORT_HISTORY_MESSAGES
from membrane.state import STATE_FORMAT_VERSION, StateStore, StateStoreWarning
from tests.strategies import conversations

KEY = conversation_key("c")
CODES = st.lists(st.integers(100, 999), min_size=40, max_size=40)


def _with_codes(history: list[dict[str, Any]], codes: list[int]) -> list[dict[str, Any]]:
    """Give some messages a rare code, so cuts leave index lines behind."""
    out = []
    for i, message in enumerate(history):
        content = message.get("content")
        if isinstance(content, str) and message["role"] == "user" and i % 3 == 0:
            message = {**message, "content": f"{content} Ticket KX-{codes[i % len(codes)]}-{i}."}
        out.append(message)
    return out


def _compiler(store: StateStore, budget: int) -> ContextCompiler:
    return ContextCompiler(budget, core_content="Be brief.", token_scale=1.0, state_store=store)


def _three_ways(
    history: list[dict[str, Any]], budget: int, store: Callable[[str], StateStore]
) -> list[str]:
    """Compile every turn three ways; returns how each fresh resuming worker got its tracker."""
    seen = store("seen")
    worker = _compiler(seen, budget)
    outcomes = []
    tracked = False  # the worker has compiled this conversation with some history
    for end in range(1, len(history) + 1):
        if history[end - 1]["role"] != "user" or not isinstance(history[end - 1]["content"], str):
            continue  # a turn starts with the user's own words (not a tool's result)
        turn = history[:end]
        saved = seen.get(KEY)
        resuming, replaying = store("resuming"), store("replaying")
        if saved is not None:
            resuming.put(KEY, saved)
            replaying.put(KEY, {k: v for k, v in saved.items() if k != "tracker"})
        ask = dict(conversation_messages=turn[:-1], conversation_id="c")
        question = turn[-1]["content"]
        fresh = _compiler(resuming, budget).compile([], question, **ask)
        replayed = _compiler(replaying, budget).compile([], question, **ask)
        kept = worker.compile([], question, **ask)
        assert fresh.messages == kept.messages
        assert replayed.messages == kept.messages
        outcomes.append(fresh.metadata.get("history_resume"))
        if kept.metadata.get("history_resume") is not None:
            assert (kept.metadata["history_resume"] == "in_process") is tracked
            tracked = True
            has_tracker = saved is not None and "tracker" in saved
            short = len(turn) - 1 <= SHORT_HISTORY_MESSAGES
            assert fresh.metadata["history_resume"] == (
                "replayed:short" if short else "resumed" if has_tracker else "replayed:no_state"
            )
            assert replayed.metadata["history_resume"] == (
                "replayed:short" if short else "replayed:no_state"
            )
    return outcomes


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=conversations(max_turns=40), codes=CODES, budget=st.integers(350, 1200))
def test_in_process_store_same_bytes_resumed_or_replayed(
    history: list[dict[str, Any]], codes: list[int], budget: int
) -> None:
    stores: dict[str, StateStore] = {}

    def store(name: str) -> StateStore:
        stores[name] = InMemoryStateStore()
        return stores[name]

    _three_ways(_with_codes(history, codes), budget, store)


@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(history=conversations(max_turns=30), codes=CODES, budget=st.integers(350, 900))
def test_redis_store_same_bytes_resumed_or_replayed(
    redis_client: Any, history: list[dict[str, Any]], codes: list[int], budget: int
) -> None:
    redis_client.flushdb()

    def store(name: str) -> StateStore:
        for key in redis_client.scan_iter(f"{name}:*"):
            redis_client.delete(key)
        return RedisStateStore(redis_client, prefix=f"{name}:", deadline_seconds=5.0)

    _three_ways(_with_codes(history, codes), budget, store)


def _long_history(turns: int) -> list[dict[str, Any]]:
    out = []
    for i in range(turns):
        out.append({"role": "user", "content": f"Note the order code KX-{i}-{i * 7 % 13}, please."})
        out.append({"role": "assistant", "content": f"Noted: order {i} is in the ledger now."})
    return out


def test_a_fresh_worker_resumes_from_the_saved_tracker() -> None:
    history = _long_history(60)
    store = InMemoryStateStore()
    _compiler(store, 600).compile(
        [], "And now?", conversation_messages=history, conversation_id="c"
    )
    saved = store.get(KEY)
    assert saved is not None and saved["version"] == STATE_FORMAT_VERSION
    grown = [
        *history,
        {"role": "user", "content": "Next."},
        {"role": "assistant", "content": "Ok."},
    ]
    result = _compiler(store, 600).compile(
        [], "What now?", conversation_messages=grown, conversation_id="c"
    )
    assert result.metadata["history_resume"] == "resumed"


def test_a_rewritten_history_is_replayed() -> None:
    history = _long_history(60)
    store = InMemoryStateStore()
    _compiler(store, 600).compile(
        [], "And now?", conversation_messages=history, conversation_id="c"
    )
    rewritten = [{"role": "user", "content": "A different start."}, *history[1:]]
    result = _compiler(store, 600).compile(
        [], "What now?", conversation_messages=rewritten, conversation_id="c"
    )
    assert result.metadata["history_resume"] == "replayed:prefix"


@pytest.mark.parametrize(
    "damage",
    [
        lambda t: t.update(cut=t["units"] + 1),
        lambda t: t.update(df="not base64!"),
        lambda t: t.update(kept=[[0, 1]]),
        lambda t: t.update(lines=[[10**9, "x", 1]]),
        lambda t: t.update(digest=7),
    ],
)
def test_a_bad_snapshot_is_discarded_with_a_warning(damage: Callable[[dict], None]) -> None:
    history = _long_history(60)
    store = InMemoryStateStore()
    compile_args = dict(conversation_messages=history, conversation_id="c")
    clean = _compiler(InMemoryStateStore(), 600).compile([], "Now?", **compile_args)
    _compiler(store, 600).compile([], "Now?", **compile_args)
    saved = store.get(KEY)
    assert saved is not None
    damage(saved["tracker"])
    store.put(KEY, saved)
    with pytest.warns(StateStoreWarning, match="history snapshot"):
        result = _compiler(store, 600).compile([], "Now?", **compile_args)
    assert result.metadata["history_resume"] == "replayed:invalid"
    assert result.metadata["state_discarded"] == ["conversation"]
    assert result.messages == clean.messages


def test_a_newer_version_is_read_as_absent_and_flagged() -> None:
    history = _long_history(60)
    store = InMemoryStateStore()
    compile_args = dict(conversation_messages=history, conversation_id="c")
    clean = _compiler(InMemoryStateStore(), 600).compile([], "Now?", **compile_args)
    _compiler(store, 600).compile([], "Now?", **compile_args)
    saved = store.get(KEY)
    assert saved is not None
    store.put(KEY, {**saved, "version": STATE_FORMAT_VERSION + 1, "room": 1})
    with pytest.warns(StateStoreWarning, match="format version"):
        result = _compiler(store, 600).compile([], "Now?", **compile_args)
    assert result.metadata["history_resume"] == "replayed:no_state"
    assert result.metadata["state_discarded"] == ["conversation"]
    assert result.messages == clean.messages


def test_lru_cache_is_bounded_by_bytes() -> None:
    cache: LRUCache[str, str] = LRUCache(100, max_bytes=10, size=len)
    cache.put("a", "xxxx")
    cache.put("b", "yyyy")
    assert len(cache) == 2 and cache.total_bytes == 8
    cache.put("c", "zzzz")  # 12 bytes: the least recently used leaves
    assert cache.get("a") is None and cache.total_bytes == 8
    cache.put("b", "y" * 50)  # the newest entry stays, alone, however large
    assert len(cache) == 1 and cache.get("b") == "y" * 50
    cache.discard_where(lambda k: True)
    assert cache.total_bytes == 0


def test_a_resumed_worker_recalls_by_stem_as_the_worker_that_saw_every_turn() -> None:
    # "cities" finds "city" only by its stem, "citi", which "city" does not contain.
    history = [
        {"role": "user", "content": "Porto was the only city we saw."},
        {"role": "assistant", "content": "Noted."},
        *_long_history(60),
    ]
    store = InMemoryStateStore()
    seen = _compiler(store, 600)
    seen.compile([], "And now?", conversation_messages=history, conversation_id="c")
    kept = seen.compile([], "Which cities?", conversation_messages=history, conversation_id="c")
    fresh = _compiler(store, 600).compile(
        [], "Which cities?", conversation_messages=history, conversation_id="c"
    )
    assert fresh.metadata["history_resume"] == "resumed"
    assert kept.metadata["history_messages_recalled"] == 1
    assert fresh.messages == kept.messages
