"""The firewall: fit the middle region (memories and extras) into the room the budget leaves.

Trimming order is fixed: the lowest-priority tier goes first and, within a tier, the item that
ranks last. With thinning, every item is first cut to its keyframe, and full texts come back in
priority order while room lasts, so nothing is dropped while something else is still whole.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from membrane.errors import InvalidInputError
from membrane.prompt_text import THIN_MARK, leading_mem_number, thin_memory_line
from membrane.records import TIER_PROCEDURAL
from membrane.report import CompileReport, FitReport
from membrane.stages.fit import MAX_PROCEDURAL_KEPT, FitChoice, FitRules, MiddleItem, fit_middle
from membrane.stages.values import FinalMessage, Offer, joined_parts
from membrane.text.keyframes import keyframe
from membrane.text.relevance import Rarity, lexical_scores, rank_fusion
from membrane.tokenizers import TiktokenAdapter, TokenCounter

__all__ = [
    "MAX_PROCEDURAL_KEPT",
    "FitChoice",
    "FitRules",
    "MiddleItem",
    "OfferRanking",
    "PreFlightContextFirewall",
    "SystemMessage",
    "drop_until_fits",
    "fit_middle",
    "fit_offer",
    "fit_system_message",
    "rank_offer",
    "shed_to_fit",
    "thin_lines",
]

FUSION_K = 60
# A question that names an item (its rare words) pins it; the scores are summed IDF weights,
# so PIN_MIN_SCORE asks for about one rare word shared with a question sentence.
PIN_LIMIT = 2
PIN_RELATIVE = 0.6
PIN_MIN_SCORE = 3.0


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
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
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
        count of ``text``. Kept segments stay in the order given. A segment's ref is the
        ``[Mem:N]`` tag that opens it: a tag further along its text cites nothing.
        """
        count_fn = count or self.counter.count
        segments = list(middle_segments)
        items = [
            MiddleItem(tier=tier, rank=pos, full_tokens=count_fn(text))
            for pos, (text, tier) in enumerate(segments)
        ]
        fixed = count_fn(core_text) + count_fn(end_text) + 2
        choice = fit_middle(items, self.max_tokens - fixed, thin_before_drop=False)
        survivors = [i for i in range(len(segments)) if choice[i] != "drop"]
        # Joining can merge tokens across boundaries; drop the lowest-priority survivor.
        text, total, survivors = drop_until_fits(
            survivors,
            lambda ids: _join(core_text, [segments[i][0] for i in ids], end_text),
            count_fn,
            self.max_tokens,
            lambda i: (items[i].tier, items[i].rank),
        )
        for i in range(len(segments)):
            if i not in survivors:
                choice[i] = "drop"
        present = {leading_mem_number(segments[i][0]) for i in survivors}
        kept_refs = {n: ref for n, ref in (ref_map or {}).items() if n in present}
        offered_tokens = sum(item.full_tokens for item in items)
        kept_tokens = sum(items[i].full_tokens for i in range(len(items)) if choice[i] != "drop")
        report = CompileReport(
            token_count=total,
            tokens_budget=self.max_tokens,
            tokens_trimmed=offered_tokens - kept_tokens,
            budget_exceeded=total > self.max_tokens,
            fit=FitReport(segments_offered=len(segments), segments_kept=len(survivors)),
        )
        return text, kept_refs, total, report.firewall_stats()


def drop_until_fits(
    kept: list[int],
    render: Callable[[list[int]], str],
    count: Callable[[str], int],
    limit: int,
    worst: Callable[[int], tuple[int, ...]],
) -> tuple[str, int, list[int]]:
    """Render ``kept`` and drop its ``worst`` item until the text counts at most ``limit``.

    Returns the text, its count and the survivors (the text of none when nothing fits).
    """
    kept = list(kept)
    while True:
        text = render(kept)
        total = count(text)
        if total <= limit or not kept:
            return text, total, kept
        kept.remove(max(kept, key=worst))


@dataclass(frozen=True, slots=True)
class SystemMessage:
    """Single-system-message placement: the text, its count, what was kept and offered."""

    text: str
    tokens: int
    middle: str
    kept: list[int]
    full_tokens: list[int]
    choice: list[FitChoice]
    end_text: str


def fit_system_message(
    offer: Offer, core: str, end_text: str, count: Callable[[str], int], limit: int
) -> SystemMessage:
    """Core, the memories that fit (by tier, then input order) and the end, in one message.

    ``limit`` bounds the whole text's count; nothing is thinned in this placement.
    """
    lines = offer.lines()
    full = list(offer.line_tokens(count))
    items = [MiddleItem(tier, i, full[i]) for i, tier in enumerate(offer.tiers())]
    room = limit - count(core) - count(end_text) - 4
    rules = offer.rules.with_budget(limit) if offer.rules is not None else None
    choice = fit_middle(items, room, thin_before_drop=False, rules=rules)
    ordered = sorted(range(len(lines)), key=lambda i: (items[i].tier, i))
    worst = rules.shed_order(items) if rules is not None else lambda i: (items[i].tier, i)

    def render(ids: list[int]) -> str:
        middle = "\n".join(lines[i] for i in ids)
        return "\n\n".join(p for p in (core, middle, end_text) if p)

    text, tokens, kept = drop_until_fits(
        [i for i in ordered if choice[i] != "drop"],
        render,
        count,
        limit,
        worst,
    )
    middle = "\n".join(lines[i] for i in kept)
    return SystemMessage(text, tokens, middle, kept, full, choice, end_text)


