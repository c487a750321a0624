"""The report of one compile: the stages' fragments composed, and its ``metadata`` dict."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from membrane.report._fragments import (
    AgentReport,
    CacheReport,
    CompileMetrics,
    FitReport,
    LabelReport,
    PolicyReport,
    StoreReport,
    TurnReport,
    WindowReport,
)
from membrane.report._keys import FIREWALL_STATS, MetadataView, read_metadata, render_metadata

__all__ = ["CompileReport", "ResultView"]


@dataclass(frozen=True, slots=True)
class CompileReport:
    """Every number that explains one compile's trims, budget and caching."""

    model_id: str | None = None
    placement: Literal["end", "system"] = "end"
    token_count: int = 0
    tokens_budget: int = 0
    message_framing_tokens: int = 0
    tokens_trimmed: int = 0
    memories_truncated: int = 0
    stable_prefix_messages: int = 0
    token_scale: float = 1.0
    token_scale_samples: int = 0
    tokens_budget_counted: int = 0
    budget_exceeded: bool = False
    fit: FitReport = field(default_factory=FitReport)
    #: None with system placement (no history window).
    window: WindowReport | None = None
    cache: CacheReport | None = None
    semantic_ranking: bool = False
    semantic_ranking_error: str | None = None
    #: With an embedder on an executor: the most texts one ranking found without a vector
    #: when the compile's wait ran out (that ranking was left to words).
    semantic_vectors_pending: int = 0
    store: StoreReport = field(default_factory=StoreReport)
    agent: AgentReport | None = None
    #: None unless the compile continued a turn.
    turn: TurnReport | None = None
    label: LabelReport | None = None
    policy_report: PolicyReport | None = None
    # Stage -> (milliseconds, items handled), in pipeline order.
    profile_timings: tuple[tuple[str, float, int], ...] | None = None
    #: What the pre-flight summary cache did: "hit", "miss" or "unavailable" (None: not used).
    preflight_cache: str | None = None
    #: The backend's topic-shift verdict (None: none computed), and why it is missing.
    topic_shift: bool | None = None
    topic_shift_reason: str | None = None
    #: False when the backend did not ask: then the topic-shift keys are absent.
    topic_shift_checked: bool = False

    def metadata(self) -> dict[str, Any]:
        """The public ``metadata`` dict, keys in their documented order."""
        return render_metadata(self)

    @classmethod
    def from_metadata(cls, md: Mapping[str, Any]) -> CompileReport:
        """Read a ``metadata`` dict back (a missing key takes its neutral value).

        For a :class:`~membrane.CompileResult` built by hand; a compiled one carries its
        report as ``result.report``.
        """
        values, parts = read_metadata(md)
        report = cls(**values)
        fragments: dict[str, Any] = {
            "fit": FitReport(**parts.get("fit", {})),
            "store": StoreReport(**parts.get("store", {})),
        }
        if report.placement == "end":
            fragments["window"] = WindowReport(**parts.get("window", {}))
        kinds = (("cache", CacheReport), ("agent", AgentReport), ("turn", TurnReport))
        for name, kind in kinds:
            if name in parts:
                fragments[name] = kind(**parts[name])
        if "label" in parts:
            fragments["label"] = LabelReport(**parts["label"])
        return replace(report, **fragments)

    @property
    def history_messages_dropped(self) -> int:
        return self.window.messages_dropped if self.window is not None else 0

    @property
    def cache_mode(self) -> str | None:
        return self.cache.mode if self.cache is not None else None

    @property
    def prompt_cache_used(self) -> bool:
        return self.cache is not None and self.cache.used

    @property
    def cache_breakpoints(self) -> list[dict[str, Any]]:
        """Where cached prefixes end (``message_index``, ``tokens``, ``reason``, ``chars``)."""
        return list(self.cache.breakpoints) if self.cache is not None else []

    @property
    def sent_tokens(self) -> int:
        """Counted tokens of the whole request, per-message framing included."""
        return self.token_count + self.message_framing_tokens

    def metrics(self) -> CompileMetrics:
        """The sizes a metrics callback receives."""
        cache = self.cache
        return CompileMetrics(
            model_id=self.model_id,
            token_count=self.token_count,
            tokens_budget=self.tokens_budget,
            tokens_trimmed=self.tokens_trimmed,
            segments_offered=self.fit.segments_offered,
            segments_kept=self.fit.segments_kept,
            history_messages_dropped=self.history_messages_dropped,
            cacheable_prefix_tokens=(cache.prefix_tokens or 0) if cache else 0,
            dynamic_tail_tokens=(cache.tail_tokens or 0) if cache else 0,
            budget_exceeded=self.budget_exceeded,
        )

    def firewall_stats(self) -> dict[str, Any]:
        """The stats :meth:`~membrane.stages.PreFlightContextFirewall.run` returns."""
        md = self.metadata()
        return {name: md[name] for name in FIREWALL_STATS}


@dataclass(frozen=True, slots=True)
class ResultView:
    """What a request builder reads of a compile result.

    A result the compiler built carries its typed report, and the values come from it; a
    result built by hand has only ``metadata``, whose raw values come back as they are (the
    builders check each one they use).
    """

    metadata: Mapping[str, Any]
    report: CompileReport | None = None

    @classmethod
    def of(cls, result: Any) -> ResultView:
        report = getattr(result, "compile_report", None)
        return cls(result.metadata, report if isinstance(report, CompileReport) else None)

    @property
    def model_id(self) -> Any:
        return self.report.model_id if self.report else MetadataView(self.metadata).model_id

    @property
    def placement(self) -> Any:
        return self.report.placement if self.report else MetadataView(self.metadata).placement

    @property
    def token_scale(self) -> Any:
        return self.report.token_scale if self.report else MetadataView(self.metadata).token_scale

    @property
    def cache_breakpoints(self) -> Any:
        if self.report is None:
            return MetadataView(self.metadata).cache_breakpoints
        return self.report.cache_breakpoints if self.report.cache is not None else None

    @property
    def reserve_output_tokens(self) -> Any:
        if self.report is None:
            return MetadataView(self.metadata).reserve_output_tokens
        agent = self.report.agent
        return agent.reserve_output_tokens if agent is not None else None

    @property
    def reserve_output_default(self) -> Any:
        if self.report is None:
            return MetadataView(self.metadata).reserve_output_default
        agent = self.report.agent
        return agent.reserve_output_default if agent and agent.reserve_output_tokens else None

    @property
    def tools_tokens(self) -> Any:
        if self.report is None:
            return MetadataView(self.metadata).tools_tokens
        agent = self.report.agent
        return agent.tools_tokens if agent is not None and agent.tools else None
