"""Build the messages, their region spans and the typed report from the stages' outputs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from membrane.messages import Message, message_text
from membrane.prompt_text import mem_numbers
from membrane.report import CompileReport, RegionMarks
from membrane.stages.firewall import Offer, fit_system_message
from membrane.stages.glaciator import cache_metadata
from membrane.stages.tail import FittedTail
from membrane.stages.window import HistoryWindow
from membrane.text.semantic import SemanticCall
from membrane.turn import Turn

__all__ = ["Rendered", "cited_numbers", "render_end", "render_system"]


@dataclass(frozen=True, slots=True)
class Rendered:
    """A stage's output before the result is built: messages, citations, evidence.

    ``cited`` holds the ``[Mem:N]`` numbers of the memory segments sent (see
    :func:`cited_numbers`).
    """

    messages: list[Message]
    offer: Offer
    cited: frozenset[int]
    report: CompileReport
    regions: RegionMarks
    trace: dict[str, Any] | None


def render_end(
    turn: Turn,
    window: HistoryWindow,
    fitted: FittedTail,
    semantic: SemanticCall | None,
    *,
    model_id: str | None,
    overhead: int,
) -> Rendered:
    """End placement: system (core and index), the kept history, then the final message."""
    count = turn.count
    tail = fitted.tail
    messages: list[Message] = [
        {"role": "system", "content": window.system_text},
        *window.kept,
        {"role": "user", "content": fitted.text},
    ]
    system_tokens = count(window.system_text)
    token_count = system_tokens + window.kept_tokens - overhead * len(window.kept) + fitted.tokens
    framing = overhead * len(messages)
    offered = turn.offer.lines()
    trimmed = sum(count(line) for line in offered) - sum(count(line) for line in tail.lines)
    core_chars = len(turn.core) if window.index_lines else None
    cache = cache_metadata(
        model_id,
        enabled=turn.use_caching,
        core_tokens=count(turn.core) + overhead,
        core_chars=core_chars,
        system_tokens=system_tokens + overhead,
        history_messages=len(window.kept),
        prefix_tokens=system_tokens + overhead + window.kept_tokens,
        tail_tokens=fitted.tokens + overhead,
        token_scale=turn.scale,
        capabilities=turn.capabilities,
    )
    report = CompileReport(
        model_id=model_id,
        placement="end",
        token_count=token_count,
        tokens_budget=turn.budget,
        message_framing_tokens=framing,
        tokens_trimmed=max(trimmed, 0) + window.dropped_tokens,
        segments_offered=len(offered),
        segments_kept=len(tail.lines),
        segments_thinned=tail.thinned,
        memories_truncated=turn.offer.memories_truncated,
        stable_prefix_messages=1 + len(window.kept),
        history_messages_dropped=window.dropped_messages,
        history_messages_recalled=len(tail.passages),
        history_recall_reason=fitted.recall_reason,
        history_index_lines=window.index_lines,
        history_index_tokens=window.index_tokens,
        history_turn_local_drop=window.turn_local_drop,
        core_chars=core_chars,
        cache=cache,
        **_common_report(turn, token_count + framing, semantic),
    )
    regions = _end_marks(turn, fitted)
    trace = {"choices": fitted.choice, "sources": list(tail.sources)} if turn.debug else None
    cited = cited_numbers(turn.offer, tail.sources, tail.memory_text())
    return Rendered(messages, turn.offer, cited, report, regions, trace)


def render_system(
    turn: Turn, semantic: SemanticCall | None, *, model_id: str | None, overhead: int
) -> Rendered:
    """Single-system-message placement: core, memories, the last reply and the question."""
    last = turn.last_assistant_turn
    if last is None:
        replies = [m for m in turn.history if m.get("role") == "assistant"]
        texts = [message_text(m) for m in replies if message_text(m).strip()]
        last = texts[-1] if texts else None
    end_text = turn.layout.build_end(last, turn.user_message, turn.directives)
    fitted = fit_system_message(
        turn.offer, turn.core, end_text, turn.count, turn.budget_counted - overhead
    )
    full = fitted.full_tokens
    report = CompileReport(
        model_id=model_id,
        placement="system",
        token_count=fitted.tokens,
        tokens_budget=turn.budget,
        message_framing_tokens=overhead,
        tokens_trimmed=sum(full) - sum(full[i] for i in fitted.kept),
        segments_offered=len(full),
        segments_kept=len(fitted.kept),
        segments_thinned=0,
        memories_truncated=turn.offer.memories_truncated,
        stable_prefix_messages=0,
        cache={"cache_mode": None, "cache_breakpoints": [], "prompt_cache_used": False},
        **_common_report(turn, fitted.tokens + overhead, semantic),
    )
    regions = _system_marks(turn.core, fitted.middle, fitted.text, end_text)
    trace = {"choices": list(fitted.choice)} if turn.debug else None
    messages: list[Message] = [{"role": "system", "content": fitted.text}]
    cited = cited_numbers(turn.offer, fitted.kept, fitted.middle)
    return Rendered(messages, turn.offer, cited, report, regions, trace)


def cited_numbers(offer: Offer, kept: Sequence[int], kept_text: str) -> frozenset[int]:
    """The memory numbers sent: those of the kept segments (``kept`` indexes the offer).

    A segment's number is the one it was laid out with; a ``[Mem:N]`` written in its text
    cites nothing. The exception is a compressed offer: it has no segments, only the caller's
    summary of them (``kept_text``), whose tags of memories that were on offer are what it
    cites.
    """
    segments = offer.segments
    numbers = {segments[i].number for i in kept if i < len(segments)}
    if not segments and offer.citable:
        numbers |= mem_numbers(kept_text) & {s.number for s in offer.citable}
    return frozenset(numbers)


def _common_report(turn: Turn, sent_tokens: int, semantic: SemanticCall | None) -> dict[str, Any]:
    return {
        "token_scale": turn.scale,
        "token_scale_samples": turn.scale_samples,
        "tokens_budget_counted": turn.budget_counted,
        "budget_exceeded": sent_tokens > turn.budget_counted,
        "semantic_ranking": semantic is not None and semantic.used,
        "semantic_ranking_error": semantic.error if semantic is not None else None,
    }


def _end_marks(turn: Turn, fitted: FittedTail) -> RegionMarks:
    tail, text = fitted.tail, fitted.text
    current = len(text) - len(tail.end_text)
    # The blank line between the memories and the recall block belongs to the recall block.
    recall = (len(tail.memory_text()) if tail.lines else 0) if tail.passages else current
    return RegionMarks(
        (("core", 0), ("index", len(turn.core))),
        (("memories", 0), ("recall", recall), ("current", current)),
    )


def _system_marks(core: str, middle: str, text: str, end_text: str) -> RegionMarks:
    current = len(text) - len(end_text)
    memories = len(core) + 2 if core else 0
    return RegionMarks(
        (("core", 0), ("memories", memories if middle else current), ("current", current))
    )
