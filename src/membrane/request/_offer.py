"""The memories and extras on offer this turn, numbered and laid out once."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from membrane import config
from membrane.errors import InvalidInputError
from membrane.memo import BULK_ITEMS, skip_memo_writes
from membrane.messages import check_text, find_lone_surrogate
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
from membrane.request._checks import check_extras
from membrane.stages.fit import FitRules, ItemCap
from membrane.stages.layout import render_memories
from membrane.stages.values import Offer

if TYPE_CHECKING:
    from membrane.profile import MembraneProfile, PolicyPlan, QueryLabel
    from membrane.stages.preflight import SyncCompressor

__all__ = ["compress_offer", "memory_pairs", "normalise_offer", "oversized_middle"]


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
    with skip_memo_writes(len(triples) > BULK_ITEMS):  # too many to keep their bodies
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
    from membrane.stages.preflight import check_compressed, summary_text  # only when used

    target = config.preflight_target_tokens()
    summary = check_compressed(compressor(raw, target, question))
    offered = {segment.number for segment in offer.citable}
    return Offer(
        [], [(summary_text(summary, offered), 2)], offer.memories_truncated, citable=offer.citable
    )


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
    config.check_within(
        len(memories), "MAX_MEMORIES", "memories", "records", "offer the best of them"
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
