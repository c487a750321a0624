"""What a restored tracker takes again from the caller's messages rather than from the store.

A snapshot (:mod:`._snapshot`) is read from a store anyone with access to it could have
written. So no token count and no prompt text is taken from it as stored:

- each kept unit is counted again, as :meth:`HistoryTracker.update` counts it (the caller's
  counts where given, the framing, the images), and the sum must be what the snapshot says;
- the tokens of the current session are counted again as far as they matter (up to a
  chunk: the cut's session rule only ever looks at that much of them);
- each index line is made again from its dropped message: the snapshot says only which
  message and which of its sentences (:class:`._index.IndexLine`), and the line's text and
  tokens come from the caller's message and the compiler's counter.

Each function returns None (or raises nothing) when what the snapshot says cannot be so for
these messages; the caller then discards the snapshot and replays the history.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from membrane.messages import (
    history_text,
    is_call_stub,
    message_text,
    speaker_label,
    tool_call_labels,
)
from membrane.stages.history._index import IndexLine, derive_line_text
from membrane.stages.history._shared import Count

__all__ = ["ImageTokens", "LineRecipe", "UnitCost", "derive_lines", "session_tokens", "unit_cost"]

ImageTokens = Callable[[Mapping[str, Any]], int] | None
#: A stored index line: its unit, its message, the sentences it picks, the words it keeps.
LineRecipe = tuple[int, int, tuple[int, ...], int]
UnitCost = Callable[[int, int], int]


def unit_cost(
    messages: Sequence[Mapping[str, Any]],
    count: Count,
    overhead: int,
    image_tokens: ImageTokens,
    counts: Sequence[int | None] | None,
) -> UnitCost:
    """A function of a unit's bounds giving its tokens, as the tracker's replay counts them."""

    def cost(start: int, stop: int) -> int:
        span = messages[start:stop]
        given = counts[start:stop] if counts is not None else [None] * len(span)
        tokens = sum(
            (count(message_text(m)) if n is None else n) + overhead
            for m, n in zip(span, given, strict=True)
        )
        if image_tokens is not None:
            tokens += sum(image_tokens(m) for m in span)
        return tokens

    return cost


def session_tokens(
    bounds: Sequence[tuple[int, int]],
    kept: Sequence[int],
    cut: int,
    boundary: int,
    chunk: int,
    cost: UnitCost,
) -> int:
    """The tokens since the last session boundary, counted back from the newest unit until
    they reach ``chunk`` (more is never looked at); ``kept`` are the kept units' tokens."""
    first = max(boundary, 0)
    total = 0
    unit = len(bounds)
    while unit > first and total < chunk:
        unit -= 1
        total += kept[unit - cut] if unit >= cut else cost(*bounds[unit])
    return total


def derive_lines(
    recipes: Sequence[LineRecipe],
    messages: Sequence[Mapping[str, Any]],
    bounds: Sequence[tuple[int, int]],
    count: Count,
) -> list[IndexLine] | None:
    """The index lines ``recipes`` describe, made from ``messages``; None when one of them
    cannot describe a line of these messages (not a dropped message with text, not in order,
    picks that are not its sentences)."""
    lines: list[IndexLine] = []
    last = -1
    calls: dict[int, dict[str, str]] = {}
    for unit, at, picks, words in recipes:
        if unit >= len(bounds) or not bounds[unit][0] <= at < bounds[unit][1] or at <= last:
            return None
        last = at
        message = messages[at]
        text = history_text(message)
        if is_call_stub(message) or not text.strip():
            return None
        if unit not in calls:
            calls[unit] = tool_call_labels(messages[bounds[unit][0] : bounds[unit][1]])
        line = derive_line_text(speaker_label(message, calls[unit]), text, picks, words)
        if line is None:
            return None
        lines.append(IndexLine(unit, line, count(line), at, picks, words))
    return lines
