"""Redis from async code (the ``redis`` extra): the pre-flight cache and ref-map persistence.

Async entry points take a ``redis.asyncio`` client and await it. A blocking client
(``redis.Redis``) would stall the event loop on every call, so it is refused with a TypeError
that says which client to pass instead. Membrane opens a connection only when the caller asks
for one: a URL in ``MEMBRANE_REDIS_URL`` / ``REDIS_URL`` says where, never whether.

Every call is bounded by the store deadline (``MEMBRANE_STORE_DEADLINE_SECONDS``, 0.25 s by
default, as for :class:`~membrane.state.RedisStateStore`); a call that fails or runs out of
time raises :class:`~membrane.errors.StoreUnavailable`.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Mapping
from typing import Any

from membrane import config
from membrane.errors import StoreUnavailable
from membrane.state.ref_map import encode_ref_map, ref_map_ttl, scoped_ref_map_key

__all__ = [
    "async_client_from_url",
    "check_async_client",
    "redis_get",
    "redis_set",
    "save_ref_map",
]


def check_async_client(client: object, *, field: str = "redis_client") -> Any:
    """``client`` if its calls are awaitable (``redis.asyncio``); else a TypeError."""
    methods = (getattr(client, name, None) for name in ("execute_command", "get", "set"))
    if not any(inspect.iscoroutinefunction(m) for m in methods):
        raise TypeError(
            f"{field} must be an async Redis client such as redis.asyncio.Redis "
            f"(redis.asyncio.Redis.from_url(url)); got {type(client).__module__}."
            f"{type(client).__qualname__}, whose calls would block the event loop"
        )
    return client


def async_client_from_url(url: str | None = None) -> Any:
    """A ``redis.asyncio`` client for ``url`` (default ``MEMBRANE_REDIS_URL`` / ``REDIS_URL``)."""
    try:
        import redis.asyncio
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            'Redis persistence needs the redis package: pip install ".[redis]"'
        ) from exc
    url = url or config.redis_url()
    if not url:
        raise StoreUnavailable(
            "no Redis URL: pass redis_client=, or set MEMBRANE_REDIS_URL", store="redis"
        )
    return redis.asyncio.Redis.from_url(url)


async def _bounded(call: Awaitable[Any], what: str) -> Any:
    import asyncio  # here: a process that never awaits Redis does not import the event loop

    deadline = config.store_deadline_seconds()
    try:
        return await asyncio.wait_for(call, timeout=deadline)
    except asyncio.TimeoutError as exc:
        raise StoreUnavailable(
            f"Redis did not answer within {deadline} s while {what}", store="redis"
        ) from exc
    except (OSError, _redis_error()) as exc:
        raise StoreUnavailable(f"Redis failed while {what}: {exc}", store="redis") from exc


def _redis_error() -> type[BaseException]:
    try:
        import redis
    except ImportError:  # a duck-typed client without the package
        return OSError
    error: type[BaseException] = redis.exceptions.RedisError
    return error


async def redis_get(client: Any, key: str, what: str) -> str | None:
    """The text stored under ``key`` (None when absent); ``UnicodeDecodeError`` (a
    ``ValueError``) when it is not UTF-8, for the caller to discard."""
    raw = await _bounded(client.get(key), what)
    if isinstance(raw, bytes):
        return raw.decode("utf-8")
    return None if raw is None else str(raw)


async def redis_set(client: Any, key: str, value: str, ttl_seconds: int, what: str) -> None:
    """Store ``value`` under ``key`` for ``ttl_seconds``."""
    await _bounded(client.set(key, value, ex=ttl_seconds), what)


async def save_ref_map(
    conversation_id: str,
    ref_map: Mapping[int, str],
    client: Any,
    *,
    ttl_seconds: int | None = None,
    user_id: str | None = None,
    state_namespace: str | None = None,
) -> None:
    """Await-able :func:`~membrane.state.set_ref_map_for_conversation`: same key, same text."""
    key, raw, ttl = (
        scoped_ref_map_key(conversation_id, user_id, state_namespace),
        encode_ref_map(ref_map),
        ref_map_ttl(ttl_seconds),
    )
    await redis_set(client, key, raw, ttl, "saving the ref map")
