"""The compiler: rules, memories, history and the current turn in; a budgeted request out.

:meth:`ContextCompiler.compile` reads as the pipeline: normalise the inputs once, load the
session's state, plan the history window, fit the final message, render the messages and the
report, save the state. The algorithms live in ``membrane.stages``; this module only wires them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from membrane import config
from membrane.capabilities import get_model_capabilities
from membrane.errors import InvalidInputError
from membrane.messages import Message, message_text, validate_messages
from membrane.prompt_text import mem_numbers
from membrane.report import CompileMetrics, CompileReport, Region
from membrane.session import LRUCache, Session, load_calibration, scale_key
from membrane.stages.firewall import Offer, fit_system_message
from membrane.stages.glaciator import cache_metadata
from membrane.stages.layout import ContextLayoutEngine
from membrane.stages.preflight import SyncCompressor, check_compressed
from membrane.stages.tail import FittedTail, TailInput, TailSettings, fit_tail
from membrane.stages.window import HistoryWindow, WindowInput, WindowPlanner, WindowSettings
from membrane.state import InMemoryStateStore, StateStore
from membrane.text.semantic import Embedder, SemanticCall, SemanticRanker
from membrane.tokenizers import MemoizedCounter, TiktokenAdapter, TokenCounter
from membrane.tokenizers._calibration import counted_budget
from membrane.turn import (
    Turn,
    check_fraction,
    check_non_negative_int,
    check_placement,
    check_positive_int,
    check_scale,
    compress_offer,
    normalise_offer,
)

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
    "Region",
    "compile_anonymous",
]

Placement = Literal["end", "system"]
_MAX_CONVERSATIONS = 512
_DEFAULT_CONVERSATION = "_default"
_DEFAULT_COUNTER = TiktokenAdapter("cl100k_base")


@dataclass(frozen=True)
class CompileResult:
    """A compiled prompt and the evidence of how it was built.

    ``messages`` are ready for an OpenAI-style API; ``ref_map`` maps every ``[Mem:N]`` in them
    to the caller's record id and ``ref_map_type`` to the record's kind. ``regions`` says where
    each region of the prompt sits in ``messages`` (recorded as the layout wrote them).
    """

    messages: list[Message]
    ref_map: dict[int, str]
    ref_map_type: dict[int, str]
    metadata: dict[str, Any]
    debug_trace: dict[str, Any] | None = None
    regions: tuple[Region, ...] = field(default=(), compare=False)

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


@dataclass(frozen=True, slots=True)
class _Rendered:
    """A stage's output before the result is built: messages, memory text, evidence."""

    messages: list[Message]
    offer: Offer
    memory_text: str
    report: CompileReport
    regions: tuple[Region, ...]
    trace: dict[str, Any] | None


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
        check_positive_int("max_tokens", max_tokens)
        check_placement(memory_placement)
        check_fraction("history_share", history_share, allow_zero=False)
        check_fraction("index_share", index_share, allow_zero=True)
        check_non_negative_int("message_overhead_tokens", message_overhead_tokens)
        check_positive_int("keyframe_tokens", keyframe_tokens)
        check_scale(token_scale)
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
        self._window = WindowPlanner()
        self._semantic = SemanticRanker(embedder) if embedder is not None else None
        # Per conversation: how many history messages passed validation, and the last of them.
        self._validated: LRUCache[str, tuple[int, tuple[str, str]]] = LRUCache(_MAX_CONVERSATIONS)

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
            compress_sync=compress_sync,
            debug=debug,
        )
        session = self._load_session(turn)
        semantic = self._semantic.call() if self._semantic is not None else None
        if self.memory_placement == "system":
            rendered = self._render_system(turn, semantic)
        else:
            window = self._window.plan(self._window_input(turn), session, self._window_settings())
            tail = fit_tail(self._tail_input(turn, semantic), window, self._tail_settings())
            rendered = self._render_end(turn, window, tail, semantic)
        session.save()
        return self._emit(rendered)

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
        offer = normalise_offer(
            memories,
            kwargs.get("tier_by_memory_id"),
            kwargs.get("profile"),
            "",
            kwargs.get("middle_extras"),
        )
        raw = "\n".join(offer.lines())
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
        calibration = load_calibration(self.state_store, model_id).observe(
            counted, actual_prompt_tokens
        )
        self.state_store.put(scale_key(model_id), calibration.to_dict())
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
        model = model_id if model_id is not None else self.model_id
        return load_calibration(self.state_store, model).scale

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
        compress_sync: SyncCompressor | None,
        debug: bool,
    ) -> Turn:
        if not isinstance(user_message, str):
            raise InvalidInputError("user_message must be a string", field="user_message")
        conversation = conversation_id if conversation_id is not None else _DEFAULT_CONVERSATION
        history = self._validate_history(conversation_messages, conversation)
        offer = normalise_offer(memories, tier_by_memory_id, profile, user_message, middle_extras)
        layout = ContextLayoutEngine(
            self.core_content,
            agent_persona_prompt=agent_persona_prompt,
            include_interrupt_instruction=self.include_interrupt_instruction,
        )
        # One capability lookup per compile: the context cap here, caching in the metadata.
        capabilities = get_model_capabilities(self.model_id) if self.model_id else None
        cap = capabilities.context_cap if capabilities else None
        budget = min(self.max_tokens, cap) if cap else self.max_tokens
        # The model's scale and how many observations shaped it (one store read).
        if self.fixed_token_scale is not None:
            scale, scale_samples = self.fixed_token_scale, 0
        else:
            calibration = load_calibration(self.state_store, self.model_id)
            scale, scale_samples = calibration.scale, calibration.samples
        counter = self._counter(tokenizer_registry)
        return Turn(
            user_message=user_message,
            history=history,
            offer=compress_offer(offer, compress_sync, counter.count, user_message),
            layout=layout,
            core=layout.build_core(),
            last_assistant_turn=last_assistant_turn,
            directives=dynamic_directives,
            counter=counter,
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
            self._validated.put(conversation, (len(history), _message_key(history[-1])))
        return history

    def _load_session(self, turn: Turn) -> Session:
        needs_room = (
            self.memory_placement == "end"
            and bool(turn.history)
            and self.trim_history
            and self.eviction_index
        )
        return Session.load(self.state_store, turn.conversation, read_conversation=needs_room)

    def _window_settings(self) -> WindowSettings:
        return WindowSettings(
            trim_history=self.trim_history,
            history_share=self.history_share,
            eviction_index=self.eviction_index,
            index_share=self.index_share,
            keyframe_tokens=self.keyframe_tokens,
            message_overhead_tokens=self.message_overhead_tokens,
        )

    def _tail_settings(self) -> TailSettings:
        return TailSettings(
            recall_evicted_history=self.recall_evicted_history,
            rank_fusion=self.rank_fusion,
            thin_before_drop=self.thin_before_drop,
            keyframe_tokens=self.keyframe_tokens,
            message_overhead_tokens=self.message_overhead_tokens,
        )

    @staticmethod
    def _window_input(turn: Turn) -> WindowInput:
        return WindowInput(
            history=turn.history,
            conversation=turn.conversation,
            core=turn.core,
            end_text=turn.end_text,
            counter=turn.counter,
            budget_counted=turn.budget_counted,
            offer_texts=turn.offer.texts(),
        )

    @staticmethod
    def _tail_input(turn: Turn, semantic: SemanticCall | None) -> TailInput:
        return TailInput(
            user_message=turn.user_message,
            offer=turn.offer,
            end_text=turn.end_text,
            counter=turn.counter,
            budget_counted=turn.budget_counted,
            semantic=semantic,
        )

    # ------------------------------------------------------------------ results

    def _render_end(
        self,
        turn: Turn,
        window: HistoryWindow,
        fitted: FittedTail,
        semantic: SemanticCall | None,
    ) -> _Rendered:
        count, overhead = turn.count, self.message_overhead_tokens
        tail = fitted.tail
        messages: list[Message] = [
            {"role": "system", "content": window.system_text},
            *window.kept,
            {"role": "user", "content": fitted.text},
        ]
        system_tokens = count(window.system_text)
        token_count = (
            system_tokens + window.kept_tokens - overhead * len(window.kept) + fitted.tokens
        )
        framing = overhead * len(messages)
        offered = turn.offer.lines()
        trimmed = sum(count(line) for line in offered) - sum(count(line) for line in tail.lines)
        core_chars = len(turn.core) if window.index_lines else None
        cache = cache_metadata(
            self.model_id,
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
            model_id=self.model_id,
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
            history_index_lines=window.index_lines,
            history_index_tokens=window.index_tokens,
            history_turn_local_drop=window.turn_local_drop,
            core_chars=core_chars,
            cache=cache,
            **_common_report(turn, token_count + framing, semantic),
        )
        regions = _end_regions(turn, window, fitted, messages)
        trace = {"choices": fitted.choice, "sources": list(tail.sources)} if turn.debug else None
        return _Rendered(messages, turn.offer, tail.memory_text(), report, regions, trace)

    def _render_system(self, turn: Turn, semantic: SemanticCall | None) -> _Rendered:
        """Single-system-message placement: core, memories, the last reply and the question."""
        overhead = self.message_overhead_tokens
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
            model_id=self.model_id,
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
        regions = _system_regions(turn.core, fitted.middle, fitted.text, end_text)
        trace = {"choices": list(fitted.choice)} if turn.debug else None
        messages: list[Message] = [{"role": "system", "content": fitted.text}]
        return _Rendered(messages, turn.offer, fitted.middle, report, regions, trace)

    def _emit(self, rendered: _Rendered) -> CompileResult:
        present = mem_numbers(rendered.memory_text)
        offer = rendered.offer
        cited = sorted((s for s in offer.citable if s.number in present), key=lambda s: s.number)
        result = CompileResult(
            rendered.messages,
            {s.number: s.ref_id for s in cited},
            {s.number: s.kind for s in cited},
            rendered.report.metadata(),
            rendered.trace,
            rendered.regions,
        )
        if self.metrics_callback is not None:
            self.metrics_callback(rendered.report.metrics())
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


def _common_report(turn: Turn, sent_tokens: int, semantic: SemanticCall | None) -> dict[str, Any]:
    return {
        "token_scale": turn.scale,
        "token_scale_samples": turn.scale_samples,
        "tokens_budget_counted": turn.budget_counted,
        "budget_exceeded": sent_tokens > turn.budget_counted,
        "semantic_ranking": semantic is not None and semantic.used,
        "semantic_ranking_error": semantic.error if semantic is not None else None,
    }


def _contiguous(message_index: int, starts: list[tuple[str, int]], end: int) -> list[Region]:
    """Regions that each run from their start to the next one's; empty ones are left out."""
    out = []
    for (name, start), (_, stop) in zip(starts, [*starts[1:], ("", end)], strict=True):
        if stop > start:
            out.append(Region(name, message_index, start, stop))  # type: ignore[arg-type]
    return out


def _end_regions(
    turn: Turn, window: HistoryWindow, fitted: FittedTail, messages: list[Message]
) -> tuple[Region, ...]:
    system = window.system_text
    regions = _contiguous(0, [("core", 0), ("index", len(turn.core))], len(system))
    for i, message in enumerate(window.kept, start=1):
        regions += _contiguous(i, [("history", 0)], len(message_text(message)))
    tail, text = fitted.tail, fitted.text
    current = len(text) - len(tail.end_text)
    recall = len(tail.memory_text()) + 2 if tail.lines else 0
    starts = [("memories", 0), ("recall", recall), ("current", current)]
    regions += _contiguous(len(messages) - 1, starts, len(text))
    return tuple(regions)


def _system_regions(core: str, middle: str, text: str, end_text: str) -> tuple[Region, ...]:
    current = len(text) - len(end_text)
    memories = len(core) + 2 if core else 0
    starts = [("core", 0), ("memories", memories if middle else current), ("current", current)]
    return tuple(_contiguous(0, starts, len(text)))


def _message_key(message: object) -> tuple[str, str]:
    if not isinstance(message, dict):
        return ("", repr(message))
    return (str(message.get("role")), message_text(message))
