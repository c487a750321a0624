"""Membrane: a prompt compiler with hard token budgets, cache-stable prefixes and citation maps.

>>> from membrane import ContextCompiler, MemoryItem
>>> compiler = ContextCompiler(max_tokens=4096, core_content="You are a helpful assistant.")
>>> result = compiler.compile(
...     memories=[MemoryItem(id="doc-7", content="The refund window is 30 days.")],
...     user_message="How long do I have to ask for a refund?")
>>> result.ref_map
{1: 'doc-7'}
"""

from __future__ import annotations

import typing

from membrane import _lazy

if typing.TYPE_CHECKING:
    from membrane.backend import CompilerPool, compile_prompt_async, compile_prompt_payload
    from membrane.capabilities import (
        CachePricing,
        ModelLimits,
        get_cache_pricing,
        get_context_cap_for_model,
        get_token_scale,
        has_prompt_caching,
    )
    from membrane.compiler import (
        CompileMetrics,
        CompileResult,
        ContextCompiler,
        CostQuote,
    )
    from membrane.errors import (
        EmbedderUnavailable,
        InvalidInputError,
        MembraneError,
        MemoryCollisionError,
        StoreUnavailable,
        TokenizerDataError,
        ToolPairingError,
    )
    from membrane.interrupt import (
        INTERRUPT_INSTRUCTION,
        InterruptStreamDetector,
        contains_interrupt,
        parse_interrupt,
        strip_all_interrupts,
    )
    from membrane.lod import (
        LOD_ATTENTION_SHIFT_COSINE_THRESHOLD,
        compute_attention_shift,
        compute_attention_shift_with_embeddings,
    )
    from membrane.one_shot import compile_anonymous
    from membrane.providers import (
        anthropic_request,
        anthropic_system_blocks,
        bedrock_converse_request,
        build_system_messages,
        gemini_request,
        openai_request,
        openai_responses_request,
    )
    from membrane.records import (
        TIER_EPISODIC,
        TIER_PROCEDURAL,
        TIER_SEMANTIC,
        EpisodicMemory,
        KernelMemoryObject,
        KernelMemoryRecord,
        MemoryItem,
        ProceduralMemory,
        SemanticMemory,
        load_kernel_memory_json_schema,
    )
    from membrane.report import CompileReport
    from membrane.stages.firewall import PreFlightContextFirewall
    from membrane.stages.glaciator import GlaciatedPrompt, glaciate
    from membrane.stages.layout import ContextLayoutEngine
    from membrane.stages.preflight import PreFlightAnalyst, as_preflight_analyst
    from membrane.state import (
        InMemoryStateStore,
        RedisStateStore,
        StateStore,
        get_ref_map_for_conversation,
        set_ref_map_for_conversation,
    )
    from membrane.tokenizers import count_tokens

__version__ = "0.4.0"

# Where each public name lives. The modules load on first use of one of their names, so
# ``import membrane`` stays about as cheap as ``import tiktoken`` (a serverless worker pays it
# on every cold start); ``from membrane import X`` and ``membrane.X`` work as before.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "membrane.backend": ("CompilerPool", "compile_prompt_async", "compile_prompt_payload"),
    "membrane.capabilities": (
        "CachePricing",
        "ModelLimits",
        "get_cache_pricing",
        "get_context_cap_for_model",
        "get_token_scale",
        "has_prompt_caching",
    ),
    "membrane.compiler": ("CompileMetrics", "CompileResult", "ContextCompiler", "CostQuote"),
    "membrane.errors": (
        "EmbedderUnavailable",
        "InvalidInputError",
        "MembraneError",
        "MemoryCollisionError",
        "StoreUnavailable",
        "TokenizerDataError",
        "ToolPairingError",
    ),
    "membrane.interrupt": (
        "INTERRUPT_INSTRUCTION",
        "InterruptStreamDetector",
        "contains_interrupt",
        "parse_interrupt",
        "strip_all_interrupts",
    ),
    "membrane.lod": (
        "LOD_ATTENTION_SHIFT_COSINE_THRESHOLD",
        "compute_attention_shift",
        "compute_attention_shift_with_embeddings",
    ),
    "membrane.one_shot": ("compile_anonymous",),
    "membrane.providers": (
        "anthropic_request",
        "anthropic_system_blocks",
        "bedrock_converse_request",
        "build_system_messages",
        "gemini_request",
        "openai_request",
        "openai_responses_request",
    ),
    "membrane.records": (
        "TIER_EPISODIC",
        "TIER_PROCEDURAL",
        "TIER_SEMANTIC",
        "EpisodicMemory",
        "KernelMemoryObject",
        "KernelMemoryRecord",
        "MemoryItem",
        "ProceduralMemory",
        "SemanticMemory",
        "load_kernel_memory_json_schema",
    ),
    "membrane.report": ("CompileReport",),
    "membrane.stages.firewall": ("PreFlightContextFirewall",),
    "membrane.stages.glaciator": ("GlaciatedPrompt", "glaciate"),
    "membrane.stages.layout": ("ContextLayoutEngine",),
    "membrane.stages.preflight": ("PreFlightAnalyst", "as_preflight_analyst"),
    "membrane.state": (
        "InMemoryStateStore",
        "RedisStateStore",
        "StateStore",
        "get_ref_map_for_conversation",
        "set_ref_map_for_conversation",
    ),
    "membrane.tokenizers": ("count_tokens",),
}
__getattr__, __dir__ = _lazy.lazy_exports(__name__, _EXPORTS)

__all__ = [
    "INTERRUPT_INSTRUCTION",
    "LOD_ATTENTION_SHIFT_COSINE_THRESHOLD",
    "TIER_EPISODIC",
    "TIER_PROCEDURAL",
    "TIER_SEMANTIC",
    "CachePricing",
    "CompileMetrics",
    "CompileReport",
    "CompileResult",
    "CompilerPool",
    "ContextCompiler",
    "ContextLayoutEngine",
    "CostQuote",
    "EmbedderUnavailable",
    "EpisodicMemory",
    "GlaciatedPrompt",
    "InMemoryStateStore",
    "InterruptStreamDetector",
    "InvalidInputError",
    "KernelMemoryObject",
    "KernelMemoryRecord",
    "MembraneError",
    "MemoryCollisionError",
    "MemoryItem",
    "ModelLimits",
    "PreFlightAnalyst",
    "PreFlightContextFirewall",
    "ProceduralMemory",
    "RedisStateStore",
    "SemanticMemory",
    "StateStore",
    "StoreUnavailable",
    "TokenizerDataError",
    "ToolPairingError",
    "__version__",
    "anthropic_request",
    "anthropic_system_blocks",
    "as_preflight_analyst",
    "bedrock_converse_request",
    "build_system_messages",
    "compile_anonymous",
    "compile_prompt_async",
    "compile_prompt_payload",
    "compute_attention_shift",
    "compute_attention_shift_with_embeddings",
    "contains_interrupt",
    "count_tokens",
    "gemini_request",
    "get_cache_pricing",
    "get_context_cap_for_model",
    "get_ref_map_for_conversation",
    "get_token_scale",
    "glaciate",
    "has_prompt_caching",
    "load_kernel_memory_json_schema",
    "openai_request",
    "openai_responses_request",
    "parse_interrupt",
    "set_ref_map_for_conversation",
    "strip_all_interrupts",
]
