"""The budget half of ``longform_memory``: token estimate, section shares, skeleton, fitting.

Same names, parameters, result types and values as the published package; the arithmetic is
:mod:`membrane.longform.budget`'s, which follows the published rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from membrane.longform import budget as _core

__all__ = [
    "DEFAULT_MEMORY_BUDGET",
    "MAX_SKELETON_ENTRIES",
    "SECTION_SHARE",
    "BudgetResult",
    "Fitted",
    "SectionInput",
    "allocate",
    "estimate_tokens",
    "fit_items",
    "fit_sections",
    "skeleton_chapters",
]

T = TypeVar("T")

#: Share of the budget each section may take in the first pass.
SECTION_SHARE: dict[str, float] = {name: share for name, share in _core.SECTION_SHARE.items()}

#: Default size of the whole memory block, in tokens.
DEFAULT_MEMORY_BUDGET = _core.DEFAULT_MEMORY_BUDGET

#: Most skeleton entries ever returned.
MAX_SKELETON_ENTRIES = _core.MAX_SKELETON_ENTRIES


def estimate_tokens(text: str) -> int:
    """Heuristic token count: one per kana, Han or hangul-syllable character, one per four
    other characters (rounded up); empty or None counts 0."""
    return _core._estimate(text)


def allocate(total: int = DEFAULT_MEMORY_BUDGET) -> dict[str, int]:
    """Each section's first-pass allowance: ``int(total * share)``."""
    return {name: tokens for name, tokens in _core._allocate(total).items()}


def skeleton_chapters(up_to_chapter: int, exclude_from: int) -> list[int]:
    """Chapters whose summaries sample the distant past: at most 12, at least 10 apart,
    starting at chapter 1 and ending before both ``up_to_chapter`` and ``exclude_from``."""
    return _core._skeleton(up_to_chapter, exclude_from)


@dataclass
class Fitted(Generic[T]):
    """The items a section kept, their token total, and how many were cut."""

    kept: list[T] = field(default_factory=list)
    used_tokens: int = 0
    dropped: int = 0


def _fitted(section: _core.Fitted[Any]) -> Fitted[Any]:
    return Fitted(kept=list(section.kept), used_tokens=section.used_tokens, dropped=section.dropped)


def fit_items(items: Sequence[T], to_text: Callable[[T], str], budget: int) -> Fitted[T]:
    """The longest prefix of ``items`` (most important first) whose texts fit in ``budget``."""
    return _fitted(_core._Candidates(items, to_text, _core._loose_measure).fit(budget))


@dataclass
class SectionInput(Generic[T]):
    """One section's candidates, most important first, and how to turn one into text."""

    items: Sequence[T]
    to_text: Callable[[T], str]


@dataclass
class BudgetResult:
    """The four fitted sections, the tokens they use together, and the budget."""

    entity: Fitted[Any]
    recent: Fitted[Any]
    skeleton: Fitted[Any]
    retrieval: Fitted[Any]
    used_tokens: int
    budget: int


def fit_sections(
    entity: SectionInput[Any],
    recent: SectionInput[Any],
    skeleton: SectionInput[Any],
    retrieval: SectionInput[Any],
    total: int = DEFAULT_MEMORY_BUDGET,
) -> BudgetResult:
    """Fill each section to its share, then give the unused shares to the trimmed sections
    (recent, entity, retrieval, skeleton)."""
    inputs = {"entity": entity, "recent": recent, "skeleton": skeleton, "retrieval": retrieval}
    _, fitted = _core._fit_all(inputs, total, _core._loose_measure)
    return BudgetResult(
        entity=_fitted(fitted["entity"]),
        recent=_fitted(fitted["recent"]),
        skeleton=_fitted(fitted["skeleton"]),
        retrieval=_fitted(fitted["retrieval"]),
        used_tokens=sum(fitted[name].used_tokens for name in _core.TOP_UP_ORDER),
        budget=total,
    )
