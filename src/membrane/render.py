"""Build the messages, their region spans and the typed report from the stages' outputs."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from membrane.messages import ImageTally, Message, message_text, unstamped
from membrane.profile import Watch
from membrane.prompt_text import mem_numbers
from membrane.regions import RegionMarks
from membrane.report import AgentReport, CompileReport
from membrane.result import CompileResult
from membrane.stages.firewall import Offer, fit_system_message
from membrane.stages.fit import rules_outcome
from membrane.stages.glaciator import cache_metadata
from membrane.stages.layout import MemorySegment
from membrane.stages.tail import FittedTail
from membrane.stages.window import HistoryWindow
from membrane.text.semantic import SemanticCall
from membrane.turn import Turn

__all__ = ["Rendered", "cited_numbers", "render_end", "render_system", "timed_report"]


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
    tools: list[dict[str, Any]]

    def result(self) -> CompileResult:
        """The public result: ref map and kinds of the memories sent, in number order."""
        sent = sorted((s for s in self.offer.citable if s.number in self.cited), key=_number)
        return CompileResult(
            self.messages,
            {s.number: s.ref_id for s in sent},
            {s.number: s.kind for s in sent},
            self.report.metadata(),
            self.trace,
            self.regions,
            self.tools,
        )


def _number(segment: MemorySegment) -> int:
    return segment.number


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
        *map(unstamped, window.kept),
        {"role": "user", "content": fitted.text},
    ]
    system_tokens = count(window.system_text)
    lead = turn.agent.tools_tokens  # the tools come first in the prompt
    token_count = (
        lead + system_tokens + window.kept_tokens - overhead * len(window.kept) + fitted.tokens
    )
    framing = overhead * len(messages)
    offered = turn.offer.lines()
    trimmed = sum(count(line) for line in offered) - sum(count(line) for line in tail.lines)
    core_chars = len(turn.core) if window.index_lines else None
    cache = cache_metadata(
        model_id,
        enabled=turn.use_caching,
        core_tokens=lead + count(turn.core) + overhead,
        core_chars=core_chars,
        system_tokens=lead + system_tokens + overhead,
        history_messages=len(window.kept),
        prefix_tokens=lead + system_tokens + overhead + window.kept_tokens,
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
        history_cut_moves=_cut_moves(window),
        message_counts_supplied=_supplied(turn.message_counts),
        history_resume=window.resume,
        core_chars=core_chars,
        cache=cache,
        **_common_report(turn, token_count + framing, semantic, window.kept),
        **_profile_report(turn, tail.sources, fitted.choice),
    )
    regions = _end_marks(turn, fitted)
    trace = {"choices": fitted.choice, "sources": list(tail.sources)} if turn.debug else None
    cited = cited_numbers(turn.offer, tail.sources, tail.memory_text())
    return Rendered(messages, turn.offer, cited, report, regions, trace, _tools(turn))


def _cut_moves(window: HistoryWindow) -> tuple[int, int] | None:
    """Cut moves at session boundaries and between them, once the caller marks sessions."""
    tracker = window.tracker
    if tracker is None or tracker.boundary < 0:
        return None
    return tracker.session_moves, tracker.mid_session_moves


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
    token_count = turn.agent.tools_tokens + fitted.tokens
    report = CompileReport(
        model_id=model_id,
        placement="system",
        token_count=token_count,
        tokens_budget=turn.budget,
        message_framing_tokens=overhead,
        tokens_trimmed=sum(full) - sum(full[i] for i in fitted.kept),
        segments_offered=len(full),
        segments_kept=len(fitted.kept),
        segments_thinned=0,
        memories_truncated=turn.offer.memories_truncated,
        stable_prefix_messages=0,
        cache={"cache_mode": None, "cache_breakpoints": [], "prompt_cache_used": False},
        **_common_report(turn, token_count + overhead, semantic, []),
        **_profile_report(turn, fitted.kept, fitted.choice),
    )
    regions = _system_marks(turn.core, fitted.middle, fitted.text, end_text)
    trace = {"choices": list(fitted.choice)} if turn.debug else None
    messages: list[Message] = [{"role": "system", "content": fitted.text}]
    cited = cited_numbers(turn.offer, fitted.kept, fitted.middle)
    return Rendered(messages, turn.offer, cited, report, regions, trace, _tools(turn))


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


def _supplied(counts: list[int | None] | None) -> int:
    return 0 if counts is None else len(counts) - counts.count(None)


def _common_report(
    turn: Turn, sent_tokens: int, semantic: SemanticCall | None, kept: list[Message]
) -> dict[str, Any]:
    budget_counted = turn.budget_counted + turn.agent.tools_tokens
    return {
        "token_scale": turn.scale,
        "token_scale_samples": turn.scale_samples,
        "tokens_budget_counted": budget_counted,
        "budget_exceeded": sent_tokens > budget_counted,
        "semantic_ranking": semantic is not None and semantic.used,
        "semantic_ranking_error": semantic.error if semantic is not None else None,
        "agent": _agent_report(turn, kept),
    }


def _agent_report(turn: Turn, kept: list[Message]) -> AgentReport | None:
    agent = turn.agent
    images = ImageTally()
    for message in kept:
        if isinstance(message.get("content"), list):
            images += agent.images.tally(message)
    if not agent.tools and not images.images and agent.reserve is None:
        return None
    return AgentReport(
        tools=len(agent.tools),
        tools_tokens=agent.tools_tokens,
        tools_changed=turn.tools_changed,
        images=images.images,
        image_tokens=images.tokens,
        images_unsized=images.unsized,
        reserve_output_tokens=agent.reserve,
        context_window=agent.window,
        reserve_output_default=agent.reserve_default,
    )


def _tools(turn: Turn) -> list[dict[str, Any]]:
    """The tools in OpenAI function shape, for the result (the builders render the rest)."""
    out = []
    for spec in turn.agent.tools:
        function: dict[str, Any] = {"name": spec.name, "description": spec.description}
        function["parameters"] = copy.deepcopy(dict(spec.parameters))
        if spec.strict is not None:
            function["strict"] = spec.strict
        out.append({"type": "function", "function": function})
    return out


def timed_report(rendered: Rendered, watch: Watch, writes: int) -> CompileReport:
    """The report, with the profiler's stage timings when it ran (``writes``: store writes)."""
    if not watch.enabled:
        return rendered.report
    report = rendered.report
    kept = report.stable_prefix_messages - 1 if report.placement == "end" else 0
    counts = {
        "normalise": kept + report.history_messages_dropped,
        "layout": report.segments_offered,
        "history": kept,
        "fit": report.segments_kept,
        "render": len(rendered.messages),
        "state_store": writes,
    }
    return dataclasses.replace(report, profile_timings=watch.timings(counts))


def _profile_report(turn: Turn, sent: list[int], choice: Sequence[str]) -> dict[str, Any]:
    """The classifier's label and what the policies did, when the profile has them."""
    out: dict[str, Any] = {}
    label = turn.label
    if label is not None:
        out["query_label"] = label.label
        if label.effect is not None:
            out["label_tier_order"] = label.effect.tier_order
            out["label_memory_share"] = label.effect.memory_share
    rules = turn.offer.rules
    if turn.report_policies and rules is not None:
        ids = [s.ref_id for s in turn.offer.segments] + [None] * len(turn.offer.extras)
        thinned = [i for i in sent if choice[i] == "thin"]
        out["policy_report"] = rules_outcome(rules, ids, sent, thinned)
    return out


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
