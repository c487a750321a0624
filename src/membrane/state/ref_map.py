"""Ref-map persistence in Redis (the ``redis`` extra): a turn's citation numbers and their ids.

A ref map is kept under ``MEMBRANE_REF_MAP_PREFIX`` and the conversation's full scope (namespace,
user, conversation; :func:`membrane.state.keys.ref_map_key`), so no caller reads another's. Each
call ends within the store deadline, end to end (:mod:`membrane.state._calls`).
"""

from __future__ import annotations

import json
import threading
import time
import warnings
from typing import Any

from membrane import config
from membrane.errors import InvalidInputError, StoreUnavailable
from membrane.state._calls import CallAbandoned, CallBusy, CallRunner, run_patiently
from membrane.state.client import bounded_client, check_client, check_deadline, redis_errors
from membrane.state.keys import check_id, check_namespace, ref_map_key, scoped_conversation
from membrane.state.protocol import StateStoreWarning

__all__ = [
    "REF_MAP_CALL_THREADS",
    "encode_ref_map",
    "get_ref_map_for_conversation",
    "ref_map_ttl",
    "scoped_ref_map_key",
    "set_ref_map_for_conversation",
]

# A saved citation number has at most nine digits: the reader refuses a longer one (and with it
# the whole map), so the writer refuses it first.
_MAX_REF_DIGITS = 9
_MAX_REF = 10**_MAX_REF_DIGITS


def scoped_ref_map_key(
    conversation_id: object, user_id: object = None, state_namespace: object = None
) -> str:
    """The ref map's key, in the same scope as the conversation's state (ids checked first)."""
    check_id(conversation_id, "conversation_id")
    check_id(user_id, "user_id", optional=True)
    namespace = check_namespace(state_namespace)
    return ref_map_key(scoped_conversation(user_id, conversation_id), namespace)  # type: ignore[arg-type]


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def ref_map_ttl(ttl_seconds: object) -> int:
    """``ttl_seconds`` checked, or ``MEMBRANE_REF_MAP_TTL_SECONDS`` (600) when None."""
    if ttl_seconds is None:
        ttl_seconds = config.ref_map_ttl_seconds()
        field = "MEMBRANE_REF_MAP_TTL_SECONDS"
    else:
        field = "ttl_seconds"
    if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int) or ttl_seconds < 1:
        raise InvalidInputError(
            f"{field} must be a whole number of seconds >= 1 (Redis cannot keep a key for "
            f"0 or fewer seconds), got {ttl_seconds!r}",
            field=field,
        )
    return ttl_seconds


def encode_ref_map(ref_map: object) -> str:
    if not isinstance(ref_map, dict):
        raise InvalidInputError(
            f"ref_map must be a dict of citation numbers to ids, got {type(ref_map).__name__}",
            field="ref_map",
        )
    for number, ref in ref_map.items():
        if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number < _MAX_REF:
            raise InvalidInputError(
                f"ref_map keys must be citation numbers (ints from 0 to {_MAX_REF - 1:,}), got "
                f"{number!r}",
                field="ref_map",
            )
        if not isinstance(ref, str) or _has_surrogate(ref):
            raise InvalidInputError(
                f"ref_map[{number}] must be a string id without lone surrogates, got {ref!r}",
                field=f"ref_map[{number}]",
            )
    return json.dumps({str(k): v for k, v in ref_map.items()}, sort_keys=True)


def _ref_map_client(client: Any, deadline_seconds: float | None) -> tuple[Any, float]:
    deadline = check_deadline(deadline_seconds)
    if client is None:
        return bounded_client(None, deadline_seconds=deadline), deadline
    return check_client(client, deadline), deadline


_ref_map_runner: CallRunner | None = None
_ref_map_runner_lock = threading.Lock()
#: Threads the module-level ref-map functions run their Redis calls on (abandoned ones included).
REF_MAP_CALL_THREADS = 8


def _ref_map_call(client: Any, deadline_seconds: float, command: Any, what: str) -> Any:
    """``command()`` within ``deadline_seconds`` end to end, or StoreUnavailable."""
    global _ref_map_runner
    with _ref_map_runner_lock:
        if _ref_map_runner is None:
            _ref_map_runner = CallRunner(REF_MAP_CALL_THREADS)
        runner = _ref_map_runner
    deadline = time.monotonic() + deadline_seconds
    pool = getattr(client, "connection_pool", None)
    try:
        return runner.run(lambda: run_patiently(command, deadline, pool), deadline)
    except CallAbandoned as exc:
        raise StoreUnavailable(
            f"cannot {what}: Redis did not answer within {deadline_seconds} s", store="redis"
        ) from exc
    except (CallBusy, *redis_errors()) as exc:  # type: ignore[misc]
        raise StoreUnavailable(f"cannot {what}: {exc}", store="redis") from exc


def set_ref_map_for_conversation(
    conversation_id: str,
    ref_map: dict[int, str],
    *,
    user_id: str | None = None,
    state_namespace: str | None = None,
    client: Any = None,
    ttl_seconds: int | None = None,
    deadline_seconds: float | None = None,
) -> None:
    """Save a turn's ``ref_map`` so a later request can resolve the model's citations.

    The key carries the conversation's full scope, as its state key does: ``user_id`` and
    ``state_namespace`` are those ``compile_prompt_async`` was given (read it back with the
    same). ``client`` must meet the same deadline rules as :class:`RedisStateStore`'s. The key
    expires after ``ttl_seconds`` (default ``MEMBRANE_REF_MAP_TTL_SECONDS``, 600); it must be
    >= 1. Bad arguments (a citation number of ten digits or more included) raise
    :class:`~membrane.errors.InvalidInputError` before Redis is called.
    """
    key = scoped_ref_map_key(conversation_id, user_id, state_namespace)
    raw = encode_ref_map(ref_map)
    ttl = ref_map_ttl(ttl_seconds)
    client, deadline = _ref_map_client(client, deadline_seconds)
    _ref_map_call(client, deadline, lambda: client.set(key, raw, ex=ttl), "save the ref map")


def get_ref_map_for_conversation(
    conversation_id: str,
    *,
    user_id: str | None = None,
    state_namespace: str | None = None,
    client: Any = None,
    deadline_seconds: float | None = None,
) -> dict[int, str]:
    """The last saved ``ref_map`` of a user's conversation ({} when none or expired).

    A stored value that is not a map of integer citation numbers to string ids is discarded
    with a :class:`~membrane.state.StateStoreWarning` ({} is returned).
    """
    key = scoped_ref_map_key(conversation_id, user_id, state_namespace)
    client, deadline = _ref_map_client(client, deadline_seconds)
    raw = _ref_map_call(client, deadline, lambda: client.get(key), "read the ref map")
    if raw is None:
        return {}
    ref_map = _parse_ref_map(raw)
    if ref_map is None:
        warnings.warn(
            f"discarded the ref map stored under {key!r}: it is not a JSON object of "
            "citation numbers to string ids",
            StateStoreWarning,
            stacklevel=2,
        )
        return {}
    return ref_map


def _parse_ref_map(raw: str | bytes) -> dict[int, str] | None:
    """The ref map in ``raw``, or None when it is not one."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    out: dict[int, str] = {}
    for number, ref in value.items():
        if not (number.isascii() and number.isdigit() and len(number) <= _MAX_REF_DIGITS):
            return None
        if not isinstance(ref, str):
            return None
        out[int(number)] = ref
    return out
