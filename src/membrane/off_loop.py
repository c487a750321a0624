"""Running a compile from async code without stalling the caller's event loop.

:meth:`membrane.ContextCompiler.compile_async` runs a compile in a worker thread
(:func:`asyncio.to_thread`) when it could hold the loop: when its store may wait on the
network, when its inputs are larger than :data:`ON_LOOP_CHARS` (a pasted 2 MB message is
seconds of CPU), or when another compile of the same conversation is running (this one would
wait for its lock). Otherwise a compile costs about a millisecond, less than the hand-off to a
thread and back, and runs on the loop. Compiles of one conversation still take turns: the
thread holds the conversation's lock as any caller does.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from membrane.state import InMemoryStateStore, StateStore
from membrane.state.keys import DEFAULT_CONVERSATION

__all__ = [
    "MESSAGE_CHARS",
    "ON_LOOP_CHARS",
    "inputs_are_large",
    "is_heavy",
    "run_off_loop",
]

R = TypeVar("R")

#: The text (in characters) a compile with the in-process store may read on the event loop:
#: about 4 ms of CPU for a cold compile, while a thread hand-off costs about 0.1 ms.
ON_LOOP_CHARS = 32_768
#: What each message or memory counts besides its text (its own share of a compile's work).
MESSAGE_CHARS = 200


def _chars(item: object) -> int:
    """About how much text a message, memory or string holds (parts, content, text)."""
    if isinstance(item, str):
        return len(item)
    content = item.get("content") if isinstance(item, Mapping) else getattr(item, "content", "")
    if isinstance(content, str):
        return len(content)
    if isinstance(content, Sequence):
        return sum(_chars(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return 0


def inputs_are_large(memories: Sequence[object], user_message: str, kwargs: Any) -> bool:
    """True when the texts ``compile`` would read exceed :data:`ON_LOOP_CHARS` (stops early)."""
    total = len(user_message) if isinstance(user_message, str) else 0
    history = kwargs.get("conversation_messages") or ()
    for group in (memories, history):
        if not isinstance(group, Sequence) or isinstance(group, str):
            continue
        if len(group) * MESSAGE_CHARS > ON_LOOP_CHARS:
            return True
        for item in group:
            total += _chars(item) + MESSAGE_CHARS
            if total > ON_LOOP_CHARS:
                return True
    return total > ON_LOOP_CHARS


class _Locks(Protocol):
    def busy(self, key: Hashable) -> bool: ...


def is_heavy(
    locks: _Locks, memories: Sequence[object], user_message: str, kwargs: Mapping[str, Any]
) -> bool:
    """True when a compile should leave the loop: its conversation's lock is taken (by the
    conversation's id, as the compiler takes it) or its inputs are large."""
    conversation = kwargs.get("conversation_id")
    key = DEFAULT_CONVERSATION if conversation is None else conversation
    return locks.busy(key) or inputs_are_large(memories, user_message, kwargs)


async def run_off_loop(store: StateStore, call: Callable[[], R], *, heavy: bool = False) -> R:
    """``call()``, a compile that reads and writes ``store``, without blocking the event loop.

    It runs right here only when the store is the in-process one (no I/O to wait for) and the
    compile is not ``heavy`` (see the module), after yielding to the loop once; otherwise in a
    worker thread, the loop serving other tasks meanwhile.
    """
    import asyncio  # here, not at import: a process that never awaits a compile skips it

    if type(store) is InMemoryStateStore and not heavy:
        # Let the loop run what is due first: a task compiling turn after turn on the loop
        # would otherwise never suspend, and timers would wait for its whole run.
        await asyncio.sleep(0)
        return call()
    return await asyncio.to_thread(call)
