"""The compiler: rules, memories, history and the current turn in; a budgeted request out.

:meth:`ContextCompiler.compile` reads as the pipeline: normalise the inputs once, load the
session's state, plan the history window, fit the final message, render the messages and the
report, save the state. The algorithms live in ``membrane.stages``; this module only wires them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from membrane import config
from membrane.capabilities import get_model_capabilities
from membrane.messages import CheckedPrefix, HistoryVersion, Message, check_history, check_text
from membrane.profile import Watch, start_watch
from membrane.records import TextCapSetting, check_text_cap
from membrane.regions import Region
from membrane.render import Rendered, render_end, render_system, timed_report
from membrane.report import CompileMetrics, CompileReport, note_preflight_cache
from membrane.result import CompileResult, CostQuote
from membrane.session import KeyedLocks, LRUCache, StateScope, StoreNotes, run_off_loop
from membrane.stages.agent import agent_inputs, check_tools_change
from membrane.stages.history import Writers, check_speakers
from membrane.stages.layout import ContextLayoutEngine
from membrane.stages.preflight import (
    PreflightCache,
    SyncCompressor,
    async_analyst,
    summarise_middle,
)
from membrane.stages.tail import TailSettings, fit_tail
from membrane.stages.window import WindowPlanner, WindowSettings
from membrane.state import InMemoryStateStore, StateStore
from membrane.state.keys import DEFAULT_CONVERSATION as _DEFAULT_CONVERSATION
from membrane.text.semantic import Embedder, SemanticRanker
from membrane.tokenizers import MemoizedCounter, TiktokenAdapter, TokenCounter, counted_budget
from membrane.turn import (
    Turn,
    check_compressor,
    check_fraction,
    check_message_counts,
    check_non_negative_int,
    check_placement,
    check_positive_int,
    check_scale,
    check_turn_texts,
    compress_offer,
    normalise_offer,
    oversized_middle,
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
]

Placement = Literal["end", "system"]
_MAX_CONVERSATIONS = 512
_DEFAULT_COUNTER = TiktokenAdapter("cl100k_base")


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
        state_namespace: str | None = None,
        token_counter: TokenCounter | None = None,
        memory_text_max_chars: TextCapSetting = None,
    ) -> None:
        check_positive_int("max_tokens", max_tokens)
        check_placement(memory_placement)
        check_fraction("history_share", history_share, allow_zero=False)
        check_fraction("index_share", index_share, allow_zero=True)
        check_non_negative_int("message_overhead_tokens", message_overhead_tokens)
        check_positive_int("keyframe_tokens", keyframe_tokens)
        check_scale(token_scale)
        check_text(core_content, "core_content")
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
        self._caps = check_text_cap(memory_text_max_chars)
        self.state_store: StateStore = (
            state_store if state_store is not None else InMemoryStateStore()
        )
        self._scope = StateScope(state_namespace)  # raises on a bad namespace
        self._base_counter = token_counter
        self._counters: dict[int, MemoizedCounter] = {}
        self._window = WindowPlanner()
        self._semantic = SemanticRanker(embedder) if embedder is not None else None
        # Per conversation: what its last validated history proved (see check_history).
        self._checked: LRUCache[str, CheckedPrefix] = LRUCache(_MAX_CONVERSATIONS)
        self._locks = KeyedLocks()

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
        tools: Sequence[Mapping[str, Any]] | None = None,
        image_sizes: Mapping[str, tuple[int, int]] | None = None,
        reserve_output_tokens: int | None = None,
        history_version: HistoryVersion | None = None,
        new_session: bool = False,
        message_token_counts: Sequence[int | None] | None = None,
        speakers: Mapping[str, str] | None = None,
        debug: bool = False,
    ) -> CompileResult:
        """Compile one turn.

        ``memories`` are :class:`~membrane.records.MemoryItem` rows or any objects with ``id``
        and ``memory_kind``; ``[Mem:N]`` numbers follow their order. With end placement,
        ``conversation_messages`` are sent as given (OpenAI or Anthropic shape, tool calls
        included), cut from the oldest end in chunks when they outgrow their share.
        ``conversation_id`` selects the conversation's state (the cut, the index room); without
        it the compiler keeps one conversation of its own. ``tools`` (OpenAI function tools or
        Anthropic tools), images in the history (priced from their size; ``image_sizes`` gives
        remote URLs' sizes) and ``reserve_output_tokens`` (room kept for the answer) are
        counted against the budget; see ``docs/agents.md``. ``history_version`` (a counter or
        etag the caller owns) vouches that the history only grew since the last compile that
        passed it, so the part validated then is not checked again; without it a digest of
        that part proves it unchanged (see :func:`membrane.messages.check_history`). Mark a turn
        that comes after the provider's cache expired with ``new_session`` (see docs/history.md).
        ``message_token_counts`` (an int or None per history message): the caller's counts of
        their texts, taken on trust (see :func:`membrane.turn.check_message_counts`).
        ``speakers`` (a person's name -> ``"user"``/``"assistant"``; or a message's ``name``):
        recall weighs what the person a question names wrote (see docs/history.md).

        One compiler may be shared by threads and tasks: compiles of one conversation take
        turns, each one's state read, window, tail, state write and ``metrics_callback`` in
        one critical section; compiles of different conversations run side by side.
        """
        check_compressor(compress_sync)
        writers = Writers.from_speakers(check_speakers(speakers))
        notes = StoreNotes()
        watch = start_watch(profile)
        turn = self._normalise(
            memories,
            user_message,
            notes=notes,
            history_in=(conversation_messages, history_version, message_token_counts),
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
            agent=(tools, image_sizes, reserve_output_tokens),
            debug=debug,
            watch=watch,
        )
        with self._locks.hold(turn.conversation):
            turn = replace(turn, new_session=new_session, writers=writers)
            return self._compile_turn(turn, notes, watch)

    def _compile_turn(self, turn: Turn, notes: StoreNotes, watch: Watch) -> CompileResult:
        """The stages of one compile, from the state read to the state write and the result."""
        session = self._scope.session(self.state_store, turn.conversation, notes)
        turn = replace(turn, tools_changed=check_tools_change(turn.agent, session))
        semantic = self._semantic.call() if self._semantic is not None else None
        model, overhead = self.model_id, self.message_overhead_tokens
        if self.memory_placement == "system":
            rendered = render_system(turn, semantic, model_id=model, overhead=overhead)
        else:
            window = self._window.plan(turn.window_input(), session, self._window_settings())
            watch.lap("history")
            tail = fit_tail(turn.tail_input(semantic), window, self._tail_settings())
            watch.lap("fit")
            rendered = render_end(turn, window, tail, semantic, model_id=model, overhead=overhead)
        watch.lap("render")
        writes = session.save()
        watch.lap("state_store")
        return self._emit(replace(rendered, report=notes.stamp(rendered.report)), watch, writes)

    async def compile_async(
        self,
        memories: Sequence[object] = (),
        user_message: str = "",
        *,
        compress_async: AsyncCompressor | PreFlightAnalyst | None = None,
        compress_fn: AsyncCompressor | None = None,
        redis_client: Any = None,
        **kwargs: Any,
    ) -> CompileResult:
        """Like :meth:`compile`, with an async pre-flight compressor.

        The compressor runs only when the memories on offer exceed
        ``MEMORY_PREFLIGHT_TOKEN_THRESHOLD`` tokens; its summary replaces them. Store I/O
        runs off the event loop (:func:`membrane.session.run_off_loop`). It must be ``async`` (a
        sync one is refused before it runs) and is awaited holding no lock. With a
        ``redis.asyncio`` ``redis_client`` and a ``conversation_id``, summaries are cached in
        Redis (``metadata["preflight_cache"]`` says ``hit``, ``miss`` or ``unavailable``).
        """
        cache = PreflightCache.for_call(redis_client, kwargs, self._scope.namespace)
        analyst = async_analyst(compress_async, compress_fn)
        count = self._counter(kwargs.get("tokenizer_registry")).count
        raw = oversized_middle(memories, kwargs, self._caps, count) if analyst else None
        compile_now = partial(self.compile, memories, user_message, **kwargs)
        if analyst is None or raw is None:
            return await run_off_loop(self.state_store, compile_now)
        target = config.preflight_target_tokens()
        done, outcome = await summarise_middle(analyst, raw, target, user_message, cache)
        kwargs["compress_sync"] = lambda _r, _t, _q: done
        compile_now = partial(self.compile, memories, user_message, **kwargs)
        result = await run_off_loop(self.state_store, compile_now)
        return replace(result, metadata=note_preflight_cache(result.metadata, outcome))

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
        report = CompileReport.from_metadata(result.metadata)
        with self._locks.hold(("scale", report.model_id)):  # one model's observations take turns
            calibration = self._scope.observe(
                self.state_store, report.model_id, report.sent_tokens, actual_prompt_tokens
            )
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
        return self._scope.calibration(self.state_store, model).scale

    # ------------------------------------------------------------------ stages

    def _normalise(
        self,
        memories: Sequence[object],
        user_message: str,
        *,
        notes: StoreNotes,
        history_in: tuple[Sequence[Message] | None, HistoryVersion | None, object],
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
        agent: tuple[object, Mapping[str, tuple[int, int]] | None, int | None],
        debug: bool,
        watch: Watch,
    ) -> Turn:
        check_turn_texts(
            user_message,
            agent_persona_prompt,
            last_assistant_turn,
            dynamic_directives,
            conversation_id,
        )
        conversation = conversation_id if conversation_id is not None else _DEFAULT_CONVERSATION
        messages, version, supplied = history_in
        history, proved = check_history(messages, self._checked.get(conversation), version)
        if proved is not None:
            self._checked.put(conversation, proved)
        label = profile.classify(user_message, history) if profile is not None else None
        # One capability lookup per compile: the context cap here, caching in the metadata.
        capabilities = get_model_capabilities(self.model_id) if self.model_id else None
        counter = self._counter(tokenizer_registry)
        extras = agent_inputs(
            tools=agent[0],
            image_sizes=agent[1],
            reserve_output_tokens=agent[2],
            capabilities=capabilities,
            model_id=self.model_id,
            count=counter.count,
        )
        budget = extras.prompt_budget(self.max_tokens)
        # The model's scale and how many observations shaped it (one store read).
        if self.fixed_token_scale is not None:
            scale, scale_samples = self.fixed_token_scale, 0
        else:
            calibration = self._scope.calibration(self.state_store, self.model_id, notes)
            scale, scale_samples = calibration.scale, calibration.samples
        watch.lap("normalise")
        offer = normalise_offer(
            memories, tier_by_memory_id, profile, user_message, middle_extras, label, self._caps
        )
        layout = ContextLayoutEngine(
            self.core_content,
            agent_persona_prompt=agent_persona_prompt,
            include_interrupt_instruction=self.include_interrupt_instruction,
        )
        core = layout.build_core()
        offer = compress_offer(offer, compress_sync, counter.count, user_message)
        watch.lap("layout")
        return Turn(
            user_message=user_message,
            history=history,
            message_counts=check_message_counts(supplied, len(history)),
            proof=proved,
            offer=offer,
            layout=layout,
            core=core,
            last_assistant_turn=last_assistant_turn,
            directives=dynamic_directives,
            counter=counter,
            budget=budget,
            scale=scale,
            scale_samples=scale_samples,
            budget_counted=max(counted_budget(budget, scale) - extras.tools_tokens, 0),
            conversation=conversation,
            use_caching=use_prompt_caching_split,
            debug=debug,
            capabilities=capabilities,
            agent=extras,
            label=label,
            report_policies=profile is not None and bool(profile.policies or profile.must_include),
        )

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

    # ------------------------------------------------------------------ results and helpers

    def _emit(self, rendered: Rendered, watch: Watch, writes: int) -> CompileResult:
        report = timed_report(rendered, watch, writes)
        result = replace(rendered, report=report).result()
        if self.metrics_callback is not None:
            self.metrics_callback(report.metrics())
        return result

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
