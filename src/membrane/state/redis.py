"""A Redis-backed state store and ref-map persistence (the ``redis`` extra).

Workers that share one Redis server share the compiler state of every conversation, so a
conversation whose turns land on different workers keeps emitting the same prefix bytes.
"""

from __future__ import annotations

import json
from typing import Any

from membrane import config
from membrane.errors import StoreUnavailable
from membrane.state.protocol import decode_state, encode_state

__all__ = [
    "RedisStateStore",
    "get_ref_map_for_conversation",
    "set_ref_map_for_conversation",
]

_DEFAULT_PREFIX = "membrane:state:"


def _redis_errors() -> tuple[type[BaseException], ...]:
    import redis

    return (redis.exceptions.RedisError, OSError)


def _client_from_url(url: str | None) -> Any:
    try:
        import redis
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            'the Redis state store needs the redis package: pip install "membrane-aol[redis]"'
        ) from exc
    url = url or config.redis_url()
    if not url:
        raise StoreUnavailable(
            "no Redis URL: pass client= or url=, or set MEMBRANE_REDIS_URL", store="redis"
        )
    return redis.Redis.from_url(url)


class RedisStateStore:
    """Keeps compiler state in Redis as JSON strings under ``prefix``.

    Pass a ready ``redis.Redis`` client or a URL (default ``MEMBRANE_REDIS_URL`` /
    ``REDIS_URL``). ``ttl_seconds`` lets idle conversations expire; None keeps them.
    """

    def __init__(
        self,
        client: Any = None,
        *,
        url: str | None = None,
        prefix: str = _DEFAULT_PREFIX,
        ttl_seconds: int | None = None,
    ) -> None:
        self._client = client if client is not None else _client_from_url(url)
        self._prefix = prefix
        self._ttl = ttl_seconds

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            raw = self._client.get(self._prefix + key)
        except _redis_errors() as exc:
            raise StoreUnavailable(f"cannot read {key!r} from Redis: {exc}", store="redis") from exc
        return None if raw is None else decode_state(raw)

    def put(self, key: str, value: dict[str, Any]) -> None:
        raw = encode_state(value)
        try:
            self._client.set(self._prefix + key, raw, ex=self._ttl)
        except _redis_errors() as exc:
            raise StoreUnavailable(f"cannot write {key!r} to Redis: {exc}", store="redis") from exc


def _ref_map_key(conversation_id: str) -> str:
    return config.ref_map_prefix() + conversation_id


def set_ref_map_for_conversation(
    conversation_id: str,
    ref_map: dict[int, str],
    *,
    client: Any = None,
    ttl_seconds: int | None = None,
) -> None:
    """Save a turn's ``ref_map`` so a later request can resolve the model's citations."""
    client = client if client is not None else _client_from_url(None)
    ttl = ttl_seconds or config.ref_map_ttl_seconds()
    raw = json.dumps({str(k): v for k, v in ref_map.items()}, sort_keys=True)
    try:
        client.set(_ref_map_key(conversation_id), raw, ex=ttl)
    except _redis_errors() as exc:
        raise StoreUnavailable(f"cannot save the ref map: {exc}", store="redis") from exc


def get_ref_map_for_conversation(conversation_id: str, *, client: Any = None) -> dict[int, str]:
    """The last saved ``ref_map`` of a conversation ({} when none or expired)."""
    client = client if client is not None else _client_from_url(None)
    try:
        raw = client.get(_ref_map_key(conversation_id))
    except _redis_errors() as exc:
        raise StoreUnavailable(f"cannot read the ref map: {exc}", store="redis") from exc
    if raw is None:
        return {}
    return {int(k): str(v) for k, v in json.loads(raw).items()}
