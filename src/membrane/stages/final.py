"""The final user message: memories fitted to the room left, passages recalled, exact count.

With end placement the last message holds the memories that fit (whole, thinned to their
keyframe, or dropped, by tier and rank), the passages of dropped history the question calls
back, and the end region. This stage chooses them and sheds until the exact count fits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from membrane.memo import BULK_ITEMS, skip_memo_writes
from membrane.messages import Message, message_text
from membrane.prompt_text import RECALL_HEADER
from membrane.records import TIER_PROCEDURAL
from membrane.report import FitReport
from membrane.stages.firewall import (
    MAX_PROCEDURAL_KEPT,
    PIN_MIN_SCORE,
    FitChoice,
    OfferRanking,
    SystemMessage,
    fit_offer,
    fit_system_message,
    rank_offer,
    shed_to_fit,
    thin_lines,
)
from membrane.stages.history import (
    NO_WRITERS,
    HistoryTracker,
    RecalledPassage,
    WindowCover,
    Writers,
    nearest_passages,
    passage_order,
    prefetch_arrivals,
    recall_reason,
    select_passages,
    window_cover,
)
from membrane.stages.values import Budget, CallOptions, FinalMessage, Offer, TurnText
from membrane.stages.window import HistoryWindow
from membrane.text.relevance import CombinedStats, TermStats
from membrane.text.sentences import is_question, split_sentences

if TYPE_CHECKING:
    from membrane.text.semantic import SemanticCall

__all__ = [
    "FinalInput",
    "FinalSettings",
    "FittedFinal",
    "fit_final",
    "fit_system",
]


@dataclass(frozen=True, slots=True)
class FinalSettings:
    """The compiler options the final message depends on."""

    recall_evicted_history: bool
    rank_fusion: bool
    thin_before_drop: bool
    keyframe_tokens: int
    message_overhead_tokens: int


@dataclass(frozen=True, slots=True)
class FinalInput:
    """What the final message reads of one compile: the turn's texts, the offer, the budget."""

    text: TurnText
    offer: Offer
    budget: Budget
    semantic: SemanticCall | None
    options: CallOptions
    #: Who writes each role (the caller's ``speakers``), for a question that names one.
    writers: Writers = NO_WRITERS


@dataclass(frozen=True, slots=True)
class FittedFinal:
    """The final message's parts, its text and exact count, and each item's fit choice."""

    message: FinalMessage
    text: str
    tokens: int
    choice: list[FitChoice]
    recall_reason: str | None = None
    #: A continued turn's earlier final message, sent again unchanged.
    reused: bool = False

    def report(self, offered: int) -> FitReport:
        """This stage's part of the compile's report (``offered``: items on offer)."""
        return FitReport(
            segments_offered=offered,
            segments_kept=len(self.message.lines),
            segments_thinned=self.message.thinned,
            messages_recalled=len(self.message.passages),
            recall_reason=self.recall_reason,
        )


def fit_system(
    text: TurnText, history: list[Message], offer: Offer, budget: Budget, overhead: int
) -> SystemMessage:
    """System placement: the core, the memories that fit, the last reply and the question in
    one message (the last reply is the caller's, else the history's last answer)."""
    last = text.last_assistant_turn
    if last is None:
        replies = [message_text(m) for m in history if m.get("role") == "assistant"]
        answers = [reply for reply in replies if reply.strip()]
        last = answers[-1] if answers else None
    end_text = text.layout.build_end(last, text.user_message, text.directives)
    return fit_system_message(offer, text.core, end_text, budget.count, budget.counted - overhead)


def fit_final(given: FinalInput, window: HistoryWindow, settings: FinalSettings) -> FittedFinal:
    """Fit memories and recalled passages into what the window leaves of the budget.

    An offer of more than :data:`membrane.memo.BULK_ITEMS` lines is read without filling the
    memos: they could not keep its texts until the next turn, and would forget all else.
    """
    with skip_memo_writes(len(given.offer.lines()) > BULK_ITEMS):
        return _fit_final(given, window, settings)


