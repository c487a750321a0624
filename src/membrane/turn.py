"""One compile's inputs, checked and normalised once at the entry point.

Everything after :func:`normalise_offer` and :class:`Turn` reads typed values: memories are
numbered ``[Mem:N]`` segments in the caller's order, extras are ``(text, tier)`` pairs, and the
layout's core and end texts are built once.
"""

from __future__ import annotations

import functools
import operator
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from membrane import config
from membrane.capabilities import ModelCapabilities
from membrane.errors import InvalidInputError
from membrane.messages import CheckedPrefix, Message, check_text, find_lone_surrogate
from membrane.records import (
    MEMORY_KINDS,
    MemoryItem,
    TextCapSetting,
    memory_id,
    memory_kind,
    memory_text,
    memory_tier,
    text_caps,
)
from membrane.stages.agent import AgentInputs
from membrane.stages.firewall import Offer
from membrane.stages.fit import FitRules, ItemCap
from membrane.stages.history import NO_WRITERS, Writers
from membrane.stages.layout import ContextLayoutEngine, render_memories
from membrane.stages.preflight import SyncCompressor, check_compressed
from membrane.stages.tail import TailInput
from membrane.stages.window import WindowInput
from membrane.text.semantic import SemanticCall
from membrane.tokenizers import MemoizedCounter

if TYPE_CHECKING:
    from membrane.profile import MembraneProfile, PolicyPlan, QueryLabel

__all__ = [
    "Turn",
    "check_compressor",
    "check_extras",
    "check_fraction",
    "check_message_counts",
    "check_non_negative_int",
    "check_placement",
    "check_positive_int",
    "check_scale",
    "check_turn_texts",
    "compress_offer",
    "memory_pairs",
    "normalise_offer",
    "oversized_middle",
]


@dataclass(frozen=True)
class Turn:
    """One compile's normalised inputs and the budget they are compiled against."""

    user_message: str
    history: list[Message]
    #: The caller's token count of each history message's text (None: Membrane counts it).
    message_counts: list[int | None] | None
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
    label: QueryLabel | None = None
    report_policies: bool = False
    new_session: bool = False
    #: Who writes each role, from the caller's ``speakers`` map.
    writers: Writers = NO_WRITERS
    # What validating the history proved (its digest, the caller's history_version).
    proof: CheckedPrefix | None = None

    @property
    def count(self) -> Callable[[str], int]:
        return self.counter.count

    def window_input(self) -> WindowInput:
        """What the history-window stage reads of this turn."""
        return WindowInput(
            history=self.history,
            message_counts=self.message_counts,
            conversation=self.conversation,
            core=self.core,
            end_text=self.end_text,
            counter=self.counter,
            budget_counted=self.budget_counted,
            offer_texts=self.offer.texts(),
            image_tokens=self.agent.images.tokens,
            new_session=self.new_session,
            proof=self.proof,
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
            writers=self.writers,
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
    label: QueryLabel | None = None,
    text_cap: TextCapSetting = None,
) -> Offer:
    """The memories (numbered in input order) and extras on offer this turn.

    A profile with a classifier, policies or must-include ids attaches the fit's rules.
    ``text_cap`` is the compiler's ``memory_text_max_chars`` (None: the process default).
    """
    triples = memory_pairs(memories, tier_by_memory_id, profile, user_message)
    extras = check_extras(middle_extras)
    caps = text_caps(text_cap)
    plan = None
    if profile is not None and (profile.policies or profile.must_include):
        from membrane.profile import plan_policies

        items: list[tuple[str | None, int, str | None]] = [
            (memory_kind(m), tier, memory_id(m)) for _, m, tier in triples
        ]
        items += [(None, tier, None) for _, tier in extras]
        plan = plan_policies(profile.policies, profile.must_include, items)
    segments = []
    for position, (number, memory, tier) in enumerate(triples):
        limit = plan.max_chars.get(position) if plan is not None else None
        own_caps = caps if limit is None else {**caps, memory_kind(memory): limit}
        segments.extend(render_memories([(memory, tier)], start_number=number, caps=own_caps))
    for segment in segments:
        _check_rendered(segment.line, segment.number - 1, memories)
    truncated = sum(1 for s in segments if s.truncated)
    rules = _fit_rules(plan, label) if profile is not None and profile.shapes_the_fit else None
    return Offer(segments, extras, truncated, citable=list(segments), rules=rules)


def _fit_rules(plan: PolicyPlan | None, label: QueryLabel | None) -> FitRules:
    """The profile's policies and the turn's label effect, as rules for the fit."""
    effect = label.effect if label is not None else None
    return FitRules(
        must=plan.must if plan is not None else frozenset(),
        never_thin=plan.never_thin if plan is not None else frozenset(),
        caps=tuple(ItemCap(*cap) for cap in plan.caps) if plan is not None else (),
        tier_order=effect.tier_order if effect is not None else (1, 2, 3),
        memory_share=effect.memory_share if effect is not None else None,
    )


