"""The StateStore protocol."""

from __future__ import annotations

import json
from typing import Any, Protocol, runtime_checkable

__all__ = ["StateStore", "StateStoreWarning", "decode_state", "encode_state"]


class StateStoreWarning(UserWarning):
    """A value read from a state store was discarded, or the store is down and a compile fell
    back to in-process state. The compile itself went on; its ``metadata`` says what happened.
    """


def encode_state(value: dict[str, Any]) -> str:
    """The one text form every store keeps a value in (compact, keys sorted)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def decode_state(raw: str | bytes) -> dict[str, Any]:
    """The value back from :func:`encode_state`'s text.

    Raises ``ValueError`` when ``raw`` is not JSON or not a JSON object (``null`` included: a
    key that holds something is not a missing key).
    """
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise ValueError(f"a stored state value is a JSON object, got {type(value).__name__}")
    return value


@runtime_checkable
class StateStore(Protocol):
    """A key-value store of small JSON-serialisable dicts.

    Implementations must return what was last ``put`` under a key (or None), and translate
    their own failures into :class:`membrane.errors.StoreUnavailable`.
    """

    def get(self, key: str) -> dict[str, Any] | None:
        """The value stored under ``key``, or None."""
        ...

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store ``value`` under ``key``, replacing what was there."""
        ...
