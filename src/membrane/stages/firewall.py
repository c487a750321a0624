"""The firewall: fit the middle region (memories and extras) into the room the budget leaves.

Trimming order is fixed: the lowest-priority tier goes first and, within a tier, the item that
ranks last. With thinning, every item is first cut to its keyframe, and full texts come back in
priority order while room lasts, so nothing is dropped while something else is still whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from membrane.errors import InvalidInputError
from membrane.records import TIER_PROCEDURAL
from membrane.tokenizers import TiktokenAdapter, TokenCounter

__all__ = [
    "MAX_PROCEDURAL_KEPT",
    "FitChoice",
    "MiddleItem",
    "PreFlightContextFirewall",
    "fit_middle",
]

MAX_PROCEDURAL_KEPT = 3
FitChoice = Literal["full", "thin", "drop"]
_MEM_TAG = re.compile(r"\[Mem:(\d+)\]")


@dataclass(frozen=True, slots=True)
class MiddleItem:
    """One trimmable item: its tier, rank within the offer (0 = best) and its two sizes."""

    tier: int
    rank: int
    full_tokens: int
    thin_tokens: int | None = None


def _priority_order(items: Sequence[MiddleItem]) -> list[int]:
    return sorted(range(len(items)), key=lambda i: (items[i].tier, items[i].rank))


def fit_middle(
    items: Sequence[MiddleItem],
    room: int,
    *,
    thin_before_drop: bool = True,
    separator_tokens: int = 1,
    max_procedural: int = MAX_PROCEDURAL_KEPT,
) -> list[FitChoice]:
    """Choose, for each item, to send it whole, thinned to its keyframe, or not at all.

    The sum of chosen sizes (plus ``separator_tokens`` per sent item) never exceeds ``room``.
    """
    choice: list[FitChoice] = ["full"] * len(items)
    best_first = _priority_order(items)
    procedural_seen = 0
    for i in best_first:
        if items[i].tier == TIER_PROCEDURAL:
            procedural_seen += 1
            if procedural_seen > max_procedural:
                choice[i] = "drop"

    def cost(i: int, c: FitChoice) -> int:
        if c == "drop":
            return 0
        size = items[i].full_tokens if c == "full" else items[i].thin_tokens
        return (size or 0) + separator_tokens

    def total() -> int:
        return sum(cost(i, choice[i]) for i in range(len(items)))

    if total() <= room:
        return choice
    if thin_before_drop:
        for i in range(len(items)):
            if choice[i] == "full" and items[i].thin_tokens is not None:
                choice[i] = "thin"
    used = total()
    for i in reversed(best_first):  # worst first
        if used <= room:
            break
        if choice[i] != "drop":
            used -= cost(i, choice[i])
            choice[i] = "drop"
    if thin_before_drop:
        for i in best_first:
            if choice[i] == "thin":
                extra = cost(i, "full") - cost(i, "thin")
                if used + extra <= room:
                    choice[i] = "full"
                    used += extra
    return choice


class PreFlightContextFirewall:
    """Enforces a hard token budget on ``core + middle + end`` text you assembled yourself.

    >>> fw = PreFlightContextFirewall(max_tokens=50)
    >>> text, refs, total, stats = fw.run(
    ...     core_text="Rules.", end_text="Question?",
    ...     middle_segments=[("[Mem:1] A fact.", 2)], ref_map={1: "doc-1"})
    >>> refs, stats["segments_kept"]
    ({1: 'doc-1'}, 1)
    """

    def __init__(self, max_tokens: int, *, counter: TokenCounter | None = None) -> None:
        if not isinstance(max_tokens, int) or max_tokens <= 0:
            raise InvalidInputError(
                f"max_tokens must be a positive integer, got {max_tokens!r}", field="max_tokens"
            )
        self.max_tokens = max_tokens
        self.counter: TokenCounter = counter if counter is not None else TiktokenAdapter()

    def run(
        self,
        *,
        core_text: str,
        end_text: str,
        middle_segments: Sequence[tuple[str, int]],
        ref_map: Mapping[int, str] | None = None,
        count: Callable[[str], int] | None = None,
    ) -> tuple[str, dict[int, str], int, dict[str, Any]]:
        """Trim ``middle_segments`` by tier until the joined text fits.

        Returns ``(text, kept_ref_map, total_tokens, stats)``; ``total_tokens`` is the exact
        count of ``text``. Kept segments stay in the order given.
        """
        count_fn = count or self.counter.count
        segments = list(middle_segments)
        items = [
            MiddleItem(tier=tier, rank=pos, full_tokens=count_fn(text))
            for pos, (text, tier) in enumerate(segments)
        ]
        fixed = count_fn(core_text) + count_fn(end_text) + 2
        choice = fit_middle(items, self.max_tokens - fixed, thin_before_drop=False)
        kept = [segments[i][0] for i in range(len(segments)) if choice[i] != "drop"]
        while True:
            text = _join(core_text, kept, end_text)
            total = count_fn(text)
            if total <= self.max_tokens or not kept:
                break
            # Joining can merge tokens across boundaries; drop the lowest-priority survivor.
            worst = max(
                (i for i in range(len(segments)) if choice[i] != "drop"),
                key=lambda i: (items[i].tier, items[i].rank),
            )
            choice[worst] = "drop"
            kept = [segments[i][0] for i in range(len(segments)) if choice[i] != "drop"]
        present = {int(n) for line in kept for n in _MEM_TAG.findall(line)}
        kept_refs = {n: ref for n, ref in (ref_map or {}).items() if n in present}
        offered_tokens = sum(item.full_tokens for item in items)
        kept_tokens = sum(items[i].full_tokens for i in range(len(items)) if choice[i] != "drop")
        stats = {
            "segments_offered": len(segments),
            "segments_kept": len(kept),
            "tokens_trimmed": offered_tokens - kept_tokens,
            "tokens_budget": self.max_tokens,
            "token_count": total,
            "budget_exceeded": total > self.max_tokens,
        }
        return text, kept_refs, total, stats


def _join(core: str, middle: Sequence[str], end: str) -> str:
    parts = [core] if core else []
    if middle:
        parts.append("\n".join(middle))
    parts.append(end)
    return "\n\n".join(parts)
