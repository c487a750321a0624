"""A profile described: one line per module for people, every setting as JSON for tools."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, Protocol

from membrane.profile._classify import LABELS, LabelEffect, classify_query
from membrane.profile._policies import CONFLICT_ORDER, Policy

__all__ = ["explain_profile", "profile_dict"]

_TIER_NAMES = {1: "procedures", 2: "facts", 3: "episodes"}


class MembraneProfile(Protocol):
    """What a description reads of :class:`._profile.MembraneProfile`."""

    @property
    def name(self) -> str: ...
    @property
    def dedup(self) -> bool: ...
    @property
    def near_duplicate_threshold(self) -> float | None: ...
    @property
    def shingle_size(self) -> int: ...
    @property
    def kinds_first(self) -> tuple[str, ...]: ...
    @property
    def freshness_half_life(self) -> timedelta | None: ...
    @property
    def reranker(self) -> Callable[..., Any] | None: ...
    @property
    def clock(self) -> Callable[[], Any] | None: ...
    @property
    def embedder(self) -> Any: ...
    @property
    def semantic_duplicate_threshold(self) -> float | None: ...
    @property
    def classifier(self) -> Callable[..., Any] | None: ...
    @property
    def classifier_history(self) -> int: ...
    @property
    def policies(self) -> Sequence[Policy]: ...
    @property
    def must_include(self) -> Sequence[str]: ...
    @property
    def profiler(self) -> bool: ...
    @property
    def effects(self) -> tuple[tuple[str, LabelEffect], ...]: ...
    @property
    def changes_nothing(self) -> bool: ...
    @property
    def shapes_the_fit(self) -> bool: ...


def explain_profile(profile: MembraneProfile) -> str:
    """The lines of :meth:`MembraneProfile.explain`."""
    lines = [f"Profile {profile.name!r}"]
    if profile.changes_nothing:
        lines.append("  Memories are offered exactly as given: nothing is dropped or moved.")
        return "\n".join(lines)
    lines.append(f"  1. Duplicates: {_dedup(profile)}")
    if profile.reranker is not None:
        lines.append(
            f"  2. Reranker: {_name(profile.reranker)}(user_message, memories) sets the order."
        )
    else:
        lines.append("  2. Reranker: none; your order is kept.")
    if profile.freshness_half_life is not None:
        span = _duration(profile.freshness_half_life)
        lines.append(
            f"  3. Freshness: dated episodic memories move back as they age; one {span} old "
            "is offered as if it ranked twice as far down, twice that age four times."
        )
    else:
        lines.append("  3. Freshness: off.")
    if profile.kinds_first:
        lines.append(
            f"  4. Kind order: {', then '.join(profile.kinds_first)} memories are offered "
            "first; the rest keep their order."
        )
    else:
        lines.append("  4. Kind order: unchanged.")
    lines += _classifier(profile)
    lines += _policies(profile)
    lines.append(
        "  7. Profiler: on; metadata['profile_timings'] holds each stage's time."
        if profile.profiler
        else "  7. Profiler: off (costs nothing)."
    )
    lines.append("  Kept memories keep their [Mem:N] numbers from your input order.")
    return "\n".join(lines)


def _dedup(profile: MembraneProfile) -> str:
    if not profile.dedup:
        return "kept (off)."
    rule = "exact copies (same words, ignoring case and punctuation at word edges)"
    words = (
        f"{profile.shingle_size}-word shingle Jaccard >= {profile.near_duplicate_threshold:.2f}"
        if profile.near_duplicate_threshold is not None
        else None
    )
    meaning = (
        f"cosine of the embedder's vectors >= {profile.semantic_duplicate_threshold:.2f}"
        if profile.semantic_duplicate_threshold is not None
        else None
    )
    if profile.embedder is not None and meaning:
        rule += f" and near copies by meaning ({meaning}, unless a number or a negation differs"
        rule += "; words if the embedder fails"
        rule += f": {words})" if words else ": exact copies only)"
    elif words:
        rule += f" and near copies ({words}"
        rule += f"; with an embedder, {meaning})" if meaning else ")"
    return rule + " are dropped; the first one offered stays."


def _classifier(profile: MembraneProfile) -> list[str]:
    if profile.classifier is None:
        return ["  5. Classifier: off; every turn is fitted the same way."]
    if profile.classifier is classify_query:
        who = f"classify_query (built-in rules: {', '.join(LABELS)})"
    else:
        who = f"{_name(profile.classifier)} (yours)"
    lines = [
        f"  5. Classifier: {who} labels the message, seeing the last "
        f"{profile.classifier_history} user messages; metadata['query_label'] records it."
    ]
    for label, effect in profile.effects:
        lines.append(f"     {label}: {_effect(effect)}")
    lines.append("     other labels: no change.")
    return lines


def _effect(effect: LabelEffect) -> str:
    parts = []
    if effect.tier_order != (1, 2, 3):
        names = ", ".join(_TIER_NAMES[t] for t in effect.tier_order)
        parts.append(f"under pressure tiers are kept in the order {names}")
    if effect.memory_share is not None:
        parts.append(f"memories take at most {effect.memory_share:.0%} of the budget")
    return "; ".join(parts) + "." if parts else "no change."


def _policies(profile: MembraneProfile) -> list[str]:
    if not profile.policies and not profile.must_include:
        return ["  6. Policies: none."]
    lines = ["  6. Policies:"]
    if profile.must_include:
        lines.append(f"     memories {', '.join(profile.must_include)} are always included.")
    lines += [f"     {_policy(p)}" for p in profile.policies]
    lines.append(f"     When rules collide: {' > '.join(CONFLICT_ORDER)} (reported in metadata).")
    return lines


def _policy(policy: Policy) -> str:
    subject = (
        f"{policy.target} memories" if isinstance(policy.target, str) else f"tier {policy.target}"
    )
    rules = []
    if policy.must_include:
        rules.append("always included")
    if policy.max_items is not None:
        rules.append(f"at most {policy.max_items} sent")
    if policy.never_thin:
        rules.append("never thinned (whole or dropped)")
    if policy.max_chars is not None:
        rules.append(f"text cut at {policy.max_chars} characters")
    return f"{subject}: {', '.join(rules) or 'no rule'}."


def profile_dict(profile: MembraneProfile) -> dict[str, Any]:
    """Every setting of ``profile`` as JSON-friendly values (callables by name)."""
    half_life = profile.freshness_half_life
    return {
        "name": profile.name,
        "dedup": profile.dedup,
        "near_duplicate_threshold": profile.near_duplicate_threshold,
        "shingle_size": profile.shingle_size,
        "semantic_duplicate_threshold": profile.semantic_duplicate_threshold,
        "embedder": _name(profile.embedder),
        "kinds_first": list(profile.kinds_first),
        "freshness_half_life_seconds": half_life.total_seconds() if half_life else None,
        "reranker": _name(profile.reranker),
        "clock": _name(profile.clock),
        "classifier": _name(profile.classifier),
        "classifier_history": profile.classifier_history,
        "label_effects": {label: effect.to_dict() for label, effect in profile.effects},
        "policies": [p.to_dict() for p in profile.policies],
        "must_include": list(profile.must_include),
        "conflict_order": list(CONFLICT_ORDER) if profile.shapes_the_fit else [],
        "profiler": profile.profiler,
    }


def _name(function: object) -> str | None:
    if function is None:
        return None
    return str(getattr(function, "__name__", type(function).__name__))


def _duration(span: timedelta) -> str:
    seconds = span.total_seconds()
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds:g} seconds"
