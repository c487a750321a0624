"""One compile's inputs, checked and normalised once at the entry point.

Everything after :func:`normalise_offer` and :class:`Turn` reads typed values: memories are
numbered ``[Mem:N]`` segments in the caller's order, extras are ``(text, tier)`` pairs, and the
layout's core and end texts are built once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from membrane import config
from membrane.capabilities import ModelCapabilities
from membrane.errors import InvalidInputError
from membrane.messages import Message
from membrane.records import MEMORY_KINDS, MemoryItem, memory_tier, text_caps
from membrane.stages.agent import AgentInputs
from membrane.stages.firewall import Offer
from membrane.stages.layout import ContextLayoutEngine, render_memories
from membrane.stages.preflight import SyncCompressor, check_compressed
from membrane.stages.tail import TailInput
from membrane.stages.window import WindowInput
from membrane.text.semantic import SemanticCall
from membrane.tokenizers import MemoizedCounter

if TYPE_CHECKING:
    from membrane.profile import MembraneProfile

__all__ = [
    "Turn",
    "check_compressor",
    "check_extras",
    "check_fraction",
    "check_non_negative_int",
    "check_placement",
    "check_positive_int",
    "check_scale",
    "compress_offer",
    "memory_pairs",
    "normalise_offer",
]


@dataclass(frozen=True)
class Turn:
    """One compile's normalised inputs and the budget they are compiled against."""

    user_message: str
    history: list[Message]
    offer: Offer
    layout: ContextLayoutEngine
    core: str
    last_assistant_turn: str | None
    directives: str | Sequence[str] | None
    counter: MemoizedCounter
    budget: int
    scale: float
    scale_samples: int
    budget_counted: int
    conversation: str
    use_caching: bool
    debug: bool
    capabilities: ModelCapabilities | None
    agent: AgentInputs = field(default_factory=AgentInputs)
    tools_changed: bool = False

    @property
    def count(self) -> Callable[[str], int]:
        return self.counter.count

    def window_input(self) -> WindowInput:
        """What the history-window stage reads of this turn."""
        return WindowInput(
            history=self.history,
            conversation=self.conversation,
            core=self.core,
            end_text=self.end_text,
            counter=self.counter,
            budget_counted=self.budget_counted,
            offer_texts=self.offer.texts(),
            image_tokens=self.agent.images.tokens,
        )

    def tail_input(self, semantic: SemanticCall | None) -> TailInput:
        """What the final-message stage reads of this turn."""
        return TailInput(
            user_message=self.user_message,
            offer=self.offer,
            end_text=self.end_text,
            counter=self.counter,
            budget_counted=self.budget_counted,
            semantic=semantic,
        )

    @functools.cached_property
    def end_text(self) -> str:
        """The end region: the current turn (and the last reply when there is no history)."""
        last = self.last_assistant_turn if not self.history else None
        return self.layout.build_end(last, self.user_message, self.directives)


def normalise_offer(
    memories: Sequence[object] | None,
    tier_by_memory_id: Mapping[int, int] | None,
    profile: MembraneProfile | None,
    user_message: str,
    middle_extras: Sequence[tuple[str, int]] | None,
) -> Offer:
    """The memories (numbered in input order) and extras on offer this turn."""
    triples = memory_pairs(memories, tier_by_memory_id, profile, user_message)
    segments = []
    caps = text_caps()
    for number, memory, tier in triples:
        segments.extend(render_memories([(memory, tier)], start_number=number, caps=caps))
    truncated = sum(1 for s in segments if s.truncated)
    return Offer(segments, check_extras(middle_extras), truncated, citable=list(segments))


def compress_offer(
    offer: Offer, compressor: SyncCompressor | None, count: Callable[[str], int], question: str
) -> Offer:
    """Pre-flight: replace an oversized middle with the caller's summary of it."""
    if compressor is None or not (offer.segments or offer.extras):
        return offer
    raw = "\n".join(offer.lines())
    if count(raw) <= config.preflight_token_threshold():
        return offer
    target = config.preflight_target_tokens()
    summary = check_compressed(compressor(raw, target, question))
    return Offer([], [(summary, 2)], offer.memories_truncated, citable=offer.citable)


