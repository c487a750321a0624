"""Build the messages, their region spans and the typed report from the stages' outputs."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from membrane.compile_state import StoreNotes
from membrane.messages import ImageTally, Message, unstamped
from membrane.profile import Watch
from membrane.prompt_text import mem_numbers
from membrane.regions import RegionMarks
from membrane.report import (
    AgentReport,
    CacheReport,
    CompileReport,
    FitReport,
    LabelReport,
    TurnReport,
)
from membrane.request import CompileRequest, CompilerSettings
from membrane.result import CompileResult
from membrane.stages.final import FittedFinal
from membrane.stages.firewall import SystemMessage
from membrane.stages.fit import rules_outcome
from membrane.stages.glaciator import cache_report
from membrane.stages.layout import MemorySegment
from membrane.stages.values import Offer, TurnSteps
from membrane.stages.window import HistoryWindow

if TYPE_CHECKING:
    from membrane.text.semantic import SemanticCall

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

    def result(self, report: CompileReport) -> CompileResult:
        """The public result, with the final ``report``: ref map and kinds of the memories
        sent, in number order."""
        sent = sorted((s for s in self.offer.citable if s.number in self.cited), key=_number)
        return CompileResult(
            self.messages,
            {s.number: s.ref_id for s in sent},
            {s.number: s.kind for s in sent},
            report.metadata(),
            self.trace,
            self.regions,
            self.tools,
            report,
        )


def _number(segment: MemorySegment) -> int:
    return segment.number


def render_end(
    request: CompileRequest,
    offer: Offer,
    window: HistoryWindow,
    fitted: FittedFinal,
    semantic: SemanticCall | None,
    settings: CompilerSettings,
    tools_changed: bool,
) -> Rendered:
    """End placement: system (core and index), the kept history, the final message, then a
    continued turn's steps."""
    budget, core, overhead = request.budget, request.text.core, settings.message_overhead_tokens
    count, steps = budget.count, request.steps
    message = fitted.message
    messages: list[Message] = [
        {"role": "system", "content": window.system_text},
        *map(unstamped, window.kept),
        _final_message(fitted.text, steps),
        *map(unstamped, steps.messages),
    ]
    system_tokens = count(window.system_text)
    lead = request.agent.tools_tokens  # the tools come first in the prompt
    history = window.kept_tokens - overhead * len(window.kept)
    in_turn = steps.tokens - overhead * len(steps.messages)
    token_count = lead + system_tokens + history + fitted.tokens + in_turn
    framing = overhead * len(messages)
    offered = offer.lines()
    trimmed = sum(offer.line_tokens(count)) - sum(count(line) for line in message.lines)
    core_chars = len(core) if window.index_lines else None
    report = CompileReport(
        model_id=settings.model_id,
        placement="end",
        token_count=token_count,
        tokens_budget=budget.tokens,
        message_framing_tokens=framing,
        tokens_trimmed=max(trimmed, 0) + window.dropped_tokens,
        memories_truncated=offer.memories_truncated,
        stable_prefix_messages=1 + len(window.kept),
        fit=fitted.report(len(offered)),
        window=window.report(core_chars, _supplied(request.history.counts)),
        cache=_end_cache(request, settings, window, fitted, core_chars),
        **_common_report(request, token_count + framing, semantic, window.kept, tools_changed),
        **_profile_report(request, offer, message.sources, fitted.choice),
        turn=_turn_report(steps, fitted.reused),
    )
    regions = _end_marks(core, fitted)
    trace = {"choices": fitted.choice, "sources": list(message.sources)}
    cited = cited_numbers(offer, message.sources, message.memory_text())
    debug = request.options.debug
    return Rendered(
        messages, offer, cited, report, regions, trace if debug else None, _tools(request)
    )


def render_system(
    request: CompileRequest,
    offer: Offer,
    fitted: SystemMessage,
    semantic: SemanticCall | None,
    settings: CompilerSettings,
    tools_changed: bool,
) -> Rendered:
    """Single-system-message placement: core, memories, the last reply and the question."""
    overhead, steps = settings.message_overhead_tokens, request.steps
    full = fitted.full_tokens
    in_turn = steps.tokens - overhead * len(steps.messages)
    token_count = request.agent.tools_tokens + fitted.tokens + in_turn
    report = CompileReport(
        model_id=settings.model_id,
        placement="system",
        token_count=token_count,
        tokens_budget=request.budget.tokens,
        message_framing_tokens=overhead * (1 + len(steps.messages)),
        tokens_trimmed=sum(full) - sum(full[i] for i in fitted.kept),
        memories_truncated=offer.memories_truncated,
        stable_prefix_messages=0,
        fit=FitReport(segments_offered=len(full), segments_kept=len(fitted.kept)),
        cache=CacheReport(),
        **_common_report(
            request, token_count + overhead * (1 + len(steps.messages)), semantic, [], tools_changed
        ),
        **_profile_report(request, offer, fitted.kept, fitted.choice),
        turn=_turn_report(steps, False),
    )
    regions = _system_marks(request.text.core, fitted.middle, fitted.text, fitted.end_text)
    trace = {"choices": list(fitted.choice)} if request.options.debug else None
    messages: list[Message] = [
        {"role": "system", "content": fitted.text},
        *map(unstamped, steps.messages),
    ]
    cited = cited_numbers(offer, fitted.kept, fitted.middle)
    return Rendered(messages, offer, cited, report, regions, trace, _tools(request))


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


