"""Running a compile from async code without stalling the caller's event loop.

:meth:`membrane.ContextCompiler.compile_async` picks one of three places for a compile
(:func:`where_to_run`):

- a thread of its own (:func:`asyncio.to_thread`) when the compile will *wait*: its store may
  wait on the network, or another compile of the same conversation is running (this one waits
  for its lock);
- the process's compile worker, one thread shared by every compiler, when it will *compute*
  for long: its inputs are larger than :data:`ON_LOOP_CHARS` (a pasted 2 MB message is
  seconds of CPU). Under the GIL more threads add no speed to CPU-bound work, only more
  threads for the loop to compete with: with one worker, the loop waits for the GIL behind one
  thread, not dozens;
- the loop itself otherwise, after yielding to it once: such a compile costs about a
  millisecond, less than a hand-off to a thread and back.

Compiles of one conversation still take turns: the compiling thread holds the conversation's
lock as any caller does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Literal, Protocol, TypeVar

from membrane.state import InMemoryStateStore, StateStore
from membrane.state.keys import DEFAULT_CONVERSATION

__all__ = [
    "MESSAGE_CHARS",
    "ON_LOOP_CHARS",
    "Place",
    "inputs_are_large",
    "run_off_loop",
    "where_to_run",
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


#: Where a compile runs: on the event loop, on the compile worker, or in a thread of its own.
Place = Literal["loop", "worker", "thread"]


def where_to_run(
    store: StateStore,
    locks: _Locks,
    memories: Sequence[object],
    user_message: str,
    kwargs: Mapping[str, Any],
) -> Place:
    """Where ``compile_async`` runs a compile (see the module)."""
    conversation = kwargs.get("conversation_id")
    key = DEFAULT_CONVERSATION if conversation is None else conversation
    if type(store) is not InMemoryStateStore or locks.busy(key):
        return "thread"
    return "worker" if inputs_are_large(memories, user_message, kwargs) else "loop"


_worker: ThreadPoolExecutor | None = None
_worker_lock = threading.Lock()


def _compile_worker() -> ThreadPoolExecutor:
    global _worker
    with _worker_lock:
        if _worker is None:
            _worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="membrane-compile")
        return _worker


async def run_off_loop(call: Callable[[], R], place: Place) -> R:
    """``call()``, a compile, at ``place`` (from :func:`where_to_run`), the loop serving other
    tasks meanwhile."""
    import asyncio  # here, not at import: a process that never awaits a compile skips it

    if place == "loop":
        # Let the loop run what is due first: a task compiling turn after turn on the loop
        # would otherwise never suspend, and timers would wait for its whole run.
        await asyncio.sleep(0)
        return call()
    if place == "worker":
        import contextvars

        # As asyncio.to_thread does: the compile sees the caller's context variables (a
        # tracing span, a request id read by a metrics callback).
        run = partial(contextvars.copy_context().run, call)
        return await asyncio.get_running_loop().run_in_executor(_compile_worker(), run)
    return await asyncio.to_thread(call)
