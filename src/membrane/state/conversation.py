"""What a conversation's state value may hold, checked before any stage reads it.

The value is written by :class:`membrane.compile_state.StateView` and read back from a store
that is not trusted: its fields are checked here for type and range only. The history
snapshot in it is checked where a worker restores it (``stages.history._snapshot``), against
the caller's messages.
"""

from __future__ import annotations

from membrane.state.protocol import STATE_FORMAT_VERSION, VERSION_FIELD

__all__ = ["CONVERSATION_FIELDS", "check_conversation_state"]


def _nonnegative_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53


#: The fields of a conversation's state this Membrane writes; any other is dropped on read.
CONVERSATION_FIELDS = frozenset({VERSION_FIELD, "share", "events", "room", "tracker", "tools"})


def check_conversation_state(value: object) -> str | None:
    """Why ``value`` is not a conversation's state, or None.

    The state is a JSON object with a format ``version``; the window's ``share``, ``events``
    and ``room`` (non-negative ints), its ``tracker`` (the saved history tracker, a JSON object
    checked where a worker restores it, ``stages.history._snapshot``) and ``tools``, the
    fingerprint of the last tool definitions (a string), are each optional. Only a value of
    this Membrane's version is checked further: another version's fields are not ours to judge
    (:class:`StateView` reads such a value as absent, flags it and writes its own over it).
    """
    if not isinstance(value, dict):
        return f"expected a JSON object, got {type(value).__name__}"
    version = value.get(VERSION_FIELD)
    if not _nonnegative_int(version):
        return f"{VERSION_FIELD} must be a non-negative int, got {str(version)[:40]}"
    if version != STATE_FORMAT_VERSION:
        return None
    for name in ("share", "events", "room"):
        if name in value and not _nonnegative_int(value[name]):
            return f"{name} must be a non-negative int, got {str(value[name])[:40]}"
    if "tracker" in value and not isinstance(value["tracker"], dict):
        return "tracker must be a JSON object"
    if "tools" in value and not isinstance(value["tools"], str):
        return f"tools must be a fingerprint string, got {str(value['tools'])[:40]}"
    return None
