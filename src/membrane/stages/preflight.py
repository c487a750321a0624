"""Pre-flight compression: hand an oversized middle to the caller's summariser.

Membrane ships no model client; the caller passes a function (or an object implementing
:class:`PreFlightAnalyst`) that turns the raw middle into a shorter text.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from membrane.errors import InvalidInputError
from membrane.prompt_text import mem_numbers

__all__ = [
    "AsyncCompressor",
    "PreFlightAnalyst",
    "SyncCompressor",
    "as_preflight_analyst",
    "check_compressed",
    "mem_numbers",
]

SyncCompressor = Callable[[str, int, str], str]
AsyncCompressor = Callable[[str, int, str], Awaitable[str]]


@runtime_checkable
class PreFlightAnalyst(Protocol):
    """A class-based compressor for the async paths."""

    async def compress_retrieved_memory(
        self, raw_middle: str, target_tokens: int, user_message: str
    ) -> str:
        """Return a summary of ``raw_middle`` of about ``target_tokens`` tokens."""
        ...


class _FunctionAnalyst:
    def __init__(self, fn: AsyncCompressor) -> None:
        self._fn = fn

    async def compress_retrieved_memory(
        self, raw_middle: str, target_tokens: int, user_message: str
    ) -> str:
        return await self._fn(raw_middle, target_tokens, user_message)


def as_preflight_analyst(fn: AsyncCompressor) -> PreFlightAnalyst:
    """Wrap an async compressor function as a :class:`PreFlightAnalyst`."""
    if not inspect.iscoroutinefunction(fn):
        raise TypeError("as_preflight_analyst needs an async function (raw, target, question)")
    return _FunctionAnalyst(fn)


def check_compressed(value: object) -> str:
    """Validate what a compressor returned."""
    if not isinstance(value, str):
        raise InvalidInputError(
            f"the pre-flight compressor must return a string, got {type(value).__name__}",
            field="compress_sync",
        )
    return value
