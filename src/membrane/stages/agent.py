"""An agent request's other inputs: tool definitions, images and the output reserve.

They decide how much of the context window the messages may use. The window is the model's
context cap from the capability map. The output reserve is the caller's
``reserve_output_tokens`` or, by default, a tenth of the window capped at 16,384 tokens, or the
model's maximum output when the map lists a smaller one; the prompt budget is then the smaller of
``max_tokens`` and the window less the reserve, so prompt + reserve never exceeds the window.
An unknown model has no known window: its budget is ``max_tokens`` and only an explicit reserve
is reported (and passed on by the request builders).

Tool definitions lead the cached prefix; their counted tokens come off the budget before any
message is placed. Images are priced per message by :class:`membrane.messages.ImageCost`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from membrane.capabilities import ModelCapabilities
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
from membrane.session import Session

__all__ = [
    "DEFAULT_RESERVE_CEILING",
    "DEFAULT_RESERVE_SHARE",
    "AgentInputs",
    "agent_inputs",
    "check_tools_change",
]

DEFAULT_RESERVE_SHARE = 0.1
"""Share of a known context window kept for the answer when the caller names no reserve."""

DEFAULT_RESERVE_CEILING = 16_384
"""Most tokens the default reserve keeps. A larger output cap makes the Anthropic SDK refuse a
non-streaming request (it expects such a request to run past ten minutes); callers who want
long answers name their reserve."""


@dataclass(frozen=True)
class AgentInputs:
    """Tools, image pricing and reserve of one compile, and the budget they leave."""

    tools: tuple[ToolSpec, ...] = ()
    tools_tokens: int = 0
    images: ImageCost = field(default_factory=lambda: ImageCost(None))
    reserve: int | None = None
    window: int | None = None

    def prompt_budget(self, max_tokens: int) -> int:
        """The prompt's budget in provider tokens: ``max_tokens`` within window - reserve."""
        if self.window is None:
            return max_tokens
        return min(max_tokens, max(self.window - (self.reserve or 0), 1))


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
    return AgentInputs(
        tools=specs,
        tools_tokens=tokens,
        images=ImageCost(provider, model_id, _check_sizes(image_sizes)),
        reserve=_reserve(reserve_output_tokens, capabilities, window),
        window=window,
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
    if window is None:
        return None
    share = min(math.ceil(window * DEFAULT_RESERVE_SHARE), DEFAULT_RESERVE_CEILING)
    most = capabilities.max_output_tokens if capabilities is not None else None
    return min(share, most) if most else share


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


def check_tools_change(agent: AgentInputs, session: Session) -> bool:
    """Whether this conversation's tools differ from its last compile's (a cache break).

    Only compiles with tools read or write the tools' fingerprint, the ``tools`` field of the
    conversation's state (so it costs no store round trip of its own).
    """
    if not agent.tools:
        return False
    fingerprint = tools_fingerprint(agent.tools)
    before = session.conversation_state.get("tools")
    session.write_conversation_state({"tools": fingerprint})
    return isinstance(before, str) and before != fingerprint
