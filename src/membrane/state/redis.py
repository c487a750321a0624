"""A Redis-backed state store (the ``redis`` extra); ref-map persistence is re-exported here.

Workers that share one Redis server share the compiler state of every conversation, so a
conversation whose turns land on different workers keeps emitting the same prefix bytes.

Every Redis call Membrane makes is bounded by a deadline (``deadline_seconds``, default
``MEMBRANE_STORE_DEADLINE_SECONDS`` or 0.25 s): a client Membrane builds gets socket and connect
timeouts equal to it and no retries, and a client the caller passes must already be that strict.
"""

from __future__ import annotations

import math
import threading
import time
import warnings
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

from membrane.errors import InvalidInputError, StoreUnavailable
from membrane.state._calls import (
    CallAbandoned,
    CallBusy,
    CallRunner,
    FailureKind,
    classify,
    pool_is_full,
    run_patiently,
)
from membrane.state.client import bounded_client, check_client, check_deadline, redis_errors
from membrane.state.keys import escape_glob
from membrane.state.memory import InMemoryStateStore
from membrane.state.protocol import (
    StateStoreWarning,
    decode_state,
    encode_state,
    state_version,
)
from membrane.state.ref_map import get_ref_map_for_conversation, set_ref_map_for_conversation

__all__ = [
    "OutagePolicy",
    "RedisStateStore",
    "StoreCall",
    "bounded_client",
    "get_ref_map_for_conversation",
    "set_ref_map_for_conversation",
]

_DEFAULT_PREFIX = "membrane:state:"
_RECORDED_CALLS = 64

# One write on one key (so it runs on a cluster too): the value in ARGV[1] replaces whatever
# the key holds, whatever its format version (ARGV[2], kept for stores' sake) and whatever its
# Redis type. ARGV[3] is the TTL in seconds ("0": none). Returns 1.
_PUT_SCRIPT = """
if ARGV[3] == '0' then
  redis.call('SET', KEYS[1], ARGV[1])
else
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3])
end
return 1
"""

#: What a compile does while the store cannot be reached: ``"fallback"`` goes on with the
#: store's in-process copy of what it last read or wrote; ``"raise"`` raises StoreUnavailable.
OutagePolicy = Literal["fallback", "raise"]


@dataclass(frozen=True, slots=True)
class StoreCall:
    """One Redis call that failed: what it was, how long it ran, and why it ended.

    ``node`` is the cluster node that serves the key (``host:port``; empty for a single
    server); ``kind`` whose problem it was: ``"node"`` (an outage: that node's breaker opened),
    ``"busy"`` (no connection or call thread came free before the deadline) or ``"key"`` (the
    key holds another Redis type).
    """

    operation: str
    key: str
    seconds: float
    error: str
    node: str = ""
    kind: FailureKind = "node"


