"""A frozen or dead Redis cannot hold a compile (issue 11, point 7; reproducer f6_frozen_redis.py).

Each test runs its own redis-server, freezes it with SIGSTOP (the kernel still accepts the
connection and the bytes; nothing answers) and kills it with SIGKILL (connections refused). The
bound asserted is the issue's: a compile returns within the store's deadline + 1 s, and the store
recorded its call as abandoned at the deadline. How far past the deadline calls really end is
measured in ``benchmarks/store_deadline.py``, not here.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from membrane import CompileResult, ContextCompiler, MemoryItem
from membrane.errors import InvalidInputError, StoreUnavailable
from membrane.state import InMemoryStateStore, RedisStateStore, StateStoreWarning
from membrane.state.keys import conversation_key
from membrane.state.redis import (
    bounded_client,
    get_ref_map_for_conversation,
    set_ref_map_for_conversation,
)
from tests.redis_process import RedisProcess

DEADLINE = 0.25
CONVERSATION = "c9"
STATE_KEY = "membrane:state:" + conversation_key(CONVERSATION)


def _histories(turns: int) -> list[list[dict[str, Any]]]:
    history: list[dict[str, Any]] = []
    prefixes = []
    for i in range(turns):
        prefixes.append(list(history))
        history.append(
            {
                "role": "user",
                "content": f"Turn {i}: the locker for team T{i} is L-{i * 7 + 3}. "
                "We also chatted about the offsite agenda and lunch options at length.",
            }
        )
        history.append({"role": "assistant", "content": f"Noted locker L-{i * 7 + 3} for T{i}."})
    return prefixes


HISTORIES = _histories(40)


def _compiler(store: Any) -> ContextCompiler:
    return ContextCompiler(
        1200, model_id="openai/gpt-4o", core_content="Office assistant.", state_store=store
    )


def _turn(compiler: ContextCompiler, turn: int) -> CompileResult:
    memories = [
        MemoryItem(id=f"m{turn}-{i}", content=f"Team T{turn} sits on floor {i}.") for i in range(4)
    ]
    return compiler.compile(
        memories,
        f"Which locker does team T{max(turn - 12, 0)} use?",
        conversation_messages=HISTORIES[turn],
        conversation_id=CONVERSATION,
    )


def _timed(call: Any) -> tuple[Any, float]:
    started = time.monotonic()
    out = call()
    return out, time.monotonic() - started


def _store_error(call: Any) -> tuple[StoreUnavailable, float]:
    """The StoreUnavailable ``call`` raises and when. (Not pytest.raises: the output-hash
    recorder logs every expected message, and these name a random port.)"""
    started = time.monotonic()
    try:
        call()
    except StoreUnavailable as exc:
        return exc, time.monotonic() - started
    raise AssertionError("expected StoreUnavailable")


def prefix_breaks(results: list[CompileResult]) -> list[int]:
    """Turns whose messages do not start with the previous turn's cacheable prefix."""
    breaks = []
    for turn in range(1, len(results)):
        before = results[turn - 1]
        prefix = before.messages[: before.metadata["stable_prefix_messages"]]
        if results[turn].messages[: len(prefix)] != prefix:
            breaks.append(turn)
    return breaks


@pytest.fixture
def server() -> Iterator[RedisProcess]:
    with RedisProcess() as proc:
        yield proc


def _abandoned_at_the_deadline(store: RedisStateStore, before: int) -> None:
    """Every call that failed since ``before`` ran into the deadline and no further."""
    calls = list(store.failed_calls)[before:]
    assert calls
    for call in calls:
        assert "Timeout" in call.error
        assert DEADLINE * 0.9 <= call.seconds <= DEADLINE + 1


# -- the fallback policy, through a freeze, a thaw and a kill ---------------------------------


