"""Where a compiled prompt's tokens went, region by region.

A compiled prompt has six regions, in prompt order: the system core (rules and the interrupt
instruction), the eviction index, the kept history, the memories, the recalled passages and the
current turn. :func:`prompt_anatomy` cuts ``CompileResult.messages`` into pieces, one per
region per message, and counts each piece so that the pieces of a message add up to the whole
message. ``membrane inspect`` (text, JSON and HTML) and the demo are all drawn from it.

>>> from membrane import ContextCompiler, ContextLayoutEngine, MemoryItem
>>> result = ContextCompiler(2048, core_content="Be brief.").compile(
...     [MemoryItem(id="a", content="Retries back off.")], "How do retries work?"
... )
>>> parts = prompt_anatomy(
...     result, core=ContextLayoutEngine("Be brief.").build_core(),
...     user_message="How do retries work?",
... )
>>> parts.content_tokens == result.metadata["token_count"]
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from membrane.messages import message_text
from membrane.prompt_text import CURRENT_MESSAGE_HEADER, LAST_REPLY_HEADER, RECALL_HEADER
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

Region = Literal["core", "index", "history", "memories", "recall", "current"]

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


def prompt_anatomy(
    result: CompileResult,
    *,
    core: str,
    user_message: str,
    counter: TokenCounter | None = None,
) -> Anatomy:
    """Cut ``result.messages`` into region pieces and count each one.

    ``core`` is the system text the layout built for the compile (its rules plus the interrupt
    instruction, ``ContextLayoutEngine(rules).build_core()``); it matters only for system
    placement, where every region shares the one system message. ``user_message`` is the
    current turn as it was passed to ``compile``. Count with the compiler's counter (cl100k_base
    when none is given) and the pieces add up to ``metadata["token_count"]``.
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
        for region, index, start, end in _region_spans(result, core, user_message)
        if end > start
    )
    framing = int(result.metadata.get("message_framing_tokens", 0)) // max(len(texts), 1)
    return Anatomy(pieces, framing)


def breakpoint_positions(
    result: CompileResult, anatomy: Anatomy
) -> list[tuple[int, dict[str, Any]]]:
    """Each cache breakpoint with its place on the content-token axis the regions tile.

    A breakpoint's ``tokens`` include the framing of every message up to it; that framing is
    taken off so the position lines up with the region totals.
    """
    out = []
    for point in result.metadata.get("cache_breakpoints") or []:
        framing = anatomy.framing_per_message * (int(point["message_index"]) + 1)
        out.append((int(point["tokens"]) - framing, point))
    return out


def cacheable_prefix_tokens(result: CompileResult) -> int:
    """Provider tokens (framing included) up to the last cache breakpoint; 0 without one."""
    points = result.metadata.get("cache_breakpoints") or []
    return int(points[-1]["tokens"]) if points else 0


def sent_tokens(result: CompileResult) -> int:
    """Tokens the request carries: the content plus the per-message framing."""
    md = result.metadata
    return int(md["token_count"]) + int(md.get("message_framing_tokens", 0))


# ---------------------------------------------------------------------- finding the regions


def _region_spans(result: CompileResult, core: str, user_message: str) -> list[_Span]:
    """Every region's characters, found by looking for the layout's headers in the text.

    Each message is tiled from its first character to its last; spans come in message order.
    """
    texts = [message_text(m) for m in result.messages]
    md = result.metadata
    system = texts[0]
    if md.get("memory_placement") == "system":
        core_len = len(core) if system.startswith(core) else 0
        starts: list[tuple[Region, int]] = [("core", 0)] if core_len else []
        has_gap = bool(core_len) and system[core_len:].startswith("\n\n")
        starts += _tail_starts(system, core_len + 2 if has_gap else core_len, user_message)
        return _tile(starts, 0, len(system))
    core_chars = int(md.get("core_chars", len(system)))
    starts = [("core", 0)]
    if core_chars < len(system):
        starts.append(("index", core_chars))
    spans = _tile(starts, 0, len(system))
    last = len(texts) - 1
    spans += [("history", i, 0, len(texts[i])) for i in range(1, last)]
    if last > 0:
        spans += _tile(_tail_starts(texts[last], 0, user_message), last, len(texts[last]))
    return spans


def _tile(starts: list[tuple[Region, int]], message_index: int, length: int) -> list[_Span]:
    """Spans for consecutive regions of one message; each runs to the next one's start."""
    ends = [start for _, start in starts[1:]] + [length]
    return [
        (region, message_index, start, end)
        for (region, start), end in zip(starts, ends, strict=True)
    ]


def _tail_starts(text: str, start: int, user_message: str) -> list[tuple[Region, int]]:
    """Where memories, recall and the current turn begin within ``text[start:]``."""
    marker = f"{CURRENT_MESSAGE_HEADER}\n{user_message}"
    if text.endswith(marker) and len(text) - len(marker) >= start:
        current = len(text) - len(marker)
    else:
        found = text.rfind(CURRENT_MESSAGE_HEADER, start)
        current = found if found >= 0 else len(text)
    reply = text.rfind(LAST_REPLY_HEADER, start, current)
    if reply >= 0:
        current = reply
    starts: list[tuple[Region, int]] = []
    head = text[start:current]
    if head.startswith(RECALL_HEADER):
        starts.append(("recall", start))
    elif head:
        starts.append(("memories", start))
        # Memory lines never hold a newline, so no blank line can precede the recall block.
        gap = head.find("\n\n" + RECALL_HEADER)
        if gap >= 0:
            starts.append(("recall", start + gap))
    starts.append(("current", current))
    return starts
