"""The StateStore protocol."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["StateStore"]


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
