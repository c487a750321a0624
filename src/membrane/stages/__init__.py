"""The compiler's stages, each usable on its own.

``layout`` builds the regions, ``history`` plans the cut, the eviction index and recall,
``firewall`` fits the middle into the budget, ``glaciator`` splits the stable prefix from the
dynamic tail, and ``preflight`` hands an oversized middle to the caller's compressor.
"""

from __future__ import annotations

from membrane.stages.firewall import PreFlightContextFirewall, fit_middle
from membrane.stages.glaciator import (
    MIN_GLACIATE_CACHE_TOKENS,
    GlaciatedPrompt,
    cache_metadata,
    glaciate,
)
from membrane.stages.history import HistoryTracker, reference_cut
from membrane.stages.layout import ContextLayoutEngine

__all__ = [
    "MIN_GLACIATE_CACHE_TOKENS",
    "ContextLayoutEngine",
    "GlaciatedPrompt",
    "HistoryTracker",
    "PreFlightContextFirewall",
    "cache_metadata",
    "fit_middle",
    "glaciate",
    "reference_cut",
]