def compress_offer(
    offer: Offer, compressor: SyncCompressor | None, count: Callable[[str], int], question: str
) -> Offer:
    """Pre-flight: replace an oversized middle with the caller's summary of it."""
    raw = _oversized(offer, count) if compressor is not None else None
    if compressor is None or raw is None:
        return offer
    target = config.preflight_target_tokens()
    summary = check_compressed(compressor(raw, target, question))
    return Offer([], [(summary, 2)], offer.memories_truncated, citable=offer.citable)


def oversized_middle(
    memories: Sequence[object],
    options: Mapping[str, Any],
    text_cap: TextCapSetting,
    count: Callable[[str], int],
) -> str | None:
    """The raw middle a pre-flight compressor should shorten (None while it is under
    ``MEMORY_PREFLIGHT_TOKEN_THRESHOLD``); ``options`` are the compile's keyword arguments."""
    offer = normalise_offer(
        memories,
        options.get("tier_by_memory_id"),
        options.get("profile"),
        "",
        options.get("middle_extras"),
        text_cap=text_cap,
    )
    return _oversized(offer, count)


def _oversized(offer: Offer, count: Callable[[str], int]) -> str | None:
    if not (offer.segments or offer.extras):
        return None
    raw = "\n".join(offer.lines())
    return raw if count(raw) > config.preflight_token_threshold() else None


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
    try:
        memory_text(memory)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{where}: {exc}", field=where) from None


def _check_rendered(line: str, index: int, memories: Sequence[object] | None) -> None:
    """A memory's line must be encodable; the error names the field that broke it."""
    if find_lone_surrogate(line, "") is None or memories is None:
        return
    memory = memories[index]
    for name in ("content", "kind"):
        value = getattr(memory, name, None)
        if isinstance(value, str):
            check_text(value, f"memories[{index}].{name}")
    check_text(line, f"memories[{index}]")


# ---------------------------------------------------------------------- argument checks


def check_compressor(compressor: object) -> None:
    if compressor is not None and not callable(compressor):
        raise TypeError("compress_sync must be a function (raw_middle, target_tokens, question)")


def check_turn_texts(
    user_message: object,
    agent_persona_prompt: object,
    last_assistant_turn: object,
    dynamic_directives: object,
    conversation_id: object,
) -> None:
    """The compile's text arguments are strings (or None where optional) UTF-8 can encode."""
    check_text(user_message, "user_message")
    check_text(agent_persona_prompt, "agent_persona_prompt", optional=True)
    check_text(last_assistant_turn, "last_assistant_turn", optional=True)
    check_text(conversation_id, "conversation_id", optional=True)
    if dynamic_directives is None or isinstance(dynamic_directives, str):
        check_text(dynamic_directives, "dynamic_directives", optional=True)
    elif isinstance(dynamic_directives, Sequence) and not isinstance(dynamic_directives, bytes):
        for i, directive in enumerate(dynamic_directives):
            check_text(directive, f"dynamic_directives[{i}]", optional=True)
    else:
        raise InvalidInputError(
            "dynamic_directives must be a string, a list of strings or None, got "
            f"{type(dynamic_directives).__name__}",
            field="dynamic_directives",
        )


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
    # An int too large for a float (10**400) is as unusable as an infinite scale; Python
    # compares ints and floats exactly, so the bound needs no conversion.
    if not ok or not (0 < value <= sys.float_info.max):  # type: ignore[operator]
        shown = f"an int of {value.bit_length()} bits" if isinstance(value, int) else repr(value)
        raise InvalidInputError(
            f"token_scale must be a positive finite number or None, got {shown}",
            field="token_scale",
        )


def check_message_counts(counts: object, messages: int) -> list[int | None] | None:
    """The caller's ``message_token_counts``, checked: one int >= 0 or None per message.

    A count is the caller's assertion of how many tokens this compiler's counter (before the
    token scale, without the per-message overhead or images) gives the message's text; it is
    used as given, in place of counting, when the compiler first reads the message. Budget
    guarantees hold for the counts Membrane makes; a wrong supplied count moves the cut and
    the total by what it is wrong by. ``metadata["message_counts_supplied"]`` says how many
    messages had one.
    """
    if counts is None:
        return None
    field_name = "message_token_counts"
    if isinstance(counts, (str, bytes, Mapping)) or not isinstance(counts, Sequence):
        raise InvalidInputError(
            f"{field_name} must be a list with one int (or None) per conversation message, "
            f"got {type(counts).__name__}",
            field=field_name,
        )
    if len(counts) != messages:
        raise InvalidInputError(
            f"{field_name} has {len(counts)} entries for {messages} conversation_messages; give "
            "one per message, None where Membrane should count",
            field=field_name,
        )
    given = list(counts)
    # Checked at C speed; a Python loop runs only to name the bad entry.
    present = list(filter(functools.partial(operator.is_not, None), given))
    if set(map(type, present)) <= {int} and min(present, default=0) >= 0:
        return given
    i, n = next(
        (i, n) for i, n in enumerate(given) if n is not None and (type(n) is not int or n < 0)
    )
    raise InvalidInputError(
        f"{field_name}[{i}] must be an int >= 0 (the message's token count) or None, got {n!r}",
        field=f"{field_name}[{i}]",
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
        check_text(item[0], f"middle_extras[{i}]")
        out.append((item[0], int(item[1])))
    return out
