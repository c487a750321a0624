"""What a model allows, as one lookup returns it and as a caller may override it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from membrane.capabilities._parse import CachePricing

__all__ = ["DEFAULT_RESERVE_CEILING", "DEFAULT_RESERVE_SHARE", "ModelCapabilities", "ModelLimits"]

DEFAULT_RESERVE_SHARE = 0.1
"""Share of a known context window kept for the answer when the caller names no reserve."""

DEFAULT_RESERVE_CEILING = 16_384
"""Most tokens the default reserve keeps for a model that does not reason by default. The
default reserve only shapes the prompt budget (no request builder sends it), so callers who
want long answers name their reserve."""


@dataclass(frozen=True, slots=True)
class ModelCapabilities:
    """What the capability map says about one model, from a single lookup.

    ``max_input_tokens`` is the provider's own limit on the prompt where it has one below the
    window (OpenAI's GPT-5 models); ``reasoning`` is true for models that think before
    answering by default, whose thinking counts against the output cap, and
    ``reasoning_reserve`` is their provider's documented room for it.
    """

    context_cap: int | None
    prompt_caching: bool
    cache_pricing: CachePricing | None
    max_output_tokens: int | None = None
    provider: str | None = None
    max_input_tokens: int | None = None
    reasoning: bool = False
    reasoning_reserve: int | None = None
    #: The request may mark where cached prefixes end (OpenAI's ``prompt_cache_breakpoint``).
    cache_breakpoints: bool = False


@dataclass(frozen=True, slots=True)
class ModelLimits:
    """A model's window and output limit as the caller knows them; these win over the map.

    For limits the map does not have or has wrong: a model served with a smaller window
    (Ollama's ``num_ctx``), a deployment's own output cap, or a framework's model profile.
    ``None`` leaves the map's figure.

    >>> ModelLimits.from_profile({"max_input_tokens": 200_000, "max_output_tokens": 64_000})
    ModelLimits(context_window=200000, max_output_tokens=64000, reasoning=None)
    """

    context_window: int | None = None
    max_output_tokens: int | None = None
    reasoning: bool | None = None

    def __post_init__(self) -> None:
        for name in ("context_window", "max_output_tokens"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value <= 0
            ):
                raise ValueError(f"ModelLimits.{name} must be a positive integer or None")
        if self.reasoning is not None and not isinstance(self.reasoning, bool):
            raise ValueError("ModelLimits.reasoning must be True, False or None")

    @classmethod
    def from_profile(cls, profile: Mapping[str, Any] | None) -> ModelLimits:
        """Limits from a framework's model profile (LangChain's ``model.profile`` keys:
        ``max_input_tokens``, which LangChain documents as the context window,
        ``max_output_tokens`` and ``reasoning_output``). Absent keys stay None."""
        profile = profile or {}

        def number(key: str) -> int | None:
            value = profile.get(key)
            ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
            return value if ok else None

        reasoning = profile.get("reasoning_output")
        return cls(
            context_window=number("max_input_tokens"),
            max_output_tokens=number("max_output_tokens"),
            reasoning=reasoning if isinstance(reasoning, bool) else None,
        )
