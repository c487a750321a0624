"""Store round trips per compile: one read and one write of the conversation's one key at most,
and the model's scale read once per ``SCALE_CACHE_SECONDS`` (a fake clock; nothing sleeps)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from membrane import ContextCompiler
from membrane.compile_state import SCALE_CACHE_SECONDS, StateScope, StoreNotes
from membrane.state import InMemoryStateStore, RedisStateStore
from membrane.state.keys import conversation_key, scale_key
from tests.state.counting import count_commands

TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
MODEL = "openai/gpt-4o"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountingStore(InMemoryStateStore):
    """The in-process store, counting calls by (operation, key)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[tuple[str, str]] = Counter()

    def get(self, key: str) -> dict[str, Any] | None:
        self.calls["get", key] += 1
        return super().get(key)

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.calls["put", key] += 1
        super().put(key, value)


def _history(turn: int) -> list[dict[str, Any]]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"message {i}: locker L-{i * 7} belongs to team T{i}. " + "words " * 25,
        }
        for i in range(turn * 2)
    ]


def test_per_compile_one_read_and_one_write_of_one_key(redis_client: Any) -> None:
    clock = Clock()
    compiler = ContextCompiler(
        900, model_id=MODEL, state_store=RedisStateStore(redis_client, deadline_seconds=5.0)
    )
    compiler._scope = StateScope(clock=clock)  # the compiler's own, with a clock we move
    seen = count_commands(redis_client)
    conversation = "membrane:state:" + conversation_key("c1")
    scale = "membrane:state:" + scale_key(MODEL)
    writes = 0
    for turn in range(1, 40):
        seen.clear()
        result = compiler.compile(
            [],
            "Which locker?",
            conversation_messages=_history(turn),
            conversation_id="c1",
            tools=TOOLS,
        )
        assert set(seen) <= {("GET", conversation), ("EVAL", conversation), ("GET", scale)}
        assert seen["GET", conversation] == 1  # the tools' fingerprint needs it every turn
        assert seen["EVAL", conversation] <= 1
        assert seen["GET", scale] == (1 if turn == 1 else 0)
        writes += seen["EVAL", conversation]
    assert result.metadata["history_messages_dropped"] > 0
    assert 1 < writes < 39  # written on the first turn and at cuts, not every turn
    clock.now += SCALE_CACHE_SECONDS  # the cached scale is stale now
    seen.clear()
    compiler.compile([], "Which locker?", conversation_messages=_history(40), conversation_id="c1")
    assert seen["GET", scale] == 1


def test_a_short_chat_without_tools_costs_no_conversation_round_trip(redis_client: Any) -> None:
    compiler = ContextCompiler(
        4000, model_id=MODEL, state_store=RedisStateStore(redis_client, deadline_seconds=5.0)
    )
    compiler.token_scale_for()  # the scale is cached from here on
    seen = count_commands(redis_client)
    compiler.compile([], "Hi", conversation_messages=_history(2), conversation_id="c2")
    assert sum(seen.values()) == 0


def test_the_scale_cache() -> None:
    clock, store, other = Clock(), RedisLike(), RedisLike()
    scope = StateScope(clock=clock)
    assert scope.calibration(store, MODEL).scale == 1.0
    store.put(scale_key(MODEL), {"scale": 1.5})  # another worker's observation
    assert scope.calibration(store, MODEL).scale == 1.0  # still cached
    clock.now += SCALE_CACHE_SECONDS - 0.001
    assert scope.calibration(store, MODEL).scale == 1.0
    clock.now += 0.001
    assert scope.calibration(store, MODEL).scale == 1.5  # read again
    assert store.calls["get", scale_key(MODEL)] == 2
    assert scope.calibration(other, MODEL).scale == 1.0  # a cache entry is one store's
    observed = scope.observe(store, MODEL, 1000, 2000)  # reads afresh, writes, caches
    assert store.calls["get", scale_key(MODEL)] == 3
    assert scope.calibration(store, MODEL) == observed
    assert store.calls["get", scale_key(MODEL)] == 3


def test_the_in_process_store_is_read_every_time() -> None:
    store, scope = CountingStore(), StateScope(clock=Clock())
    for _ in range(3):
        scope.calibration(store, MODEL, StoreNotes())
    assert store.calls["get", scale_key(MODEL)] == 3


class RedisLike:
    """A store that is not the in-process one (so its scale reads are cached), counting calls."""

    def __init__(self) -> None:
        self.inner = CountingStore()
        self.calls = self.inner.calls

    def get(self, key: str) -> dict[str, Any] | None:
        return self.inner.get(key)

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.inner.put(key, value)