def memory_pairs(
    memories: Sequence[object] | None,
    tier_by_memory_id: Mapping[int, int] | None,
    profile: MembraneProfile | None,
    user_message: str,
) -> list[tuple[int, object, int]]:
    """``(number, memory, tier)`` for each memory offered; numbers follow the input order."""
    if memories is None:
        return []
    if isinstance(memories, (str, bytes)) or not isinstance(memories, Sequence):
        raise InvalidInputError(
            "memories must be a list of MemoryItem rows or records with id and memory_kind",
            field="memories",
        )
    items = list(memories)
    for i, memory in enumerate(items):
        _check_record(i, memory)
    numbered = list(enumerate(items, start=1))
    if profile is not None:
        # The profile chooses what to offer and in which order; numbers stay the caller's.
        number_of = {id(m): n for n, m in numbered}
        numbered = [(number_of[id(m)], m) for m in profile.prepare(items, user_message)]
    overrides = tier_by_memory_id or {}
    triples: list[tuple[int, object, int]] = []
    for number, memory in numbered:
        tier = overrides.get(id(memory), memory_tier(memory))
        if tier not in (1, 2, 3):
            raise InvalidInputError(
                f"tier_by_memory_id gives tier {tier!r}; tiers are 1, 2 or 3",
                field="tier_by_memory_id",
            )
        triples.append((number, memory, tier))
    return triples


def _check_record(i: int, memory: object) -> None:
    if type(memory) is MemoryItem:
        return  # a MemoryItem checks its own fields when it is made
    where = f"memories[{i}]"
    if not hasattr(memory, "id") or not (
        hasattr(memory, "memory_kind") or hasattr(memory, "memory_type")
    ):
        raise InvalidInputError(
            f"{where} ({type(memory).__name__}) needs an `id` and a `memory_kind` "
            f"(one of {MEMORY_KINDS}); wrap plain text in MemoryItem(id=..., content=...)",
            field=where,
        )
    if getattr(memory, "id", None) in (None, ""):
        raise InvalidInputError(
            f"{where} has no id; an id maps its citations back to your record", field=where
        )
    if not isinstance(getattr(memory, "content", None), str):
        raise InvalidInputError(f"{where} has no text content (a `content` string)", field=where)


# ---------------------------------------------------------------------- argument checks


def check_compressor(compressor: object) -> None:
    if compressor is not None and not callable(compressor):
        raise TypeError("compress_sync must be a function (raw_middle, target_tokens, question)")


def check_positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidInputError(f"{name} must be a positive integer, got {value!r}", field=name)


def check_non_negative_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{name} must be a non-negative integer, got {value!r}", field=name)


def check_placement(placement: object) -> None:
    if placement not in ("end", "system"):
        raise InvalidInputError(
            f"memory_placement must be 'end' or 'system', got {placement!r}",
            field="memory_placement",
        )


def check_fraction(name: str, value: object, *, allow_zero: bool) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok:
        v = float(value)  # type: ignore[arg-type]
        ok = (v >= 0.0 if allow_zero else v > 0.0) and v <= 1.0
    if not ok:
        low = "0" if allow_zero else "above 0"
        raise InvalidInputError(
            f"{name} must be a number from {low} to 1, got {value!r}", field=name
        )


def check_scale(value: object) -> None:
    if value is None:
        return
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not (0 < float(value) < float("inf")):  # type: ignore[arg-type]
        raise InvalidInputError(
            f"token_scale must be a positive number or None, got {value!r}", field="token_scale"
        )


def check_extras(extras: Sequence[tuple[str, int]] | None) -> list[tuple[str, int]]:
    if extras is None:
        return []
    if isinstance(extras, (str, bytes)) or not isinstance(extras, Sequence):
        raise InvalidInputError(
            "middle_extras must be a list of (text, tier) tuples", field="middle_extras"
        )
    out = []
    for i, item in enumerate(extras):
        if (
            not isinstance(item, tuple)
            or len(item) != 2
            or not isinstance(item[0], str)
            or isinstance(item[1], bool)
            or item[1] not in (1, 2, 3)
        ):
            raise InvalidInputError(
                f"middle_extras[{i}] must be a (text, tier) tuple with tier 1, 2 or 3",
                field=f"middle_extras[{i}]",
            )
        out.append((item[0], int(item[1])))
    return out
