"""compile_async keeps CPU-heavy compiles off the event loop (issue 35, point 11)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from membrane import ContextCompiler
from membrane.off_loop import ON_LOOP_CHARS, inputs_are_large


def _thread_of_compile(compiler: ContextCompiler, user_message: str, **kwargs: Any) -> bool:
    """True when ``compile_async`` ran the compile on the event loop's own thread."""
    ran_on: list[int] = []
    compiler.metrics_callback = lambda _m: ran_on.append(threading.get_ident())

    async def run() -> int:
        await compiler.compile_async([], user_message, **kwargs)
        return threading.get_ident()

    loop_thread = asyncio.run(run())
    return ran_on == [loop_thread]


def test_a_small_compile_runs_on_the_loop() -> None:
    assert _thread_of_compile(ContextCompiler(2000), "hello", conversation_id="c")


def test_a_large_pasted_message_compiles_in_a_worker_thread() -> None:
    pasted = "The build failed at step four. " * (2 * 2**20 // 31)  # about 2 MB
    assert not _thread_of_compile(ContextCompiler(200_000), pasted, conversation_id="c")


def test_a_long_history_compiles_in_a_worker_thread() -> None:
    history = [{"role": "user", "content": f"note {i}"} for i in range(1_000)]
    compiler = ContextCompiler(2000)
    assert not _thread_of_compile(compiler, "q", conversation_messages=history)


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