def _check_options(
    outage_policy: str,
    ttl_seconds: int | None,
    retry_after_seconds: float,
    fallback_entries: int,
    call_threads: int,
) -> None:
    """Raise InvalidInputError naming the first of RedisStateStore's options that is wrong."""
    if outage_policy not in ("fallback", "raise"):
        raise InvalidInputError(
            f"outage_policy must be 'fallback' or 'raise', got {outage_policy!r}",
            field="outage_policy",
        )
    if ttl_seconds is not None and (
        isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int) or ttl_seconds < 1
    ):
        raise InvalidInputError(
            f"ttl_seconds must be a positive int or None, got {ttl_seconds!r}",
            field="ttl_seconds",
        )
    if (
        isinstance(retry_after_seconds, bool)
        or not isinstance(retry_after_seconds, (int, float))
        or not 0 <= retry_after_seconds <= 3600  # NaN and infinity fail too
    ):
        raise InvalidInputError(
            f"retry_after_seconds must be a number of seconds in [0, 3600], got "
            f"{retry_after_seconds!r}",
            field="retry_after_seconds",
        )
    for field, value in (("fallback_entries", fallback_entries), ("call_threads", call_threads)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidInputError(f"{field} must be a positive int, got {value!r}", field=field)


class RedisStateStore:
    """Keeps compiler state in Redis as JSON strings under ``prefix``.

    Pass a ``redis.Redis`` or ``redis.cluster.RedisCluster`` client whose timeouts are within
    ``deadline_seconds`` and that does not retry, or a URL (default ``MEMBRANE_REDIS_URL`` /
    ``REDIS_URL``) to have a ``redis.Redis`` built. ``ttl_seconds`` lets idle conversations
    expire; None keeps them. ``prefix`` may not hold braces (they would move a key's Redis
    Cluster hash tag). A read is one ``GET``; a write is one ``EVAL`` on the one key, which
    replaces what it holds (a value of another format version too: see
    :class:`~membrane.state.StateStore`).

    Each call ends within ``deadline_seconds`` of being asked for, however the link behaves:
    it runs on one of at most ``call_threads`` threads and is abandoned at the deadline (see
    :mod:`membrane.state._calls`). While a node does not answer, ``outage_policy="fallback"``
    (the default) lets compiles go on with an in-process copy of what this store last read or
    wrote (bounded to ``fallback_entries``), flagged in their metadata and warned once per
    outage; ``"raise"`` makes them raise :class:`~membrane.errors.StoreUnavailable`. After a
    node fails a call the store does not call that node again for ``retry_after_seconds``, so
    an outage costs one deadline, not one per call; the breaker is per node (a single server
    is one node), so on a cluster the other nodes' keys are served as usual. A full connection
    pool makes a call wait for a connection within its deadline and fail alone, and a key
    holding another Redis type is that key's bad value (read as such, replaced by the next
    write): neither opens a breaker. Failed calls are kept in :attr:`failed_calls` (the most
    recent 64).
    """

    def __init__(
        self,
        client: Any = None,
        *,
        url: str | None = None,
        prefix: str = _DEFAULT_PREFIX,
        ttl_seconds: int | None = None,
        deadline_seconds: float | None = None,
        outage_policy: OutagePolicy = "fallback",
        retry_after_seconds: float = 1.0,
        fallback_entries: int = 10_000,
        call_threads: int = 32,
    ) -> None:
        self.deadline_seconds = check_deadline(deadline_seconds)
        _check_options(
            outage_policy, ttl_seconds, retry_after_seconds, fallback_entries, call_threads
        )
        if not isinstance(prefix, str) or "{" in prefix or "}" in prefix:
            raise InvalidInputError(
                f"prefix must be a string without braces, got {prefix!r}", field="prefix"
            )
        if client is None:
            self._client = bounded_client(url, deadline_seconds=self.deadline_seconds)
        else:
            self._client = check_client(client, self.deadline_seconds)
        self._prefix = prefix
        self._ttl = ttl_seconds
        self.outage_policy: OutagePolicy = outage_policy
        self._retry_after = float(retry_after_seconds)
        self._copy = InMemoryStateStore(max_entries=fallback_entries)
        self._runner = CallRunner(call_threads)
        self._lock = threading.Lock()
        self._down_until: dict[str, float] = {}  # node -> when its breaker lets a call through
        self.failed_calls: deque[StoreCall] = deque(maxlen=_RECORDED_CALLS)

    @property
    def outage_fallback(self) -> InMemoryStateStore | None:
        """Where compiles keep state while Redis is down (None with ``outage_policy="raise"``)."""
        return self._copy if self.outage_policy == "fallback" else None

    def get(self, key: str) -> dict[str, Any] | None:
        """The value under ``key`` (None when absent).

        Raises ``ValueError`` when what is stored is no state value (not a JSON object, or a
        key of another Redis type) and :class:`~membrane.errors.StoreUnavailable` when Redis
        cannot answer within the deadline.
        """
        name = self._prefix + key
        raw = self._call("get", key, name, lambda: self._client.get(name))
        if raw is None:
            return None
        value = decode_state(raw)
        self._copy.put(key, value)
        return value

    def put(self, key: str, value: dict[str, Any]) -> None:
        raw, version, ttl = encode_state(value), state_version(value), self._ttl or 0
        script, name = _PUT_SCRIPT, self._prefix + key
        self._call("put", key, name, lambda: self._client.eval(script, 1, name, raw, version, ttl))
        self._copy.put(key, value)

    def delete(self, key: str) -> None:
        """Remove ``key`` from Redis and from the in-process copy."""
        name = self._prefix + key
        self._call("delete", key, name, lambda: self._client.delete(name))
        self._copy.delete(key)

    def scan(self, match: str) -> list[str]:
        """The keys that match ``match`` (a ``SCAN MATCH`` glob), without this store's prefix.

        Walks the whole key space (every primary of a cluster), so it is for erasure and
        maintenance, not for compiles.
        """
        pattern = escape_glob(self._prefix) + match
        names = self._call("scan", match, pattern, lambda: list(self._client.scan_iter(pattern)))
        cut = len(self._prefix)
        return [(n.decode() if isinstance(n, bytes) else str(n))[cut:] for n in names]

    def node_of(self, key: str) -> str:
        """The node that serves ``key``: ``host:port`` on a cluster, "" for a single server.

        Compiles use it to keep a failing node's keys in the fallback for the rest of the
        compile, and the other nodes' keys in Redis.
        """
        return self._node(self._prefix + key)[0]

    def _node(self, name: str) -> tuple[str, object]:
        """The node that serves ``name`` (``host:port``; "" for a single server), and its pool."""
        find = getattr(self._client, "get_node_from_key", None)
        if find is None:
            return "", getattr(self._client, "connection_pool", None)
        try:
            node = find(name)
        except redis_errors():  # no node serves the slot: the cluster client will say so
            return "", None
        connection = getattr(node, "redis_connection", None)
        return str(node.name), getattr(connection, "connection_pool", None)

    def _call(self, operation: str, key: str, name: str, command: Any) -> Any:
        """Run one Redis call within the deadline; a failure becomes StoreUnavailable (or, for
        a key of another type, ValueError), is recorded, and opens the node's breaker if the
        node is to blame."""
        node, pool = self._node(name)
        if time.monotonic() < self._down_until.get(node, -math.inf):
            where = f"Redis node {node}" if node else "Redis"
            raise StoreUnavailable(
                f"{where} did not answer within {self.deadline_seconds} s moments ago; "
                f"not calling it again for {self._retry_after} s",
                store="redis",
            )
        started = time.monotonic()
        deadline = started + self.deadline_seconds
        failures: tuple[type[BaseException], ...] = (CallBusy, *redis_errors())
        try:
            out = self._runner.run(lambda: run_patiently(command, deadline, pool), deadline)
        except CallAbandoned as exc:
            kind: FailureKind = "busy" if pool_is_full(pool) else "node"
            error = f"TimeoutError: no answer within the deadline of {self.deadline_seconds} s"
            if kind == "busy":
                error = "busy: every pooled connection stayed in use until the deadline"
            self._failed(StoreCall(operation, key, time.monotonic() - started, error, node, kind))
            raise StoreUnavailable(
                f"cannot {_verb(operation)} {key!r} in Redis: {error}", store="redis"
            ) from exc
        except failures as exc:
            kind = classify(exc)
            error = f"{type(exc).__name__}: {exc}"
            if kind == "busy":
                error = f"busy: {exc}"
            self._failed(StoreCall(operation, key, time.monotonic() - started, error, node, kind))
            if kind == "key":
                raise ValueError(f"{key!r} holds no state value: {exc}") from exc
            reason = error if kind == "busy" else exc
            raise StoreUnavailable(
                f"cannot {_verb(operation)} {key!r} in Redis: {reason}", store="redis"
            ) from exc
        if node in self._down_until:
            with self._lock:
                self._down_until.pop(node, None)
        return out

    def _failed(self, record: StoreCall) -> None:
        """Record a failed call; one that is the node's fault opens its breaker."""
        with self._lock:
            self.failed_calls.append(record)
            if record.kind != "node":
                return
            first = record.node not in self._down_until
            self._down_until[record.node] = time.monotonic() + self._retry_after
        if first and self.outage_policy == "fallback":
            where = f"Redis node {record.node}" if record.node else "Redis state store"
            warnings.warn(
                f"{where} unreachable ({record.error}); compiles use in-process state for its "
                "keys until it answers again, and nothing they compute is written to it",
                StateStoreWarning,
                stacklevel=5,
            )


def _verb(operation: str) -> str:
    return {"get": "read", "delete": "delete"}.get(operation, "write")