def test_fallback_policy_through_a_freeze_and_a_kill(server: RedisProcess) -> None:
    alone = _compiler(InMemoryStateStore())
    reference = [_turn(alone, turn) for turn in range(40)]
    cuts = prefix_breaks(reference)
    assert cuts == [19, 29, 38]  # the outage below spans the cut at turn 29

    store = RedisStateStore(
        url=server.url, deadline_seconds=DEADLINE, outage_policy="fallback", retry_after_seconds=0
    )
    worker = _compiler(store)
    results = [_turn(worker, turn) for turn in range(27)]
    assert [r.messages for r in results] == [r.messages for r in reference[:27]]
    before_outage = bounded_client(server.url, deadline_seconds=5.0).get(STATE_KEY)
    assert before_outage is not None

    server.freeze()
    failed_before = len(store.failed_calls)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for turn in range(27, 32):
            result, seconds = _timed(lambda turn=turn: _turn(worker, turn))
            assert seconds <= DEADLINE + 1
            assert result.metadata["state_store_fallback"] is True
            assert result.metadata["budget_exceeded"] is False
            results.append(result)
    _abandoned_at_the_deadline(store, failed_before)
    # Each compile gave up on its first call and used the in-process copy for the rest.
    assert len(store.failed_calls) - failed_before == 5
    outage_warnings = [w for w in caught if issubclass(w.category, StateStoreWarning)]
    assert len(outage_warnings) == 1 and "unreachable" in str(outage_warnings[0].message)
    # The worker had served the conversation: the outage turns are the undisturbed bytes.
    assert [r.messages for r in results[27:]] == [r.messages for r in reference[27:32]]

    server.thaw()
    snapshot = bounded_client(server.url, deadline_seconds=5.0)
    assert snapshot.get(STATE_KEY) == before_outage  # nothing computed in the outage got there
    first_after = _turn(worker, 32)
    assert "state_store_fallback" not in first_after.metadata
    # What the worker wrote on its return is what a worker that never saw the outage computes
    # from the store's pre-outage value and the messages.
    fresh_store = InMemoryStateStore()
    fresh_store.put(conversation_key(CONVERSATION), _decode(before_outage))
    _turn(_compiler(fresh_store), 32)
    assert _decode(snapshot.get(STATE_KEY)) == fresh_store.get(conversation_key(CONVERSATION))
    results.append(first_after)
    results.extend(_turn(worker, turn) for turn in range(33, 40))
    extra = [turn for turn in prefix_breaks(results) if turn not in cuts]
    assert len(extra) <= 1, extra

    server.kill()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result, seconds = _timed(lambda: _turn(worker, 39))
    assert seconds <= DEADLINE + 1
    assert result.metadata["state_store_fallback"] is True
    assert [w.category for w in caught] == [StateStoreWarning]  # a new outage, warned once
    assert "Connection" in store.failed_calls[-1].error
    snapshot.close()


def test_a_worker_that_picks_the_conversation_up_during_the_outage(server: RedisProcess) -> None:
    """Worker B never saw the conversation: it rebuilds the room from the messages during the
    outage (one break if that differs from the stored room), and once Redis is back it sends
    what any other worker sends (at most one more break)."""
    alone = _compiler(InMemoryStateStore())
    reference = [_turn(alone, turn) for turn in range(40)]
    first = _compiler(RedisStateStore(url=server.url, deadline_seconds=DEADLINE))
    results = [_turn(first, turn) for turn in range(27)]
    before_outage = bounded_client(server.url, deadline_seconds=5.0).get(STATE_KEY)
    server.freeze()
    second_store = RedisStateStore(url=server.url, deadline_seconds=DEADLINE, retry_after_seconds=0)
    second = _compiler(second_store)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StateStoreWarning)
        results.extend(_turn(second, turn) for turn in range(27, 32))
    assert all(r.metadata["state_store_fallback"] for r in results[27:])
    server.thaw()
    assert bounded_client(server.url, deadline_seconds=5.0).get(STATE_KEY) == before_outage
    for turn in range(32, 40):
        results.append(_turn(second, turn))
        other = _compiler(RedisStateStore(url=server.url, deadline_seconds=5.0))
        assert _turn(other, turn).messages == results[-1].messages  # the fleet agrees again
    extra = [turn for turn in prefix_breaks(results) if turn not in prefix_breaks(reference)]
    assert len(extra) <= 2, extra
    assert all(turn in (27, 32) for turn in extra)  # taking over, and the store's return