def _join(core: str, middle: Sequence[str], end: str) -> str:
    parts = [core] if core else []
    if middle:
        parts.append("\n".join(middle))
    parts.append(end)
    return "\n\n".join(parts)


@dataclass(frozen=True, slots=True)
class OfferRanking:
    """Each item's rank (0 = best) and the items the question itself names."""

    ranks: list[int]
    pinned: frozenset[int]


def rank_offer(
    texts: Sequence[str],
    query: str,
    stats: Rarity,
    *,
    fuse: bool,
    semantic_order: Sequence[int] | None = None,
) -> OfferRanking:
    """Rank the offer: the caller's order fused with relevance to ``query``.

    The best lexical matches (at most ``PIN_LIMIT``, each within ``PIN_RELATIVE`` of the best
    and above ``PIN_MIN_SCORE``) are pinned: a memory the question names keeps at least its
    keyframe whatever its tier. Without fusion the caller's order stands and nothing is pinned.
    """
    caller_order = list(range(len(texts)))
    if not fuse or len(texts) < 2:
        return OfferRanking(caller_order, frozenset())
    lexical = lexical_scores(query, texts, stats)
    by_relevance = sorted(caller_order, key=lambda i: (-lexical[i], i))
    rankings = [caller_order, by_relevance]
    if semantic_order is not None:
        rankings.append(list(semantic_order))
    ranks = [0] * len(texts)
    for position, i in enumerate(rank_fusion(rankings, k=FUSION_K)):
        ranks[i] = position
    best = lexical[by_relevance[0]]
    pinned = frozenset(
        i
        for i in by_relevance[:PIN_LIMIT]
        if best >= PIN_MIN_SCORE and lexical[i] >= PIN_RELATIVE * best
    )
    return OfferRanking(ranks, pinned)


def thin_lines(
    offer: Offer, stats: Rarity, count: Callable[[str], int], keyframe_tokens: int
) -> list[str | None]:
    """Each item's keyframe line (``[Mem:N]`` kept, ending in …), or None when it has none."""
    out: list[str | None] = []
    for i, (line, text) in enumerate(zip(offer.lines(), offer.texts(), strict=True)):
        frame = keyframe(text, stats, count, keyframe_tokens)
        if frame is None or frame.strip() == " ".join(text.split()):
            out.append(None)
        elif i < len(offer.segments):
            out.append(thin_memory_line(line, frame))
        else:
            out.append(f"{frame}{THIN_MARK}")
    return out


def fit_offer(
    offer: Offer,
    room: int,
    end_text: str,
    *,
    ranking: OfferRanking,
    count: Callable[[str], int],
    thinned: Callable[[], list[str | None]],
    thin_before_drop: bool,
    rules: FitRules | None = None,
) -> tuple[FinalMessage, list[FitChoice]]:
    """Fit the offer into ``room`` tokens; kept lines come out in tier order, then input order.

    ``thinned`` is called only when the full texts may not all go (they do not fit, or
    ``rules`` bound the room plain items take).
    """
    lines = offer.lines()
    full = offer.line_tokens(count)
    tiers = offer.tiers()
    fits = sum(full) + len(lines) <= room
    if rules is not None and rules.share_room is not None:
        fits = fits and sum(full) + len(lines) <= rules.share_room
    simple = rules is None or not rules.may_trim
    if fits and simple and tiers.count(TIER_PROCEDURAL) <= MAX_PROCEDURAL_KEPT:
        # Everything goes in whole: no sizes to weigh, only the tier order to keep.
        tail = FinalMessage(end_text)
        tail.sources = sorted(range(len(lines)), key=lambda i: (tiers[i], i))
        tail.lines = [lines[i] for i in tail.sources]
        return tail, ["full"] * len(lines)
    thin: list[str | None] = [None] * len(lines)
    if not fits:
        thin = thinned()
    items = [
        MiddleItem(
            tier,
            ranking.ranks[i],
            full[i],
            count(t) if (t := thin[i]) is not None else None,
            pinned=i in ranking.pinned,
        )
        for i, tier in enumerate(offer.tiers())
    ]
    choice = fit_middle(items, room, thin_before_drop=thin_before_drop, rules=rules)
    tail = FinalMessage(end_text)
    for i in sorted(range(len(lines)), key=lambda i: (tiers[i], i)):
        if choice[i] == "drop":
            continue
        chosen = lines[i] if choice[i] == "full" else thin[i]
        assert chosen is not None
        tail.lines.append(chosen)
        tail.sources.append(i)
        tail.thinned += choice[i] == "thin"
    return tail, choice


def shed_to_fit(
    tail: FinalMessage,
    limit: int,
    count_lines: Callable[[Sequence[tuple[str, str]]], int],
    priority: Sequence[tuple[int, ...]],
) -> tuple[str, int]:
    """Drop passages, then the lowest-priority lines, until the tail's text fits ``limit``.

    Summed line counts can differ from the joined text's count by a few tokens at the joins;
    this makes the final count exact: ``count_lines`` counts the text of :meth:`FinalMessage.parts`
    (see ``MemoizedCounter.count_lines``). Returns the tail's text and that count.
    """
    while True:
        parts = tail.parts()
        tokens = count_lines(parts)
        if tokens <= limit or not (tail.passages or tail.lines):
            return joined_parts(parts), tokens
        if tail.passages:
            longest = max(range(len(tail.passages)), key=lambda j: tail.passages[j].tokens)
            tail.passages.pop(longest)
        else:
            worst = max(range(len(tail.lines)), key=lambda j: priority[tail.sources[j]])
            tail.lines.pop(worst)
            tail.sources.pop(worst)
