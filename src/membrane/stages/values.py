"""The typed values the stages pass each other: one compile's request parts and its offer.

The compiler builds these once per compile (:mod:`membrane.request` normalises the caller's
arguments into them) and hands each stage the parts it reads; no stage copies them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from membrane.memo import BULK_ITEMS
from membrane.prompt_text import RECALL_HEADER
from membrane.stages.fit import FitRules
from membrane.stages.history import NO_WRITERS, RecalledPassage, Writers
from membrane.stages.layout import ContextLayoutEngine, MemorySegment
from membrane.tokenizers import count_each

if TYPE_CHECKING:
    from membrane.capabilities import ModelCapabilities
    from membrane.messages import CheckedPrefix, Message
    from membrane.profile import MembraneProfile
    from membrane.tokenizers import MemoizedCounter, TokenizerRegistry

__all__ = [
    "NO_STEPS",
    "Budget",
    "FinalMessage",
    "HistoryRequest",
    "Offer",
    "TurnSteps",
    "TurnText",
    "joined_parts",
]


@dataclass(frozen=True, slots=True)
class CallOptions:
    """Per-call switches."""

    conversation_id: str | None = None
    use_prompt_caching_split: bool = True
    profile: MembraneProfile | None = None
    tokenizer_registry: TokenizerRegistry | None = None
    debug: bool = False


@dataclass(frozen=True, slots=True)
class HistoryRequest:
    """The conversation so far, checked, and what the caller said about it."""

    messages: list[Message]
    #: The conversation's state key (the caller's ``conversation_id``, or the default one).
    conversation: str
    #: The caller's token count of each message's text (None: Membrane counts it).
    counts: list[int | None] | None = None
    #: What validating the history proved: its digest, the caller's ``history_version``.
    proof: CheckedPrefix | None = None
    #: The caller says this turn starts a session (its provider cache has expired).
    new_session: bool = False
    #: Who writes each role, from the caller's ``speakers`` map.
    writers: Writers = NO_WRITERS
    #: The leading messages no cut may drop: the unit that holds the last compaction boundary.
    pinned: int = 0
    #: The caller's index of the message or item holding that boundary (None: there is none).
    boundary: int | None = None


@dataclass(frozen=True, slots=True)
class TurnSteps:
    """A continued turn's steps after its question: tool calls and results, as sent."""

    messages: list[Message]
    #: Their tokens, framing included.
    tokens: int = 0
    #: How many tool results were replaced by a note to fit the budget.
    stubbed: int = 0
    #: The question's parts that are not text (images, files), sent after its text.
    parts: list[Any] = field(default_factory=list)
    #: This compile continues a turn (False: it asks a new question).
    continued: bool = True


NO_STEPS = TurnSteps([], continued=False)


@dataclass(frozen=True, slots=True)
class TurnText:
    """The fixed texts of one turn: the question, the core region and the end region."""

    user_message: str
    layout: ContextLayoutEngine
    #: The core region: the rules, the persona and the interrupt instruction.
    core: str
    #: The end region: the directives, the last reply (without history) and the question.
    end_text: str
    last_assistant_turn: str | None = None
    directives: str | Sequence[str] | None = None


@dataclass(frozen=True, slots=True)
class Budget:
    """What one compile may spend, in the provider's tokens and in the counter's."""

    counter: MemoizedCounter
    #: The prompt's budget in provider tokens (``max_tokens`` within window - reserve).
    tokens: int
    scale: float
    #: How many observations shaped ``scale`` (0 for a fixed or default scale).
    scale_samples: int
    #: The budget in counted tokens for the messages: scaled, with the tools' tokens off.
    counted: int
    capabilities: ModelCapabilities | None = None

    @property
    def count(self) -> Callable[[str], int]:
        return self.counter.count


@dataclass
class Offer:
    """Everything trimmable in the middle: memories, then extras, in input order."""

    segments: list[MemorySegment]
    extras: list[tuple[str, int]]
    memories_truncated: int = 0
    # Segments whose [Mem:N] may appear in the output (after compression, the originals).
    citable: list[MemorySegment] = field(default_factory=list)
    # A profile's rules for the fit (None: the default fit).
    rules: FitRules | None = None
    # Read many times per compile: built once (segments and extras are not changed later).
    _texts: list[str] = field(init=False, repr=False)
    _lines: list[str] = field(init=False, repr=False)
    _tiers: list[int] = field(init=False, repr=False)
    _line_tokens: tuple[Callable[[str], int], list[int]] | None = field(
        default=None, init=False, repr=False
    )

    def __post_init__(self) -> None:
        self._texts = [s.content for s in self.segments] + [t for t, _ in self.extras]
        self._lines = [s.line for s in self.segments] + [t for t, _ in self.extras]
        self._tiers = [s.tier for s in self.segments] + [tier for _, tier in self.extras]

    def texts(self) -> list[str]:
        return self._texts

    def lines(self) -> list[str]:
        return self._lines

    def tiers(self) -> list[int]:
        return self._tiers

    def line_tokens(self, count: Callable[[str], int]) -> list[int]:
        """Each line's tokens by ``count``, counted once: three stages read them, and the
        counter's memo may not hold 50,000 memories' lines from one stage to the next."""
        known = self._line_tokens
        if known is None or known[0] != count:
            lines = self._lines
            if len(lines) > BULK_ITEMS:  # more than a memo keeps until the next turn
                known = self._line_tokens = (count, count_each(count, lines))
            else:
                known = self._line_tokens = (count, [count(line) for line in lines])
        return known[1]


@dataclass
class FinalMessage:
    """The final user message: kept memory lines, recalled passages, then the end region."""

    end_text: str
    lines: list[str] = field(default_factory=list)
    sources: list[int] = field(default_factory=list)  # offer index of each line
    passages: list[RecalledPassage] = field(default_factory=list)
    thinned: int = 0

    def memory_text(self) -> str:
        return "\n".join(self.lines)

    def text(self) -> str:
        return joined_parts(self.parts())

    def parts(self) -> list[tuple[str, str]]:
        """What :meth:`text` is made of: each line with the line breaks after it."""
        blocks = []
        if self.lines:
            blocks.append(self.lines)
        if self.passages:
            blocks.append([RECALL_HEADER, *(p.text for p in self.passages)])
        out = []
        for block in blocks:
            out += [(line, "\n") for line in block[:-1]]
            out.append((block[-1], "\n\n"))
        out.append((self.end_text, ""))
        return out


def joined_parts(parts: Sequence[tuple[str, str]]) -> str:
    return "".join(line + breaks for line, breaks in parts)
