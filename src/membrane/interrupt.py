"""The interrupt protocol: the model asks the host for a missing detail instead of guessing.

The model writes ``<SYSTEM_INTERRUPT_FETCH[query]>``; the host finds the tag, looks the detail
up, and continues the conversation with it. A tag is well formed when its query is at most
:data:`MAX_QUERY_CHARS` characters on one line and holds no second opening marker; anything
else is ordinary text and is passed through untouched. Surrounding whitespace is trimmed from
the query.

>>> parse_interrupt("Let me check. <SYSTEM_INTERRUPT_FETCH[user's timezone]> One moment.")
('Let me check. ', "user's timezone", ' One moment.')
>>> strip_all_interrupts("Let me check. <SYSTEM_INTERRUPT_FETCH[user's timezone]> One moment.")
'Let me check. One moment.'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from membrane.prompt_text import INTERRUPT_CLOSE, INTERRUPT_OPEN

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

__all__ = [
    "INTERRUPT_CLOSE",
    "INTERRUPT_INSTRUCTION",
    "INTERRUPT_OPEN",
    "MAX_QUERY_CHARS",
    "InterruptEvent",
    "InterruptStreamDetector",
    "TextEvent",
    "contains_interrupt",
    "find_interrupts",
    "parse_interrupt",
    "scan_stream",
    "strip_all_interrupts",
]

#: Longest query a tag may carry. It bounds how much text a stream holds back while a tag
#: might still be completing.
MAX_QUERY_CHARS = 500

INTERRUPT_INSTRUCTION = (
    "When a reply depends on a detail that is not in the context you have been given, do not "
    "guess it or make it up. Write <SYSTEM_INTERRUPT_FETCH[...]> instead, with the dots "
    "replaced by a short, precise one-line description of the missing detail; the detail will "
    "be looked up and given to you before you go on."
)

_TAG = re.compile(
    re.escape(INTERRUPT_OPEN)
    + rf"((?:(?!{re.escape(INTERRUPT_OPEN)})[^\r\n]){{0,{MAX_QUERY_CHARS}}}?)"
    + re.escape(INTERRUPT_CLOSE)
)
# Removing a tag also removes the spaces right after it, so "check. <tag> One" reads
# "check. One". Only spaces *after* the tag go: a stream has already sent the ones before it.
_TAG_AND_SPACES = re.compile(_TAG.pattern + r"[ \t]*")


def _require_str(text: object, name: str = "text") -> str:
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    return text


def contains_interrupt(text: str) -> bool:
    """Whether ``text`` holds at least one well-formed interrupt tag."""
    return _TAG.search(_require_str(text)) is not None


def parse_interrupt(text: str) -> tuple[str, str, str] | None:
    """Split ``text`` at its first interrupt tag into ``(before, query, after)``.

    ``before`` and ``after`` are returned exactly as they appear; ``None`` when there is no tag.
    """
    match = _TAG.search(_require_str(text))
    if match is None:
        return None
    return text[: match.start()], match.group(1).strip(), text[match.end() :]


def find_interrupts(text: str) -> list[str]:
    """The queries of every interrupt tag in ``text``, in order."""
    return [m.group(1).strip() for m in _TAG.finditer(_require_str(text))]


def strip_all_interrupts(text: str) -> str:
    """``text`` with every interrupt tag (and the spaces or tabs right after it) removed."""
    return _TAG_AND_SPACES.sub("", _require_str(text))


@dataclass(frozen=True, slots=True)
class TextEvent:
    """Text that is safe to show: it is not, and cannot become, part of a tag."""

    text: str


@dataclass(frozen=True, slots=True)
class InterruptEvent:
    """A complete interrupt tag; ``raw`` is the tag exactly as the model wrote it."""

    query: str
    raw: str


_HOLD = -1
_NOT_A_TAG = -2


class InterruptStreamDetector:
    """Finds interrupt tags in streamed text while passing everything else straight through.

    Feed it chunks as they arrive. Text is released as soon as it cannot belong to a tag; only
    a possible tag beginning is held back (at most ``len(INTERRUPT_OPEN) + MAX_QUERY_CHARS + 1``
    characters, and never past a line break). A tag split over any number of chunks is reported
    once, when its closing ``]>`` arrives, and none of it is released as text. The
    concatenated text of all events equals :func:`strip_all_interrupts` of the whole stream,
    and the queries equal :func:`find_interrupts`. At :meth:`flush`, an unfinished tag is
    released as the text it is.

    >>> detector = InterruptStreamDetector()
    >>> detector.feed("One moment. <SYSTEM_INTER")
    [TextEvent(text='One moment. ')]
    >>> detector.feed("RUPT_FETCH[order id]> Thanks")
    [InterruptEvent(query='order id', raw='<SYSTEM_INTERRUPT_FETCH[order id]>'), \
TextEvent(text='Thanks')]
    """

    def __init__(self) -> None:
        self._held = ""
        self._after_tag = False

    def feed(self, chunk: str) -> list[TextEvent | InterruptEvent]:
        """Consume ``chunk`` and return what can be decided so far, in stream order."""
        buf = self._held + _require_str(chunk, "chunk")
        events: list[TextEvent | InterruptEvent] = []
        text: list[str] = []
        pos = 0
        while pos < len(buf):
            if self._after_tag:
                while pos < len(buf) and buf[pos] in " \t":
                    pos += 1
                if pos == len(buf):
                    break
                self._after_tag = False
            start = buf.find(INTERRUPT_OPEN, pos)
            if start == -1:
                keep = _partial_opener_length(buf, pos)
                text.append(buf[pos : len(buf) - keep])
                pos = len(buf) - keep
                break
            text.append(buf[pos:start])
            end = _tag_end(buf, start)
            if end == _HOLD:
                pos = start
                break
            if end == _NOT_A_TAG:
                # This opener cannot start a tag; a later one still might.
                text.append(buf[start])
                pos = start + 1
                continue
            _emit_text(events, text)
            raw = buf[start:end]
            query = raw[len(INTERRUPT_OPEN) : -len(INTERRUPT_CLOSE)].strip()
            events.append(InterruptEvent(query=query, raw=raw))
            self._after_tag = True
            pos = end
        _emit_text(events, text)
        self._held = buf[pos:]
        return events

    def flush(self) -> list[TextEvent | InterruptEvent]:
        """End the stream: release anything held back as text and reset for reuse."""
        held, self._held, self._after_tag = self._held, "", False
        return [TextEvent(held)] if held else []

    @property
    def pending(self) -> str:
        """The text currently held back because it might still become a tag."""
        return self._held


def scan_stream(chunks: Iterable[str]) -> Iterator[TextEvent | InterruptEvent]:
    """Run an :class:`InterruptStreamDetector` over ``chunks``, flushing at the end."""
    detector = InterruptStreamDetector()
    for chunk in chunks:
        yield from detector.feed(chunk)
    yield from detector.flush()


def _emit_text(events: list[TextEvent | InterruptEvent], parts: list[str]) -> None:
    joined = "".join(parts)
    parts.clear()
    if joined:
        events.append(TextEvent(joined))


def _partial_opener_length(buf: str, pos: int) -> int:
    """Length of the longest tail of ``buf[pos:]`` that could grow into the opener."""
    for length in range(min(len(INTERRUPT_OPEN) - 1, len(buf) - pos), 0, -1):
        if buf.endswith(INTERRUPT_OPEN[:length]):
            return length
    return 0


def _tag_end(buf: str, start: int) -> int:
    """Where the tag opened at ``start`` ends, or ``_HOLD`` / ``_NOT_A_TAG``.

    Mirrors ``_TAG``: the query runs to the first ``]>``, may not contain a line break or
    another opener, and is at most ``MAX_QUERY_CHARS`` long.
    """
    body = start + len(INTERRUPT_OPEN)
    close = buf.find(INTERRUPT_CLOSE, body, body + MAX_QUERY_CHARS + len(INTERRUPT_CLOSE))
    if close == -1 and len(buf) - body >= MAX_QUERY_CHARS + len(INTERRUPT_CLOSE):
        return _NOT_A_TAG
    query = buf[body : close if close != -1 else len(buf)]
    if "\n" in query or "\r" in query or INTERRUPT_OPEN in query:
        return _NOT_A_TAG
    return close + len(INTERRUPT_CLOSE) if close != -1 else _HOLD
