"""A history as the stages read it: Responses items in chat form, and the last compaction.

A provider that compacted a conversation returns a block or item that stands for everything
before it, and ignores what precedes it when it is sent again: Anthropic's ``compaction``
content block (the last one with content; one whose content is None is a failed compaction
and changes nothing) and OpenAI's ``compaction`` input item. :func:`read_history` starts the
history at the last such boundary, so nothing before it is counted, indexed or recalled, and
inside the message that holds an Anthropic block it keeps that block and what follows it, the
block first (the API refuses a compaction block that is not the conversation's first).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from membrane.errors import InvalidInputError
from membrane.messages._responses import RESPONSES_PARTS, read_items

__all__ = ["HistoryRead", "read_history"]

_COMPACTION = "compaction"
# Part types that make a message worth a closer look: a compaction block, or a Responses part.
_MARKED = RESPONSES_PARTS | {_COMPACTION}


@dataclass(frozen=True, slots=True)
class HistoryRead:
    """The history to validate, and where its messages came from in the caller's list."""

    #: Chat-form messages, or the caller's value as given when there is nothing to read.
    messages: object
    #: For each message, the span of caller items it stands for (None: one each, in order).
    spans: tuple[tuple[int, int], ...] | None = None
    #: The caller's index of the item or message holding the last compaction boundary.
    boundary: int | None = None

    def fold_counts(self, counts: Sequence[int | None] | None) -> list[int | None] | None:
        """The caller's per-item token counts, summed per message (None where one is None)."""
        if counts is None or self.spans is None:
            return None if counts is None else list(counts)
        out: list[int | None] = []
        for start, stop in self.spans:
            part = counts[start:stop]
            out.append(None if any(n is None for n in part) else sum(n or 0 for n in part))
        return out


def _boundary_block(content: list[Any]) -> int | None:
    """The index of the last Anthropic compaction block with content in ``content``."""
    for j in range(len(content) - 1, -1, -1):
        block = content[j]
        if (
            isinstance(block, Mapping)
            and block.get("type") == _COMPACTION
            and block.get("content") is not None
        ):
            return j
    return None


def _scan(messages: Sequence[Any], start: int) -> tuple[tuple[int, int] | None, bool]:
    """The last compaction boundary in ``messages[start:]`` (message, block; block 0 for an
    OpenAI item) and whether a Responses item is at or after it, in one pass from the end.

    Most messages are plain chat with string content: two dict reads each.
    """
    responses = False
    for i in range(len(messages) - 1, start - 1, -1):
        message = messages[i]
        if message.__class__ is not dict and not isinstance(message, Mapping):
            continue  # validation refuses it
        kind = message.get("type")
        if kind == _COMPACTION:
            _check_item(message, i)
            return (i, 0), True
        # A typed item, or one without a role: an item reference may leave its type out.
        responses = responses or kind is not None or "role" not in message
        content = message.get("content")
        if content.__class__ is not list:
            continue
        kinds = {b.get("type") for b in content if isinstance(b, Mapping)} & _MARKED
        responses = responses or bool(kinds - {_COMPACTION})
        block = _boundary_block(content) if _COMPACTION in kinds else None
        if block is not None:
            return (i, block), responses
    return None, responses


def _check_item(item: Mapping[str, Any], i: int) -> None:
    if not isinstance(item.get("encrypted_content"), str):
        where = f"conversation_messages[{i}]"
        raise InvalidInputError(
            f"{where} is a compaction item without its encrypted_content string; send the item "
            "as the Responses API returned it",
            field=where,
        )


def read_history(messages: object, start: int = 0) -> HistoryRead:
    """The history from its last compaction boundary on, Responses items read as chat.

    ``messages[:start]`` are known to hold neither (a prefix proved unchanged since it was
    read), so only the rest is scanned. Anything that is not a list of messages is returned
    as given, for validation to refuse.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        return HistoryRead(messages)
    found, responses = _scan(messages, start)
    if found is None and not responses:
        return HistoryRead(messages)
    offset = 0 if found is None else found[0]
    items: Sequence[Any] = messages
    if found is not None:
        items = list(messages[offset:])
        if found[1]:
            first = items[0]
            items[0] = {**first, "content": first["content"][found[1] :]}
    if not responses:
        return HistoryRead(items, tuple((i, i + 1) for i in range(offset, len(messages))), offset)
    chat, spans = read_items(items)
    moved = tuple((start + offset, stop + offset) for start, stop in spans)
    return HistoryRead(chat, moved, None if found is None else offset)
