"""The StateStore protocol."""

from __future__ import annotations

import json
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "STATE_FORMAT_VERSION",
    "VERSION_FIELD",
    "StateStore",
    "StateStoreWarning",
    "decode_state",
    "encode_state",
    "state_version",
]

#: The format of the conversation values this Membrane writes, stored in each value under
#: :data:`VERSION_FIELD`. Bump it whenever a value's fields change meaning: a worker reads a
#: value of another version as absent (flagged) and writes its own over it, so after a
#: rollback the older deploy takes the store back instead of replaying every history for good.
#: 3: a history snapshot's index lines are sentence picks, never text.
STATE_FORMAT_VERSION = 3

#: The field of a stored value that holds its format version (a non-negative int).
VERSION_FIELD = "version"


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


def state_version(value: object) -> int:
    """The format version ``value`` carries (0 when it carries none, or not as an int)."""
    version = value.get(VERSION_FIELD) if isinstance(value, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version >= 0:
        return version
    return 0


@runtime_checkable
class StateStore(Protocol):
    """A key-value store of small JSON-serialisable dicts.

    Implementations must return what was last ``put`` under a key (or None), and translate
    their own failures into :class:`membrane.errors.StoreUnavailable`. A ``put`` replaces what
    is stored, whatever its format version: a worker that cannot read a value (another deploy's
    format, newer or older) writes its own over it rather than leave it to be replayed around
    for good.
    """

    def get(self, key: str) -> dict[str, Any] | None:
        """The value stored under ``key``, or None."""
        ...

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store ``value`` under ``key``, replacing what is there."""
        ...
