"""OpenAI Responses API requests: the compiled messages as ``input`` items."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from membrane.errors import InvalidInputError
from membrane.messages import ITEMS_KEY, Image, Part, Text, ToolCall, ToolResult, ToolSpec
from membrane.providers._agent import output_cap, read_tools
from membrane.providers._convert import CompiledPrompt, Message, read_with_cuts, request_model
from membrane.providers._openai_cache import explicit_marks, marked

__all__ = ["openai_responses_request"]


def _content_part(part: Part, where: str) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "input_text", "text": part.text}
    if isinstance(part, Image):
        return {"type": "input_image", "image_url": part.url, "detail": "auto"}
    raise InvalidInputError(
        f"{where}: a {type(part).__name__} part cannot go in a Responses message", field=where
    )


def _tool_output(part: ToolResult, where: str) -> dict[str, Any]:
    output: str | list[dict[str, Any]]
    if isinstance(part.content, str):
        output = part.content
    else:
        output = [_content_part(p, where) for p in part.content]
    return {"type": "function_call_output", "call_id": part.call_id, "output": output}


def _call(part: ToolCall) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": part.id,
        "name": part.name,
        "arguments": json.dumps(part.arguments, ensure_ascii=False),
    }


def _message(
    role: str, parts: list[Part], text_only: str | None, where: str, marks: list[bool]
) -> dict[str, Any]:
    """One message item; content is a string when the message was one string (or assistant),
    unless a part of it ends a cached prefix: then the parts, that one marked."""
    if any(marks):
        content = [_content_part(p, where) for p in parts]
        return {
            "role": role,
            "content": [marked(c, m) for c, m in zip(content, marks, strict=True)],
        }
    if text_only is not None:
        return {"role": role, "content": text_only}
    if role == "assistant":
        if not all(isinstance(p, Text) for p in parts):
            raise InvalidInputError(
                f"{where}: an assistant message in Responses input holds text only", field=where
            )
        return {"role": role, "content": "\n".join(p.text for p in parts if isinstance(p, Text))}
    return {"role": role, "content": [_content_part(p, where) for p in parts]}


def _markable(msg: Message, raw: Mapping[str, Any]) -> bool:
    """A system, developer or user message of text and images (an assistant's text is
    ``output_text``, which takes no breakpoint)."""
    return (
        msg.role != "assistant"
        and ITEMS_KEY not in raw
        and all(isinstance(p, (Text, Image)) for p in msg.parts)
    )


def _items(msg: Message, raw: Mapping[str, Any], marks: set[int]) -> list[dict[str, Any]]:
    kept = raw.get(ITEMS_KEY)
    if isinstance(kept, list):  # read from Responses items: they go back as they came
        return copy.deepcopy(kept)
    where = f"messages[{msg.index}]"
    role = "developer" if raw.get("role") == "developer" else msg.role
    items: list[dict[str, Any]] = []
    pending: list[Part] = []
    flags: list[bool] = []

    def flush() -> None:
        if pending:
            whole = raw.get("content") if isinstance(raw.get("content"), str) else None
            text_only = None
            if whole is not None and all(isinstance(p, Text) for p in pending):
                # String content (maybe cut and labelled): the same string, pieces rejoined.
                text_only = "".join(p.text for p in pending if isinstance(p, Text))
            items.append(_message(role, list(pending), text_only, where, list(flags)))
            pending.clear()
            flags.clear()

    for index, part in enumerate(msg.parts):
        flags.append(index in marks)
        if isinstance(part, ToolCall):
            flags.pop()
            flush()
            items.append(_call(part))
        elif isinstance(part, ToolResult):
            flags.pop()
            flush()
            items.append(_tool_output(part, where))
        elif isinstance(part, (Text, Image)):
            pending.append(part)
        else:
            raise InvalidInputError(
                f"{where}: content block of type {part.block.get('type')!r} has no Responses "
                "API equivalent",
                field=where,
            )
    flush()
    return items


def _tools(specs: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    """Responses API function tools (flat: name, description, parameters, strict)."""
    return [
        {
            "type": "function",
            "name": spec.name,
            "description": spec.description,
            "parameters": copy.deepcopy(dict(spec.parameters)),
            "strict": spec.strict,
        }
        for spec in specs
    ]


# Server-held conversation state: the server would put what it holds before the input.
_SERVER_STATE = ("previous_response_id", "conversation")


def _check_arguments(prompt_cache_key: object, extra: Mapping[str, Any]) -> None:
    if prompt_cache_key is not None and not isinstance(prompt_cache_key, str):
        raise InvalidInputError("prompt_cache_key must be a string", field="prompt_cache_key")
    if "input" in extra:
        raise InvalidInputError(
            "input comes from the compile result; do not pass it again", field="input"
        )
    for name in _SERVER_STATE:
        if extra.get(name) is not None:
            raise InvalidInputError(
                f"{name} makes the server put the conversation it holds in front of this "
                "input, but the input already holds the history Membrane compiled: the model "
                "would read it twice and the prompt would outgrow the budget. Send the "
                f"compiled input statelessly (leave out {name}; store=False if you like), or "
                "send only the new turn yourself without Membrane's history "
                "(docs/providers.md#server-held-state)",
                field=name,
            )


def openai_responses_request(
    result: CompiledPrompt,
    *,
    model: str | None = None,
    prompt_cache_key: str | None = None,
    cache_breakpoints: bool | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A Responses API request body (``client.responses.create(**request)``).

    Each compiled message becomes ``input`` items in order: system, developer, user and
    assistant messages become message items (string content stays a string; text and image
    parts become ``input_text`` and ``input_image``), assistant tool calls ``function_call``
    items and tool results ``function_call_output`` items, so the cached prefix stays the
    prefix. A message's ``name`` becomes a ``"<name>: "`` label in front of its text (the
    Responses API has no speaker field); image ``detail`` is sent as ``"auto"``. The result's
    ``tools`` go out as function tools, and the ``reserve_output_tokens`` you passed to compile
    as ``max_output_tokens`` (Membrane's default reserve is not sent); your own extras win.
    ``model`` is included when you pass it, or when the result's ``model_id`` names exactly
    one OpenAI model in the capability map. ``prompt_cache_key`` helps OpenAI route requests
    that share a prefix; explicit cache breakpoints go in as :func:`openai_request` places
    them (the text of a message that is marked goes as ``input_text`` parts). History compiled
    from Responses items goes back as those items, unchanged. Raises :class:`ToolPairingError`
    when a tool result has no call or a call no result, and :class:`InvalidInputError` for
    ``previous_response_id`` or ``conversation`` (the server would add what it holds).

    >>> from types import SimpleNamespace
    >>> r = SimpleNamespace(messages=[{"role": "user", "content": "Hi"}], metadata={})
    >>> openai_responses_request(r, model="gpt-5.1")
    {'model': 'gpt-5.1', 'input': [{'role': 'user', 'content': 'Hi'}]}
    """
    _check_arguments(prompt_cache_key, extra)
    raw = result.messages
    breakpoints, messages = read_with_cuts(result, responses_items=True)
    marks = explicit_marks(
        result,
        breakpoints,
        messages,
        model=model,
        on=cache_breakpoints,
        options=extra.get("prompt_cache_options"),
        markable=lambda m: _markable(m, raw[m.index]),
    )
    request = request_model(result, model, "openai")
    request["input"] = [
        item
        for msg in messages
        for item in _items(msg, raw[msg.index], marks.get(msg.index, set()))
    ]
    specs = read_tools(result)
    if specs and "tools" not in extra:
        request["tools"] = _tools(specs)
    cap = output_cap(result)
    if cap is not None and "max_output_tokens" not in extra:
        request["max_output_tokens"] = cap
    if prompt_cache_key is not None:
        request["prompt_cache_key"] = prompt_cache_key
    request.update(extra)
    return request
