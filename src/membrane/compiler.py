"""The compiler: rules, memories, history and the current turn in; a budgeted request out.

:meth:`ContextCompiler.compile` runs the stages in flow order — normalise, count, plan history,
lay out, fit, split for caching — and returns a :class:`CompileResult` that carries the
messages, the citation map and the numbers that explain every trim. The algorithms live in
``membrane.stages``; this module only wires them together and keeps the per-conversation
trackers and the state store.
"""

from __future__ import annotations

import functools
import inspect
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from membrane import config
from membrane.capabilities import ModelCapabilities, get_model_capabilities, get_token_scale
from membrane.errors import InvalidInputError
from membrane.messages import Message, message_text, validate_messages
from membrane.records import MEMORY_KINDS, TIER_PROCEDURAL, MemoryItem, memory_tier, text_caps
from membrane.stages.firewall import (
    MAX_PROCEDURAL_KEPT,
    PIN_MIN_SCORE,
    MiddleItem,
    Offer,
    Tail,
    fit_middle,
    fit_offer,
    rank_offer,
    shed_to_fit,
    thin_lines,
)
from membrane.stages.glaciator import cache_metadata
from membrane.stages.history import (
    INDEX_HEADER,
    RECALL_HEADER,
    HistoryTracker,
    RecalledPassage,
    render_index,
    select_index_lines,
    select_passages,
)
from membrane.stages.layout import ContextLayoutEngine, render_memories
from membrane.stages.preflight import SyncCompressor, check_compressed, mem_numbers
from membrane.state import InMemoryStateStore, StateStore
from membrane.text.keyframes import keyframe
from membrane.text.relevance import CombinedStats, TermStats
from membrane.text.semantic import Embedder, SemanticRanker
from membrane.tokenizers import MemoizedCounter, TiktokenAdapter, TokenCounter
from membrane.tokenizers._calibration import ScaleCalibration, counted_budget

if TYPE_CHECKING:
    from membrane.profile import MembraneProfile
    from membrane.stages.preflight import AsyncCompressor, PreFlightAnalyst
    from membrane.tokenizers import TokenizerRegistry

__all__ = [
    "CompileMetrics",
    "CompileResult",
    "ContextCompiler",
    "CostQuote",
    "Embedder",
    "compile_anonymous",
]

Placement = Literal["end", "system"]
Count = Callable[[str], int]
_MAX_TRACKERS = 512
_DEFAULT_CONVERSATION = "_default"
_DEFAULT_COUNTER = TiktokenAdapter("cl100k_base")


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


@dataclass(frozen=True)
class CompileResult:
    """A compiled prompt and the evidence of how it was built.

    ``messages`` are ready for an OpenAI-style API; ``ref_map`` maps every ``[Mem:N]`` in them
    to the caller's record id and ``ref_map_type`` to the record's kind.
    """

    messages: list[Message]
    ref_map: dict[int, str]
    ref_map_type: dict[int, str]
    metadata: dict[str, Any]
    debug_trace: dict[str, Any] | None = None

    def to_debug_dict(self) -> dict[str, Any]:
        """A JSON-friendly snapshot (message roles and sizes, maps, metadata) for logging."""
        return {
            "messages": [
                {"role": m.get("role"), "chars": len(message_text(m))} for m in self.messages
            ],
            "ref_map": {str(k): v for k, v in self.ref_map.items()},
            "ref_map_type": {str(k): v for k, v in self.ref_map_type.items()},
            "metadata": dict(self.metadata),
            "debug_trace": self.debug_trace,
        }


@dataclass(frozen=True, slots=True)
class CostQuote:
    """An input-cost quote for a compiled prompt."""

    total_tokens: int
    estimated_cost_usd: float
    price_per_1k_input_tokens: float
    trimming_strategies: tuple[str, ...]
    compile_result: CompileResult


@dataclass
class _Turn:
    """One compile's normalised inputs."""

    user_message: str
    history: list[Message]
    offer: Offer
    layout: ContextLayoutEngine
    core: str
    last_assistant_turn: str | None
    directives: str | Sequence[str] | None
    counter: MemoizedCounter
    budget: int
    scale: float
    scale_samples: int
    budget_counted: int
    conversation: str
    use_caching: bool
    debug: bool
    capabilities: ModelCapabilities | None

    @property
    def count(self) -> Count:
        return self.counter.count

    @functools.cached_property
    def end_text(self) -> str:
        """The end region: the current turn (and the last reply when there is no history)."""
        last = self.last_assistant_turn if not self.history else None
        return self.layout.build_end(last, self.user_message, self.directives)


