"""An agent request's other inputs: tool definitions, images and the output reserve.

They decide how much of the context window the messages may use. The window is the model's
context cap from the capability map. The output reserve is the caller's
``reserve_output_tokens`` or, by default, :func:`membrane.capabilities.default_output_reserve`
(a tenth of the window up to 16,384 tokens; for a model that reasons by default, at least its
provider's reasoning reserve; never over the model's maximum output). The prompt budget is the
smaller of ``max_tokens``, the window less the reserve (so prompt + reserve never exceeds the
window) and the provider's own input limit where it has one. An unknown model has no known
window: its budget is ``max_tokens`` and only an explicit reserve is reported. The request
builders send a reserve as the output cap only when the caller named it.

Tool definitions lead the cached prefix; their counted tokens come off the budget before any
message is placed. Images are priced per message by :class:`membrane.messages.ImageCost`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from membrane import capabilities as capability_map
from membrane.capabilities import DEFAULT_RESERVE_CEILING, DEFAULT_RESERVE_SHARE, ModelCapabilities
from membrane.compile_state import StateView
from membrane.errors import InvalidInputError
from membrane.messages import (
    MAX_IMAGE_SIDE,
    ImageCost,
    ToolSpec,
    normalize_tools,
    tools_fingerprint,
    tools_overhead,
    tools_text,
)

__all__ = [
    "DEFAULT_RESERVE_CEILING",
    "DEFAULT_RESERVE_SHARE",
    "AgentInputs",
    "agent_inputs",
    "check_tools_change",
]


@dataclass(frozen=True)
class AgentInputs:
    """Tools, image pricing and reserve of one compile, and the budget they leave."""

    tools: tuple[ToolSpec, ...] = ()
    tools_tokens: int = 0
    images: ImageCost = field(default_factory=lambda: ImageCost(None))
    reserve: int | None = None
    window: int | None = None
    # The reserve is Membrane's default, not the caller's (the builders do not send it).
    reserve_default: bool = False
    input_limit: int | None = None

    def prompt_budget(self, max_tokens: int) -> int:
        """The prompt's budget in provider tokens: ``max_tokens`` within window - reserve and
        within the provider's input limit."""
        budget = max_tokens
        if self.window is not None:
            budget = min(budget, max(self.window - (self.reserve or 0), 1))
        if self.input_limit is not None:
            budget = min(budget, self.input_limit)
        return budget


def agent_inputs(
    *,
    tools: object,
    image_sizes: Mapping[str, tuple[int, int]] | None,
    reserve_output_tokens: int | None,
    capabilities: ModelCapabilities | None,
    model_id: str | None,
    count: Callable[[str], int],
) -> AgentInputs:
    """Check and read the agent arguments of one compile."""
    specs = normalize_tools(tools)
    provider = capabilities.provider if capabilities is not None else None
    window = capabilities.context_cap if capabilities is not None else None
    tokens = count(tools_text(specs)) + tools_overhead(provider, specs) if specs else 0
    reserve = _reserve(reserve_output_tokens, capabilities, window)
    return AgentInputs(
        tools=specs,
        tools_tokens=tokens,
        images=ImageCost(provider, model_id, _check_sizes(image_sizes)),
        reserve=reserve,
        window=window,
        reserve_default=reserve_output_tokens is None and reserve is not None,
        input_limit=capabilities.max_input_tokens if capabilities is not None else None,
    )


def _reserve(
    requested: int | None, capabilities: ModelCapabilities | None, window: int | None
) -> int | None:
    if requested is not None:
        if isinstance(requested, bool) or not isinstance(requested, int) or requested < 0:
            raise InvalidInputError(
                f"reserve_output_tokens must be a non-negative integer, got {requested!r}",
                field="reserve_output_tokens",
            )
        if window is not None and requested >= window:
            raise InvalidInputError(
                f"reserve_output_tokens={requested} leaves no room for the prompt in the "
                f"model's {window}-token context window",
                field="reserve_output_tokens",
            )
        return requested
    if capabilities is None:  # no model named: the capability map need not load
        return None
    return capability_map.default_output_reserve(capabilities)


def _check_sizes(sizes: Mapping[str, tuple[int, int]] | None) -> dict[str, tuple[int, int]]:
    if sizes is None:
        return {}
    if not isinstance(sizes, Mapping):
        raise InvalidInputError(
            "image_sizes must map image URLs to (width, height) pairs", field="image_sizes"
        )
    out = {}
    for url, size in sizes.items():
        ok = (
            isinstance(url, str)
            and isinstance(size, (tuple, list))
            and len(size) == 2
            and all(
                isinstance(v, int) and not isinstance(v, bool) and 0 < v <= MAX_IMAGE_SIDE
                for v in size
            )
        )
        if not ok:
            raise InvalidInputError(
                f"image_sizes[{url!r}] must be a (width, height) pair of positive integers of "
                f"at most {MAX_IMAGE_SIDE:,} pixels, got {_short(size)}",
                field="image_sizes",
            )
        out[url] = (int(size[0]), int(size[1]))
    return out


def _short(value: object) -> str:
    """``value`` shown in a message, cut short (a 400-digit int is not worth printing)."""
    try:
        text = repr(value)
    except ValueError:  # an int too long to print
        return f"a {type(value).__name__}"
    return text if len(text) <= 60 else text[:57] + "..."


def check_tools_change(agent: AgentInputs, state: StateView) -> bool:
    """Whether this conversation's tools differ from its last compile's (a cache break).

    Only compiles with tools read or write the tools' fingerprint, the ``tools`` field of the
    conversation's state (so it costs no store round trip of its own).
    """
    if not agent.tools:
        return False
    fingerprint = tools_fingerprint(agent.tools)
    before = state.conversation_state.get("tools")
    state.write_conversation_state({"tools": fingerprint})
    return isinstance(before, str) and before != fingerprint
