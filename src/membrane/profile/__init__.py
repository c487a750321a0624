"""Profiles: optional modules that choose and order the memories a compile offers.

A :class:`MembraneProfile` is passed to ``ContextCompiler.compile(profile=...)``. Each module is
also usable on its own: :func:`deduplicate`, :func:`find_meaning_duplicates`,
:func:`order_by_freshness`, :func:`order_by_kind`, :func:`apply_reranker`,
:func:`classify_query`, :func:`plan_policies` and :class:`Stopwatch`.
"""

from __future__ import annotations

import typing

from membrane._lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from membrane.profile._classify import LABELS, Classifier, LabelEffect, classify_query
    from membrane.profile._dedup import (
        Duplicate,
        deduplicate,
        find_duplicates,
        normalized_words,
        shingle_jaccard,
    )
    from membrane.profile._freshness import freshness_weight, memory_timestamp, order_by_freshness
    from membrane.profile._meaning import find_meaning_duplicates
    from membrane.profile._order import Reranker, apply_reranker, order_by_kind
    from membrane.profile._policies import CONFLICT_ORDER, Policy, PolicyPlan, plan_policies
    from membrane.profile._profile import MembraneProfile, ProfileOutcome, QueryLabel
    from membrane.profile._profiler import NO_WATCH, STAGES, Stopwatch, Watch, start_watch

# Where each name lives: imported on first use (see membrane._lazy).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "membrane.profile._classify": ("LABELS", "Classifier", "LabelEffect", "classify_query"),
    "membrane.profile._dedup": (
        "Duplicate",
        "deduplicate",
        "find_duplicates",
        "normalized_words",
        "shingle_jaccard",
    ),
    "membrane.profile._freshness": ("freshness_weight", "memory_timestamp", "order_by_freshness"),
    "membrane.profile._meaning": ("find_meaning_duplicates",),
    "membrane.profile._order": ("Reranker", "apply_reranker", "order_by_kind"),
    "membrane.profile._policies": ("CONFLICT_ORDER", "Policy", "PolicyPlan", "plan_policies"),
    "membrane.profile._profile": ("MembraneProfile", "ProfileOutcome", "QueryLabel"),
    "membrane.profile._profiler": ("NO_WATCH", "STAGES", "Stopwatch", "Watch", "start_watch"),
}
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

__all__ = [
    "CONFLICT_ORDER",
    "LABELS",
    "NO_WATCH",
    "STAGES",
    "Classifier",
    "Duplicate",
    "LabelEffect",
    "MembraneProfile",
    "Policy",
    "PolicyPlan",
    "ProfileOutcome",
    "QueryLabel",
    "Reranker",
    "Stopwatch",
    "Watch",
    "apply_reranker",
    "classify_query",
    "deduplicate",
    "find_duplicates",
    "find_meaning_duplicates",
    "freshness_weight",
    "memory_timestamp",
    "normalized_words",
    "order_by_freshness",
    "order_by_kind",
    "plan_policies",
    "shingle_jaccard",
    "start_watch",
]
