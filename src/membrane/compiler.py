"""The compiler: rules, memories, history and the current turn in; a budgeted request out.

:meth:`ContextCompiler.compile` runs the stages in flow order — normalise, count, plan history,
lay out, fit, split for caching — and returns a :class:`CompileResult` that carries the
messages, the citation map and the numbers that explain every trim.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from membrane import config
from membrane.capabilities import (
    get_cache_pricing,
    get_context_cap_for_model,
    get_token_scale,
    has_prompt_caching,
)
from membrane.errors import InvalidInputError
from membrane.messages import Message, message_text, validate_messages
from membrane.records import MEMORY_KINDS, memory_tier
from membrane.stages.firewall import MiddleItem, fit_middle
from membrane.stages.history import (
    RECALL_HEADER,
    HistoryTracker,
    RecalledPassage,
    render_index,
    select_index_lines,
    select_passages,
)
from membrane.stages.layout import (
    ContextLayoutEngine,
    MemorySegment,
    render_memories,
)
from membrane.stages.preflight import SyncCompressor, check_compressed, mem_numbers
from membrane.state import InMemoryStateStore, StateStore
from membrane.text.keyframes import keyframe
from membrane.text.relevance import CombinedStats, TermStats, content_words, rank_fusion
from membrane.tokenizers import MemoizedCounter, TiktokenAdapter, TokenCounter
from membrane.tokenizers._calibration import ScaleCalibration

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

Embedder = Callable[[list[str]], Sequence[Sequence[float]]]
Placement = Literal["end", "system"]
_DEFAULT_MIN_CACHEABLE = 1024
_MAX_TRACKERS = 512
_DEFAULT_CONVERSATION = "_default"


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


@dataclass
class _Offer:
    """Everything trimmable in the middle: memories first, then extras, in input order."""

    segments: list[MemorySegment]
    extras: list[tuple[str, int]]
    memories_truncated: int
    # Segments whose [Mem:N] may appear in the output (after compression, the originals).
    citable: list[MemorySegment] = field(default_factory=list)

    def texts(self) -> list[str]:
        return [s.content for s in self.segments] + [t for t, _ in self.extras]

    def lines(self) -> list[str]:
        return [s.line for s in self.segments] + [t for t, _ in self.extras]

    def tiers(self) -> list[int]:
        return [s.tier for s in self.segments] + [tier for _, tier in self.extras]


@dataclass
class _Tail:
    """The final user message under construction."""

    lines: list[str]
    line_refs: list[int | None]
    passages: list[RecalledPassage]
    end_text: str
    thinned: int = 0

    def text(self) -> str:
        parts = []
        if self.lines:
            parts.append("\n".join(self.lines))
        if self.passages:
            parts.append(RECALL_HEADER + "\n" + "\n".join(p.text for p in self.passages))
        parts.append(self.end_text)
        return "\n\n".join(parts)


@dataclass
class _HistoryPlan:
    kept: list[Message]
    kept_tokens: int
    dropped_messages: int
    dropped_tokens: int
    system_text: str
    index_lines: int = 0
    index_tokens: int = 0
    tracker: HistoryTracker | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class ContextCompiler:
    """Compiles prompts under a hard token budget, keeping a cache-stable prefix.

    >>> compiler = ContextCompiler(max_tokens=2048, core_content="Be brief.")
    >>> from membrane.records import MemoryItem
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
        _check_budget(max_tokens)
        _check_placement(memory_placement)
        _check_fraction("history_share", history_share, allow_zero=False)
        _check_fraction("index_share", index_share, allow_zero=True)
        _check_non_negative_int("message_overhead_tokens", message_overhead_tokens)
        _check_non_negative_int("keyframe_tokens", keyframe_tokens)
        if token_scale is not None and not (
            isinstance(token_scale, (int, float)) and math.isfinite(token_scale) and token_scale > 0
        ):
            raise InvalidInputError(
                f"token_scale must be a positive number or None, got {token_scale!r}",
                field="token_scale",
            )
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
        self._embedding_cache: dict[str, tuple[float, ...]] = {}

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
        included), trimmed from the oldest end in chunks when they outgrow their share.
        """
        return self._compile(
            memories,
            user_message,
            conversation_messages=conversation_messages,
            last_assistant_turn=last_assistant_turn,
            agent_persona_prompt=agent_persona_prompt,
            dynamic_directives=dynamic_directives,
            middle_extras=middle_extras,
            tier_by_memory_id=tier_by_memory_id,
            use_prompt_caching_split=use_prompt_caching_split,
            compressor=_sync_compressor(compress_sync),
            profile=profile,
            tokenizer_registry=tokenizer_registry,
            conversation_id=conversation_id,
            debug=debug,
        )

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
        ``MEMORY_PREFLIGHT_TOKEN_THRESHOLD`` tokens.
        """
        analyst = compress_async if compress_async is not None else compress_fn
        if analyst is None:
            return self.compile(memories, user_message, **kwargs)
        raw_middle, compressed_needed = self._preflight_probe(memories, kwargs)
        if not compressed_needed:
            return self.compile(memories, user_message, **kwargs)
        target = config.preflight_target_tokens()
        if hasattr(analyst, "compress_retrieved_memory"):
            summary = await analyst.compress_retrieved_memory(raw_middle, target, user_message)
        else:
            summary = await analyst(raw_middle, target, user_message)
        done = check_compressed(summary)
        return self._compile(
            memories, user_message, compressor=lambda _raw, _t, _q: done, **_compile_kwargs(kwargs)
        )

    def observe(self, result: CompileResult, actual_prompt_tokens: int) -> float:
        """Report the prompt tokens the provider billed for ``result``; returns the scale now.

        The ratio to Membrane's own count is smoothed per model; later compiles divide the
        budget by the resulting scale. A fixed ``token_scale`` ignores observations.
        """
        if not isinstance(actual_prompt_tokens, int) or isinstance(actual_prompt_tokens, bool):
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

    # ------------------------------------------------------------------ pipeline

    def _compile(
        self,
        memories: Sequence[object],
        user_message: str,
        *,
        conversation_messages: Sequence[Message] | None = None,
        last_assistant_turn: str | None = None,
        agent_persona_prompt: str | None = None,
        dynamic_directives: str | Sequence[str] | None = None,
        middle_extras: Sequence[tuple[str, int]] | None = None,
        tier_by_memory_id: Mapping[int, int] | None = None,
        use_prompt_caching_split: bool = True,
        compressor: SyncCompressor | None = None,
        profile: MembraneProfile | None = None,
        tokenizer_registry: TokenizerRegistry | None = None,
        conversation_id: str | None = None,
        debug: bool = False,
    ) -> CompileResult:
        if not isinstance(user_message, str):
            raise InvalidInputError("user_message must be a string", field="user_message")
        conv_key = conversation_id if conversation_id is not None else _DEFAULT_CONVERSATION
        count = self._counter(tokenizer_registry).count
        budget, scale, budget_counted = self._budget()
        pairs = _memory_pairs(memories, tier_by_memory_id, profile, user_message)
        extras = _check_extras(middle_extras)
        offer = _offer(pairs, extras)
        layout = ContextLayoutEngine(
            self.core_content,
            agent_persona_prompt=agent_persona_prompt,
            include_interrupt_instruction=self.include_interrupt_instruction,
        )
        core = layout.build_core()
        placement = self.memory_placement
        field_name = "conversation_messages"
        history = validate_messages(conversation_messages, field=field_name)
        offer = _apply_compressor(offer, compressor, user_message, count)
        if placement == "system":
            return self._finish_system(
                layout,
                core,
                offer,
                history,
                last_assistant_turn,
                user_message,
                dynamic_directives,
                budget,
                scale,
                budget_counted,
                count,
                debug,
            )
        last_turn = last_assistant_turn if not history else None
        end_text = layout.build_end(last_turn, user_message, dynamic_directives)
        plan = self._plan_history(
            history, core, end_text, offer, user_message, budget_counted, count, conv_key
        )
        tail, fit_stats = self._fit_tail(offer, plan, end_text, user_message, budget_counted, count)
        return self._finish_end(
            core,
            plan,
            tail,
            offer,
            fit_stats,
            budget,
            scale,
            budget_counted,
            count,
            use_prompt_caching_split,
            debug,
        )

    # ------------------------------------------------------------------ stages

    def _budget(self) -> tuple[int, float, int]:
        cap = get_context_cap_for_model(self.model_id) if self.model_id else None
        budget = min(self.max_tokens, cap) if cap else self.max_tokens
        scale = self.token_scale_for(self.model_id)
        return budget, scale, int(budget / scale)

    def _plan_history(
        self,
        history: list[Message],
        core: str,
        end_text: str,
        offer: _Offer,
        user_message: str,
        budget_counted: int,
        count: Callable[[str], int],
        conv_key: str,
    ) -> _HistoryPlan:
        overhead = self.message_overhead_tokens
        core_tokens = count(core)
        after_core = max(budget_counted - core_tokens - overhead, 0)
        if not history:
            return _HistoryPlan([], 0, 0, 0, core)
        if not self.trim_history:
            kept_tokens = sum(count(message_text(m)) + overhead for m in history)
            return _HistoryPlan(list(history), kept_tokens, 0, 0, core)
        share = max(int(self.history_share * after_core), 1)
        chunk = max(share // 2, 1)
        tracker = self._tracker(conv_key, share, chunk, history, count)
        index_text, index_lines, index_tokens = "", 0, 0
        if self.eviction_index and tracker.lines:
            room = self._index_room(conv_key, tracker, after_core, end_text, offer, count)
            header_tokens = count(render_index(tracker.lines[:0]) or "x") + 20
            first = select_index_lines(tracker.lines, room, header_tokens)
            kept_lines = tracker.lines[first:]
            index_text = render_index(kept_lines)
            index_lines = len(kept_lines)
        system_text = f"{core}\n\n{index_text}" if index_text else core
        if index_text:
            index_tokens = count(system_text) - core_tokens
        cut = tracker.cut
        start = tracker.bounds[cut][0] if cut < len(tracker.bounds) else len(history)
        kept_tokens = tracker.kept_tokens
        dropped_tokens = sum(tracker.unit_tokens[:cut])
        plan = _HistoryPlan(
            kept=history[start:],
            kept_tokens=kept_tokens,
            dropped_messages=start,
            dropped_tokens=dropped_tokens,
            system_text=system_text,
            index_lines=index_lines,
            index_tokens=index_tokens,
            tracker=tracker,
        )
        # A current turn too large for what history leaves pushes more history out, for this
        # turn only: the stored cut stays, so the next normal turn hits the cache again.
        system_tokens = count(system_text) + overhead
        reserved = system_tokens + kept_tokens + count(end_text) + overhead
        unit = cut
        while reserved > budget_counted and unit < len(tracker.bounds):
            reserved -= tracker.unit_tokens[unit]
            plan.kept_tokens -= tracker.unit_tokens[unit]
            plan.dropped_tokens += tracker.unit_tokens[unit]
            unit += 1
        if unit != cut:
            start = tracker.bounds[unit][0] if unit < len(tracker.bounds) else len(history)
            plan.kept = history[start:]
            plan.dropped_messages = start
            plan.extra["history_turn_local_drop"] = unit - cut
        return plan

    def _tracker(
        self,
        conv_key: str,
        share: int,
        chunk: int,
        history: list[Message],
        count: Callable[[str], int],
    ) -> HistoryTracker:
        counter_name = self._counter(None).name
        key = (conv_key, share, chunk, counter_name)
        tracker = self._trackers.get(key)
        if tracker is None or not tracker.matches(history):
            tracker = HistoryTracker(
                share=share,
                chunk=chunk,
                count=count,
                overhead=self.message_overhead_tokens,
                keyframe_tokens=self.keyframe_tokens,
            )
            # A conversation keeps one tracker: drop those for other shares of the same key.
            for other in [k for k in self._trackers if k[0] == conv_key]:
                del self._trackers[other]
            self._trackers[key] = tracker
            while len(self._trackers) > _MAX_TRACKERS:
                self._trackers.popitem(last=False)
        else:
            self._trackers.move_to_end(key)
        tracker.update(history, "conversation_messages")
        return tracker

    def _index_room(
        self,
        conv_key: str,
        tracker: HistoryTracker,
        after_core: int,
        end_text: str,
        offer: _Offer,
        count: Callable[[str], int],
    ) -> int:
        """The index block's room: decided at the first compile that sees a cut, then kept."""
        state_key = _conversation_key(conv_key)
        stored = self.state_store.get(state_key) or {}
        events = len(tracker.events)
        if stored.get("share") == tracker.share and stored.get("events") == events:
            return int(stored["room"])
        share_room = int(self.index_share * after_core)
        stats = _combined_stats(tracker.stats, offer.texts())
        keyframe_cost = 0
        for text in offer.texts():
            frame = keyframe(text, stats, count, self.keyframe_tokens)
            keyframe_cost += (count(frame) if frame else count(text)) + 4
        leftover = after_core - tracker.kept_tokens - count(end_text) - keyframe_cost
        room = max(min(leftover, share_room), share_room // 2)
        if int(stored.get("events", -1)) <= events or stored.get("share") != tracker.share:
            self.state_store.put(
                state_key, {"share": tracker.share, "events": events, "room": room}
            )
        return room

    def _fit_tail(
        self,
        offer: _Offer,
        plan: _HistoryPlan,
        end_text: str,
        user_message: str,
        budget_counted: int,
        count: Callable[[str], int],
    ) -> tuple[_Tail, dict[str, Any]]:
        overhead = self.message_overhead_tokens
        fixed = (
            count(plan.system_text) + overhead + plan.kept_tokens + count(end_text) + overhead + 2
        )
        room = budget_counted - fixed
        stats_extra: dict[str, Any] = {}
        tracker = plan.tracker
        recall_possible = (
            self.recall_evicted_history
            and tracker is not None
            and bool(tracker.passages)
            and plan.dropped_messages > 0
        )
        recall_header_tokens = count(RECALL_HEADER) + 2 if recall_possible else 0
        lines = offer.lines()
        full_tokens = [count(line) for line in lines]
        ranks = self._ranks(offer, user_message, tracker, stats_extra)
        thin_lines: list[str | None] = [None] * len(lines)
        if sum(full_tokens) + len(lines) > room - recall_header_tokens:
            thin_lines = self._thin_lines(offer, tracker, count)
        items = [
            MiddleItem(
                tier=tier,
                rank=ranks[i],
                full_tokens=full_tokens[i],
                thin_tokens=count(thin_lines[i]) if thin_lines[i] is not None else None,  # type: ignore[arg-type]
            )
            for i, tier in enumerate(offer.tiers())
        ]
        choice = fit_middle(
            items,
            room - recall_header_tokens,
            thin_before_drop=self.thin_before_drop,
        )
        order = sorted(range(len(lines)), key=lambda i: (items[i].tier, i))
        tail = _Tail([], [], [], end_text)
        used = 0
        for i in order:
            if choice[i] == "drop":
                continue
            line = lines[i] if choice[i] == "full" else thin_lines[i]
            assert line is not None
            tail.lines.append(line)
            tail.line_refs.append(i if i < len(offer.segments) else None)
            tail.thinned += choice[i] == "thin"
            used += (full_tokens[i] if choice[i] == "full" else items[i].thin_tokens or 0) + 1
        if recall_possible and tracker is not None:
            left = room - used - recall_header_tokens
            tail.passages = select_passages(
                tracker,
                user_message,
                left,
                limit=tracker.chunk,
                count=count,
                extra_ranking=self._semantic_passage_ranking(tracker, user_message, stats_extra),
            )
        self._enforce_exact(tail, budget_counted, fixed - count(end_text) - 2, count, items)
        stats_extra["choice"] = choice
        stats_extra["full_tokens"] = full_tokens
        return tail, stats_extra

    def _enforce_exact(
        self,
        tail: _Tail,
        budget_counted: int,
        before_tail: int,
        count: Callable[[str], int],
        items: list[MiddleItem],
    ) -> None:
        # Summed line counts can differ from the joined text's count by a few tokens at the
        # joins; shed passages, then the lowest-priority lines, until the exact count fits.
        while before_tail + count(tail.text()) > budget_counted:
            if tail.passages:
                tail.passages.pop(
                    max(range(len(tail.passages)), key=lambda j: tail.passages[j].tokens)
                )
                continue
            if not tail.lines:
                return
            worst = max(
                range(len(tail.lines)),
                key=lambda j: _line_priority(tail.line_refs[j], j, items),
            )
            tail.lines.pop(worst)
            tail.line_refs.pop(worst)

    def _ranks(
        self,
        offer: _Offer,
        user_message: str,
        tracker: HistoryTracker | None,
        stats_extra: dict[str, Any],
    ) -> list[int]:
        n = len(offer.segments) + len(offer.extras)
        caller_order = list(range(n))
        if not self.rank_fusion or n < 2:
            return caller_order
        texts = offer.texts()
        stats = _combined_stats(tracker.stats if tracker else None, texts)
        query = set(content_words(user_message))
        lexical = [sum(stats.idf(w) for w in query.intersection(content_words(t))) for t in texts]
        rankings = [caller_order, sorted(caller_order, key=lambda i: (-lexical[i], i))]
        semantic = self._semantic_order(user_message, texts, stats_extra)
        if semantic is not None:
            rankings.append(semantic)
        fused = rank_fusion(rankings)
        ranks = [0] * n
        for position, i in enumerate(fused):
            ranks[i] = position
        return ranks

    def _thin_lines(
        self, offer: _Offer, tracker: HistoryTracker | None, count: Callable[[str], int]
    ) -> list[str | None]:
        texts = offer.texts()
        stats = _combined_stats(tracker.stats if tracker else None, texts)
        out: list[str | None] = []
        for i, line in enumerate(offer.lines()):
            text = texts[i]
            frame = keyframe(text, stats, count, self.keyframe_tokens)
            if frame is None or frame.strip() == " ".join(text.split()):
                out.append(None)
                continue
            if i < len(offer.segments):
                out.append(f"{line.split(' | text=', 1)[0]} | text={frame}…")
            else:
                out.append(f"{frame}…")
        return out

    def _semantic_order(
        self, query: str, texts: list[str], stats_extra: dict[str, Any]
    ) -> list[int] | None:
        vectors = self._embed([query, *texts], stats_extra)
        if vectors is None:
            return None
        q, rest = vectors[0], vectors[1:]
        sims = [_cosine(q, v) for v in rest]
        return sorted(range(len(texts)), key=lambda i: (-sims[i], i))

    def _semantic_passage_ranking(
        self, tracker: HistoryTracker, query: str, stats_extra: dict[str, Any]
    ) -> list[int] | None:
        if self.embedder is None:
            return None
        candidates = sorted(tracker.score_passages(query))
        if not candidates:
            return None
        vectors = self._embed([query, *(tracker.passages[p].text for p in candidates)], stats_extra)
        if vectors is None:
            return None
        sims = {p: _cosine(vectors[0], v) for p, v in zip(candidates, vectors[1:], strict=True)}
        return sorted(candidates, key=lambda p: -sims[p])

    def _embed(
        self, texts: list[str], stats_extra: dict[str, Any]
    ) -> list[tuple[float, ...]] | None:
        if self.embedder is None or stats_extra.get("semantic_failed"):
            return None
        missing = [t for t in dict.fromkeys(texts) if t not in self._embedding_cache]
        if missing:
            try:
                vectors = self.embedder(missing)
                if len(vectors) != len(missing):
                    raise ValueError("embedder returned a different number of vectors")
                for text, vec in zip(missing, vectors, strict=True):
                    self._embedding_cache[text] = tuple(float(x) for x in vec)
            except Exception as exc:  # the caller's model: any failure falls back to words
                stats_extra["semantic_failed"] = f"{type(exc).__name__}: {exc}"
                return None
        stats_extra["semantic_ranking"] = True
        return [self._embedding_cache[t] for t in texts]

    # ------------------------------------------------------------------ results

    def _finish_end(
        self,
        core: str,
        plan: _HistoryPlan,
        tail: _Tail,
        offer: _Offer,
        fit_stats: dict[str, Any],
        budget: int,
        scale: float,
        budget_counted: int,
        count: Callable[[str], int],
        use_caching: bool,
        debug: bool,
    ) -> CompileResult:
        overhead = self.message_overhead_tokens
        tail_text = tail.text()
        system_tokens = count(plan.system_text)
        tail_tokens = count(tail_text)
        messages: list[Message] = [{"role": "system", "content": plan.system_text}]
        messages.extend(plan.kept)
        messages.append({"role": "user", "content": tail_text})
        history_content_tokens = plan.kept_tokens - overhead * len(plan.kept)
        token_count = system_tokens + history_content_tokens + tail_tokens
        framing = overhead * len(messages)
        ref_map, ref_map_type = _refs_in("\n".join(tail.lines), offer)
        choice = fit_stats["choice"]
        full_tokens = fit_stats["full_tokens"]
        kept_lines = len(tail.lines)
        offered_tokens = sum(full_tokens)
        sent_tokens = sum(count(line) for line in tail.lines)
        md: dict[str, Any] = {
            "model_id": self.model_id,
            "memory_placement": "end",
            "token_count": token_count,
            "tokens_budget": budget,
            "message_framing_tokens": framing,
            "tokens_trimmed": max(offered_tokens - sent_tokens, 0) + plan.dropped_tokens,
            "segments_offered": len(full_tokens),
            "segments_kept": kept_lines,
            "segments_thinned": tail.thinned,
            "memories_truncated": offer.memories_truncated,
            "stable_prefix_messages": 1 + len(plan.kept),
            "history_messages_dropped": plan.dropped_messages,
            "history_messages_recalled": len(tail.passages),
            "history_index_lines": plan.index_lines,
            "history_index_tokens": plan.index_tokens,
            "token_scale": scale,
            "token_scale_samples": self._calibration_samples(),
            "budget_exceeded": token_count + framing > budget_counted,
            "retrieval_summary": {
                "offered": len(full_tokens),
                "kept_full": kept_lines - tail.thinned,
                "thinned": tail.thinned,
                "dropped": len(full_tokens) - kept_lines,
            },
        }
        if scale != 1.0:
            md["tokens_budget_counted"] = budget_counted
        if plan.index_lines:
            md["core_chars"] = len(core)
        md.update(plan.extra)
        if fit_stats.get("semantic_ranking") and not fit_stats.get("semantic_failed"):
            md["semantic_ranking"] = True
        if fit_stats.get("semantic_failed"):
            md["semantic_ranking_error"] = fit_stats["semantic_failed"]
        prefix_tokens = system_tokens + overhead + plan.kept_tokens
        self._cache_metadata(md, use_caching, core, plan, count, prefix_tokens, tail_tokens, scale)
        trace = None
        if debug:
            trace = {
                "choices": list(choice),
                "ranks_source": "rank_fusion" if self.rank_fusion else "input",
            }
        return self._emit(messages, ref_map, ref_map_type, md, trace)

    def _cache_metadata(
        self,
        md: dict[str, Any],
        use_caching: bool,
        core: str,
        plan: _HistoryPlan,
        count: Callable[[str], int],
        prefix_tokens: int,
        tail_tokens: int,
        scale: float,
    ) -> None:
        overhead = self.message_overhead_tokens
        pricing = get_cache_pricing(self.model_id) if self.model_id else None
        caching = use_caching and bool(self.model_id) and has_prompt_caching(self.model_id)
        md["cache_mode"] = pricing.mode if (pricing and caching) else None
        if not use_caching:
            md["cache_breakpoints"] = []
            md["prompt_cache_used"] = False
            return
        breakpoints: list[dict[str, Any]] = []
        system_tokens = count(plan.system_text) + overhead
        if plan.index_lines:
            breakpoints.append(
                {
                    "message_index": 0,
                    "tokens": count(core) + overhead,
                    "reason": "core",
                    "chars": len(core),
                }
            )
            breakpoints.append({"message_index": 0, "tokens": system_tokens, "reason": "index"})
        else:
            breakpoints.append({"message_index": 0, "tokens": system_tokens, "reason": "core"})
        if plan.kept:
            breakpoints.append(
                {"message_index": len(plan.kept), "tokens": prefix_tokens, "reason": "history"}
            )
        md["cache_breakpoints"] = breakpoints
        min_tokens = pricing.min_tokens if pricing else _DEFAULT_MIN_CACHEABLE
        used = caching and prefix_tokens * scale >= min_tokens
        md["prompt_cache_used"] = used
        if used:
            md["cacheable_prefix_tokens"] = prefix_tokens
            md["dynamic_tail_tokens"] = tail_tokens + overhead

    def _finish_system(
        self,
        layout: ContextLayoutEngine,
        core: str,
        offer: _Offer,
        history: list[Message],
        last_assistant_turn: str | None,
        user_message: str,
        directives: str | Sequence[str] | None,
        budget: int,
        scale: float,
        budget_counted: int,
        count: Callable[[str], int],
        debug: bool,
    ) -> CompileResult:
        last_turn = last_assistant_turn
        if last_turn is None:
            for m in reversed(history):
                if m.get("role") == "assistant" and message_text(m).strip():
                    last_turn = message_text(m)
                    break
        end_text = layout.build_end(last_turn, user_message, directives)
        overhead = self.message_overhead_tokens
        fixed = count(core) + count(end_text) + overhead + 4
        lines = offer.lines()
        full_tokens = [count(line) for line in lines]
        items = [
            MiddleItem(tier=tier, rank=i, full_tokens=full_tokens[i])
            for i, tier in enumerate(offer.tiers())
        ]
        choice = fit_middle(items, budget_counted - fixed, thin_before_drop=False)
        order = [
            i
            for i in sorted(range(len(lines)), key=lambda i: (items[i].tier, i))
            if choice[i] != "drop"
        ]
        while True:
            middle = "\n".join(lines[i] for i in order)
            text = "\n\n".join(p for p in (core, middle, end_text) if p)
            token_count = count(text)
            if token_count + overhead <= budget_counted or not order:
                break
            order.remove(max(order, key=lambda i: (items[i].tier, i)))
        ref_map, ref_map_type = _refs_in(middle, offer)
        md: dict[str, Any] = {
            "model_id": self.model_id,
            "memory_placement": "system",
            "token_count": token_count,
            "tokens_budget": budget,
            "message_framing_tokens": overhead,
            "tokens_trimmed": sum(full_tokens) - sum(full_tokens[i] for i in order),
            "segments_offered": len(lines),
            "segments_kept": len(order),
            "segments_thinned": 0,
            "memories_truncated": offer.memories_truncated,
            "stable_prefix_messages": 0,
            "token_scale": scale,
            "token_scale_samples": self._calibration_samples(),
            "budget_exceeded": token_count + overhead > budget_counted,
            "cache_mode": None,
            "cache_breakpoints": [],
            "prompt_cache_used": False,
        }
        if scale != 1.0:
            md["tokens_budget_counted"] = budget_counted
        trace = {"choices": list(choice)} if debug else None
        return self._emit([{"role": "system", "content": text}], ref_map, ref_map_type, md, trace)

    def _emit(
        self,
        messages: list[Message],
        ref_map: dict[int, str],
        ref_map_type: dict[int, str],
        md: dict[str, Any],
        trace: dict[str, Any] | None,
    ) -> CompileResult:
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
        elif self._base_counter is not None:
            base = self._base_counter
        else:
            base = _DEFAULT_COUNTER
        memo = self._counters.get(id(base))
        if memo is None or memo.inner is not base:
            memo = MemoizedCounter(base)
            self._counters[id(base)] = memo
        return memo

    def _calibration(self, model_id: str | None) -> ScaleCalibration:
        stored = self.state_store.get(_scale_key(model_id))
        if stored is not None:
            return ScaleCalibration.from_dict(stored)
        seed = get_token_scale(model_id) if model_id else 1.0
        return ScaleCalibration(scale=seed)

    def _calibration_samples(self) -> int:
        if self.fixed_token_scale is not None:
            return 0
        return self._calibration(self.model_id).samples

    def _preflight_probe(
        self, memories: Sequence[object], kwargs: Mapping[str, Any]
    ) -> tuple[str, bool]:
        pairs = _memory_pairs(memories, kwargs.get("tier_by_memory_id"), kwargs.get("profile"), "")
        offer = _offer(pairs, _check_extras(kwargs.get("middle_extras")))
        raw = "\n".join(offer.lines())
        count = self._counter(kwargs.get("tokenizer_registry")).count
        return raw, count(raw) > config.preflight_token_threshold()


@dataclass(frozen=True, slots=True)
class CostQuote:
    """An input-cost quote for a compiled prompt."""

    total_tokens: int
    estimated_cost_usd: float
    price_per_1k_input_tokens: float
    trimming_strategies: tuple[str, ...]
    compile_result: CompileResult


_DEFAULT_COUNTER = TiktokenAdapter("cl100k_base")


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
    import inspect

    ctor = set(inspect.signature(ContextCompiler.__init__).parameters) - {"self"}
    ctor_kwargs = {k: v for k, v in options.items() if k in ctor}
    call_kwargs = {k: v for k, v in options.items() if k not in ctor}
    compiler = ContextCompiler(max_tokens, model_id, core_content, **ctor_kwargs)
    return compiler.compile(memories, user_message, **call_kwargs)


# ---------------------------------------------------------------------- module helpers


def _check_budget(max_tokens: object) -> None:
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
        raise InvalidInputError(
            f"max_tokens must be a positive integer (the token budget), got {max_tokens!r}",
            field="max_tokens",
        )


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


def _check_non_negative_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{name} must be a non-negative integer, got {value!r}", field=name)


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
        if not hasattr(memory, "id") or not (
            hasattr(memory, "memory_kind") or hasattr(memory, "memory_type")
        ):
            raise InvalidInputError(
                f"memories[{i}] ({type(memory).__name__}) needs an `id` and a `memory_kind` "
                f"(one of {MEMORY_KINDS}); wrap plain text in MemoryItem(id=..., content=...)",
                field=f"memories[{i}]",
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


def _offer(triples: list[tuple[int, object, int]], extras: list[tuple[str, int]]) -> _Offer:
    segments = []
    for number, memory, tier in triples:
        segments.extend(render_memories([(memory, tier)], start_number=number))
    truncated = sum(1 for s in segments if s.truncated)
    return _Offer(segments, extras, truncated, citable=list(segments))


def _apply_compressor(
    offer: _Offer,
    compressor: SyncCompressor | None,
    user_message: str,
    count: Callable[[str], int],
) -> _Offer:
    if compressor is None or not (offer.segments or offer.extras):
        return offer
    raw = "\n".join(offer.lines())
    if count(raw) <= config.preflight_token_threshold():
        return offer
    summary = check_compressed(compressor(raw, config.preflight_target_tokens(), user_message))
    return _Offer([], [(summary, 2)], offer.memories_truncated, citable=offer.citable)


def _refs_in(text: str, offer: _Offer) -> tuple[dict[int, str], dict[int, str]]:
    present = mem_numbers(text)
    kept = sorted((s for s in offer.citable if s.number in present), key=lambda s: s.number)
    return {s.number: s.ref_id for s in kept}, {s.number: s.kind for s in kept}


def _line_priority(ref: int | None, j: int, items: list[MiddleItem]) -> tuple[int, int]:
    if ref is None or ref >= len(items):
        return (4, j)
    return (items[ref].tier, items[ref].rank)


def _combined_stats(base: TermStats | None, texts: Sequence[str]) -> CombinedStats:
    return CombinedStats(base, TermStats(texts))


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def _sync_compressor(fn: SyncCompressor | None) -> SyncCompressor | None:
    if fn is not None and not callable(fn):
        raise TypeError("compress_sync must be a function (raw_middle, target_tokens, question)")
    return fn


def _compile_kwargs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in kwargs.items() if k != "compress_sync"}


def _scale_key(model_id: str | None) -> str:
    return f"membrane:scale:{(model_id or '').lower()}"


def _conversation_key(conv_key: str) -> str:
    return f"membrane:conversation:{conv_key}"
