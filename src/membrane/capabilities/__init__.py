"""What Membrane knows about each model: context cap, prompt caching, cache prices, token scale.

The figures come from ``llm_capabilities.json`` shipped with the package, or from the JSON file
named by ``LLM_CAPABILITY_MAP_PATH``, which replaces it. The file is read on first lookup and
again whenever it changes on disk.
"""

from __future__ import annotations

from membrane.capabilities._lookup import (
    CachePricing,
    ModelCapabilities,
    get_cache_pricing,
    get_context_cap_for_model,
    get_model_capabilities,
    get_token_scale,
    has_prompt_caching,
    load_capability_map,
    provider_model_id,
    resolve_model_id,
)

__all__ = [
    "CachePricing",
    "ModelCapabilities",
    "get_cache_pricing",
    "get_context_cap_for_model",
    "get_model_capabilities",
    "get_token_scale",
    "has_prompt_caching",
    "load_capability_map",
    "provider_model_id",
    "resolve_model_id",
]
