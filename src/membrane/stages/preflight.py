"""Pre-flight compression: hand an oversized middle to the caller's summariser.

Membrane ships no model client; the caller passes a function (or an object implementing
:class:`PreFlightAnalyst`) that turns the raw middle into a shorter text.
"""

from __future__ import annotations

import hashlib
import inspect
import re
import warnings
from collections.abc import Awaitable, Callable, Mapping, Set
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from membrane import config
from membrane.errors import InvalidInputError, StoreUnavailable
from membrane.messages import check_text
from membrane.prompt_text import MEM_TAG_PREFIX, mem_numbers, mem_tag, one_line
from membrane.state.async_redis import check_async_client, redis_get, redis_set
from membrane.state.keys import check_id, preflight_key
from membrane.state.protocol import StateStoreWarning

__all__ = [
    "AsyncCompressor",
    "CacheOutcome",
    "PreFlightAnalyst",
    "PreflightCache",
    "SyncCompressor",
    "as_preflight_analyst",
    "async_analyst",
    "check_compressed",
    "mem_numbers",
    "summarise_middle",
    "summary_text",
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
    call = getattr(fn, "__call__", None)  # noqa: B004 - an object with an async __call__ counts
    if not (inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)):
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


def summary_text(summary: str, offered: Set[int]) -> str:
    """A compressor's summary as it stands in the middle: untrusted text, like a memory's.

    It is put on one line and neutralised (no section header, interrupt tag or memory line can
    open in it); of its ``[Mem:N]`` tags only those of memories on offer (``offered``) stay
    citations, the rest read ``(Mem:N)``. A summary opening with a tag is marked as a summary,
    so it never reads as a memory line.
    """
    text = _CITED.sub(
        lambda m: mem_tag(int(m[1])) if int(m[1]) in offered else m[0], one_line(summary)
    )
    return f"Summary: {text}" if text.startswith(MEM_TAG_PREFIX) else text


_CITED = re.compile(r"\(Mem:(\d{1,9})\)")

#: What the pre-flight cache did for one compile: served the summary, stored a new one, could
#: not be reached (the compressor ran and its summary was not stored), or held a value that is
#: no summary (not UTF-8, not text a compressor may return): discarded, and the compressor's
#: new summary stored over it.
CacheOutcome = Literal["hit", "miss", "unavailable", "discarded"]


@dataclass(frozen=True, slots=True)
class PreflightCache:
    """Where compressed middles are cached: an async Redis client and the conversation's scope.

    The key is ``MEMBRANE_PREFLIGHT_CACHE_PREFIX`` + the conversation's scope (the compiler's
    ``state_namespace`` and the id, as in its state key) + a digest of the raw middle and the
    target size, so the same middle compressed to the same target is served from Redis (by any
    worker of that tenant) for ``MEMBRANE_PREFLIGHT_CACHE_TTL_SECONDS``.
    """

    client: Any
    conversation_id: str
    namespace: str | None = None

    @classmethod
    def for_call(
        cls, client: object, call: Mapping[str, Any], namespace: str | None = None
    ) -> PreflightCache | None:
        """The cache a ``compile_async`` call asked for (None without ``redis_client``), in the
        scope of the call's ``conversation_id`` (one of its keywords ``call``) and ``namespace``.
        """
        if client is None:
            return None
        check_async_client(client)
        conversation_id = call.get("conversation_id")
        if conversation_id is None:
            raise InvalidInputError(
                "redis_client caches pre-flight summaries per conversation; pass conversation_id",
                field="conversation_id",
            )
        check_id(conversation_id, "conversation_id")
        return cls(client, conversation_id, namespace)

    def key(self, raw_middle: str, target_tokens: int) -> str:
        digest = hashlib.sha256(f"{target_tokens}\n{raw_middle}".encode()).hexdigest()
        return preflight_key(self.conversation_id, self.namespace, digest)


async def summarise_middle(
    analyst: AsyncCompressor | PreFlightAnalyst,
    raw_middle: str,
    target_tokens: int,
    question: str,
    cache: PreflightCache | None,
) -> tuple[str, CacheOutcome | None]:
    """The caller's summary of ``raw_middle``, from the cache when it holds one.

    A cache that cannot be reached costs a compressor call, never the compile.
    """
    key = cache.key(raw_middle, target_tokens) if cache is not None else ""
    outcome: CacheOutcome | None = None
    if cache is not None:
        try:
            cached = await redis_get(cache.client, key, "reading the pre-flight cache")
        except StoreUnavailable:
            outcome = "unavailable"
        except ValueError as exc:  # not UTF-8
            outcome = _discarded(f"it is not UTF-8 ({exc})")
        else:
            outcome = "miss" if cached is None else _usable(cached)
            if cached is not None and outcome == "hit":
                return cached, "hit"
    if isinstance(analyst, PreFlightAnalyst):
        summary = await analyst.compress_retrieved_memory(raw_middle, target_tokens, question)
    else:
        summary = await analyst(raw_middle, target_tokens, question)
    summary = check_compressed(summary)
    if cache is not None and outcome in ("miss", "discarded"):
        ttl = config.preflight_cache_ttl_seconds()
        try:
            await redis_set(cache.client, key, summary, ttl, "writing the pre-flight cache")
        except StoreUnavailable:
            outcome = "unavailable"
    return summary, outcome


def _usable(cached: str) -> CacheOutcome:
    """``"hit"`` for a cached summary a compressor could have returned, else ``"discarded"``
    (with a StateStoreWarning)."""
    try:
        check_compressed(cached)
    except InvalidInputError as exc:
        return _discarded(str(exc))
    return "hit"


def _discarded(reason: str) -> CacheOutcome:
    warnings.warn(
        f"discarded the cached pre-flight summary: {reason}; the compressor ran again",
        StateStoreWarning,
        stacklevel=4,
    )
    return "discarded"


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
