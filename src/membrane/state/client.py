"""Redis clients whose every call ends within the store deadline (the ``redis`` extra).

A client Membrane builds gets socket and connect timeouts equal to the deadline and no retries;
a client the caller passes must already be that strict (:func:`check_client`). Plain
``redis.Redis`` clients and ``redis.cluster.RedisCluster`` clients are both understood.
"""

from __future__ import annotations

from typing import Any

from membrane import config
from membrane.errors import InvalidInputError, StoreUnavailable

__all__ = ["bounded_client", "check_client", "check_deadline", "redis_errors"]


def redis_errors() -> tuple[type[BaseException], ...]:
    """What a Redis call may raise when the server or cluster fails (a cluster client's own
    ``RedisClusterException``, such as a slot no node serves, is no ``RedisError``)."""
    import redis

    return (redis.exceptions.RedisError, redis.exceptions.RedisClusterException, OSError)


def check_deadline(deadline: float | None) -> float:
    if deadline is None:
        return config.store_deadline_seconds()
    ok = isinstance(deadline, (int, float)) and not isinstance(deadline, bool)
    if not ok or not 0 < deadline <= 60:  # NaN fails the range check too
        raise InvalidInputError(
            f"deadline_seconds must be a number of seconds in (0, 60], got {deadline!r}",
            field="deadline_seconds",
        )
    return float(deadline)


def _client_from_url(url: str | None, deadline: float, *, cluster: bool = False) -> Any:
    try:
        import redis
        import redis.cluster
        from redis.backoff import NoBackoff
        from redis.retry import Retry
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            'the Redis state store needs the redis package: pip install "membrane-aol[redis]"'
        ) from exc
    url = url or config.redis_url()
    if not url:
        raise StoreUnavailable(
            "no Redis URL: pass client= or url=, or set MEMBRANE_REDIS_URL", store="redis"
        )
    bounds: dict[str, Any] = {
        "socket_timeout": deadline,
        "socket_connect_timeout": deadline,
        "retry": Retry(NoBackoff(), 0),
    }
    if cluster:  # the cluster client takes the Retry itself; its node connections never retry
        return redis.cluster.RedisCluster.from_url(url, **bounds)
    return redis.Redis.from_url(url, retry_on_timeout=False, **bounds)


def _retries(kwargs: dict[str, Any]) -> int:
    """Retries a connection built from ``kwargs`` makes (redis-py: a Retry, or one on timeout)."""
    retry = kwargs.get("retry")
    if retry is not None:
        get = getattr(retry, "get_retries", None)
        return int(get() if callable(get) else getattr(retry, "_retries", 0))
    return 1 if kwargs.get("retry_on_timeout") or kwargs.get("retry_on_error") else 0


def _connection_settings(client: Any) -> tuple[dict[str, Any] | None, int]:
    """The settings ``client``'s connections are made with, and how often it retries a call.

    A ``redis.Redis`` keeps them in its connection pool; a ``redis.cluster.RedisCluster`` in
    its nodes manager (one pool per node), with its retries on the cluster client itself.
    """
    pool = getattr(client, "connection_pool", None)
    kwargs = getattr(pool, "connection_kwargs", None)
    if isinstance(kwargs, dict):
        return kwargs, _retries(kwargs)
    nodes = getattr(client, "nodes_manager", None)
    kwargs = getattr(nodes, "connection_kwargs", None)
    if not isinstance(kwargs, dict):
        return None, 0
    return kwargs, max(_retries({"retry": getattr(client, "retry", None)}), _retries(kwargs))


def check_client(client: Any, deadline: float) -> Any:
    """``client`` if every call it makes ends within ``deadline`` seconds; else InvalidInputError.

    Checked: a socket timeout and a connect timeout, each at most the deadline, and no retries
    (a retry starts the clock again). ``redis.Redis`` and ``redis.cluster.RedisCluster``
    clients are both understood.
    """
    kwargs, retries = _connection_settings(client)
    fix = (
        f"build it as redis.Redis.from_url(url, socket_timeout={deadline}, "
        f"socket_connect_timeout={deadline}, retry=redis.retry.Retry(redis.backoff.NoBackoff(), "
        "0)) (redis.cluster.RedisCluster.from_url for a cluster), or pass url= and let "
        "Membrane build it"
    )
    if kwargs is None:
        raise InvalidInputError(
            f"cannot tell how long this Redis client may block (no connection_pool); {fix}",
            field="client",
        )
    for name in ("socket_timeout", "socket_connect_timeout"):
        value = kwargs.get(name)
        if value is None or not 0 < float(value) <= deadline:
            raise InvalidInputError(
                f"the Redis client's {name} is {value!r}, which lets a frozen server hold a "
                f"request longer than the store's deadline of {deadline} s; {fix}",
                field="client",
            )
    if retries:
        raise InvalidInputError(
            f"the Redis client retries {retries} times, so one call can outlast the store's "
            f"deadline of {deadline} s several times over; {fix}",
            field="client",
        )
    return client


def bounded_client(
    url: str | None = None, *, deadline_seconds: float | None = None, cluster: bool = False
) -> Any:
    """A ``redis.Redis`` client for ``url`` that the deadline rules accept.

    Its socket and connect timeouts equal the deadline (``MEMBRANE_STORE_DEADLINE_SECONDS``,
    0.25 s, when None) and it never retries. ``url`` defaults to ``MEMBRANE_REDIS_URL`` /
    ``REDIS_URL``. With ``cluster=True`` it is a ``redis.cluster.RedisCluster`` that discovers
    the cluster from the node at ``url``. Share it between :class:`RedisStateStore` and the
    ref-map functions.
    """
    return _client_from_url(url, check_deadline(deadline_seconds), cluster=cluster)
