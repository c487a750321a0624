"""Policies: declarative rules per memory kind or tier that the budget fit obeys."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from membrane.errors import InvalidInputError
from membrane.records import MEMORY_KINDS

__all__ = [
    "CONFLICT_ORDER",
    "Policy",
    "PolicyPlan",
    "check_must_include",
    "check_policies",
    "plan_policies",
]

#: When rules cannot all hold, the earlier one wins. Every loss is reported in
#: ``metadata["policy_report"]["conflicts"]``; the budget is never exceeded to keep a rule.
CONFLICT_ORDER = ("budget", "never_thin", "must_include", "max_items", "memory_share", "ranking")


@dataclass(frozen=True, slots=True)
class Policy:
    """Rules for every memory of one kind (``"procedural"``, ...) or one tier (1, 2 or 3).

    ``max_items``: at most this many are sent. ``must_include``: all of them go ahead of every
    other memory, whatever the ranking. ``never_thin``: sent whole or not at all, never cut to
    a keyframe. ``max_chars``: the memory's text is shortened to this many characters
    (replacing the per-kind default cap). A memory matched by several policies obeys all of
    them (the smallest ``max_items`` and ``max_chars`` bind).

    >>> Policy("procedural", never_thin=True).applies_to("procedural", 1)
    True
    """

    target: str | int
    max_items: int | None = None
    must_include: bool = False
    never_thin: bool = False
    max_chars: int | None = None

    def __post_init__(self) -> None:
        target = self.target
        if isinstance(target, bool) or target not in (*MEMORY_KINDS, 1, 2, 3):
            raise InvalidInputError(
                f"a policy's target must be a memory kind {MEMORY_KINDS} or a tier (1, 2, 3), "
                f"got {target!r}",
                field="policies",
            )
        for name in ("max_items", "max_chars"):
            value = getattr(self, name)
            low = 0 if name == "max_items" else 2
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < low
            ):
                raise InvalidInputError(
                    f"a policy's {name} must be an integer of {low} or more, or None; "
                    f"got {value!r}",
                    field=name,
                )

    @property
    def name(self) -> str:
        """How reports name this policy: ``procedural`` or ``tier 2``."""
        return self.target if isinstance(self.target, str) else f"tier {self.target}"

    def applies_to(self, kind: str | None, tier: int) -> bool:
        return self.target == kind or self.target == tier

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "max_items": self.max_items,
            "must_include": self.must_include,
            "never_thin": self.never_thin,
            "max_chars": self.max_chars,
        }


@dataclass(frozen=True, slots=True)
class PolicyPlan:
    """What the policies ask of one offer, by position in it.

    ``caps`` are ``(policy name, positions, max_items)``; ``max_chars`` maps a position to
    its text cap.
    """

    must: frozenset[int]
    never_thin: frozenset[int]
    caps: tuple[tuple[str, frozenset[int], int], ...]
    max_chars: dict[int, int]


def plan_policies(
    policies: Sequence[Policy],
    must_include_ids: Sequence[str],
    items: Sequence[tuple[str | None, int, str | None]],
) -> PolicyPlan:
    """Apply the policies to ``items``, each ``(kind, tier, id)`` (kind and id None for extras).

    Policies apply to memories only; extras are left as they are.
    """
    wanted = set(must_include_ids)
    must: set[int] = set()
    never_thin: set[int] = set()
    max_chars: dict[int, int] = {}
    members: dict[int, set[int]] = {}
    for i, (kind, tier, ref) in enumerate(items):
        if kind is None:
            continue
        if ref is not None and ref in wanted:
            must.add(i)
        for p, policy in enumerate(policies):
            if not policy.applies_to(kind, tier):
                continue
            if policy.must_include:
                must.add(i)
            if policy.never_thin:
                never_thin.add(i)
            if policy.max_chars is not None:
                max_chars[i] = min(max_chars.get(i, policy.max_chars), policy.max_chars)
            if policy.max_items is not None:
                members.setdefault(p, set()).add(i)
    caps = tuple(
        (policies[p].name, frozenset(ids), int(policies[p].max_items or 0))
        for p, ids in sorted(members.items())
    )
    return PolicyPlan(frozenset(must), frozenset(never_thin), caps, max_chars)


def check_policies(policies: Sequence[Policy]) -> tuple[Policy, ...]:
    if isinstance(policies, (str, bytes)) or not isinstance(policies, Sequence):
        raise InvalidInputError("policies must be a list of Policy", field="policies")
    for policy in policies:
        if not isinstance(policy, Policy):
            raise InvalidInputError(
                f"policies must hold Policy values, got {policy!r}", field="policies"
            )
    return tuple(policies)


def check_must_include(ids: Sequence[str]) -> tuple[str, ...]:
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise InvalidInputError(
            "must_include must be a list of memory ids, e.g. ('policy-7',)", field="must_include"
        )
    for ref in ids:
        if not isinstance(ref, str) or not ref:
            raise InvalidInputError(
                f"must_include holds memory ids (non-empty strings), got {ref!r}",
                field="must_include",
            )
    return tuple(ids)