def _decode(raw: bytes | None) -> dict[str, Any]:
    import json

    assert raw is not None
    value: dict[str, Any] = json.loads(raw)
    return value


# -- the raise policy -------------------------------------------------------------------------


def test_raise_policy_raises_store_unavailable_at_the_deadline(server: RedisProcess) -> None:
    store = RedisStateStore(
        url=server.url, deadline_seconds=DEADLINE, outage_policy="raise", retry_after_seconds=0
    )
    worker = _compiler(store)
    for turn in range(22):
        _turn(worker, turn)
    server.freeze()
    for turn in (22, 23):
        error, seconds = _store_error(lambda turn=turn: _turn(worker, turn))
        assert error.store == "redis"
        assert seconds <= DEADLINE + 1
    _abandoned_at_the_deadline(store, 0)
    server.thaw()
    server.kill()
    error, seconds = _store_error(lambda: _turn(worker, 24))
    assert seconds <= DEADLINE + 1
    assert "Connection" in store.failed_calls[-1].error


def test_retry_after_spares_the_following_compiles_the_wait(server: RedisProcess) -> None:
    store = RedisStateStore(url=server.url, deadline_seconds=DEADLINE, retry_after_seconds=60)
    worker = _compiler(store)
    for turn in range(22):
        _turn(worker, turn)
    server.freeze()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StateStoreWarning)
        flagged = [
            _turn(worker, turn).metadata.get("state_store_fallback") for turn in (22, 23, 24)
        ]
    assert flagged == [True, True, True]
    assert len(store.failed_calls) == 1  # the later two never called Redis


def test_compile_async_keeps_the_loop_running_while_the_store_waits(server: RedisProcess) -> None:
    store = RedisStateStore(url=server.url, deadline_seconds=DEADLINE, retry_after_seconds=0)
    worker = _compiler(store)
    for turn in range(22):
        _turn(worker, turn)
    server.freeze()

    async def run() -> tuple[CompileResult, int]:
        ticks = 0
        done = False

        async def heartbeat() -> None:
            nonlocal ticks
            while not done:
                ticks += 1
                await asyncio.sleep(0.01)

        beat = asyncio.create_task(heartbeat())
        result = await worker.compile_async(
            [], "Which locker?", conversation_messages=HISTORIES[22], conversation_id=CONVERSATION
        )
        seen, done = ticks, True
        await beat
        return result, seen

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StateStoreWarning)
        result, ticks = asyncio.run(run())
    assert result.metadata["state_store_fallback"] is True
    assert ticks >= 2  # the loop ran other tasks while the store call waited


# -- clients that could outlast the deadline are refused up front -----------------------------


