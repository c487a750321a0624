"""The typed spine's front: the compiler's settings and one compile's request.

:class:`CompilerSettings` is checked once when a compiler is built; :func:`normalise` turns one
compile's grouped arguments (:class:`CompileArgs`) into the :class:`CompileRequest` the stages
read. See docs/architecture.md for the whole flow.
"""

from __future__ import annotations

from membrane.request._offer import compress_offer, normalise_offer, oversized_middle
from membrane.request._request import (
    AgentArgs,
    CompileArgs,
    CompileRequest,
    HistoryArgs,
    MemoryArgs,
    TurnArgs,
    normalise,
)
from membrane.request._settings import CompilerSettings, Placement
from membrane.stages.values import CallOptions

__all__ = [
    "AgentArgs",
    "CallOptions",
    "CompileArgs",
    "CompileRequest",
    "CompilerSettings",
    "HistoryArgs",
    "MemoryArgs",
    "Placement",
    "TurnArgs",
    "compress_offer",
    "normalise",
    "normalise_offer",
    "oversized_middle",
]
