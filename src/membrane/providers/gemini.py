"""Gemini ``generateContent`` request bodies."""

from __future__ import annotations

import json
import mimetypes
from typing import Any

from membrane.errors import InvalidInputError
from membrane.messages import Image, Part, Text, ToolCall, ToolResult
from membrane.providers._agent import gemini_tools, output_cap, read_tools
from membrane.providers._convert import (
    CompiledPrompt,
    label_speakers,
    parse_data_url,
    read_messages,
    render_turns,
    require_end_placement,
)

__all__ = ["gemini_request"]


def _image(image: Image, where: str) -> dict[str, Any]:
    if image.url.startswith("data:"):
        media_type, data = parse_data_url(image.url, where)
        return {"inlineData": {"mimeType": media_type, "data": data}}
    file_data = {"fileUri": image.url}
    guessed, _ = mimetypes.guess_type(image.url.split("?", 1)[0])
    if guessed:
        file_data["mimeType"] = guessed
    return {"fileData": file_data}


def _response(result: ToolResult, where: str) -> dict[str, Any]:
    if isinstance(result.content, str):
        text = result.content
    else:
        if any(isinstance(p, Image) for p in result.content):
            raise InvalidInputError(
                f"{where}: a Gemini function response carries JSON only, not images; send the "
                "image in a user message instead",
                field=where,
            )
        text = "\n".join(p.text for p in result.content if isinstance(p, Text))
    # A result that already is a JSON object is sent as that object; anything else goes under
    # "output" (or "error" for a failed call), the keys Gemini documents for function output.
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if isinstance(value, dict) and not result.is_error:
        return value
    return {"error" if result.is_error else "output": text}


def _part(part: Part, where: str) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"text": part.text}
    if isinstance(part, Image):
        return _image(part, where)
    if isinstance(part, ToolCall):
        return {"functionCall": {"id": part.id, "name": part.name, "args": part.arguments}}
    if isinstance(part, ToolResult):
        return {
            "functionResponse": {
                "id": part.call_id,
                "name": part.name,
                "response": _response(part, where),
            }
        }
    raise InvalidInputError(
        f"{where}: content block of type {part.block.get('type')!r} has no Gemini equivalent",
        field=where,
    )


def gemini_request(
    result: CompiledPrompt,
    *,
    thought_signature_fallback: str | None = None,
    max_output_tokens: int | None = None,
) -> dict[str, Any]:
    """A Gemini ``generateContent`` body: ``system_instruction`` and ``contents``.

    Assistant turns become role ``model``; tool calls become ``functionCall`` parts and tool
    results ``functionResponse`` parts in a user turn, named after their call. Gemini caches
    shared prefixes implicitly, so nothing is marked. Gemini 3 models refuse replayed
    function calls without a thought signature: a tool call dict may carry its own
    ``thought_signature``, and ``thought_signature_fallback`` is put on the first call of each
    model turn that has none (Google documents a placeholder value for history that did not
    come from Gemini). A message's ``name`` becomes a ``"<name>: "`` label in front of its
    text, because Gemini has no speaker field. The model is not part of the body (it goes in
    the URL, or as ``generate_content(model=...)`` in the SDK). Needs end placement. The
    result's ``tools`` become ``functionDeclarations`` (with ``parametersJsonSchema``), and
    ``generationConfig``'s ``maxOutputTokens`` is ``max_output_tokens``, else the
    ``reserve_output_tokens`` you passed to compile; without either there is no
    ``generationConfig`` and Gemini applies its own limit (thinking counts as output).
    """
    require_end_placement(result, "gemini_request")
    signed: set[str] = set()  # messages whose first tool call has had its signature

    def block(part: Part, where: str) -> dict[str, Any]:
        rendered = _part(part, where)
        if isinstance(part, ToolCall):
            # Of parallel calls only the first carries a signature.
            fallback = None if where in signed else thought_signature_fallback
            signature = part.thought_signature or fallback
            if signature:
                rendered["thoughtSignature"] = signature
            signed.add(where)
        return rendered

    system, turns, _ = render_turns(
        label_speakers(read_messages(result.messages), result.messages),
        provider="Gemini",
        system_block=lambda part, where: {"text": part.text},
        block=block,
    )
    contents = [
        {"role": "model" if turn["role"] == "assistant" else "user", "parts": turn["content"]}
        for turn in turns
    ]
    request: dict[str, Any] = {}
    specs = read_tools(result)
    if specs:
        request["tools"] = gemini_tools(specs)
    if system:
        request["system_instruction"] = {"parts": system}
    request["contents"] = contents
    cap = max_output_tokens if max_output_tokens is not None else output_cap(result)
    if cap is not None:
        request["generationConfig"] = {"maxOutputTokens": cap}
    return request
