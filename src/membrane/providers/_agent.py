"""The agent parts of a request: tool definitions per provider, the output cap, the tools' marker.

The tools come from ``result.tools`` (a :class:`~membrane.CompileResult` holds the ones it
counted; a result built by hand may hold OpenAI or Anthropic tool dicts, or none). The output
cap is ``metadata["reserve_output_tokens"]`` when the caller asked for it: a compile marks
Membrane's own default reserve with ``metadata["reserve_output_default"]``, and that one only
shapes the prompt budget, because a cap the caller never chose truncates answers (a reasoning
model's thinking counts against it).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from membrane.capabilities import get_cache_pricing, get_token_scale
from membrane.errors import InvalidInputError
from membrane.messages import ToolSpec, normalize_tools
from membrane.providers._convert import CompiledPrompt
from membrane.report import MetadataView

__all__ = [
    "anthropic_tools",
    "bedrock_tools",
    "gemini_tools",
    "openai_tools",
    "output_cap",
    "read_tools",
    "reserve_of",
    "tools_reach_cache",
]


def read_tools(result: CompiledPrompt) -> tuple[ToolSpec, ...]:
    """The result's tool definitions (none when it has no ``tools``)."""
    return normalize_tools(getattr(result, "tools", None) or None, field="result.tools")


def reserve_of(result: CompiledPrompt) -> int | None:
    """The output reserve the compile kept, or None."""
    value = MetadataView(result.metadata).reserve_output_tokens
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(
            "metadata['reserve_output_tokens'] must be a non-negative integer",
            field="reserve_output_tokens",
        )
    return value or None


def output_cap(result: CompiledPrompt) -> int | None:
    """The output cap the caller asked for (``compile(reserve_output_tokens=...)``), or None.

    A result built by hand with ``reserve_output_tokens`` and no ``reserve_output_default``
    counts as asked for.
    """
    reserve = reserve_of(result)
    return None if MetadataView(result.metadata).reserve_output_default is True else reserve


def tools_reach_cache(result: CompiledPrompt, model_id: object) -> bool:
    """Whether the tools alone reach the model's minimum cacheable prefix (marked caching)."""
    pricing = get_cache_pricing(model_id) if isinstance(model_id, str) else None
    tokens = MetadataView(result.metadata).tools_tokens
    if pricing is None or pricing.mode != "marked" or not isinstance(tokens, int):
        return False
    scale = MetadataView(result.metadata).token_scale
    if not isinstance(scale, (int, float)) or isinstance(scale, bool) or scale <= 0:
        scale = get_token_scale(str(model_id))
    return tokens * float(scale) >= pricing.min_tokens


def _schema(spec: ToolSpec) -> dict[str, Any]:
    return copy.deepcopy(dict(spec.parameters))


def openai_tools(specs: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    """Chat Completions function tools."""
    out = []
    for spec in specs:
        function: dict[str, Any] = {"name": spec.name, "description": spec.description}
        function["parameters"] = _schema(spec)
        if spec.strict is not None:
            function["strict"] = spec.strict
        out.append({"type": "function", "function": function})
    return out


def anthropic_tools(
    specs: tuple[ToolSpec, ...], marker: Mapping[str, str] | None
) -> list[dict[str, Any]]:
    """Messages API custom tools; ``marker`` (a ``cache_control``) goes on the last one."""
    out = []
    for spec in specs:
        tool: dict[str, Any] = {"name": spec.name, "description": spec.description}
        tool["input_schema"] = _schema(spec)
        if spec.strict is not None:
            tool["strict"] = spec.strict
        out.append(tool)
    if out and marker is not None:
        out[-1]["cache_control"] = dict(marker)
    return out


def bedrock_tools(
    specs: tuple[ToolSpec, ...], cache_point: Mapping[str, str] | None
) -> dict[str, Any]:
    """A Converse ``toolConfig``; ``cache_point`` adds a ``cachePoint`` after the tools."""
    tools: list[dict[str, Any]] = [
        {
            "toolSpec": {
                "name": spec.name,
                "description": spec.description,
                "inputSchema": {"json": _schema(spec)},
            }
        }
        for spec in specs
    ]
    if cache_point is not None:
        tools.append({"cachePoint": dict(cache_point)})
    return {"tools": tools}


def gemini_tools(specs: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    """``generateContent`` tools: one ``functionDeclarations`` list (JSON Schema parameters)."""
    declarations = [
        {
            "name": spec.name,
            "description": spec.description,
            "parametersJsonSchema": _schema(spec),
        }
        for spec in specs
    ]
    return [{"functionDeclarations": declarations}]
