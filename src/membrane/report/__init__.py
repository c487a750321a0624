"""The typed evidence of one compile, and the ``metadata`` dict rendered from it.

A :class:`CompileReport` is composed of the stages' own fragments (:class:`WindowReport`,
:class:`FitReport`, :class:`CacheReport`, :class:`AgentReport`, ...). Every public metadata key
is declared once, in ``_keys``, beside the field it renders; ``metadata()`` and
``from_metadata()`` both go through that table.
"""

from __future__ import annotations

from membrane.report._compile import CompileReport, ResultView
from membrane.report._fragments import (
    AgentReport,
    CacheReport,
    CompileMetrics,
    FitReport,
    LabelReport,
    PolicyReport,
    StoreReport,
    TurnReport,
    WindowReport,
)
from membrane.report._keys import CACHE_KEYS, FIREWALL_STATS, MetadataView, render_cache

__all__ = [
    "CACHE_KEYS",
    "FIREWALL_STATS",
    "AgentReport",
    "CacheReport",
    "CompileMetrics",
    "CompileReport",
    "FitReport",
    "LabelReport",
    "MetadataView",
    "PolicyReport",
    "ResultView",
    "StoreReport",
    "TurnReport",
    "WindowReport",
    "render_cache",
]