def test_clients_that_could_outlast_the_deadline_are_rejected(server: RedisProcess) -> None:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    no_retry = Retry(NoBackoff(), 0)
    too_slow = [
        redis.Redis.from_url(server.url),  # docs/state.md's old example: no timeout at all
        redis.Redis(host="127.0.0.1", port=server.port),
        redis.Redis(host="127.0.0.1", port=server.port, socket_timeout=1),  # and it retries
        redis.Redis.from_url(
            server.url, socket_timeout=0.2, socket_connect_timeout=0.2, retry_on_timeout=True
        ),
        redis.Redis.from_url(
            server.url, socket_timeout=0.2, socket_connect_timeout=5, retry=no_retry
        ),
    ]
    for client in too_slow:
        with pytest.raises(InvalidInputError) as info:
            RedisStateStore(client, deadline_seconds=DEADLINE)
        assert info.value.field == "client"
        assert "socket_timeout=0.25" in str(info.value) and "url=" in str(info.value)
        with pytest.raises(InvalidInputError):
            get_ref_map_for_conversation("c", client=client, deadline_seconds=DEADLINE)
        with pytest.raises(InvalidInputError):
            set_ref_map_for_conversation("c", {1: "a"}, client=client, deadline_seconds=DEADLINE)
    for strict in (
        redis.Redis.from_url(
            server.url, socket_timeout=0.2, socket_connect_timeout=0.2, retry=no_retry
        ),
        # redis-py 8 builds connections that do not retry unless told to.
        redis.Redis.from_url(server.url, socket_timeout=0.2, socket_connect_timeout=0.2),
    ):
        RedisStateStore(strict, deadline_seconds=DEADLINE).put("k", {"ok": 1})
    built = RedisStateStore(url=server.url, deadline_seconds=DEADLINE)
    assert built.get("k") == {"ok": 1}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"deadline_seconds": 0}, "deadline_seconds"),
        ({"deadline_seconds": float("nan")}, "deadline_seconds"),
        ({"deadline_seconds": 61}, "deadline_seconds"),
        ({"outage_policy": "ignore"}, "outage_policy"),
        ({"ttl_seconds": 0}, "ttl_seconds"),
        ({"retry_after_seconds": -1}, "retry_after_seconds"),
        ({"retry_after_seconds": float("inf")}, "retry_after_seconds"),
        ({"retry_after_seconds": True}, "retry_after_seconds"),
        ({"fallback_entries": 0}, "fallback_entries"),
        ({"fallback_entries": "many"}, "fallback_entries"),
    ],
)
def test_store_arguments_are_checked(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        RedisStateStore(url="redis://127.0.0.1:1/0", **kwargs)
    assert info.value.field == field


def test_the_ref_map_functions_give_up_at_the_deadline(server: RedisProcess) -> None:
    client = bounded_client(server.url, deadline_seconds=DEADLINE)
    set_ref_map_for_conversation("c", {1: "doc-1"}, client=client)
    server.freeze()
    for call in (
        lambda: get_ref_map_for_conversation("c", client=client),
        lambda: set_ref_map_for_conversation("c", {2: "doc-2"}, client=client),
    ):
        _, seconds = _store_error(call)
        assert seconds <= DEADLINE + 1


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"ttl_seconds": 0}, "ttl_seconds"),  # used to become 600 silently
        ({"ttl_seconds": -1}, "ttl_seconds"),  # used to surface as StoreUnavailable
        ({"ttl_seconds": 1.5}, "ttl_seconds"),
        ({"conversation_id": ""}, "conversation_id"),
        ({"conversation_id": 7}, "conversation_id"),
        ({"conversation_id": "c\ud800"}, "conversation_id"),
        ({"ref_map": {"1": "a"}}, "ref_map"),
        ({"ref_map": {1: None}}, "ref_map[1]"),
        ({"ref_map": {1: "\udcff"}}, "ref_map[1]"),
    ],
)
def test_ref_map_arguments_are_checked_before_redis_is_called(
    kwargs: dict[str, Any], field: str
) -> None:
    call: dict[str, Any] = {"conversation_id": "c", "ref_map": {1: "a"}, **kwargs}
    with pytest.raises(InvalidInputError) as info:
        # Port 1: nothing listens, so reaching Redis would raise StoreUnavailable instead.
        set_ref_map_for_conversation(
            call.pop("conversation_id"),
            call.pop("ref_map"),
            client=bounded_client("redis://127.0.0.1:1/0"),
            **call,
        )
    assert info.value.field == field


def test_the_ref_map_ttl_from_the_environment_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBRANE_REF_MAP_TTL_SECONDS", "0")
    with pytest.raises(InvalidInputError) as info:
        set_ref_map_for_conversation("c", {1: "a"}, client=bounded_client("redis://127.0.0.1:1/0"))
    assert info.value.field == "MEMBRANE_REF_MAP_TTL_SECONDS"
