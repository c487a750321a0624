"""The typed evidence of one compile, and the ``metadata`` dict rendered from it.

A :class:`CompileReport` is composed of the stages' own fragments (:class:`WindowReport`,
:class:`TailReport`, :class:`CacheReport`, :class:`AgentReport`, ...). Every public metadata key
is declared once, in ``_keys``, beside the field it renders; ``metadata()`` and
``from_metadata()`` both go through that table.
"""

from __future__ import annotations

from membrane.report._compile import CompileReport
from membrane.report._fragments import (
    AgentReport,
    CacheReport,
    CompileMetrics,
    LabelReport,
    MetadataView,
    PolicyReport,
    StoreReport,
    TailReport,
    WindowReport,
)
from membrane.report._keys import CACHE_KEYS, FIREWALL_STATS, render_cache

__all__ = [
    "CACHE_KEYS",
    "FIREWALL_STATS",
    "AgentReport",
    "CacheReport",
    "CompileMetrics",
    "CompileReport",
    "LabelReport",
    "MetadataView",
    "PolicyReport",
    "StoreReport",
    "TailReport",
    "WindowReport",
    "render_cache",
]