@dataclass
class _HistoryPlan:
    """What the history stage decided: the kept suffix, the system text and the index."""

    kept: list[Message]
    kept_tokens: int
    system_text: str
    dropped_messages: int = 0
    dropped_tokens: int = 0
    index_lines: int = 0
    index_tokens: int = 0
    tracker: HistoryTracker | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class ContextCompiler:
    """Compiles prompts under a hard token budget, keeping a cache-stable prefix.

    >>> from membrane.records import MemoryItem
    >>> compiler = ContextCompiler(max_tokens=2048, core_content="Be brief.")
    >>> result = compiler.compile(
    ...     memories=[MemoryItem(id="pref-1", content="User likes short answers.")],
    ...     user_message="Hello")
    >>> result.ref_map
    {1: 'pref-1'}
    >>> [m["role"] for m in result.messages]
    ['system', 'user']
    """

    def __init__(
        self,
        max_tokens: int,
        model_id: str | None = None,
        core_content: str = "",
        *,
        include_interrupt_instruction: bool = True,
        memory_placement: Placement = "end",
        trim_history: bool = True,
        history_share: float = config.DEFAULT_HISTORY_SHARE,
        recall_evicted_history: bool = True,
        rank_fusion: bool = True,
        message_overhead_tokens: int = config.DEFAULT_MESSAGE_OVERHEAD_TOKENS,
        thin_before_drop: bool = True,
        keyframe_tokens: int = config.DEFAULT_KEYFRAME_TOKENS,
        eviction_index: bool = True,
        index_share: float = config.DEFAULT_INDEX_SHARE,
        embedder: Embedder | None = None,
        token_scale: float | None = None,
        metrics_callback: Callable[[CompileMetrics], None] | None = None,
        preflight_analyst_model: str | None = None,
        tokenizer_registry: TokenizerRegistry | None = None,
        state_store: StateStore | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        _check_positive_int("max_tokens", max_tokens)
        _check_placement(memory_placement)
        _check_fraction("history_share", history_share, allow_zero=False)
        _check_fraction("index_share", index_share, allow_zero=True)
        _check_non_negative_int("message_overhead_tokens", message_overhead_tokens)
        _check_positive_int("keyframe_tokens", keyframe_tokens)
        _check_scale(token_scale)
        self.max_tokens = max_tokens
        self.model_id = model_id
        self.core_content = core_content
        self.include_interrupt_instruction = include_interrupt_instruction
        self.memory_placement: Placement = memory_placement
        self.trim_history = trim_history
        self.history_share = history_share
        self.recall_evicted_history = recall_evicted_history
        self.rank_fusion = rank_fusion
        self.message_overhead_tokens = message_overhead_tokens
        self.thin_before_drop = thin_before_drop
        self.keyframe_tokens = keyframe_tokens
        self.eviction_index = eviction_index
        self.index_share = index_share
        self.embedder = embedder
        self.fixed_token_scale = float(token_scale) if token_scale is not None else None
        self.metrics_callback = metrics_callback
        self.preflight_analyst_model = preflight_analyst_model or config.preflight_analyst_model()
        self.tokenizer_registry = tokenizer_registry
        self.state_store: StateStore = (
            state_store if state_store is not None else InMemoryStateStore()
        )
        self._base_counter = token_counter
        self._counters: dict[int, MemoizedCounter] = {}
        self._trackers: OrderedDict[tuple[str, int, int, str], HistoryTracker] = OrderedDict()
        self._semantic = SemanticRanker(embedder) if embedder is not None else None
        # Per conversation: how many history messages passed validation, and the last of them.
        self._validated: OrderedDict[str, tuple[int, tuple[str, str]]] = OrderedDict()
        # Per conversation: the last system text with its index (see _system_text).
        self._system_texts: OrderedDict[
            str, tuple[HistoryTracker, tuple[str, str, int, int], str, int]
        ] = OrderedDict()

    # ------------------------------------------------------------------ public API

    def compile(
        self,
        memories: Sequence[object] = (),
        user_message: str = "",
        *,
        conversation_messages: Sequence[Message] | None = None,
        last_assistant_turn: str | None = None,
        agent_persona_prompt: str | None = None,
        dynamic_directives: str | Sequence[str] | None = None,
        middle_extras: Sequence[tuple[str, int]] | None = None,
        tier_by_memory_id: Mapping[int, int] | None = None,
        use_prompt_caching_split: bool = True,
        compress_sync: SyncCompressor | None = None,
        profile: MembraneProfile | None = None,
        tokenizer_registry: TokenizerRegistry | None = None,
        conversation_id: str | None = None,
        debug: bool = False,
    ) -> CompileResult:
        """Compile one turn.

        ``memories`` are :class:`~membrane.records.MemoryItem` rows or any objects with ``id``
        and ``memory_kind``; ``[Mem:N]`` numbers follow their order. With end placement,
        ``conversation_messages`` are sent as given (OpenAI or Anthropic shape, tool calls
        included), cut from the oldest end in chunks when they outgrow their share.
        ``conversation_id`` selects the conversation's state (the cut, the index room); without
        it the compiler keeps one conversation of its own.
        """
        if compress_sync is not None and not callable(compress_sync):
            raise TypeError(
                "compress_sync must be a function (raw_middle, target_tokens, question)"
            )
        turn = self._normalise(
            memories,
            user_message,
            conversation_messages=conversation_messages,
            last_assistant_turn=last_assistant_turn,
            agent_persona_prompt=agent_persona_prompt,
            dynamic_directives=dynamic_directives,
            middle_extras=middle_extras,
            tier_by_memory_id=tier_by_memory_id,
            use_prompt_caching_split=use_prompt_caching_split,
            profile=profile,
            tokenizer_registry=tokenizer_registry,
            conversation_id=conversation_id,
            debug=debug,
        )
        turn.offer = _compress(turn, compress_sync)
        if self.memory_placement == "system":
            return self._emit(*self._compile_system(turn))
        plan = self._plan_history(turn)
        tail, tail_text, tail_tokens, choice = self._fit_tail(turn, plan)
        return self._emit(*self._render_end(turn, plan, tail, tail_text, tail_tokens, choice))

    async def compile_async(
        self,
        memories: Sequence[object] = (),
        user_message: str = "",
        *,
        compress_async: AsyncCompressor | PreFlightAnalyst | None = None,
        compress_fn: AsyncCompressor | None = None,
        **kwargs: Any,
    ) -> CompileResult:
        """Like :meth:`compile`, with an async pre-flight compressor.

        The compressor runs only when the memories on offer exceed
        ``MEMORY_PREFLIGHT_TOKEN_THRESHOLD`` tokens; its summary replaces them.
        """
        analyst = compress_async if compress_async is not None else compress_fn
        if analyst is None:
            return self.compile(memories, user_message, **kwargs)
        count = self._counter(kwargs.get("tokenizer_registry")).count
        pairs = _memory_pairs(memories, kwargs.get("tier_by_memory_id"), kwargs.get("profile"), "")
        raw = "\n".join(_offer(pairs, _check_extras(kwargs.get("middle_extras"))).lines())
        if count(raw) <= config.preflight_token_threshold():
            return self.compile(memories, user_message, **kwargs)
        target = config.preflight_target_tokens()
        if hasattr(analyst, "compress_retrieved_memory"):
            summary = await analyst.compress_retrieved_memory(raw, target, user_message)
        else:
            summary = await analyst(raw, target, user_message)
        done = check_compressed(summary)
        kwargs.pop("compress_sync", None)
        return self.compile(memories, user_message, compress_sync=lambda _r, _t, _q: done, **kwargs)

    def observe(self, result: CompileResult, actual_prompt_tokens: int) -> float:
        """Report the prompt tokens the provider billed for ``result``; returns the scale now.

        The ratio to Membrane's own count is smoothed per model and shared through the state
        store; later compiles divide the budget by the scale. A fixed ``token_scale`` ignores
        observations.
        """
        if isinstance(actual_prompt_tokens, bool) or not isinstance(actual_prompt_tokens, int):
            raise TypeError("actual_prompt_tokens must be an int (the provider's prompt tokens)")
        if self.fixed_token_scale is not None:
            return self.fixed_token_scale
        model_id = result.metadata.get("model_id")
        counted = int(result.metadata.get("token_count", 0)) + int(
            result.metadata.get("message_framing_tokens", 0)
        )
        calibration = self._calibration(model_id).observe(counted, actual_prompt_tokens)
        self.state_store.put(_scale_key(model_id), calibration.to_dict())
        return calibration.scale

    def estimate(
        self,
        memories: Sequence[object] = (),
        user_message: str = "",
        *,
        price_per_1k_input_tokens: float,
        **kwargs: Any,
    ) -> CostQuote:
        """Compile and quote the input cost at the caller's price per 1,000 tokens."""
        from membrane.estimate import quote_for

        result = self.compile(memories, user_message, **kwargs)
        return quote_for(result, price_per_1k_input_tokens)

    def token_scale_for(self, model_id: str | None = None) -> float:
        """The token scale the next compile for ``model_id`` will use."""
        if self.fixed_token_scale is not None:
            return self.fixed_token_scale
        return self._calibration(model_id if model_id is not None else self.model_id).scale

    # ------------------------------------------------------------------ stages

    def _normalise(
        self,
        memories: Sequence[object],
        user_message: str,
        *,
        conversation_messages: Sequence[Message] | None,
        last_assistant_turn: str | None,
        agent_persona_prompt: str | None,
        dynamic_directives: str | Sequence[str] | None,
        middle_extras: Sequence[tuple[str, int]] | None,
        tier_by_memory_id: Mapping[int, int] | None,
        use_prompt_caching_split: bool,
        profile: MembraneProfile | None,
        tokenizer_registry: TokenizerRegistry | None,
        conversation_id: str | None,
        debug: bool,
    ) -> _Turn:
        if not isinstance(user_message, str):
            raise InvalidInputError("user_message must be a string", field="user_message")
        conversation = conversation_id if conversation_id is not None else _DEFAULT_CONVERSATION
        history = self._validate_history(conversation_messages, conversation)
        pairs = _memory_pairs(memories, tier_by_memory_id, profile, user_message)
        offer = _offer(pairs, _check_extras(middle_extras))
        layout = ContextLayoutEngine(
            self.core_content,
            agent_persona_prompt=agent_persona_prompt,
            include_interrupt_instruction=self.include_interrupt_instruction,
        )
        # One capability lookup per compile: the context cap here, caching in the metadata.
        capabilities = get_model_capabilities(self.model_id) if self.model_id else None
        cap = capabilities.context_cap if capabilities else None
        budget = min(self.max_tokens, cap) if cap else self.max_tokens
        # One state-store read per compile: the scale and how many observations shaped it.
        if self.fixed_token_scale is not None:
            scale, scale_samples = self.fixed_token_scale, 0
        else:
            calibration = self._calibration(self.model_id)
            scale, scale_samples = calibration.scale, calibration.samples
        if self._semantic is not None:
            self._semantic.reset()
        return _Turn(
            user_message=user_message,
            history=history,
            offer=offer,
            layout=layout,
            core=layout.build_core(),
            last_assistant_turn=last_assistant_turn,
            directives=dynamic_directives,
            counter=self._counter(tokenizer_registry),
            budget=budget,
            scale=scale,
            scale_samples=scale_samples,
            budget_counted=counted_budget(budget, scale),
            conversation=conversation,
            use_caching=use_prompt_caching_split,
            debug=debug,
            capabilities=capabilities,
        )

    def _validate_history(
        self, messages: Sequence[Message] | None, conversation: str
    ) -> list[Message]:
        """Validate the history, skipping the prefix this conversation already passed."""
        start = 0
        seen = self._validated.get(conversation)
        if (
            seen is not None
            and isinstance(messages, list)
            and len(messages) >= seen[0]
            and _message_key(messages[seen[0] - 1]) == seen[1]
        ):
            start = seen[0]
        history = validate_messages(messages, field="conversation_messages", start=start)
        if history:
            self._validated[conversation] = (len(history), _message_key(history[-1]))
            self._validated.move_to_end(conversation)
            while len(self._validated) > _MAX_TRACKERS:
                self._validated.popitem(last=False)
        return history

    def _plan_history(self, turn: _Turn) -> _HistoryPlan:
        count, overhead = turn.count, self.message_overhead_tokens
        history = turn.history
        if not history:
            return _HistoryPlan([], 0, turn.core)
        if not self.trim_history:
            kept_tokens = sum(count(message_text(m)) + overhead for m in history)
            return _HistoryPlan(list(history), kept_tokens, turn.core)
        after_core = max(turn.budget_counted - count(turn.core) - overhead, 0)
        share = max(int(self.history_share * after_core), 1)
        tracker = self._tracker(turn.conversation, share, max(share // 2, 1), history, turn.counter)
        plan = _HistoryPlan([], tracker.kept_tokens, turn.core, tracker=tracker)
        if self.eviction_index and tracker.lines:
            room = self._index_room(turn, tracker, after_core)
            plan.system_text, plan.index_lines = self._system_text(turn, tracker, room)
            if plan.index_lines:
                plan.index_tokens = count(plan.system_text) - count(turn.core)
        # A current turn too large for what history leaves pushes more history out, for this
        # turn only: the tracked cut stays, so the next ordinary turn hits the cache again.
        unit = tracker.cut
        reserved = (
            count(plan.system_text) + overhead + plan.kept_tokens + count(turn.end_text) + overhead
        )
        while reserved > turn.budget_counted and unit < len(tracker.bounds):
            reserved -= tracker.unit_tokens[unit]
            plan.kept_tokens -= tracker.unit_tokens[unit]
            unit += 1
        if unit != tracker.cut:
            plan.extra["history_turn_local_drop"] = unit - tracker.cut
        start = tracker.bounds[unit][0] if unit < len(tracker.bounds) else len(history)
        plan.kept = history[start:]
        plan.dropped_messages = start
        plan.dropped_tokens = tracker.total_tokens - plan.kept_tokens
        return plan

    def _system_text(self, turn: _Turn, tracker: HistoryTracker, room: int) -> tuple[str, int]:
        """The core and the newest index lines that fit ``room``, and how many lines that is.

        Reused (the same string, its hash and token count already known) while the core, the
        tracker's lines and the room stay as they were.
        """
        key = (turn.core, turn.counter.name, len(tracker.lines), room)
        cached = self._system_texts.get(turn.conversation)
        if cached is not None and cached[0] is tracker and cached[1] == key:
            return cached[2], cached[3]
        count = turn.count
        first = select_index_lines(tracker.lines, room, count(INDEX_HEADER) + 2)
        index = render_index(tracker.lines[first:])
        text = f"{turn.core}\n\n{index}" if index else turn.core
        lines = len(tracker.lines) - first if index else 0
        self._system_texts[turn.conversation] = (tracker, key, text, lines)
        self._system_texts.move_to_end(turn.conversation)
        while len(self._system_texts) > _MAX_TRACKERS:
            self._system_texts.popitem(last=False)
        return text, lines

    def _tracker(
        self,
        conversation: str,
        share: int,
        chunk: int,
        history: list[Message],
        counter: MemoizedCounter,
    ) -> HistoryTracker:
        count = counter.count
        key = (conversation, share, chunk, counter.name)
        tracker = self._trackers.get(key)
        if tracker is None or not tracker.matches(history):
            tracker = HistoryTracker(
                share, chunk, count, self.message_overhead_tokens, self.keyframe_tokens
            )
            # One tracker per conversation: a new share or a rewritten history replaces it.
            for stale in [k for k in self._trackers if k[0] == conversation]:
                del self._trackers[stale]
            self._trackers[key] = tracker
            while len(self._trackers) > _MAX_TRACKERS:
                self._trackers.popitem(last=False)
        else:
            self._trackers.move_to_end(key)
        tracker.update(history, "conversation_messages")
        return tracker

    def _index_room(self, turn: _Turn, tracker: HistoryTracker, after_core: int) -> int:
        """The index block's room: decided by the first compile that sees a cut, then kept.

        It is what history, the current turn and one keyframe per memory on offer leave of
        the budget, between half of ``index_share`` and all of it.
        """
        key = _conversation_key(turn.conversation)
        stored = self.state_store.get(key) or {}
        events = len(tracker.events)
        if stored.get("share") == tracker.share and stored.get("events") == events:
            return int(stored["room"])
        count = turn.count
        stats = CombinedStats(tracker.stats, TermStats(turn.offer.texts()))
        keyframe_cost = 0
        for text in turn.offer.texts():
            frame = keyframe(text, stats, count, self.keyframe_tokens)
            keyframe_cost += count(frame if frame is not None else text) + 4
        share_room = int(self.index_share * after_core)
        leftover = after_core - tracker.kept_tokens - count(turn.end_text) - keyframe_cost
        room = max(min(leftover, share_room), share_room // 2)
        if stored.get("share") != tracker.share or int(stored.get("events", -1)) < events:
            self.state_store.put(key, {"share": tracker.share, "events": events, "room": room})
        return room

    def _fit_tail(self, turn: _Turn, plan: _HistoryPlan) -> tuple[Tail, str, int, list[str]]:
        """The final user message: its lines and passages, its text and token count."""
        count, overhead = turn.count, self.message_overhead_tokens
        end_text = turn.end_text
        before_tail = count(plan.system_text) + overhead + plan.kept_tokens + overhead
        room = turn.budget_counted - before_tail - count(end_text) - 2
        tracker = plan.tracker
        recall = (
            self.recall_evicted_history
            and tracker is not None
            and bool(tracker.passages)
            and plan.dropped_messages > 0
        )
        passage_order = (
            self._passage_order(tracker, turn.user_message)
            if recall and tracker is not None
            else None
        )
        # Under memory pressure the best-matching passage is held a keyframe's room, like
        # every memory is: it competes with their keyframes instead of taking what they leave.
        header = count(RECALL_HEADER) + 2
        memory_tokens = sum(count(line) + 1 for line in turn.offer.lines())
        anchor: list[RecalledPassage] = []
        if (
            recall
            and tracker is not None
            and memory_tokens > room - header - 2 * self.keyframe_tokens
        ):
            anchor = select_passages(
                tracker,
                turn.user_message,
                self.keyframe_tokens + 8,
                limit=tracker.chunk,
                count=count,
                extra_ranking=passage_order,
                max_passages=1,
                min_score=PIN_MIN_SCORE,
            )
        reserved = header + sum(p.tokens for p in anchor) if anchor else 0
        texts = turn.offer.texts()
        # Ranking and keyframes only decide what goes; when everything fits and no procedure
        # is over its cap, none is needed.
        procedures = sum(1 for tier in turn.offer.tiers() if tier == TIER_PROCEDURAL)
        trimming = memory_tokens > room - reserved or procedures > MAX_PROCEDURAL_KEPT
        base_stats = tracker.stats if tracker else None
        stats = CombinedStats(base_stats, TermStats(texts if trimming else ()))
        semantic = None
        if trimming and self._semantic is not None and self.rank_fusion and len(texts) > 1:
            semantic = self._semantic.order(turn.user_message, texts)
        ranking = rank_offer(
            texts,
            turn.user_message,
            stats,
            fuse=self.rank_fusion and trimming,
            semantic_order=semantic,
        )
        tail, choice = fit_offer(
            turn.offer,
            room - reserved,
            end_text,
            ranking=ranking,
            count=count,
            thinned=lambda: thin_lines(turn.offer, stats, count, self.keyframe_tokens),
            thin_before_drop=self.thin_before_drop,
        )
        if recall and tracker is not None:
            used = sum(count(line) + 1 for line in tail.lines)
            # Passages come back only for a question that shares a rare word with them.
            tail.passages = (
                select_passages(
                    tracker,
                    turn.user_message,
                    room - header - used,
                    limit=tracker.chunk,
                    count=count,
                    extra_ranking=passage_order,
                    min_score=PIN_MIN_SCORE,
                )
                or anchor
            )
        priority = [
            (int(i not in ranking.pinned), tier, ranking.ranks[i])
            for i, tier in enumerate(turn.offer.tiers())
        ]
        text, tokens = shed_to_fit(
            tail, turn.budget_counted - before_tail, turn.counter.count_lines, priority
        )
        return tail, text, tokens, list(choice)

    def _passage_order(self, tracker: HistoryTracker, query: str) -> list[int] | None:
        if self._semantic is None:
            return None
        candidates = sorted(tracker.score_passages(query))
        order = self._semantic.order(query, [tracker.passages[p].text for p in candidates])
        return None if order is None else [candidates[i] for i in order]

    # ------------------------------------------------------------------ results

    def _render_end(
        self,
        turn: _Turn,
        plan: _HistoryPlan,
        tail: Tail,
        tail_text: str,
        tail_tokens: int,
        choice: list[str],
    ) -> tuple[list[Message], Offer, str, dict[str, Any], dict[str, Any] | None]:
        count, overhead = turn.count, self.message_overhead_tokens
        messages: list[Message] = [
            {"role": "system", "content": plan.system_text},
            *plan.kept,
            {"role": "user", "content": tail_text},
        ]
        system_tokens = count(plan.system_text)
        token_count = system_tokens + plan.kept_tokens - overhead * len(plan.kept) + tail_tokens
        framing = overhead * len(messages)
        offered = turn.offer.lines()
        trimmed = sum(count(line) for line in offered) - sum(count(line) for line in tail.lines)
        md: dict[str, Any] = {
            "model_id": self.model_id,
            "memory_placement": "end",
            "token_count": token_count,
            "tokens_budget": turn.budget,
            "message_framing_tokens": framing,
            "tokens_trimmed": max(trimmed, 0) + plan.dropped_tokens,
            "segments_offered": len(offered),
            "segments_kept": len(tail.lines),
            "segments_thinned": tail.thinned,
            "memories_truncated": turn.offer.memories_truncated,
            "stable_prefix_messages": 1 + len(plan.kept),
            "history_messages_dropped": plan.dropped_messages,
            "history_messages_recalled": len(tail.passages),
            "history_index_lines": plan.index_lines,
            "history_index_tokens": plan.index_tokens,
            "retrieval_summary": {
                "offered": len(offered),
                "kept_full": len(tail.lines) - tail.thinned,
                "thinned": tail.thinned,
                "dropped": len(offered) - len(tail.lines),
            },
            **plan.extra,
        }
        if plan.index_lines:
            md["core_chars"] = len(turn.core)
        self._common_metadata(md, turn, token_count + framing)
        prefix_tokens = system_tokens + overhead + plan.kept_tokens
        md.update(
            cache_metadata(
                self.model_id,
                enabled=turn.use_caching,
                core_tokens=count(turn.core) + overhead,
                core_chars=len(turn.core) if plan.index_lines else None,
                system_tokens=system_tokens + overhead,
                history_messages=len(plan.kept),
                prefix_tokens=prefix_tokens,
                tail_tokens=tail_tokens + overhead,
                token_scale=turn.scale,
                capabilities=turn.capabilities,
            )
        )
        trace = {"choices": choice, "sources": list(tail.sources)} if turn.debug else None
        return messages, turn.offer, tail.memory_text(), md, trace

    def _compile_system(
        self, turn: _Turn
    ) -> tuple[list[Message], Offer, str, dict[str, Any], dict[str, Any] | None]:
        """Single-system-message placement: core, memories, the last reply and the question."""
        count, overhead = turn.count, self.message_overhead_tokens
        last = turn.last_assistant_turn
        if last is None:
            replies = [m for m in turn.history if m.get("role") == "assistant"]
            texts = [message_text(m) for m in replies if message_text(m).strip()]
            last = texts[-1] if texts else None
        end_text = turn.layout.build_end(last, turn.user_message, turn.directives)
        lines = turn.offer.lines()
        full = [count(line) for line in lines]
        items = [MiddleItem(tier, i, full[i]) for i, tier in enumerate(turn.offer.tiers())]
        room = turn.budget_counted - count(turn.core) - count(end_text) - overhead - 4
        choice = fit_middle(items, room, thin_before_drop=False)
        kept = [i for i in sorted(range(len(lines)), key=lambda i: (items[i].tier, i))]
        kept = [i for i in kept if choice[i] != "drop"]
        while True:
            middle = "\n".join(lines[i] for i in kept)
            text = "\n\n".join(p for p in (turn.core, middle, end_text) if p)
            token_count = count(text)
            if token_count + overhead <= turn.budget_counted or not kept:
                break
            kept.remove(max(kept, key=lambda i: (items[i].tier, i)))
        md: dict[str, Any] = {
            "model_id": self.model_id,
            "memory_placement": "system",
            "token_count": token_count,
            "tokens_budget": turn.budget,
            "message_framing_tokens": overhead,
            "tokens_trimmed": sum(full) - sum(full[i] for i in kept),
            "segments_offered": len(lines),
            "segments_kept": len(kept),
            "segments_thinned": 0,
            "memories_truncated": turn.offer.memories_truncated,
            "retrieval_summary": {
                "offered": len(lines),
                "kept_full": len(kept),
                "thinned": 0,
                "dropped": len(lines) - len(kept),
            },
            "stable_prefix_messages": 0,
            "cache_mode": None,
            "cache_breakpoints": [],
            "prompt_cache_used": False,
        }
        self._common_metadata(md, turn, token_count + overhead)
        trace = {"choices": list(choice)} if turn.debug else None
        return [{"role": "system", "content": text}], turn.offer, middle, md, trace

    def _common_metadata(self, md: dict[str, Any], turn: _Turn, sent_tokens: int) -> None:
        md["token_scale"] = turn.scale
        md["token_scale_samples"] = turn.scale_samples
        if turn.scale != 1.0:
            md["tokens_budget_counted"] = turn.budget_counted
        md["budget_exceeded"] = sent_tokens > turn.budget_counted
        if self._semantic is not None:
            if self._semantic.error is not None:
                md["semantic_ranking_error"] = self._semantic.error
            elif self._semantic.used:
                md["semantic_ranking"] = True

    def _emit(
        self,
        messages: list[Message],
        offer: Offer,
        memory_text: str,
        md: dict[str, Any],
        trace: dict[str, Any] | None,
    ) -> CompileResult:
        present = mem_numbers(memory_text)
        cited = sorted((s for s in offer.citable if s.number in present), key=lambda s: s.number)
        ref_map = {s.number: s.ref_id for s in cited}
        ref_map_type = {s.number: s.kind for s in cited}
        result = CompileResult(messages, ref_map, ref_map_type, md, trace)
        if self.metrics_callback is not None:
            self.metrics_callback(
                CompileMetrics(
                    model_id=self.model_id,
                    token_count=md["token_count"],
                    tokens_budget=md["tokens_budget"],
                    tokens_trimmed=md["tokens_trimmed"],
                    segments_offered=md["segments_offered"],
                    segments_kept=md["segments_kept"],
                    history_messages_dropped=md.get("history_messages_dropped", 0),
                    cacheable_prefix_tokens=md.get("cacheable_prefix_tokens", 0),
                    dynamic_tail_tokens=md.get("dynamic_tail_tokens", 0),
                    budget_exceeded=md["budget_exceeded"],
                )
            )
        return result

    # ------------------------------------------------------------------ helpers

    def _counter(self, registry: TokenizerRegistry | None) -> MemoizedCounter:
        registry = registry if registry is not None else self.tokenizer_registry
        if registry is not None:
            base = registry.counter_for(self.model_id)
        else:
            base = self._base_counter if self._base_counter is not None else _DEFAULT_COUNTER
        memo = self._counters.get(id(base))
        if memo is None or memo.inner is not base:
            memo = MemoizedCounter(base)
            self._counters[id(base)] = memo
        return memo

    def _calibration(self, model_id: str | None) -> ScaleCalibration:
        stored = self.state_store.get(_scale_key(model_id))
        if stored is not None:
            return ScaleCalibration.from_dict(stored)
        return ScaleCalibration(scale=get_token_scale(model_id) if model_id else 1.0)


def compile_anonymous(
    *,
    max_tokens: int,
    memories: Sequence[object] = (),
    user_message: str = "",
    model_id: str | None = None,
    core_content: str = "",
    **options: Any,
) -> CompileResult:
    """Compile once with a throw-away compiler: no state survives the call.

    Constructor options and ``compile()`` arguments may both be passed as keywords.
    """
    ctor = set(inspect.signature(ContextCompiler.__init__).parameters) - {"self"}
    ctor_kwargs = {k: v for k, v in options.items() if k in ctor}
    call_kwargs = {k: v for k, v in options.items() if k not in ctor}
    compiler = ContextCompiler(max_tokens, model_id, core_content, **ctor_kwargs)
    return compiler.compile(memories, user_message, **call_kwargs)


# ---------------------------------------------------------------------- input checks


def _check_positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidInputError(f"{name} must be a positive integer, got {value!r}", field=name)


def _check_non_negative_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{name} must be a non-negative integer, got {value!r}", field=name)


def _check_placement(placement: object) -> None:
    if placement not in ("end", "system"):
        raise InvalidInputError(
            f"memory_placement must be 'end' or 'system', got {placement!r}",
            field="memory_placement",
        )


def _check_fraction(name: str, value: object, *, allow_zero: bool) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok:
        v = float(value)  # type: ignore[arg-type]
        ok = (v >= 0.0 if allow_zero else v > 0.0) and v <= 1.0
    if not ok:
        low = "0" if allow_zero else "above 0"
        raise InvalidInputError(
            f"{name} must be a number from {low} to 1, got {value!r}", field=name
        )


def _check_scale(value: object) -> None:
    if value is None:
        return
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not (0 < float(value) < float("inf")):  # type: ignore[arg-type]
        raise InvalidInputError(
            f"token_scale must be a positive number or None, got {value!r}", field="token_scale"
        )


def _check_extras(extras: Sequence[tuple[str, int]] | None) -> list[tuple[str, int]]:
    if extras is None:
        return []
    if isinstance(extras, (str, bytes)) or not isinstance(extras, Sequence):
        raise InvalidInputError(
            "middle_extras must be a list of (text, tier) tuples", field="middle_extras"
        )
    out = []
    for i, item in enumerate(extras):
        if (
            not isinstance(item, tuple)
            or len(item) != 2
            or not isinstance(item[0], str)
            or isinstance(item[1], bool)
            or item[1] not in (1, 2, 3)
        ):
            raise InvalidInputError(
                f"middle_extras[{i}] must be a (text, tier) tuple with tier 1, 2 or 3",
                field=f"middle_extras[{i}]",
            )
        out.append((item[0], int(item[1])))
    return out


def _memory_pairs(
    memories: Sequence[object] | None,
    tier_by_memory_id: Mapping[int, int] | None,
    profile: MembraneProfile | None,
    user_message: str,
) -> list[tuple[int, object, int]]:
    """``(number, memory, tier)`` for each memory offered; numbers follow the input order."""
    if memories is None:
        return []
    if isinstance(memories, (str, bytes)) or not isinstance(memories, Sequence):
        raise InvalidInputError(
            "memories must be a list of MemoryItem rows or records with id and memory_kind",
            field="memories",
        )
    items = list(memories)
    for i, memory in enumerate(items):
        if type(memory) is MemoryItem:
            continue  # a MemoryItem checks its own fields when it is made
        where = f"memories[{i}]"
        if not hasattr(memory, "id") or not (
            hasattr(memory, "memory_kind") or hasattr(memory, "memory_type")
        ):
            raise InvalidInputError(
                f"{where} ({type(memory).__name__}) needs an `id` and a `memory_kind` "
                f"(one of {MEMORY_KINDS}); wrap plain text in MemoryItem(id=..., content=...)",
                field=where,
            )
        if getattr(memory, "id", None) in (None, ""):
            raise InvalidInputError(
                f"{where} has no id; an id maps its citations back to your record", field=where
            )
        if not isinstance(getattr(memory, "content", None), str):
            raise InvalidInputError(
                f"{where} has no text content (a `content` string)", field=where
            )
    numbered = list(enumerate(items, start=1))
    if profile is not None:
        # The profile chooses what to offer and in which order; numbers stay the caller's.
        number_of = {id(m): n for n, m in numbered}
        numbered = [(number_of[id(m)], m) for m in profile.prepare(items, user_message)]
    overrides = tier_by_memory_id or {}
    triples: list[tuple[int, object, int]] = []
    for number, memory in numbered:
        tier = overrides.get(id(memory), memory_tier(memory))
        if tier not in (1, 2, 3):
            raise InvalidInputError(
                f"tier_by_memory_id gives tier {tier!r}; tiers are 1, 2 or 3",
                field="tier_by_memory_id",
            )
        triples.append((number, memory, tier))
    return triples


def _offer(triples: list[tuple[int, object, int]], extras: list[tuple[str, int]]) -> Offer:
    segments = []
    caps = text_caps()
    for number, memory, tier in triples:
        segments.extend(render_memories([(memory, tier)], start_number=number, caps=caps))
    truncated = sum(1 for s in segments if s.truncated)
    return Offer(segments, extras, truncated, citable=list(segments))


def _compress(turn: _Turn, compressor: SyncCompressor | None) -> Offer:
    """Pre-flight: replace an oversized middle with the caller's summary of it."""
    offer = turn.offer
    if compressor is None or not (offer.segments or offer.extras):
        return offer
    raw = "\n".join(offer.lines())
    if turn.count(raw) <= config.preflight_token_threshold():
        return offer
    target = config.preflight_target_tokens()
    summary = check_compressed(compressor(raw, target, turn.user_message))
    return Offer([], [(summary, 2)], offer.memories_truncated, citable=offer.citable)


def _message_key(message: object) -> tuple[str, str]:
    if not isinstance(message, dict):
        return ("", repr(message))
    return (str(message.get("role")), message_text(message))


def _scale_key(model_id: str | None) -> str:
    return f"membrane:scale:{(model_id or '').lower()}"


def _conversation_key(conversation: str) -> str:
    return f"membrane:conversation:{conversation}"
