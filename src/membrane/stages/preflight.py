"""Pre-flight compression: hand an oversized middle to the caller's summariser.

Membrane ships no model client; the caller passes a function (or an object implementing
:class:`PreFlightAnalyst`) that turns the raw middle into a shorter text.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from membrane.errors import InvalidInputError
from membrane.messages import check_text
from membrane.prompt_text import mem_numbers

__all__ = [
    "AsyncCompressor",
    "PreFlightAnalyst",
    "SyncCompressor",
    "as_preflight_analyst",
    "async_analyst",
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
    check_text(value, "compress_sync")
    return value


def _is_async(fn: object) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - an object with an async __call__
    return not inspect.isfunction(fn) and inspect.iscoroutinefunction(call)


def async_analyst(
    compress_async: object, compress_fn: object
) -> PreFlightAnalyst | AsyncCompressor | None:
    """The async compressor passed (``compress_async`` first), refused before it runs if sync.

    Accepted: an ``async def`` function, an object with an ``async def __call__``, or a
    :class:`PreFlightAnalyst` whose ``compress_retrieved_memory`` is ``async def``.
    """
    name = "compress_async" if compress_async is not None else "compress_fn"
    analyst = compress_async if compress_async is not None else compress_fn
    if analyst is None:
        return None
    method = getattr(analyst, "compress_retrieved_memory", None)
    if _is_async(method if method is not None else analyst):
        return analyst  # type: ignore[return-value]
    raise TypeError(
        f"{name} must be an async function (async def f(raw, target, question)) or an object "
        "with an async compress_retrieved_memory; pass a sync function as compress_sync to "
        "compile() instead"
    )
