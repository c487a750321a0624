"""The store's deadline bounds each call end to end (issue 35, point 9).

A link that trickles Redis's replies a few bytes at a time never lets one socket read time out,
so a deadline kept per read held a compile for as long as the trickle lasted. Against a real
redis-server behind a trickling proxy on loopback (``trickle_proxy.py``): a compile, a store
call and the ref-map functions return within the deadline + 1 s; a connection whose call was
abandoned is never handed a later call with the old reply half read; and abandoned calls hold
at most ``call_threads`` threads.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from membrane import ContextCompiler, InMemoryStateStore, StoreUnavailable
from membrane.state import RedisStateStore, StateStoreWarning
from membrane.state.keys import conversation_key
from membrane.state.redis import (
    bounded_client,
    get_ref_map_for_conversation,
    set_ref_map_for_conversation,
)
from tests.redis_process import RedisProcess
from tests.state.trickle_proxy import TrickleProxy

DEADLINE = 0.25


@pytest.fixture
def server() -> Iterator[RedisProcess]:
    with RedisProcess() as proc:
        yield proc


@pytest.fixture
def proxy(server: RedisProcess) -> Iterator[TrickleProxy]:
    with TrickleProxy(server.port, chunk=32, every=0.05) as link:
        yield link


def _chat(turns: int) -> list[dict[str, str]]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"Message {i}: the rollout of service S{i} moves to week {i % 9}. "
            + "context " * 25,
        }
        for i in range(turns)
    ]


def _compiler(store: Any) -> ContextCompiler:
    return ContextCompiler(1500, model_id="openai/gpt-4o", state_store=store)


def _timed(call: Any) -> tuple[Any, float]:
    started = time.monotonic()
    out = call()
    return out, time.monotonic() - started


def test_a_compile_through_a_trickling_link_ends_at_the_deadline(
    server: RedisProcess, proxy: TrickleProxy
) -> None:
    writer = _compiler(RedisStateStore(url=server.url, deadline_seconds=5.0))
    writer.compile([], "Next?", conversation_messages=_chat(60), conversation_id="c1")
    raw = bounded_client(server.url, deadline_seconds=5.0).get(
        "membrane:state:" + conversation_key("c1")
    )
    assert raw is not None and len(raw) > 1_200  # about 40 chunks: 2 s of trickle

    store = RedisStateStore(url=proxy.url, deadline_seconds=DEADLINE)
    expected = _compiler(InMemoryStateStore()).compile(
        [], "Next?", conversation_messages=_chat(62), conversation_id="c1"
    )
    proxy.trickle = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StateStoreWarning)
        result, seconds = _timed(
            lambda: _compiler(store).compile(
                [], "Next?", conversation_messages=_chat(62), conversation_id="c1"
            )
        )
    assert seconds <= DEADLINE + 1, seconds
    assert result.metadata["state_store_fallback"] is True
    assert result.messages == expected.messages  # what a worker without the store sends
    assert store.failed_calls and all(call.seconds <= DEADLINE + 0.5 for call in store.failed_calls)


def test_an_abandoned_call_never_leaves_its_reply_to_the_next(
    server: RedisProcess, proxy: TrickleProxy
) -> None:
    store = RedisStateStore(
        url=proxy.url, deadline_seconds=DEADLINE, retry_after_seconds=0, outage_policy="raise"
    )
    values = {f"k{i}": {"version": 2, "text": f"value {i} " * 200} for i in range(4)}
    for key, value in values.items():
        store.put(key, value)
    proxy.trickle = True
    for key in values:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable):
            store.get(key)
        assert time.monotonic() - started <= DEADLINE + 1
    proxy.trickle = False
    for _ in range(3):
        for key, value in values.items():
            assert store.get(key) == value


def test_abandoned_calls_hold_a_bounded_number_of_threads(
    server: RedisProcess, proxy: TrickleProxy
) -> None:
    store = RedisStateStore(
        url=proxy.url,
        deadline_seconds=DEADLINE,
        retry_after_seconds=0,
        outage_policy="raise",
        call_threads=3,
    )
    store.put("big", {"version": 2, "text": "x" * 20_000})  # 30 s of trickle

    def store_threads() -> int:
        return sum(t.name == "membrane-store-call" for t in threading.enumerate())

    before = store_threads()  # other stores' threads, idle until they end
    proxy.trickle = True
    for _ in range(12):
        started = time.monotonic()
        # Not pytest.raises: whether a call times out or finds no thread free depends on the
        # machine's timing, and the output-hash recorder logs every expected message.
        try:
            store.get("big")
        except StoreUnavailable:
            pass
        else:
            raise AssertionError("expected StoreUnavailable")
        assert time.monotonic() - started <= DEADLINE + 1
        assert store_threads() - before <= 3
    busy = [call for call in store.failed_calls if "busy" in call.error]
    assert busy  # calls beyond the three in flight waited for a thread, then gave up


def test_the_ref_map_functions_end_at_the_deadline(
    server: RedisProcess, proxy: TrickleProxy
) -> None:
    client = bounded_client(proxy.url, deadline_seconds=DEADLINE)
    refs = {n: f"document-{n}-" + "z" * 40 for n in range(1, 40)}
    set_ref_map_for_conversation("c", refs, client=client)
    proxy.trickle = True
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):
        get_ref_map_for_conversation("c", client=client)
    assert time.monotonic() - started <= DEADLINE + 1
    proxy.trickle = False
    assert get_ref_map_for_conversation("c", client=client) == refs


def test_a_forked_worker_runs_its_calls_on_threads_of_its_own(server: RedisProcess) -> None:
    """A store made before ``fork()`` (a preloading server) serves the child too: the parent's
    call threads did not come along, so the child's runner starts its own."""
    import os

    store = RedisStateStore(url=server.url, deadline_seconds=5.0)
    store.put("k", {"version": 2, "room": 3})
    assert store.get("k") == {"version": 2, "room": 3}  # the parent's runner has a thread now
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads, Python 3.12+
        pid = os.fork()
    if pid == 0:  # the child: exit code 0 only when the call went through in time
        started = time.monotonic()
        try:
            ok = store.get("k") == {"version": 2, "room": 3} and time.monotonic() - started < 2
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_compile_waits_for_a_frozen_server_once(server: RedisProcess) -> None:
    """Even with the breaker off (``retry_after_seconds=0``) and the model's scale not cached,
    a compile asks a frozen server once: the scale's key and the conversation's key live on the
    same node, and after its first call fails the compile keeps that node's keys in the copy."""
    store = RedisStateStore(url=server.url, deadline_seconds=DEADLINE, retry_after_seconds=0)
    _compiler(store).compile([], "Next?", conversation_messages=_chat(60), conversation_id="c1")
    server.freeze()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StateStoreWarning)
        for turn in range(3):  # a new compiler each time: no scale cached
            result, seconds = _timed(
                lambda turn=turn: _compiler(store).compile(
                    [], "Next?", conversation_messages=_chat(62 + 2 * turn), conversation_id="c1"
                )
            )
            assert seconds <= DEADLINE + 1
            assert result.metadata["state_store_fallback"] is True
    assert len(store.failed_calls) == 3  # one per compile
