"""The stages' report fragments: each stage's own typed evidence of one compile."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AgentReport",
    "CacheReport",
    "CompileMetrics",
    "FitReport",
    "LabelReport",
    "PolicyReport",
    "StoreReport",
    "TurnReport",
    "WindowReport",
]


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
class WindowReport:
    """What the history window did (end placement): the cut, the eviction index, the resume."""

    messages_dropped: int = 0
    index_lines: int = 0
    index_tokens: int = 0
    #: Units dropped for this turn only, beyond the tracked cut, to make room for the turn.
    turn_local_drop: int = 0
    #: Cut moves at a session boundary and between them, once the caller marks sessions.
    cut_moves: tuple[int, int] | None = None
    #: "in_process", "resumed" or "replayed:<why>": see stages.window._restore, docs/state.md.
    resume: str | None = None
    #: The core's length inside the system message when an index follows it.
    core_chars: int | None = None
    #: History messages whose token count the caller supplied.
    counts_supplied: int = 0
    #: The caller's index of the message or item holding the last compaction boundary.
    compaction_boundary: int | None = None


@dataclass(frozen=True, slots=True)
class FitReport:
    """What the fit kept of the memories on offer, and what recall brought back."""

    segments_offered: int = 0
    segments_kept: int = 0
    segments_thinned: int = 0
    messages_recalled: int = 0
    #: Why recall fired or not: "recalled", "recalled_by_meaning" (no word match, passages the
    #: embedder found close), "no_room", "window_holds" (a turn that asks nothing, whose
    #: matches the kept window states), "window_answers" (a question a kept message matches at
    #: least as well as any dropped one) or "no_match" (None when recall is off or nothing was
    #: dropped).
    recall_reason: str | None = None

    @property
    def summary(self) -> dict[str, int]:
        """The ``retrieval_summary``: memories kept whole, thinned and dropped."""
        return {
            "offered": self.segments_offered,
            "kept_full": self.segments_kept - self.segments_thinned,
            "thinned": self.segments_thinned,
            "dropped": self.segments_offered - self.segments_kept,
        }


@dataclass(frozen=True, slots=True)
class CacheReport:
    """Where the cacheable prefix ends, and whether the provider will cache it.

    ``breakpoints`` rows are dicts with ``message_index``, ``tokens``, ``reason`` and, for a
    breakpoint inside the system message, ``chars``. The token figures are present only when
    the prefix is used for caching.
    """

    mode: str | None = None
    breakpoints: tuple[dict[str, Any], ...] = ()
    used: bool = False
    prefix_tokens: int | None = None
    tail_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class TurnReport:
    """A continued turn (``continue_turn``): its steps after the question, and what was kept."""

    #: Messages after the question (tool calls and results).
    steps: int = 0
    #: Tool results replaced by a note to fit the budget.
    steps_stubbed: int = 0
    #: The question message is the turn's earlier one, byte for byte.
    question_reused: bool = False


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


@dataclass(frozen=True, slots=True)
class StoreReport:
    """Trouble with the state store during one compile."""

    #: State values read from the store that failed their checks and were rebuilt.
    discarded: tuple[str, ...] = ()
    #: The state store was unreachable; this compile used in-process state.
    fallback: bool = False


@dataclass(frozen=True, slots=True)
class LabelReport:
    """A profile classifier's label for the turn and its effect on the fit."""

    name: str
    #: Tiers in the order they are kept (None: the label changes nothing).
    tier_order: tuple[int, ...] | None = None
    memory_share: float | None = None
