"""What a compile returns: the messages, the citation maps, the evidence, the region spans."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

from membrane.messages import message_text
from membrane.regions import Region, RegionMarks
from membrane.report import CompileReport

__all__ = ["ChatMessage", "CompileResult", "CostQuote"]

ChatMessage: TypeAlias = Any
"""One compiled message: a dict in Chat Completions shape, or in the Anthropic block shape your
history used. Typed ``Any`` so that ``result.messages`` passes, as it is, to an SDK's message
parameter (``chat.completions.create(messages=result.messages)`` type-checks); each SDK
describes its messages with its own TypedDicts, which no one dict type satisfies."""


@dataclass(frozen=True)
class CompileResult:
    """A compiled prompt and the evidence of how it was built.

    ``messages`` are ready for an OpenAI-style API (see :data:`ChatMessage`); ``ref_map`` maps
    every ``[Mem:N]`` in them to the caller's record id and ``ref_map_type`` to the record's
    kind. ``regions`` says where each region of the prompt sits in ``messages`` (recorded as
    the layout wrote them). ``tools`` are the tool definitions counted with the prompt; the
    request builders send them in each provider's shape.
    """

    messages: list[ChatMessage]
    ref_map: dict[int, str]
    ref_map_type: dict[int, str]
    metadata: dict[str, Any]
    debug_trace: dict[str, Any] | None = None
    region_marks: RegionMarks | None = field(default=None, compare=False, repr=False)
    tools: list[dict[str, Any]] = field(default_factory=list)
    """The tool definitions compiled with the prompt, in OpenAI function shape."""
    compile_report: CompileReport | None = field(default=None, compare=False, repr=False)
    """The typed report the compiler built; ``metadata`` is rendered from it."""

    @functools.cached_property
    def report(self) -> CompileReport:
        """The typed evidence behind ``metadata`` (read back from it for a result built by
        hand)."""
        if self.compile_report is not None:
            return self.compile_report
        return CompileReport.from_metadata(self.metadata)

    def with_report(self, report: CompileReport) -> CompileResult:
        """This result with ``report`` (and the ``metadata`` rendered from it)."""
        return replace(self, metadata=report.metadata(), compile_report=report)

    @functools.cached_property
    def regions(self) -> tuple[Region, ...]:
        """Each region's span in ``messages`` (empty for a result built by hand)."""
        if self.region_marks is None or not self.messages:
            return ()
        return self.region_marks.regions([len(message_text(m)) for m in self.messages])

    def to_debug_dict(self, *, environment: bool = False) -> dict[str, Any]:
        """A JSON-friendly snapshot (message roles and sizes, maps, metadata) for logging.

        ``environment=True`` adds ``"environment"``: a CPU-load sample of this machine taken
        now (:func:`membrane.stress.sample_load`; needs the ``stress`` extra, psutil).
        """
        snapshot: dict[str, Any] = {
            "messages": [
                {"role": m.get("role"), "chars": len(message_text(m))} for m in self.messages
            ],
            "ref_map": {str(k): v for k, v in self.ref_map.items()},
            "ref_map_type": {str(k): v for k, v in self.ref_map_type.items()},
            "metadata": dict(self.metadata),
            "debug_trace": self.debug_trace,
        }
        if environment:
            from membrane.stress import sample_load  # the stress module, only when asked

            snapshot["environment"] = sample_load()
        return snapshot


@dataclass(frozen=True, slots=True)
class CostQuote:
    """An input-cost quote for a compiled prompt."""

    total_tokens: int
    estimated_cost_usd: float
    price_per_1k_input_tokens: float
    trimming_strategies: tuple[str, ...]
    compile_result: CompileResult
