"""The typed evidence of one compile, and the ``metadata`` dict rendered from it.

Internal code reads :class:`CompileReport` fields; :meth:`CompileReport.metadata` renders the
public ``metadata`` dict (its keys and their order are the documented contract), and this is
the only module that spells those keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "CACHE_KEYS",
    "AgentReport",
    "CompileMetrics",
    "CompileReport",
    "MetadataView",
    "PolicyReport",
    "note_preflight_cache",
    "note_topic_shift",
]

#: The caching keys of ``metadata`` (see :func:`membrane.stages.glaciator.cache_metadata`).
CACHE_KEYS = (
    "cache_mode",
    "cache_breakpoints",
    "prompt_cache_used",
    "cacheable_prefix_tokens",
    "dynamic_tail_tokens",
)


@dataclass(frozen=True, slots=True)
class MetadataView:
    """A ``metadata`` dict's raw values by name, unchecked and unconverted.

    For code that receives a result possibly built by hand and checks the values itself (the
    request builders); everything else reads :meth:`CompileReport.from_metadata`.
    """

    metadata: Mapping[str, Any]

    @property
    def model_id(self) -> Any:
        return self.metadata.get("model_id")

    @property
    def placement(self) -> Any:
        return self.metadata.get("memory_placement")

    @property
    def token_scale(self) -> Any:
        return self.metadata.get("token_scale")

    @property
    def cache_breakpoints(self) -> Any:
        return self.metadata.get("cache_breakpoints")

    @property
    def reserve_output_tokens(self) -> Any:
        return self.metadata.get("reserve_output_tokens")

    @property
    def reserve_output_default(self) -> Any:
        return self.metadata.get("reserve_output_default")

    @property
    def tools_tokens(self) -> Any:
        return self.metadata.get("tools_tokens")


@dataclass(frozen=True, slots=True)
class PolicyReport:
    """What a profile's policies did in one compile (``metadata["policy_report"]``).

    ``max_items`` rows are ``(policy, limit, offered, sent)``; ``conflicts`` rows are
    ``(rule, memory id or None, the rule it yielded to)``.
    """

    must_include_sent: tuple[str, ...] = ()
    never_thin_sent: int = 0
    thinned: int = 0
    max_items: tuple[tuple[str, int, int, int], ...] = ()
    conflicts: tuple[tuple[str, str | None, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "must_include_sent": list(self.must_include_sent),
            "never_thin_sent": self.never_thin_sent,
            "thinned": self.thinned,
            "max_items": {
                name: {"limit": limit, "offered": offered, "sent": sent}
                for name, limit, offered, sent in self.max_items
            },
            "conflicts": [
                {"rule": rule, "memory": memory, "yielded_to": winner}
                for rule, memory, winner in self.conflicts
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PolicyReport:
        caps = data.get("max_items") or {}
        return cls(
            must_include_sent=tuple(data.get("must_include_sent") or ()),
            never_thin_sent=int(data.get("never_thin_sent", 0)),
            thinned=int(data.get("thinned", 0)),
            max_items=tuple(
                (str(name), int(row["limit"]), int(row["offered"]), int(row["sent"]))
                for name, row in caps.items()
            ),
            conflicts=tuple(
                (str(row["rule"]), row.get("memory"), str(row["yielded_to"]))
                for row in data.get("conflicts") or ()
            ),
        )


@dataclass(frozen=True, slots=True)
class CompileMetrics:
    """Sizes from one compile, for a metrics callback (never any prompt text)."""

    model_id: str | None
    token_count: int
    tokens_budget: int
    tokens_trimmed: int
    segments_offered: int
    segments_kept: int
    history_messages_dropped: int
    cacheable_prefix_tokens: int
    dynamic_tail_tokens: int
    budget_exceeded: bool


@dataclass(frozen=True, slots=True)
class AgentReport:
    """Tokens of an agent request's other inputs: tools, images, and the output reserve.

    Only the parts a compile had are rendered: tool keys with tools, image keys with images
    in the prompt, reserve keys when a reserve applies (a known window or an explicit one).
    ``reserve_output_default`` is true when the reserve is Membrane's default rather than the
    caller's ``reserve_output_tokens``; the request builders send only the caller's.
    """

    tools: int = 0
    tools_tokens: int = 0
    tools_changed: bool = False
    images: int = 0
    image_tokens: int = 0
    images_unsized: int = 0
    reserve_output_tokens: int | None = None
    context_window: int | None = None
    reserve_output_default: bool = False

    def metadata(self) -> dict[str, Any]:
        md: dict[str, Any] = {}
        if self.tools:
            md["tools"] = self.tools
            md["tools_tokens"] = self.tools_tokens
            md["tools_changed"] = self.tools_changed
        if self.images:
            md["images"] = self.images
            md["image_tokens"] = self.image_tokens
            md["images_unsized"] = self.images_unsized
        if self.reserve_output_tokens is not None:
            md["reserve_output_tokens"] = self.reserve_output_tokens
            md["context_window"] = self.context_window
            md["reserve_output_default"] = self.reserve_output_default
        return md

    @classmethod
    def from_metadata(cls, md: Mapping[str, Any]) -> AgentReport | None:
        if not any(k in md for k in ("tools", "images", "reserve_output_tokens")):
            return None
        reserve, window = md.get("reserve_output_tokens"), md.get("context_window")
        return cls(
            tools=int(md.get("tools", 0)),
            tools_tokens=int(md.get("tools_tokens", 0)),
            tools_changed=bool(md.get("tools_changed", False)),
            images=int(md.get("images", 0)),
            image_tokens=int(md.get("image_tokens", 0)),
            images_unsized=int(md.get("images_unsized", 0)),
            reserve_output_tokens=None if reserve is None else int(reserve),
            context_window=None if window is None else int(window),
            reserve_output_default=bool(md.get("reserve_output_default", False)),
        )


@dataclass(frozen=True, slots=True)
class CompileReport:
    """Every number that explains one compile's trims, budget and caching."""

    model_id: str | None
    placement: Literal["end", "system"]
    token_count: int
    tokens_budget: int
    message_framing_tokens: int
    tokens_trimmed: int
    segments_offered: int
    segments_kept: int
    segments_thinned: int
    memories_truncated: int
    stable_prefix_messages: int
    token_scale: float
    token_scale_samples: int
    tokens_budget_counted: int
    budget_exceeded: bool
    history_messages_dropped: int = 0
    history_messages_recalled: int = 0
    #: Why recall fired or not: "recalled", "recalled_by_meaning" (no word match, passages the
    #: embedder found close), "no_room", "window_holds" (a turn that asks nothing, whose
    #: matches the kept window states), "window_answers" (a question a kept message matches at
    #: least as well as any dropped one) or "no_match" (None when recall is off or nothing was
    #: dropped).
    history_recall_reason: str | None = None
    history_index_lines: int = 0
    history_index_tokens: int = 0
    history_turn_local_drop: int = 0
    history_cut_moves: tuple[int, int] | None = None  # (at a session boundary, mid-session)
    message_counts_supplied: int = 0
    #: "in_process", "resumed" or "replayed:<why>": see stages.window._restore and docs/state.md
    history_resume: str | None = None
    core_chars: int | None = None
    semantic_ranking: bool = False
    semantic_ranking_error: str | None = None
    cache: dict[str, Any] = field(default_factory=dict)
    #: State values read from the store that failed their checks and were rebuilt.
    state_discarded: tuple[str, ...] = ()
    #: The state store was unreachable; this compile used in-process state.
    state_store_fallback: bool = False
    agent: AgentReport | None = None
    query_label: str | None = None
    # The label's effect: tiers in the order they are kept, and the memories' budget share.
    label_tier_order: tuple[int, ...] | None = None
    label_memory_share: float | None = None
    policy_report: PolicyReport | None = None
    # Stage -> (milliseconds, items handled), in pipeline order.
    profile_timings: tuple[tuple[str, float, int], ...] | None = None

    def metadata(self) -> dict[str, Any]:
        """The public ``metadata`` dict, keys in their documented order."""
        md: dict[str, Any] = {
            "model_id": self.model_id,
            "memory_placement": self.placement,
            "token_count": self.token_count,
            "tokens_budget": self.tokens_budget,
            "message_framing_tokens": self.message_framing_tokens,
            "tokens_trimmed": self.tokens_trimmed,
            "segments_offered": self.segments_offered,
            "segments_kept": self.segments_kept,
            "segments_thinned": self.segments_thinned,
            "memories_truncated": self.memories_truncated,
        }
        if self.placement == "end":
            md["stable_prefix_messages"] = self.stable_prefix_messages
            md["history_messages_dropped"] = self.history_messages_dropped
            md["history_messages_recalled"] = self.history_messages_recalled
            if self.history_recall_reason is not None:
                md["history_recall_reason"] = self.history_recall_reason
            md["history_index_lines"] = self.history_index_lines
            md["history_index_tokens"] = self.history_index_tokens
            if (moves := self.history_cut_moves) is not None:
                md["history_cut_moves"] = {"session": moves[0], "mid_session": moves[1]}
            if self.history_resume is not None:
                md["history_resume"] = self.history_resume
        md["retrieval_summary"] = {
            "offered": self.segments_offered,
            "kept_full": self.segments_kept - self.segments_thinned,
            "thinned": self.segments_thinned,
            "dropped": self.segments_offered - self.segments_kept,
        }
        if self.placement == "system":
            md["stable_prefix_messages"] = self.stable_prefix_messages
            md.update(self.cache)
        if self.history_turn_local_drop:
            md["history_turn_local_drop"] = self.history_turn_local_drop
        if self.message_counts_supplied:
            md["message_counts_supplied"] = self.message_counts_supplied
        if self.core_chars is not None:
            md["core_chars"] = self.core_chars
        md["token_scale"] = self.token_scale
        md["token_scale_samples"] = self.token_scale_samples
        if self.token_scale != 1.0:
            md["tokens_budget_counted"] = self.tokens_budget_counted
        md["budget_exceeded"] = self.budget_exceeded
        if self.semantic_ranking_error is not None:
            md["semantic_ranking_error"] = self.semantic_ranking_error
        elif self.semantic_ranking:
            md["semantic_ranking"] = True
        if self.state_discarded:
            md["state_discarded"] = list(self.state_discarded)
        if self.state_store_fallback:
            md["state_store_fallback"] = True
        if self.placement == "end":
            md.update(self.cache)
        if self.agent is not None:
            md.update(self.agent.metadata())
        if self.query_label is not None:
            md["query_label"] = self.query_label
            md["query_label_effect"] = (
                None
                if self.label_tier_order is None
                else {
                    "tier_order": list(self.label_tier_order),
                    "memory_share": self.label_memory_share,
                }
            )
        if self.policy_report is not None:
            md["policy_report"] = self.policy_report.to_dict()
        if self.profile_timings is not None:
            md["profile_timings"] = {
                stage: {"ms": ms, "items": items} for stage, ms, items in self.profile_timings
            }
        return md

    @classmethod
    def from_metadata(cls, md: Mapping[str, Any]) -> CompileReport:
        """Read a ``metadata`` dict back (a missing key takes its neutral value).

        Code that receives a :class:`~membrane.CompileResult`, possibly built by hand, reads
        the numbers through this instead of spelling keys.
        """
        scale = float(md.get("token_scale", 1.0))
        effect = md.get("query_label_effect")
        policy = md.get("policy_report")
        timings = md.get("profile_timings")
        token_count = int(md.get("token_count", 0))
        budget = int(md.get("tokens_budget", 0))
        moves = md.get("history_cut_moves")
        return cls(
            model_id=md.get("model_id"),
            placement="system" if md.get("memory_placement") == "system" else "end",
            token_count=token_count,
            tokens_budget=budget,
            message_framing_tokens=int(md.get("message_framing_tokens", 0)),
            tokens_trimmed=int(md.get("tokens_trimmed", 0)),
            segments_offered=int(md.get("segments_offered", 0)),
            segments_kept=int(md.get("segments_kept", 0)),
            segments_thinned=int(md.get("segments_thinned", 0)),
            memories_truncated=int(md.get("memories_truncated", 0)),
            stable_prefix_messages=int(md.get("stable_prefix_messages", 0)),
            token_scale=scale,
            token_scale_samples=int(md.get("token_scale_samples", 0)),
            tokens_budget_counted=int(md.get("tokens_budget_counted", budget)),
            budget_exceeded=bool(md.get("budget_exceeded", False)),
            history_messages_dropped=int(md.get("history_messages_dropped", 0)),
            history_messages_recalled=int(md.get("history_messages_recalled", 0)),
            history_recall_reason=md.get("history_recall_reason"),
            history_index_lines=int(md.get("history_index_lines", 0)),
            history_index_tokens=int(md.get("history_index_tokens", 0)),
            history_turn_local_drop=int(md.get("history_turn_local_drop", 0)),
            history_cut_moves=None if moves is None else (moves["session"], moves["mid_session"]),
            message_counts_supplied=int(md.get("message_counts_supplied", 0)),
            history_resume=md.get("history_resume"),
            core_chars=md.get("core_chars"),
            semantic_ranking=bool(md.get("semantic_ranking", False)),
            semantic_ranking_error=md.get("semantic_ranking_error"),
            cache={k: md[k] for k in CACHE_KEYS if k in md},
            state_discarded=tuple(str(v) for v in md.get("state_discarded") or ()),
            state_store_fallback=bool(md.get("state_store_fallback", False)),
            agent=AgentReport.from_metadata(md),
            query_label=md.get("query_label"),
            label_tier_order=tuple(effect["tier_order"]) if effect else None,
            label_memory_share=effect.get("memory_share") if effect else None,
            policy_report=PolicyReport.from_dict(policy) if policy is not None else None,
            profile_timings=tuple(
                (str(stage), float(row["ms"]), int(row["items"])) for stage, row in timings.items()
            )
            if timings is not None
            else None,
        )

    @property
    def cache_breakpoints(self) -> list[dict[str, Any]]:
        """Where cached prefixes end (``message_index``, ``tokens``, ``reason``, ``chars``)."""
        return list(self.cache.get("cache_breakpoints") or [])

    @property
    def cache_mode(self) -> str | None:
        mode = self.cache.get("cache_mode")
        return mode if isinstance(mode, str) else None

    @property
    def prompt_cache_used(self) -> bool:
        return bool(self.cache.get("prompt_cache_used", False))

    @property
    def sent_tokens(self) -> int:
        """Counted tokens of the whole request, per-message framing included."""
        return self.token_count + self.message_framing_tokens

    def metrics(self) -> CompileMetrics:
        """The sizes a metrics callback receives."""
        return CompileMetrics(
            model_id=self.model_id,
            token_count=self.token_count,
            tokens_budget=self.tokens_budget,
            tokens_trimmed=self.tokens_trimmed,
            segments_offered=self.segments_offered,
            segments_kept=self.segments_kept,
            history_messages_dropped=self.history_messages_dropped,
            cacheable_prefix_tokens=int(self.cache.get("cacheable_prefix_tokens", 0)),
            dynamic_tail_tokens=int(self.cache.get("dynamic_tail_tokens", 0)),
            budget_exceeded=self.budget_exceeded,
        )


def note_preflight_cache(md: Mapping[str, Any], outcome: str | None) -> dict[str, Any]:
    """``md`` with what the pre-flight cache did (``hit``, ``miss``, ``unavailable``), if used."""
    return {**md} if outcome is None else {**md, "preflight_cache": outcome}


def note_topic_shift(
    md: Mapping[str, Any], shifted: bool | None, reason: str | None
) -> dict[str, Any]:
    """``md`` with the topic-shift verdict; ``shifted`` is None when none was computed, and
    ``reason`` then says why."""
    noted: dict[str, Any] = {**md, "topic_shift": shifted}
    if reason is not None:
        noted["topic_shift_reason"] = reason
    return noted