def _end_cache(
    request: CompileRequest,
    settings: CompilerSettings,
    window: HistoryWindow,
    fitted: FittedFinal,
    core_chars: int | None,
) -> CacheReport:
    """Where the cacheable prefix ends with end placement: after the system message (core and
    index) and after the kept history."""
    budget, overhead, steps = request.budget, settings.message_overhead_tokens, request.steps
    count, lead = budget.count, request.agent.tools_tokens
    system_tokens = count(window.system_text)
    prefix = lead + system_tokens + overhead + window.kept_tokens
    question = (len(window.kept) + 1, prefix + fitted.tokens + overhead)
    last = (question[0] + len(steps.messages), question[1] + steps.tokens)
    turn = (question, last if steps.messages else None) if steps.continued else None
    return cache_report(
        settings.model_id,
        enabled=request.options.use_prompt_caching_split,
        core_tokens=lead + count(request.text.core) + overhead,
        core_chars=core_chars,
        system_tokens=lead + system_tokens + overhead,
        history_messages=len(window.kept),
        prefix_tokens=prefix,
        tail_tokens=fitted.tokens + overhead,
        token_scale=budget.scale,
        capabilities=budget.capabilities,
        turn=turn,
    )


def _final_message(text: str, steps: TurnSteps) -> Message:
    """The final user message: its text, then a continued question's images and files."""
    if not steps.parts:
        return {"role": "user", "content": text}
    return {"role": "user", "content": [{"type": "text", "text": text}, *steps.parts]}


def _turn_report(steps: TurnSteps, question_kept: bool) -> TurnReport | None:
    if not steps.continued:
        return None
    return TurnReport(len(steps.messages), steps.stubbed, question_kept)


def _supplied(counts: list[int | None] | None) -> int:
    return 0 if counts is None else len(counts) - counts.count(None)


def _common_report(
    request: CompileRequest,
    sent_tokens: int,
    semantic: SemanticCall | None,
    kept: list[Message],
    tools_changed: bool,
) -> dict[str, Any]:
    kept = [*kept, *request.steps.messages]
    budget = request.budget
    budget_counted = budget.counted + request.agent.tools_tokens
    return dict(
        token_scale=budget.scale,
        token_scale_samples=budget.scale_samples,
        tokens_budget_counted=budget_counted,
        budget_exceeded=sent_tokens > budget_counted,
        semantic_ranking=semantic is not None and semantic.used,
        semantic_ranking_error=semantic.error if semantic is not None else None,
        semantic_vectors_pending=semantic.pending if semantic is not None else 0,
        agent=_agent_report(request, kept, tools_changed),
    )


def _agent_report(
    request: CompileRequest, kept: list[Message], tools_changed: bool
) -> AgentReport | None:
    agent = request.agent
    images = ImageTally()
    for message in kept:
        if isinstance(message.get("content"), list):
            images += agent.images.tally(message)
    if not agent.tools and not images.images and agent.reserve is None:
        return None
    return AgentReport(
        tools=len(agent.tools),
        tools_tokens=agent.tools_tokens,
        tools_changed=tools_changed,
        images=images.images,
        image_tokens=images.tokens,
        images_unsized=images.unsized,
        reserve_output_tokens=agent.reserve,
        context_window=agent.window,
        reserve_output_default=agent.reserve_default,
    )


def _tools(request: CompileRequest) -> list[dict[str, Any]]:
    """The tools in OpenAI function shape, for the result (the builders render the rest)."""
    out = []
    for spec in request.agent.tools:
        function: dict[str, Any] = {"name": spec.name, "description": spec.description}
        function["parameters"] = copy.deepcopy(dict(spec.parameters))
        if spec.strict is not None:
            function["strict"] = spec.strict
        out.append({"type": "function", "function": function})
    return out


def timed_report(rendered: Rendered, notes: StoreNotes, watch: Watch, writes: int) -> CompileReport:
    """The report with what the state store reported and, when the profiler ran, the stage
    timings (``writes``: store writes)."""
    report = notes.stamp(rendered.report)
    if not watch.enabled:
        return report
    kept = report.stable_prefix_messages - 1 if report.placement == "end" else 0
    counts = {
        "normalise": kept + report.history_messages_dropped,
        "layout": report.fit.segments_offered,
        "history": kept,
        "fit": report.fit.segments_kept,
        "render": len(rendered.messages),
        "state_store": writes,
    }
    return dataclasses.replace(report, profile_timings=watch.timings(counts))


def _profile_report(
    request: CompileRequest, offer: Offer, sent: list[int], choice: Sequence[str]
) -> dict[str, Any]:
    """The classifier's label and what the policies did, when the profile has them."""
    out: dict[str, Any] = {}
    label = request.label
    if label is not None:
        effect = label.effect
        out["label"] = LabelReport(
            label.label,
            effect.tier_order if effect is not None else None,
            effect.memory_share if effect is not None else None,
        )
    rules = offer.rules
    if request.report_policies and rules is not None:
        ids = [s.ref_id for s in offer.segments] + [None] * len(offer.extras)
        thinned = [i for i in sent if choice[i] == "thin"]
        out["policy_report"] = rules_outcome(rules, ids, sent, thinned)
    return out


def _end_marks(core: str, fitted: FittedFinal) -> RegionMarks:
    message, text = fitted.message, fitted.text
    current = len(text) - len(message.end_text)
    # The blank line between the memories and the recall block belongs to the recall block.
    recall = (len(message.memory_text()) if message.lines else 0) if message.passages else current
    return RegionMarks(
        (("core", 0), ("index", len(core))),
        (("memories", 0), ("recall", recall), ("current", current)),
    )


def _system_marks(core: str, middle: str, text: str, end_text: str) -> RegionMarks:
    current = len(text) - len(end_text)
    memories = len(core) + 2 if core else 0
    return RegionMarks(
        (("core", 0), ("memories", memories if middle else current), ("current", current))
    )
