"""The budget half of ``longform_memory``: token estimate, section shares, skeleton, fitting.

Same names, parameters, result types and values as the published package. The rules are the
ones :mod:`membrane.longform.budget` follows too; this module carries its own copy so that the
package needs nothing but the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

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
SECTION_SHARE: dict[str, float] = {
    "entity": 0.217,
    "recent": 0.337,
    "skeleton": 0.145,
    "retrieval": 0.301,
}

#: Default size of the whole memory block, in tokens.
DEFAULT_MEMORY_BUDGET = 6000

#: Most skeleton entries ever returned.
MAX_SKELETON_ENTRIES = 12

# Smallest distance between two sampled skeleton chapters.
_MIN_SKELETON_GAP = 10

# Order in which trimmed sections receive the tokens other sections left unused.
_TOP_UP_ORDER = ("recent", "entity", "retrieval", "skeleton")

# Kana, Han (with extension A and the compatibility block) and hangul syllables count one
# token per character; every other character goes by the four-characters rule.
_DENSE_SCRIPT = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_DENSE_RANGES = (
    (0x3040, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
)
_CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Heuristic token count: one per kana, Han or hangul-syllable character, one per four
    other characters (rounded up); empty or None counts 0."""
    if not text:
        return 0
    if isinstance(text, str):
        dense = len(_DENSE_SCRIPT.findall(text))
    else:
        # Any other iterable of characters is counted the same way; ord() rejects the rest.
        dense = sum(
            1 for char in text if any(low <= ord(char) <= high for low, high in _DENSE_RANGES)
        )
    other = len(text) - dense
    return int(dense + -(-other // _CHARS_PER_TOKEN))


def allocate(total: int = DEFAULT_MEMORY_BUDGET) -> dict[str, int]:
    """Each section's first-pass allowance: ``int(total * share)``."""
    return {name: int(total * share) for name, share in SECTION_SHARE.items()}


def skeleton_chapters(up_to_chapter: int, exclude_from: int) -> list[int]:
    """Chapters whose summaries sample the distant past: at most 12, at least 10 apart,
    starting at chapter 1 and ending before both ``up_to_chapter`` and ``exclude_from``."""
    last = min(up_to_chapter - 1, exclude_from - 1)
    if last < 1:
        return []
    stride = max(_MIN_SKELETON_GAP, -(-last // MAX_SKELETON_ENTRIES))
    return list(range(1, last + 1, stride))


@dataclass
class Fitted(Generic[T]):
    """The items a section kept, their token total, and how many were cut."""

    kept: list[T] = field(default_factory=list)
    used_tokens: int = 0
    dropped: int = 0


class _Candidates(Generic[T]):
    """One section's items, each turned into text and counted at most once, and only when a
    fit reaches it (a ``to_text`` that fails on a later item fails only if that item is
    reached)."""

    def __init__(self, items: Sequence[T], to_text: Callable[[T], str]) -> None:
        self._items = items
        self._to_text = to_text
        self._counts: list[int] = []

    def _count(self, index: int) -> int:
        while len(self._counts) <= index:
            text = self._to_text(self._items[len(self._counts)])
            self._counts.append(estimate_tokens(text))
        return self._counts[index]

    def fit(self, budget: Any) -> Fitted[T]:
        # Whole items, in order, stopping at the first that does not fit.
        used = 0
        kept = 0
        total = len(self._items)
        while kept < total:
            cost = self._count(kept)
            if used + cost > budget:
                break
            used += cost
            kept += 1
        return Fitted(kept=list(self._items[:kept]), used_tokens=used, dropped=total - kept)


def fit_items(items: Sequence[T], to_text: Callable[[T], str], budget: int) -> Fitted[T]:
    """The longest prefix of ``items`` (most important first) whose texts fit in ``budget``."""
    return _Candidates(items, to_text).fit(budget)


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
    shares = allocate(total)
    candidates: dict[str, _Candidates[Any]] = {}
    fitted: dict[str, Fitted[Any]] = {}
    for name in _TOP_UP_ORDER:
        candidates[name] = _Candidates(inputs[name].items, inputs[name].to_text)
        fitted[name] = candidates[name].fit(shares[name])

    # The pool is the sum of the shares left unused (the rounding remainder is not part of it).
    spare = sum(shares[name] - fitted[name].used_tokens for name in _TOP_UP_ORDER)
    for name in _TOP_UP_ORDER:
        if spare <= 0:
            break
        current = fitted[name]
        if current.dropped == 0:
            continue
        # What the section already uses plus the pool: its own unused share is in the pool.
        refit = candidates[name].fit(current.used_tokens + spare)
        spare -= refit.used_tokens - current.used_tokens
        fitted[name] = refit
    return BudgetResult(
        entity=fitted["entity"],
        recent=fitted["recent"],
        skeleton=fitted["skeleton"],
        retrieval=fitted["retrieval"],
        used_tokens=sum(fitted[name].used_tokens for name in _TOP_UP_ORDER),
        budget=total,
    )