def _fit_final(given: FinalInput, window: HistoryWindow, settings: FinalSettings) -> FittedFinal:
    count, overhead = given.budget.counter.count, settings.message_overhead_tokens
    if given.semantic is not None and window.tracker is not None:
        prefetch_arrivals(window.tracker, window.kept, given.semantic)
    before_final = count(window.system_text) + overhead + window.kept_tokens + overhead
    room = given.budget.counted - before_final - count(given.text.end_text) - 2
    reason, recall = _recall_for(given, window, settings)
    header = count(RECALL_HEADER) + 2
    memory_tokens = sum(given.offer.line_tokens(count)) + len(given.offer.lines())
    held: list[RecalledPassage] = []
    if recall is not None and memory_tokens > room - header - 2 * settings.keyframe_tokens:
        # Under memory pressure the best-matching passage is held a keyframe's room, like
        # every memory is: it competes with their keyframes instead of taking what they leave.
        held = recall.select(settings.keyframe_tokens + 8, max_passages=1)
    reserved = header + sum(p.tokens for p in held) if held else 0
    rules = given.offer.rules
    if rules is not None:
        rules = rules.with_budget(given.budget.counted)
    ranking, stats = _rank(given, window.tracker, memory_tokens, room - reserved, settings)
    message, choice = fit_offer(
        given.offer,
        room - reserved,
        given.text.end_text,
        ranking=ranking,
        count=count,
        thinned=lambda: thin_lines(given.offer, stats, count, settings.keyframe_tokens),
        thin_before_drop=settings.thin_before_drop,
        rules=rules,
    )
    if recall is not None:
        used = sum(count(line) + 1 for line in message.lines)
        # Passages come back only for a question that shares a rare word with them.
        message.passages = recall.select(room - header - used, by_meaning=True) or held
    priority: list[tuple[int, ...]] = [
        (int(i not in ranking.pinned), tier, ranking.ranks[i])
        if rules is None
        else rules.priority(i, tier, i in ranking.pinned, ranking.ranks[i])
        for i, tier in enumerate(given.offer.tiers())
    ]
    text, tokens = shed_to_fit(
        message, given.budget.counted - before_final, given.budget.counter.count_lines, priority
    )
    if reason == "needed":
        reason = "recalled" if message.passages else "no_room"
    elif reason == "no_match" and message.passages:
        reason = "recalled_by_meaning"
    return FittedFinal(message, text, tokens, list(choice), reason)


@dataclass(frozen=True, slots=True)
class _Recall:
    """One turn's recall: the dropped passages to choose from and the votes that rank them."""

    tracker: HistoryTracker
    question: str
    count: Callable[[str], int]
    cover: WindowCover | None
    meaning_order: Callable[[], list[int] | None] | None
    nearest: Callable[[], list[int] | None] | None

    def select(
        self, room: int, *, max_passages: int | None = None, by_meaning: bool = False
    ) -> list[RecalledPassage]:
        """The passages that fit ``room`` (``by_meaning``: closest in meaning come after)."""
        return select_passages(
            self.tracker,
            self.question,
            room,
            limit=self.tracker.chunk,
            count=self.count,
            extra_ranking=self.meaning_order,
            max_passages=max_passages,
            min_score=PIN_MIN_SCORE,
            cover=self.cover,
            nearest=self.nearest if by_meaning else None,
        )


def _recall_for(
    given: FinalInput, window: HistoryWindow, settings: FinalSettings
) -> tuple[str | None, _Recall | None]:
    """Why recall fires or not (see :func:`_recall_need`), and its passages when it may."""
    reason, cover = _recall_need(given, window, settings)
    tracker = window.tracker if reason in ("needed", "no_match") else None
    if tracker is None:
        return reason, None
    question, semantic = given.text.user_message, given.semantic
    meaning_order = nearest = None
    if semantic is not None:
        meaning_order = passage_order(tracker, question, semantic, cover, PIN_MIN_SCORE)
        nearest = nearest_passages(tracker, question, semantic, given.writers)
    count = given.budget.counter.count
    return reason, _Recall(tracker, question, count, cover, meaning_order, nearest)


def _recall_need(
    given: FinalInput, window: HistoryWindow, settings: FinalSettings
) -> tuple[str | None, WindowCover | None]:
    """Whether recall has anything to add to the kept window, and what the window holds.

    The reason is None when recall is off or nothing was dropped; otherwise ``"needed"``,
    ``"no_match"``, ``"window_holds"`` or ``"window_answers"`` (see :func:`recall_reason`).
    Every turn is checked: a question against the best kept message sharing two telling words
    with it, a turn that asks nothing against what each kept message states.
    """
    tracker = window.tracker
    if not settings.recall_evicted_history or tracker is None:
        return None, None
    if not tracker.passages or window.dropped_messages <= 0:
        return None, None
    stats, query = tracker.stats, given.text.user_message
    asks = any(is_question(s) for s in split_sentences(query))
    kept = (message_text(m) for m in window.kept)
    cover = window_cover(kept, query, stats, asks=asks, writers=given.writers)
    return recall_reason(tracker, query, cover, PIN_MIN_SCORE), cover


def _rank(
    given: FinalInput,
    tracker: HistoryTracker | None,
    memory_tokens: int,
    room: int,
    settings: FinalSettings,
) -> tuple[OfferRanking, CombinedStats]:
    """The offer's ranking, and the rarity statistics keyframes are cut with."""
    texts = given.offer.texts()
    # Ranking and keyframes only decide what goes; when everything fits and no procedure
    # is over its cap, none is needed.
    procedures = sum(1 for tier in given.offer.tiers() if tier == TIER_PROCEDURAL)
    # A profile's rules (caps, a memory share) may trim what would fit.
    trimming = (
        memory_tokens > room or procedures > MAX_PROCEDURAL_KEPT or given.offer.rules is not None
    )
    stats = CombinedStats(tracker.stats if tracker else None, TermStats(texts if trimming else ()))
    semantic = None
    if trimming and given.semantic is not None and settings.rank_fusion and len(texts) > 1:
        semantic = given.semantic.order(given.text.user_message, texts)
    ranking = rank_offer(
        texts,
        given.text.user_message,
        stats,
        fuse=settings.rank_fusion and trimming,
        semantic_order=semantic,
    )
    return ranking, stats
