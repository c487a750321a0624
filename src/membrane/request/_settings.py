"""The compiler's options, checked once when it is built, as one frozen record."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

from membrane import capabilities as capability_map
from membrane import config
from membrane.capabilities import ModelCapabilities, ModelLimits
from membrane.messages import check_text
from membrane.records import TextCapSetting, check_text_cap
from membrane.request._checks import (
    check_fraction,
    check_non_negative_int,
    check_placement,
    check_positive_int,
    check_scale,
)
from membrane.stages.final import FinalSettings
from membrane.stages.window import WindowSettings

__all__ = ["CompilerSettings", "Placement"]

Placement = Literal["end", "system"]


@dataclass(frozen=True, slots=True)
class CompilerSettings:
    """What :class:`~membrane.ContextCompiler` was built with, checked.

    ``window`` and ``final`` are the parts the history-window and final-message stages read.
    """

    max_tokens: int
    model_id: str | None
    core_content: str
    include_interrupt_instruction: bool
    memory_placement: Placement
    #: The caller's fixed ``token_scale`` (None: observed per model).
    fixed_token_scale: float | None
    preflight_analyst_model: str
    #: ``memory_text_max_chars``, checked.
    text_caps: TextCapSetting
    window: WindowSettings
    final: FinalSettings
    #: The caller's window and output limit for the model; they win over the capability map.
    model_limits: ModelLimits | None = None
    #: What the compiler's caches may hold, in bytes of real memory.
    cache_bytes: int = config.DEFAULT_CACHE_BYTES

    @classmethod
    def build(
        cls,
        *,
        max_tokens: int,
        model_id: str | None,
        core_content: str,
        include_interrupt_instruction: bool,
        memory_placement: Placement,
        trim_history: bool,
        history_share: float,
        recall_evicted_history: bool,
        rank_fusion: bool,
        message_overhead_tokens: int,
        thin_before_drop: bool,
        keyframe_tokens: int,
        eviction_index: bool,
        index_share: float,
        token_scale: float | None,
        preflight_analyst_model: str | None,
        memory_text_max_chars: TextCapSetting,
        model_limits: ModelLimits | None = None,
        cache_bytes: int = config.DEFAULT_CACHE_BYTES,
    ) -> CompilerSettings:
        """Check every option (the constructor's keywords); raises
        :class:`~membrane.InvalidInputError` naming the bad one."""
        _check_sizes(max_tokens, message_overhead_tokens, keyframe_tokens, cache_bytes)
        check_placement(memory_placement)
        check_fraction("history_share", history_share, allow_zero=False)
        check_fraction("index_share", index_share, allow_zero=True)
        check_scale(token_scale)
        check_text(core_content, "core_content")
        _check_limits(model_limits)
        return cls(
            max_tokens=max_tokens,
            model_id=model_id,
            core_content=core_content,
            include_interrupt_instruction=include_interrupt_instruction,
            memory_placement=memory_placement,
            fixed_token_scale=float(token_scale) if token_scale is not None else None,
            preflight_analyst_model=preflight_analyst_model or config.preflight_analyst_model(),
            text_caps=check_text_cap(memory_text_max_chars),
            window=WindowSettings(
                trim_history=trim_history,
                history_share=history_share,
                eviction_index=eviction_index,
                index_share=index_share,
                keyframe_tokens=keyframe_tokens,
                message_overhead_tokens=message_overhead_tokens,
            ),
            final=FinalSettings(
                recall_evicted_history=recall_evicted_history,
                rank_fusion=rank_fusion,
                thin_before_drop=thin_before_drop,
                keyframe_tokens=keyframe_tokens,
                message_overhead_tokens=message_overhead_tokens,
            ),
            model_limits=model_limits,
            cache_bytes=cache_bytes,
        )

    def capabilities(self) -> ModelCapabilities | None:
        """The model's capabilities (the caller's ``model_limits`` over the map); None for a
        compiler with neither a model id nor limits."""
        if not self.model_id and self.model_limits is None:
            return None
        return capability_map.get_model_capabilities(self.model_id, self.model_limits)

    @property
    def message_overhead_tokens(self) -> int:
        return self.window.message_overhead_tokens

    def option(self, name: str) -> Any:
        """The option called ``name`` (a constructor keyword), wherever it is kept."""
        for part in (self, self.window, self.final):
            if name in _names(type(part)):
                return getattr(part, name)
        raise AttributeError(name)


def _names(kind: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(kind))


def _check_limits(limits: object) -> None:
    if limits is not None and not isinstance(limits, ModelLimits):
        raise TypeError(f"model_limits must be a membrane.ModelLimits, got {type(limits).__name__}")


def _check_sizes(
    max_tokens: int, message_overhead_tokens: int, keyframe_tokens: int, cache_bytes: int
) -> None:
    check_positive_int("max_tokens", max_tokens)
    check_non_negative_int("message_overhead_tokens", message_overhead_tokens)
    check_positive_int("keyframe_tokens", keyframe_tokens)
    check_non_negative_int("cache_bytes", cache_bytes)
