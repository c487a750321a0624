"""Amazon Bedrock Converse requests, with ``cachePoint`` blocks where cached prefixes end."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from membrane.errors import InvalidInputError
from membrane.messages import Image, Part, Text, ToolCall, ToolResult
from membrane.providers._agent import bedrock_tools, output_cap, read_tools, tools_reach_cache
from membrane.providers._convert import (
    CompiledPrompt,
    Location,
    cache_anchors,
    parse_data_url,
    read_with_cuts,
    render_turns,
    request_model,
    require_end_placement,
)
from membrane.report import MetadataView

__all__ = ["MAX_CACHE_POINTS", "bedrock_converse_request"]

MAX_CACHE_POINTS = 4
"""Most ``cachePoint`` blocks Bedrock accepts in one request (tools included)."""

_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}
_TOOL_ID = re.compile(r"[a-zA-Z0-9_-]+")
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def _image(image: Image, where: str) -> dict[str, Any]:
    if image.url.startswith("data:"):
        media_type, data = parse_data_url(image.url, where)
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInputError(
                f"{where}: the image data is not valid base64", field=where
            ) from None
        source: dict[str, Any] = {"bytes": raw}
    elif image.url.startswith("s3://"):
        media_type = {"jpg": "image/jpeg"}.get(
            ext := image.url.rsplit(".", 1)[-1].lower(), f"image/{ext}"
        )
        source = {"s3Location": {"uri": image.url}}
    else:
        raise InvalidInputError(
            f"{where}: Bedrock cannot fetch image URLs; pass the image as a data: URL or an "
            "s3:// URI",
            field=where,
        )
    fmt = _FORMATS.get(media_type.lower())
    if fmt is None:
        raise InvalidInputError(
            f"{where}: Bedrock takes png, jpeg, gif or webp images, not {media_type!r}",
            field=where,
        )
    return {"image": {"format": fmt, "source": source}}


def _check_tool(call_id: str, name: str | None, where: str) -> None:
    if not _TOOL_ID.fullmatch(call_id):
        raise InvalidInputError(
            f"{where}: Bedrock tool ids may hold only letters, digits, '_' and '-' "
            f"(got {call_id!r})",
            field=where,
        )
    if name is not None:
        _check_tool_name(name, where)


def _check_tool_name(name: str, where: str) -> None:
    if not _TOOL_NAME.fullmatch(name):
        raise InvalidInputError(
            f"{where}: Bedrock tool names are 1-64 letters, digits, '_' or '-' (got {name!r})",
            field=where,
        )


def _block(part: Part, where: str) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"text": part.text}
    if isinstance(part, Image):
        return _image(part, where)
    if isinstance(part, ToolCall):
        _check_tool(part.id, part.name, where)
        return {"toolUse": {"toolUseId": part.id, "name": part.name, "input": part.arguments}}
    if isinstance(part, ToolResult):
        _check_tool(part.call_id, None, where)
        if isinstance(part.content, str):
            content = [{"text": part.content}] if part.content else []
        else:
            content = [_block(p, where) for p in part.content]
        block: dict[str, Any] = {"toolUseId": part.call_id, "content": content}
        if part.is_error:
            block["status"] = "error"
        return {"toolResult": block}
    raise InvalidInputError(
        f"{where}: content block of type {part.block.get('type')!r} has no Bedrock Converse "
        "equivalent",
        field=where,
    )


def _insert_cache_points(
    system: list[dict[str, Any]],
    turns: list[dict[str, Any]],
    locations: list[Location | None],
    ttl: str,
) -> None:
    """Put a ``cachePoint`` block after each located block."""
    point: dict[str, Any] = {"type": "default"}
    if ttl == "1h":
        point["ttl"] = "1h"
    # Insert from the back so earlier positions stay valid.
    for section, m, b in sorted({loc for loc in locations if loc is not None}, reverse=True):
        target = system if section == "system" else turns[m]["content"]
        target.insert(b + 1, {"cachePoint": dict(point)})


def bedrock_converse_request(
    result: CompiledPrompt,
    *,
    model_id: str | None = None,
    ttl: str = "5m",
    max_cache_points: int = MAX_CACHE_POINTS,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """Keyword arguments for Bedrock Runtime ``converse``: ``system`` and ``messages``.

    ``model_id`` is the Bedrock model or inference-profile id; when given it is included as
    ``modelId`` and used for the cache lookup instead of ``metadata["model_id"]``. Tool calls
    become ``toolUse`` blocks, tool results ``toolResult`` blocks in a user turn, and images
    ``image`` blocks with raw bytes (from data: URLs) or an S3 location; Bedrock cannot fetch
    http URLs. A ``cachePoint`` block follows the last block of each cached prefix in
    ``metadata["cache_breakpoints"]`` that reaches the model's minimum, at most
    ``max_cache_points`` of them. Needs end placement; ``ttl`` is ``"5m"`` or ``"1h"``.
    A Claude model has several Bedrock ids (regional inference profiles), so ``modelId`` is
    never guessed from the result. A message's ``name`` becomes a ``"<name>: "`` label in
    front of its text, because Converse has no speaker field.

    The result's ``tools`` go in ``toolConfig``, followed by a ``cachePoint`` (one of the
    ``max_cache_points``) when they alone reach the model's minimum. ``inferenceConfig``'s
    ``maxTokens`` is ``max_tokens``, else the ``reserve_output_tokens`` you passed to compile;
    without either there is no ``inferenceConfig`` and Bedrock applies the model's default.
    """
    if ttl not in ("5m", "1h"):
        raise InvalidInputError(f"ttl must be '5m' or '1h', got {ttl!r}", field="ttl")
    if not isinstance(max_cache_points, int) or not 0 <= max_cache_points <= MAX_CACHE_POINTS:
        raise InvalidInputError(
            f"max_cache_points must be between 0 and {MAX_CACHE_POINTS}",
            field="max_cache_points",
        )
    require_end_placement(result, "bedrock_converse_request")
    breakpoints, messages = read_with_cuts(result)
    system, out, ends = render_turns(
        messages,
        provider="Bedrock",
        system_block=lambda part, _where: {"text": part.text},
        block=_block,
    )
    lookup_id = model_id if model_id is not None else MetadataView(result.metadata).model_id
    specs = read_tools(result)
    for i, spec in enumerate(specs):
        _check_tool_name(spec.name, f"result.tools[{i}]")
    mark_tools = bool(specs) and max_cache_points > 0 and tools_reach_cache(result, lookup_id)
    limit = max_cache_points - 1 if mark_tools else max_cache_points
    anchors = cache_anchors(breakpoints, messages, result.metadata, lookup_id, limit)
    _insert_cache_points(system, out, [ends.get(a) for a in anchors], ttl)

    request = {} if model_id is None else request_model(result, model_id, "bedrock", "modelId")
    if system:
        request["system"] = system
    request["messages"] = out
    if specs:
        point = {"type": "default", **({"ttl": "1h"} if ttl == "1h" else {})}
        request["toolConfig"] = bedrock_tools(specs, point if mark_tools else None)
    cap = max_tokens if max_tokens is not None else output_cap(result)
    if cap is not None:
        request["inferenceConfig"] = {"maxTokens": cap}
    return request
