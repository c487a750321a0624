"""Tool pairing: the one check that every tool call has one result and every result a call.

Compile and the request builders both call :func:`group_units` (``validate_messages`` and
``normalize_messages`` go through it), so they accept and refuse the same histories with the
same words. The rules, each a :class:`ToolPairingError` naming the message:

- a call has a non-empty id (an :class:`InvalidInputError`), used by no other call;
- the results of a call's message come right after it, one per call, before anything else;
- a result answers a call of the message just before its run of results.

A call with its results is a *unit*: the history is kept or dropped a unit at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from membrane import config
from membrane.errors import InvalidInputError, ToolPairingError
from membrane.messages._checks import check_message_details
from membrane.messages._time import message_time

__all__ = ["HistoryUnit", "group_units", "leading_unit", "tool_call_ids", "validate_messages"]

_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


@dataclass(frozen=True, slots=True)
class HistoryUnit:
    """Messages ``start`` (inclusive) to ``stop`` (exclusive) that live or die together."""

    start: int
    stop: int

    @property
    def size(self) -> int:
        return self.stop - self.start


def _call_ids(message: Mapping[str, Any]) -> list[str]:
    calls = message.get("tool_calls")
    ids = [str(c.get("id") or "") for c in calls if isinstance(c, Mapping)] if calls else []
    content = message.get("content")
    if isinstance(content, list):
        ids.extend(
            str(b.get("id") or "")
            for b in content
            if isinstance(b, Mapping) and b.get("type") == "tool_use"
        )
    return ids


def _result_ids(message: Mapping[str, Any]) -> list[str]:
    if message.get("role") == "tool":
        return [str(message.get("tool_call_id") or "")]
    content = message.get("content")
    if isinstance(content, list):
        return [
            str(b.get("tool_use_id") or "")
            for b in content
            if isinstance(b, Mapping) and b.get("type") == "tool_result"
        ]
    return []


def leading_unit(messages: Sequence[Mapping[str, Any]]) -> int:
    """How many messages the first unit holds: one, or a call message and its results."""
    if not messages:
        return 0
    stop = 1
    if _call_ids(messages[0]):
        while stop < len(messages) and _result_ids(messages[stop]):
            stop += 1
    return stop


def tool_call_ids(messages: Sequence[Mapping[str, Any]], start: int = 0) -> set[str]:
    """The ids of the tool calls that ``messages[start:]`` make."""
    ids: set[str] = set()
    for i in range(start, len(messages)):
        message = messages[i]
        if message.get("tool_calls") or isinstance(message.get("content"), list):
            ids.update(_call_ids(message))
    ids.discard("")
    return ids


class _Pairing:
    """One pass over a message list from ``start``, with the call ids made before it."""

    def __init__(
        self,
        messages: Sequence[Mapping[str, Any]],
        start: int,
        field: str,
        offset: int,
        earlier: AbstractSet[str] | None = None,
    ) -> None:
        self.messages = messages
        self.start = start
        self.field = field
        self.offset = offset
        self.made: set[str] = set()  # call ids from ``start`` on
        self._earlier = earlier if earlier is not None or start else frozenset()

    def where(self, i: int) -> str:
        return f"{self.field}[{i + self.offset}]"

    def made_before(self, call_id: str) -> bool:
        """True when a call with this id comes before the message being read."""
        if call_id in self.made:
            return True
        if self._earlier is None:  # read only when a new message makes or answers a call
            self._earlier = tool_call_ids(self.messages[: self.start])
        return call_id in self._earlier

    def stray(self, i: int, call_id: str) -> ToolPairingError:
        where = self.where(i)
        if call_id and self.made_before(call_id):
            reason = f"{where} is a tool result for call {call_id!r}, which is answered already"
        else:
            reason = (
                f"{where} is a tool result for call {call_id!r} but no earlier assistant "
                "message made that call"
            )
        return ToolPairingError(
            f"{reason}; include the call or drop the result", field=where, tool_call_id=call_id
        )

    def open_calls(self, i: int, calls: list[str]) -> dict[str, None]:
        """The calls of message ``i``, checked and recorded, in call order."""
        where = self.where(i)
        opened: dict[str, None] = {}
        for call_id in calls:
            if not call_id:
                raise InvalidInputError(f"{where}: a tool call needs a non-empty id", field=where)
            if call_id in opened or self.made_before(call_id):
                raise ToolPairingError(
                    f"{where}: tool call id {call_id!r} is used twice; providers need every "
                    "call id to be unique, so give each call its own",
                    field=where,
                    tool_call_id=call_id,
                )
            opened[call_id] = None
        self.made.update(opened)
        return opened

    def answer(self, i: int, opened: dict[str, None]) -> int:
        """Read the results after call message ``i``; the end of its unit."""
        j, n = i + 1, len(self.messages)
        while opened and j < n:
            answered = _result_ids(self.messages[j])
            if not answered:
                break
            for rid in answered:
                if rid in opened:
                    del opened[rid]
                elif rid and self.made_before(rid):
                    raise self.stray(j, rid)
                else:
                    raise ToolPairingError(
                        f"{self.where(j)} answers tool call {rid!r}, which the assistant "
                        f"message at {self.where(i)} did not make; include the call or drop "
                        "the result",
                        field=self.where(j),
                        tool_call_id=rid,
                    )
            j += 1
        if opened:
            missing = next(iter(opened))
            raise ToolPairingError(
                f"tool call {missing!r} in {self.where(i)} has no result message after it; "
                "providers reject unanswered calls, so add the result or drop the call",
                field=self.where(i),
                tool_call_id=missing,
            )
        return j

    def units(self) -> list[HistoryUnit]:
        units: list[HistoryUnit] = []
        i, n = self.start, len(self.messages)
        while i < n:
            msg = self.messages[i]
            # Most messages make no call and answer none: a unit of their own.
            plain = msg.get("role") != "tool" and not msg.get("tool_calls")
            if plain and msg.get("content").__class__ is not list:
                units.append(HistoryUnit(i, i + 1))
                i += 1
                continue
            stray = _result_ids(msg)
            if stray:
                raise self.stray(i, stray[0])
            calls = _call_ids(msg)
            j = self.answer(i, self.open_calls(i, calls)) if calls else i + 1
            units.append(HistoryUnit(i, j))
            i = j
        return units


def group_units(
    messages: Sequence[Mapping[str, Any]],
    *,
    field: str = "conversation_messages",
    offset: int = 0,
) -> list[HistoryUnit]:
    """Split messages into units; a tool-calling message and its results form one unit.

    Raises :class:`ToolPairingError` where the pairing rules (see the module) are broken.
    ``offset`` is the position of ``messages[0]`` in the caller's list, for error messages.
    """
    return _Pairing(messages, 0, field, offset).units()


def _check_message(msg: object, where: str) -> None:
    if not isinstance(msg, dict):
        raise InvalidInputError(
            f"{where} must be a dict with 'role' and 'content', got {type(msg).__name__}",
            field=where,
        )
    role = msg.get("role")
    if role not in _ROLES:
        raise InvalidInputError(
            f"{where} has role {role!r}; expected one of {sorted(_ROLES)}", field=where
        )
    content = msg.get("content")
    if content is not None and not isinstance(content, (str, list)):
        raise InvalidInputError(
            f"{where}.content must be a string, a list of content parts or None", field=where
        )
    if content is None and role != "assistant":
        raise InvalidInputError(f"{where}.content is missing", field=where)
    check_message_details(msg, where)
    message_time(msg, where)


def validate_messages(
    messages: object,
    *,
    field: str = "conversation_messages",
    start: int = 0,
    earlier_call_ids: AbstractSet[str] | None = None,
) -> list[dict[str, Any]]:
    """Check a message list and return it as a list (the dicts themselves are not copied).

    Raises :class:`InvalidInputError` for a malformed message and :class:`ToolPairingError`
    when the tool pairing rules are broken. ``start`` skips a prefix already validated (it
    must end where a tool call's results end); its call ids still count as used: pass them
    as ``earlier_call_ids`` (:func:`tool_call_ids` of the prefix, kept from the last check),
    or the prefix is read again for them whenever a new message makes a call.
    """
    if messages is None:
        return []
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidInputError(
            f"{field} must be a list of message dicts like {{'role': 'user', 'content': '...'}}",
            field=field,
        )
    config.check_within(
        len(messages), "MAX_HISTORY_MESSAGES", field, "messages", "send the newest ones"
    )
    out: list[dict[str, Any]] = messages if isinstance(messages, list) else list(messages)
    for i in range(start, len(out)):
        _check_message(out[i], f"{field}[{i}]")
    _Pairing(out, start, field, 0, earlier_call_ids).units()
    return out
