"""Profiles: optional modules that choose and order the memories a compile offers.

A :class:`MembraneProfile` is passed to ``ContextCompiler.compile(profile=...)``. Each module is
also a plain function here, usable on its own: :func:`deduplicate`, :func:`order_by_freshness`,
:func:`order_by_kind` and :func:`apply_reranker`.
"""

from __future__ import annotations

from membrane.profile._dedup import (
    Duplicate,
    deduplicate,
    find_duplicates,
    normalized_words,
    shingle_jaccard,
)
from membrane.profile._freshness import freshness_weight, memory_timestamp, order_by_freshness
from membrane.profile._order import Reranker, apply_reranker, order_by_kind
from membrane.profile._profile import MembraneProfile, ProfileOutcome

__all__ = [
    "Duplicate",
    "MembraneProfile",
    "ProfileOutcome",
    "Reranker",
    "apply_reranker",
    "deduplicate",
    "find_duplicates",
    "freshness_weight",
    "memory_timestamp",
    "normalized_words",
    "order_by_freshness",
    "order_by_kind",
    "shingle_jaccard",
]
