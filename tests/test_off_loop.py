"""compile_async keeps CPU-heavy compiles off the event loop (issue 35, point 11)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from membrane import ContextCompiler
from membrane.off_loop import ON_LOOP_CHARS, inputs_are_large
from membrane.state import InMemoryStateStore


def _place_of_compile(compiler: ContextCompiler, user_message: str, **kwargs: Any) -> str:
    """Where ``compile_async`` ran the compile: "loop", "worker" (the shared compile worker)
    or "thread" (a thread of its own)."""
    ran_on: list[threading.Thread] = []
    compiler.metrics_callback = lambda _m: ran_on.append(threading.current_thread())

    async def run() -> threading.Thread:
        await compiler.compile_async([], user_message, **kwargs)
        return threading.current_thread()

    loop_thread = asyncio.run(run())
    (thread,) = ran_on
    if thread is loop_thread:
        return "loop"
    return "worker" if thread.name.startswith("membrane-compile") else "thread"


def test_a_small_compile_runs_on_the_loop() -> None:
    assert _place_of_compile(ContextCompiler(2000), "hello", conversation_id="c") == "loop"


def test_a_large_pasted_message_compiles_on_the_compile_worker() -> None:
    pasted = "The build failed at step four. " * (2 * 2**20 // 31)  # about 2 MB
    compiler = ContextCompiler(200_000)
    assert _place_of_compile(compiler, pasted, conversation_id="c") == "worker"


def test_a_long_history_compiles_on_the_compile_worker() -> None:
    history = [{"role": "user", "content": f"note {i}"} for i in range(1_000)]
    compiler = ContextCompiler(2000)
    assert _place_of_compile(compiler, "q", conversation_messages=history) == "worker"


def test_every_compiler_shares_one_compile_worker() -> None:
    history = [{"role": "user", "content": f"note {i}"} for i in range(1_000)]
    names = set()
    for _ in range(3):
        compiler = ContextCompiler(2000)
        seen: list[str] = []
        compiler.metrics_callback = lambda _m, seen=seen: seen.append(
            threading.current_thread().name
        )
        asyncio.run(compiler.compile_async([], "q", conversation_messages=history))
        names.update(seen)
    assert len(names) == 1 and names.pop().startswith("membrane-compile")


def test_a_compile_with_a_networked_store_waits_in_a_thread_of_its_own() -> None:
    """A store that may wait on the network never holds the compile worker (or the loop)."""

    class NetworkedStore(InMemoryStateStore):
        """Any store other than the in-process one counts as networked."""

    compiler = ContextCompiler(2000, state_store=NetworkedStore())
    assert _place_of_compile(compiler, "hello", conversation_id="c") == "thread"


def test_the_bound_counts_every_text_a_compile_reads() -> None:
    half = "x" * (ON_LOOP_CHARS // 2)
    assert not inputs_are_large([], half, {})
    assert inputs_are_large([], half, {"conversation_messages": [{"content": half}] * 2})
    parts = [{"type": "text", "text": half}, {"type": "text", "text": half}]
    assert inputs_are_large([], "", {"conversation_messages": [{"content": parts}]})
    assert inputs_are_large([], "", {"conversation_messages": [{"content": "x"}] * 1_000})


def test_a_compile_waiting_for_its_conversation_waits_in_a_thread() -> None:
    """While a thread compiles conversation c, a small compile of c does not block the loop
    on c's lock: it waits in a thread while the loop keeps running."""
    compiler = ContextCompiler(2000)
    ticks: list[float] = []

    async def run() -> None:
        with compiler._locks.hold("c"):  # another caller is compiling c
            beat = asyncio.create_task(_beat(ticks))
            waiting = asyncio.create_task(compiler.compile_async([], "hi", conversation_id="c"))
            await asyncio.sleep(0.2)
            assert not waiting.done() and len(ticks) >= 2  # the loop ran meanwhile
        await waiting
        beat.cancel()

    asyncio.run(run())


async def _beat(ticks: list[float]) -> None:
    while True:
        ticks.append(0.0)
        await asyncio.sleep(0.02)


def test_a_task_compiling_turn_after_turn_lets_other_tasks_run_between_compiles() -> None:
    """Small compiles run on the loop, but each one yields first: a task that compiles many
    turns in a row never keeps another task (a timer, a heartbeat) waiting for all of them."""
    compiler = ContextCompiler(2000)
    order: list[str] = []

    async def converse() -> None:
        for turn in range(5):
            await compiler.compile_async([], f"turn {turn}", conversation_id="c")
            order.append("compile")

    async def other() -> None:
        for _ in range(5):
            order.append("other")
            await asyncio.sleep(0)

    async def run() -> None:
        await asyncio.gather(converse(), other())

    asyncio.run(run())
    # Between the first and the last compile the other task ran: the compiles interleaved.
    first, last = order.index("compile"), len(order) - 1 - order[::-1].index("compile")
    assert "other" in order[first:last]


def test_a_compile_on_the_worker_sees_the_callers_context_variables() -> None:
    import contextvars

    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id")
    history = [{"role": "user", "content": f"note {i}"} for i in range(1_000)]
    compiler = ContextCompiler(2000)
    seen: list[tuple[str, str]] = []
    compiler.metrics_callback = lambda _m: seen.append(
        (threading.current_thread().name, request_id.get("unset"))
    )

    async def run() -> None:
        request_id.set("req-42")
        await compiler.compile_async([], "q", conversation_messages=history)

    asyncio.run(run())
    ((thread, value),) = seen
    assert thread.startswith("membrane-compile") and value == "req-42"
