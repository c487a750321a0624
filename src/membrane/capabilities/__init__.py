"""What Membrane knows about each model: context cap, prompt caching, cache prices, token scale.

The figures come from ``llm_capabilities.json`` shipped with the package, with the JSON file
named by ``LLM_CAPABILITY_MAP_PATH`` merged over it (a model it names replaces that model; its
``remove`` list drops models). The files are read on first lookup and again whenever the user
file changes on disk. A caller's :class:`ModelLimits` win over both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from membrane._lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from membrane.capabilities._limits import (
        DEFAULT_RESERVE_CEILING,
        DEFAULT_RESERVE_SHARE,
        ModelCapabilities,
        ModelLimits,
    )
    from membrane.capabilities._lookup import (
        CachePricing,
        default_output_reserve,
        get_cache_pricing,
        get_context_cap_for_model,
        get_model_capabilities,
        get_token_scale,
        has_prompt_caching,
        load_capability_map,
        provider_model_id,
        resolve_model_id,
    )

# The capability map (its parser, its JSON) loads on the first lookup by model id: a compiler
# with no model id never needs it, and a cold start skips it.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "membrane.capabilities._limits": (
        "DEFAULT_RESERVE_CEILING",
        "DEFAULT_RESERVE_SHARE",
        "ModelCapabilities",
        "ModelLimits",
    ),
    "membrane.capabilities._lookup": (
        "CachePricing",
        "default_output_reserve",
        "get_cache_pricing",
        "get_context_cap_for_model",
        "get_model_capabilities",
        "get_token_scale",
        "has_prompt_caching",
        "load_capability_map",
        "provider_model_id",
        "resolve_model_id",
    ),
}

__all__ = [
    "DEFAULT_RESERVE_CEILING",
    "DEFAULT_RESERVE_SHARE",
    "CachePricing",
    "ModelCapabilities",
    "ModelLimits",
    "default_output_reserve",
    "get_cache_pricing",
    "get_context_cap_for_model",
    "get_model_capabilities",
    "get_token_scale",
    "has_prompt_caching",
    "load_capability_map",
    "provider_model_id",
    "resolve_model_id",
]

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)
