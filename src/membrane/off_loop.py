"""Running a compile from async code without stalling the caller's event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from membrane.state import InMemoryStateStore, StateStore

__all__ = ["run_off_loop"]

R = TypeVar("R")


async def run_off_loop(store: StateStore, call: Callable[[], R]) -> R:
    """``call()``, a compile that reads and writes ``store``, without blocking the event loop.

    With the in-process store there is no I/O to wait for, so ``call`` runs right here. Any
    other store (Redis, a caller's own) may wait on the network for up to its deadline, so
    ``call`` runs in a worker thread (:func:`asyncio.to_thread`) and the loop keeps serving
    other tasks meanwhile.
    """
    if type(store) is InMemoryStateStore:
        return call()
    return await asyncio.to_thread(call)
