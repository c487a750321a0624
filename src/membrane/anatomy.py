"""Where a compiled prompt's tokens went, region by region.

A compiled prompt has six regions, in prompt order: the system core (rules and the interrupt
instruction), the eviction index, the kept history, the memories, the recalled passages and the
current turn. :func:`prompt_anatomy` cuts ``CompileResult.messages`` into pieces, one per
region per message, and counts each piece so that the pieces of a message add up to the whole
message. ``membrane inspect`` (text, JSON and HTML) and the demo are all drawn from it.

>>> from membrane import ContextCompiler, MemoryItem
>>> result = ContextCompiler(2048, core_content="Be brief.").compile(
...     [MemoryItem(id="a", content="Retries back off.")], "How do retries work?"
... )
>>> parts = prompt_anatomy(result)
>>> parts.content_tokens == result.metadata["token_count"]
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from membrane.messages import message_text
from membrane.regions import RegionName
from membrane.tokenizers import TiktokenAdapter, TokenCounter

if TYPE_CHECKING:
    from membrane.compiler import CompileResult

__all__ = [
    "REGIONS",
    "REGION_LABELS",
    "Anatomy",
    "Region",
    "RegionPiece",
    "breakpoint_positions",
    "cacheable_prefix_tokens",
    "prompt_anatomy",
    "sent_tokens",
]

Region = RegionName

#: The regions in the order they appear in a prompt.
REGIONS: tuple[Region, ...] = ("core", "index", "history", "memories", "recall", "current")

#: How the CLI and the demo name each region for people.
REGION_LABELS: dict[Region, str] = {
    "core": "system core",
    "index": "eviction index",
    "history": "history",
    "memories": "memories",
    "recall": "recall",
    "current": "current turn",
}

# The compiler counts with this encoding when it is given no counter or registry.
_DEFAULT_ENCODING = "cl100k_base"

# (region, message index, start character, end character)
_Span = tuple[Region, int, int, int]


@dataclass(frozen=True, slots=True)
class RegionPiece:
    """The characters of one region inside one compiled message, and their tokens.

    ``text`` is ``message_text(result.messages[message_index])[start:end]``. ``tokens`` is the
    growth of the message's token count from ``start`` to ``end``, so a token that straddles two
    regions is counted once, in the piece where it ends.
    """

    region: Region
    message_index: int
    start: int
    end: int
    text: str
    tokens: int


@dataclass(frozen=True, slots=True)
class Anatomy:
    """A compiled prompt cut into region pieces, in message and character order.

    Empty pieces are left out. ``framing_per_message`` is the provider's per-message overhead
    (``metadata["message_framing_tokens"]`` shared evenly), which no region owns.
    """

    pieces: tuple[RegionPiece, ...]
    framing_per_message: int

    def totals(self) -> dict[str, int]:
        """Tokens per region, every region present, in prompt order."""
        out: dict[str, int] = dict.fromkeys(REGIONS, 0)
        for piece in self.pieces:
            out[piece.region] += piece.tokens
        return out

    @property
    def content_tokens(self) -> int:
        """All the pieces' tokens: the prompt's content without message framing."""
        return sum(p.tokens for p in self.pieces)


def prompt_anatomy(result: CompileResult, *, counter: TokenCounter | None = None) -> Anatomy:
    """Cut ``result.messages`` into region pieces and count each one.

    The pieces are the region spans the layout recorded. Count with the compiler's counter
    (cl100k_base when none is given) and the pieces add up to ``metadata["token_count"]``,
    less the tool definitions' and the images' tokens, which have no text span
    (``metadata["tools_tokens"]`` and ``["image_tokens"]``, see docs/agents.md).
    """
    counter = counter or TiktokenAdapter(_DEFAULT_ENCODING)
    texts = [message_text(m) for m in result.messages]
    prefix_counts: dict[int, dict[int, int]] = {}

    def prefix(message_index: int, end: int) -> int:
        # Counting growing prefixes makes a message's pieces add up to the message exactly.
        if end == 0:
            return 0
        known = prefix_counts.setdefault(message_index, {})
        if end not in known:
            known[end] = counter.count(texts[message_index][:end])
        return known[end]

    pieces = tuple(
        RegionPiece(
            region,
            index,
            start,
            end,
            texts[index][start:end],
            prefix(index, end) - prefix(index, start),
        )
        for region, index, start, end in _region_spans(result)
        if end > start
    )
    report = result.report
    framing = report.message_framing_tokens // max(len(texts), 1)
    return Anatomy(pieces, framing)


def breakpoint_positions(
    result: CompileResult, anatomy: Anatomy
) -> list[tuple[int, dict[str, Any]]]:
    """Each cache breakpoint with its place on the content-token axis the regions tile.

    A breakpoint's ``tokens`` include the framing of every message up to it; that framing is
    taken off so the position lines up with the region totals.
    """
    out = []
    for point in result.report.cache_breakpoints:
        framing = anatomy.framing_per_message * (int(point["message_index"]) + 1)
        out.append((int(point["tokens"]) - framing, point))
    return out


def cacheable_prefix_tokens(result: CompileResult) -> int:
    """Provider tokens (framing included) up to the last cache breakpoint; 0 without one."""
    points = result.report.cache_breakpoints
    return int(points[-1]["tokens"]) if points else 0


def sent_tokens(result: CompileResult) -> int:
    """Tokens the request carries: the content plus the per-message framing."""
    return result.report.sent_tokens


# ---------------------------------------------------------------------- finding the regions


def _region_spans(result: CompileResult) -> list[_Span]:
    """Every region's characters, as the layout recorded them (``CompileResult.regions``).

    A result built by hand has no recorded regions: its first message counts as the core, its
    last as the current turn and the ones between as history.
    """
    if result.regions:
        return [(r.region, r.message_index, r.start, r.end) for r in result.regions]
    texts = [message_text(m) for m in result.messages]
    last = len(texts) - 1
    spans: list[_Span] = [("core", 0, 0, len(texts[0]))] if texts else []
    spans += [("history", i, 0, len(texts[i])) for i in range(1, last)]
    if last > 0:
        spans.append(("current", last, 0, len(texts[last])))
    return spans
