"""The budget fit: send each middle item whole, thinned to its keyframe, or not at all.

Items are taken in priority order and placed at their smallest size while room lasts; full
texts then come back in the same order. A profile's rules (:class:`FitRules`) change that
order, cap how many items of a group go, forbid thinning some and bound the room plain items
may take; they never lift the room itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from membrane.records import TIER_PROCEDURAL
from membrane.report import PolicyReport

__all__ = [
    "MAX_PROCEDURAL_KEPT",
    "FitChoice",
    "FitRules",
    "ItemCap",
    "MiddleItem",
    "fit_middle",
    "rules_outcome",
]

MAX_PROCEDURAL_KEPT = 3
FitChoice = Literal["full", "thin", "drop"]


@dataclass(frozen=True, slots=True)
class MiddleItem:
    """One trimmable item: its tier, rank within the offer (0 = best) and its two sizes.

    A ``pinned`` item (one the current question names) is placed before every tier.
    """

    tier: int
    rank: int
    full_tokens: int
    thin_tokens: int | None = None
    pinned: bool = False


@dataclass(frozen=True, slots=True)
class ItemCap:
    """At most ``limit`` of the items at ``members`` (offer positions) are sent; ``name`` says
    which rule set the cap."""

    name: str
    members: frozenset[int]
    limit: int


@dataclass(frozen=True, slots=True)
class FitRules:
    """What a profile asks of one fit; every field at its default leaves the fit unchanged.

    ``must`` items go before everything else and are exempt from every cap (they still count
    toward them). ``never_thin`` items are sent whole or not at all. ``tier_order`` is the order
    tiers are kept in under pressure. ``memory_share`` of the budget (``share_room`` tokens
    once :meth:`with_budget` set it) bounds the items that are not ``must``.
    """

    must: frozenset[int] = frozenset()
    never_thin: frozenset[int] = frozenset()
    caps: tuple[ItemCap, ...] = ()
    tier_order: tuple[int, ...] = (1, 2, 3)
    memory_share: float | None = None
    share_room: int | None = None

    def priority(self, i: int, tier: int, pinned: bool, rank: int) -> tuple[int, ...]:
        """Item ``i``'s place in the fit order (lower goes first)."""
        return (i not in self.must, not pinned, self.tier_order.index(tier), rank)

    @property
    def may_trim(self) -> bool:
        """True when these rules can leave out items that would all fit."""
        return bool(self.caps) or self.memory_share is not None

    def with_budget(self, budget: int) -> FitRules:
        """These rules with ``share_room`` set from ``memory_share`` of ``budget`` tokens."""
        if self.memory_share is None:
            return self
        return dataclasses.replace(self, share_room=int(self.memory_share * budget))

    def shed_order(self, items: Sequence[MiddleItem]) -> Callable[[int], tuple[int, ...]]:
        """A key whose largest value is the item to shed first when the joined text is over."""
        return lambda i: self.priority(i, items[i].tier, items[i].pinned, items[i].rank)


_NO_RULES = FitRules()


def _best_first(items: Sequence[MiddleItem], rules: FitRules | None) -> list[int]:
    """Item indexes in priority order: pinned, tier, rank (or the rules' own priority)."""
    if rules is None:
        return sorted(
            range(len(items)), key=lambda i: (not items[i].pinned, items[i].tier, items[i].rank)
        )
    key = rules.priority
    return sorted(
        range(len(items)), key=lambda i: key(i, items[i].tier, items[i].pinned, items[i].rank)
    )


def fit_middle(
    items: Sequence[MiddleItem],
    room: int,
    *,
    thin_before_drop: bool = True,
    separator_tokens: int = 1,
    max_procedural: int = MAX_PROCEDURAL_KEPT,
    rules: FitRules | None = None,
) -> list[FitChoice]:
    """Choose, for each item, to send it whole, thinned to its keyframe, or not at all.

    Items are taken in priority order: pinned first, then by tier, then by rank (``rules``
    put their ``must`` items ahead of that and may reorder the tiers). Each is placed at its
    smallest size (its keyframe, with ``thin_before_drop``) when that still fits; then full
    texts come back in the same order while room lasts. An item is left out only when it does
    not fit beside everything ranked above it. The chosen sizes (plus ``separator_tokens`` per
    sent item) never exceed ``room``.
    """
    best_first = _best_first(items, rules)
    rules = rules if rules is not None else _NO_RULES
    choice: list[FitChoice] = ["drop"] * len(items)
    procedural = frozenset(i for i in best_first if items[i].tier == TIER_PROCEDURAL)
    caps = (ItemCap("procedural", procedural, max_procedural), *rules.caps)
    capped = _over_caps(best_first, caps, rules.must)
    candidates = [i for i in best_first if i not in capped]

    def size(i: int, c: FitChoice) -> int:
        tokens = items[i].full_tokens if c == "full" else items[i].thin_tokens
        return (tokens or 0) + separator_tokens

    must, share = rules.must, rules.share_room
    if sum(size(i, "full") for i in candidates) <= room and (
        share is None or sum(size(i, "full") for i in candidates if i not in must) <= share
    ):
        for i in candidates:
            choice[i] = "full"
        return choice
    # ``plain`` is what the items outside ``must`` use; only ``share_room`` bounds it.
    used = plain = 0
    for i in candidates:
        thinnable = items[i].thin_tokens is not None and i not in rules.never_thin
        smallest: FitChoice = "thin" if thin_before_drop and thinnable else "full"
        s = size(i, smallest)
        if used + s <= room and (share is None or i in must or plain + s <= share):
            choice[i] = smallest
            used += s
            plain += 0 if i in must else s
    for i in candidates:
        if choice[i] == "thin":
            extra = size(i, "full") - size(i, "thin")
            if used + extra <= room and (share is None or i in must or plain + extra <= share):
                choice[i] = "full"
                used += extra
                plain += 0 if i in must else extra
    return choice


def _over_caps(
    best_first: Sequence[int], caps: Sequence[ItemCap], must: frozenset[int]
) -> set[int]:
    """The items each cap leaves out: ``must`` members take their slots first, the rest follow
    in priority order."""
    out: set[int] = set()
    for cap in caps:
        members = [i for i in best_first if i in cap.members]
        taken = sum(1 for i in members if i in must)
        for i in members:
            if i in must:
                continue
            if taken >= cap.limit:
                out.add(i)
            else:
                taken += 1
    return out


def rules_outcome(
    rules: FitRules, ids: Sequence[str | None], sent: Sequence[int], thinned: Sequence[int]
) -> PolicyReport:
    """What the rules did to one fit, for ``metadata["policy_report"]``.

    ``ids`` are the offer's memory ids by position (None for extras); ``sent`` the positions
    that went out, ``thinned`` those cut to their keyframe. A ``must`` item that did not go
    yielded to the budget (or to ``never_thin``, when its keyframe was not allowed); a cap that
    ``must`` items overran yielded to them.
    """
    went = set(sent)
    conflicts = [
        ("must_include", ids[i], "never_thin" if i in rules.never_thin else "budget")
        for i in sorted(rules.must)
        if i not in went
    ]
    caps = []
    for cap in rules.caps:
        sent_count = len(cap.members & went)
        caps.append((cap.name, cap.limit, len(cap.members), sent_count))
        if sent_count > cap.limit:
            conflicts.append((f"max_items ({cap.name})", None, "must_include"))
    return PolicyReport(
        must_include_sent=tuple(str(ids[i]) for i in sorted(rules.must & went)),
        never_thin_sent=len(rules.never_thin & went),
        thinned=len(thinned),
        max_items=tuple(caps),
        conflicts=tuple(conflicts),
    )
