"""The compiler: rules, memories, history and the current turn in; a budgeted request out.

:meth:`ContextCompiler.compile` reads as the pipeline: normalise the arguments once, read the
conversation's state, plan the history window, fit the final message, render, save the state.
The algorithms live in ``membrane.stages``; this module only wires them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from membrane import config
from membrane.caches import KeyedLocks
from membrane.compile_state import StateScope, StoreNotes
from membrane.messages import HistoryVersion, Message
from membrane.profile import Watch, start_watch
from membrane.providers.usage import checked_prompt_tokens, prompt_tokens_from_usage
from membrane.records import TextCapSetting
from membrane.regions import Region
from membrane.render import Rendered, render_end, render_system, timed_report
from membrane.report import CompileMetrics
from membrane.request import (
    AgentArgs,
    CallOptions,
    CompileArgs,
    CompileRequest,
    CompilerSettings,
    HistoryArgs,
    MemoryArgs,
    Placement,
    TurnArgs,
    compress_offer,
    normalise,
    oversized_middle,
)
from membrane.result import CompileResult, CostQuote
from membrane.stages.agent import check_tools_change
from membrane.stages.final import FinalInput, fit_system
from membrane.stages.turn import TurnFreezer
from membrane.stages.values import Offer
from membrane.stages.window import WindowInput, WindowPlanner
from membrane.state import InMemoryStateStore, StateStore, forget_conversation
from membrane.state.keys import check_id
from membrane.text.semantic import Embedder, SemanticRanker
from membrane.tokenizers import CounterChoice, TokenCounter

if TYPE_CHECKING:
    from membrane.capabilities import ModelLimits
    from membrane.profile import MembraneProfile
    from membrane.stages.history import HistoryTracker as Tracker
    from membrane.stages.preflight import AsyncCompressor, PreFlightAnalyst, SyncCompressor
    from membrane.tokenizers import MemoizedCounter as Counter
    from membrane.tokenizers import TokenizerRegistry

__all__ = ["CompileMetrics", "CompileResult", "ContextCompiler", "CostQuote", "Embedder", "Region"]

# Constructor arguments that are objects to use rather than settings to check.
_OBJECT_ARGUMENTS = frozenset(
    {"self", "embedder", "metrics_callback", "tokenizer_registry", "state_store"}
    | {"state_namespace", "token_counter"}
)


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
        model_limits: ModelLimits | None = None,
        cache_bytes: int = config.DEFAULT_CACHE_BYTES,
    ) -> None:
        # Every keyword except the objects the compiler uses is a setting, checked here.
        options = {k: v for k, v in locals().items() if k not in _OBJECT_ARGUMENTS}
        self.settings = CompilerSettings.build(**options)
        self.embedder, self.metrics_callback = embedder, metrics_callback
        self.state_store = state_store if state_store is not None else InMemoryStateStore()
        self._scope = StateScope(state_namespace)  # raises on a bad namespace
        self.state_namespace = self._scope.namespace
        self._counters = CounterChoice(model_id, tokenizer_registry, token_counter, cache_bytes)
        self._window, self._turns = WindowPlanner(cache_bytes), TurnFreezer()
        self._semantic = SemanticRanker(embedder) if embedder is not None else None
        self._locks = KeyedLocks()

    def __getattr__(self, name: str) -> Any:
        """A constructor option by name (``compiler.max_tokens``), read from :attr:`settings`."""
        if name == "settings":  # not built yet: __init__ raised before it
            raise AttributeError(name)
        return self.settings.option(name)

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
        continue_turn: bool | None = None,
        debug: bool = False,
    ) -> CompileResult:
        """Compile one turn (each argument: docs/history.md, docs/agents.md).

        ``memories`` (:class:`~membrane.records.MemoryItem` rows) are cited ``[Mem:N]`` in order.
        ``conversation_messages`` (OpenAI, Responses or Anthropic shape) are sent as given, cut
        oldest first in chunks after the last compaction; ``conversation_id`` names their state.
        ``tools``, images, ``reserve_output_tokens`` count against the budget. ``history_version``
        vouches that the history only grew; ``message_token_counts`` are taken on trust;
        ``new_session`` marks a cold cache; ``speakers`` names who writes each role;
        ``continue_turn`` continues the history's last question. Thread- and task-safe.
        """
        turn = (user_message, last_assistant_turn, agent_persona_prompt, dynamic_directives)
        args = CompileArgs(
            TurnArgs(*turn, continue_turn),
            MemoryArgs(memories, tier_by_memory_id, middle_extras, compress_sync),
            HistoryArgs(
                conversation_messages, history_version, message_token_counts, new_session, speakers
            ),
            AgentArgs(tools, image_sizes, reserve_output_tokens),
            CallOptions(
                conversation_id, use_prompt_caching_split, profile, tokenizer_registry, debug
            ),
        )
        notes, watch = StoreNotes(), start_watch(profile)
        request = self._request(args, notes)
        watch.lap("normalise")
        question = request.text.user_message
        offer = compress_offer(request.offer, compress_sync, request.budget.count, question)
        watch.lap("layout")
        with self._locks.hold(request.history.conversation):
            return self._compile(request, offer, notes, watch)

    def _compile(
        self, request: CompileRequest, offer: Offer, notes: StoreNotes, watch: Watch
    ) -> CompileResult:
        """The stages of one compile, from the state read to the state write and the result."""
        settings = self.settings
        state = self._scope.view(self.state_store, request.history.conversation, notes)
        tools_changed = check_tools_change(request.agent, state)
        semantic = self._semantic.call() if self._semantic is not None else None
        steps, budget = request.steps, request.budget
        if settings.memory_placement == "system":
            budget = replace(budget, counted=budget.counted - steps.tokens)
            overhead = settings.message_overhead_tokens
            fitted = fit_system(request.text, request.history.messages, offer, budget, overhead)
            rendered = render_system(request, offer, fitted, semantic, settings, tools_changed)
        else:
            images = request.agent.images.tokens
            room, held = self._turns.room(request.history, steps, budget, offer)
            texts = offer.texts()
            window_in = WindowInput(request.history, request.text, budget, texts, images, held)
            window = self._window.plan(window_in, state, settings.window)
            watch.lap("history")
            options, writers = request.options, request.history.writers
            final_in = FinalInput(request.text, offer, request.budget, semantic, options, writers)
            final = self._turns.fit(final_in, window, settings.final, room, request.history, steps)
            watch.lap("fit")
            rendered = render_end(request, offer, window, final, semantic, settings, tools_changed)
        watch.lap("render")
        writes = state.save()
        watch.lap("state_store")
        return self._emit(rendered, notes, watch, writes)

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
        """Like :meth:`compile`, off the event loop when it could hold it (:mod:`.off_loop`).

        ``compress_async`` (awaited holding no lock) summarises memories over
        ``MEMORY_PREFLIGHT_TOKEN_THRESHOLD`` tokens, cached in a ``redis.asyncio``
        ``redis_client`` per ``conversation_id`` (``metadata["preflight_cache"]``)."""
        from membrane.off_loop import run_off_loop, where_to_run  # async callers only
        from membrane.stages.preflight import PreflightCache, async_analyst, summarise_middle

        cache = PreflightCache.for_call(redis_client, kwargs, self._scope.namespace)
        analyst = async_analyst(compress_async, compress_fn)
        count = self._counters.for_call(kwargs.get("tokenizer_registry")).count
        caps = self.settings.text_caps
        raw = oversized_middle(memories, kwargs, caps, count) if analyst else None
        outcome = None
        if analyst is not None and raw is not None:
            target = config.preflight_target_tokens()
            done, outcome = await summarise_middle(analyst, raw, target, user_message, cache)
            kwargs["compress_sync"] = lambda _r, _t, _q: done
        compile_now = partial(self.compile, memories, user_message, **kwargs)
        # Placed after any await: the conversation's lock may have been taken meanwhile.
        place = where_to_run(self.state_store, self._locks, memories, user_message, kwargs)
        result = await run_off_loop(compile_now, place)
        report = replace(result.report, preflight_cache=outcome)
        return result if outcome is None else result.with_report(report)

    def forget(self, conversation_id: str) -> None:
        """Erase a conversation's stored state and all this compiler derived from it."""
        check_id(conversation_id, "conversation_id")
        with self._locks.hold(conversation_id):
            forget_conversation(self.state_store, conversation_id, self._scope.namespace)
            self._window.forget(conversation_id)
            self._turns.forget(conversation_id)

    @contextmanager
    def held_history(self, conversation_id: str) -> Iterator[tuple[Tracker | None, Counter]]:
        """The conversation's tracker in memory (or None) and the counter, under its lock."""
        with self._locks.hold(conversation_id):
            yield self._window.tracker_of(conversation_id), self._counters.for_call()

    def observe(self, result: CompileResult, actual_prompt_tokens: int) -> float:
        """Report the prompt tokens the provider billed for ``result``; returns the scale now.

        The ratio to Membrane's count is smoothed per model and shared through the state store.
        A count under half of Membrane's is refused: :meth:`observe_usage` adds the parts up.
        """
        report = result.report
        actual = checked_prompt_tokens(actual_prompt_tokens, report.sent_tokens)
        if self.settings.fixed_token_scale is not None:
            return self.settings.fixed_token_scale
        with self._locks.hold(("scale", report.model_id)):  # one model's observations take turns
            sent, store = report.sent_tokens, self.state_store
            return self._scope.observe(store, report.model_id, sent, actual).scale

    def observe_usage(self, result: CompileResult, usage: object) -> float:
        """:meth:`observe` with the provider's response, its usage (a stream's final one too)
        or a dict of its fields, read per provider (``membrane.providers.usage``)."""
        return self.observe(result, prompt_tokens_from_usage(usage))

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
        if (fixed := self.settings.fixed_token_scale) is not None:
            return fixed
        model = model_id if model_id is not None else self.settings.model_id
        return self._scope.calibration(self.state_store, model).scale

    # ------------------------------------------------------------------ stages

    def _request(self, args: CompileArgs, notes: StoreNotes) -> CompileRequest:
        """The checked request: the model's scale read from the store, then the arguments."""
        counter = self._counters.for_call(args.options.tokenizer_registry)
        request = normalise(
            args, self.settings, counter, self._scale(notes), self._window.proofs.get
        )
        if request.history.proof is not None:
            self._window.proofs.put(request.history.conversation, request.history.proof)
        return request

    def _scale(self, notes: StoreNotes) -> tuple[float, int]:
        """The model's token scale and how many observations shaped it (one store read)."""
        fixed = self.settings.fixed_token_scale
        if fixed is not None:
            return fixed, 0
        calibration = self._scope.calibration(self.state_store, self.settings.model_id, notes)
        return calibration.scale, calibration.samples

    def _emit(
        self, rendered: Rendered, notes: StoreNotes, watch: Watch, writes: int
    ) -> CompileResult:
        report = timed_report(rendered, notes, watch, writes)
        result = rendered.result(report)
        if self.metrics_callback is not None:
            self.metrics_callback(report.metrics())
        return result
