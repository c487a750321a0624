"""Where each region of a compiled prompt sits: the layout's marks and the spans they give."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["Region", "RegionMarks", "RegionName"]

RegionName = Literal["core", "index", "history", "memories", "recall", "current"]


@dataclass(frozen=True, slots=True)
class Region:
    """Where one region of the prompt sits: ``messages[message_index]``'s ``[start:end]``."""

    region: RegionName
    message_index: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class RegionMarks:
    """Where regions start inside the first and the last message, as the layout wrote them.

    Every message in between is history. :meth:`regions` turns the marks into spans; it runs
    only when a caller reads :attr:`CompileResult.regions`, so a compile pays for two tuples.
    """

    first: tuple[tuple[RegionName, int], ...]
    last: tuple[tuple[RegionName, int], ...] = ()

    def regions(self, lengths: Sequence[int]) -> tuple[Region, ...]:
        """The spans, given each message's text length; empty regions are left out."""
        out = _contiguous(0, self.first, lengths[0])
        for i in range(1, len(lengths) - 1 if self.last else len(lengths)):
            out += _contiguous(i, (("history", 0),), lengths[i])
        if self.last:
            out += _contiguous(len(lengths) - 1, self.last, lengths[-1])
        return tuple(out)


def _contiguous(
    message_index: int, starts: Sequence[tuple[RegionName, int]], end: int
) -> list[Region]:
    """Regions that each run from their start to the next one's start (the last to ``end``)."""
    out = []
    stops = [start for _, start in starts[1:]] + [end]
    for (name, start), stop in zip(starts, stops, strict=True):
        if stop > start:
            out.append(Region(name, message_index, start, stop))
    return out
