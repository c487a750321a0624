"""Tool definitions: read once in either accepted shape, counted, and rendered per provider.

Accepted: OpenAI function tools (``{"type": "function", "function": {"name", "description",
"parameters"}}``), the bare function object, and Anthropic tools (``{"name", "description",
"input_schema"}``). Each becomes a :class:`ToolSpec`; the request builders render the specs in
their provider's shape.

What is counted (:func:`tools_text`): each tool as one compact JSON line of its name,
description and parameter schema, which is what every provider receives. Providers render the
tools into the prompt their own way (OpenAI as a TypeScript-like namespace, Anthropic inside a
tool-use system prompt); the JSON is a little longer than OpenAI's rendering, and Anthropic adds
its tool-use system prompt, whose size is added as :func:`tools_overhead` (530 tokens, the
largest figure on https://docs.anthropic.com/en/docs/tool-use-pricing-and-tokens, read on
2026-12-01). What remains between this count and the provider's is absorbed by ``observe()``
calibration, like any other counting difference.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from membrane.errors import InvalidInputError
from membrane.messages._checks import find_lone_surrogate, has_lone_surrogate

__all__ = ["ToolSpec", "normalize_tools", "tools_fingerprint", "tools_overhead", "tools_text"]

_ANTHROPIC_TOOL_PROMPT_TOKENS = 530
_EMPTY_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool definition in neutral form; ``strict`` is OpenAI's flag when given."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    strict: bool | None = None

    def json_line(self) -> str:
        body = {"name": self.name, "description": self.description, "parameters": self.parameters}
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _spec(given: object, where: str) -> ToolSpec:
    if not isinstance(given, Mapping):
        raise InvalidInputError(f"{where} must be a tool definition dict", field=where)
    item: Mapping[str, Any] = given
    if item.get("type") == "function" and isinstance(item.get("function"), Mapping):
        item = item["function"]
    elif "type" in item and item.get("type") not in ("custom", "function"):
        raise InvalidInputError(
            f"{where} is a {item.get('type')!r} tool; only function tools (OpenAI shape) or "
            "Anthropic custom tools (name, description, input_schema) can be counted",
            field=where,
        )
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidInputError(f"{where} needs a 'name' string", field=where)
    description = item.get("description", "")
    if not isinstance(description, str):
        raise InvalidInputError(f"{where}: 'description' must be a string", field=where)
    schema = item.get("parameters", item.get("input_schema", _EMPTY_SCHEMA))
    if not isinstance(schema, Mapping):
        raise InvalidInputError(
            f"{where}: the parameter schema must be a JSON Schema object", field=where
        )
    strict = item.get("strict")
    spec = ToolSpec(name, description, dict(schema), strict if isinstance(strict, bool) else None)
    _check_json(spec, given, where)
    return spec


def _check_json(spec: ToolSpec, given: object, where: str) -> None:
    """``spec`` can be sent: it is JSON (no cycle, no set, bytes or NaN, nested at most as
    deep as the encoder goes) and UTF-8 can encode it."""
    try:
        line = spec.json_line()
    except (TypeError, ValueError, RecursionError) as exc:
        reason = "it nests too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise InvalidInputError(
            f"{where} must be JSON (dicts with string keys, lists, strings, finite numbers, "
            f"booleans, null) to be sent: {reason}",
            field=where,
        ) from None
    if has_lone_surrogate(line):
        found = find_lone_surrogate(given, where) or where
        raise InvalidInputError(
            f"{found} holds a lone surrogate (half of a UTF-16 pair), which no request can "
            "encode; decode the source text with errors='replace' or fix it",
            field=found,
        )


def normalize_tools(tools: object, *, field: str = "tools") -> tuple[ToolSpec, ...]:
    """Tool definitions read into :class:`ToolSpec` rows; names must be unique."""
    if tools is None:
        return ()
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Sequence):
        raise InvalidInputError(f"{field} must be a list of tool definitions", field=field)
    specs = tuple(_spec(item, f"{field}[{i}]") for i, item in enumerate(tools))
    seen: set[str] = set()
    for i, spec in enumerate(specs):
        if spec.name in seen:
            raise InvalidInputError(
                f"{field}[{i}] repeats the tool name {spec.name!r}", field=f"{field}[{i}]"
            )
        seen.add(spec.name)
    return specs


def tools_text(specs: Sequence[ToolSpec]) -> str:
    """The text counted for the tools: one compact JSON line per tool, in the caller's order."""
    return "\n".join(spec.json_line() for spec in specs)


def tools_overhead(provider: str | None, specs: Sequence[ToolSpec]) -> int:
    """Tokens a provider adds once per request that has tools (unknown: the largest)."""
    if not specs or provider in ("openai", "google"):
        return 0
    return _ANTHROPIC_TOOL_PROMPT_TOKENS


def tools_fingerprint(specs: Sequence[ToolSpec]) -> str:
    """A short digest of the tools as sent: a new one means the cached prefix starts over."""
    return hashlib.sha256(tools_text(specs).encode("utf-8")).hexdigest()[:16]
