"""OpenAI Chat Completions requests (and OpenAI-compatible APIs)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from membrane.capabilities import get_cache_pricing, get_token_scale
from membrane.errors import InvalidInputError
from membrane.messages import ITEMS_KEY, Text
from membrane.providers._agent import openai_tools, output_cap, read_tools
from membrane.providers._convert import CompiledPrompt, Message, read_with_cuts, request_model
from membrane.providers._openai_cache import explicit_marks, marked
from membrane.tokenizers import TiktokenAdapter

if TYPE_CHECKING:
    from membrane.tokenizers import TokenCounter

__all__ = ["build_system_messages", "openai_request"]


def openai_request(
    result: CompiledPrompt,
    *,
    model: str | None = None,
    prompt_cache_key: str | None = None,
    cache_breakpoints: bool | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A Chat Completions request body: ``model``, the compiled ``messages`` and your extras.

    ``model`` is included when you pass it, or when the result's ``model_id`` names exactly
    one OpenAI model in the capability map (``openai/gpt-4.1`` -> ``gpt-4.1``); otherwise
    leave it to the call: ``create(model=..., **openai_request(result))``.
    Messages go out as compiled (copied), ``name`` included, with the result's ``tools`` as
    function tools (unless ``tools`` is among your extras). ``compile(reserve_output_tokens=N)``
    becomes ``max_completion_tokens`` unless you pass ``max_tokens`` or ``max_completion_tokens``
    (Membrane's default reserve is not sent: a reasoning model's thinking counts against it).
    ``prompt_cache_key`` (e.g. a conversation id) routes requests that share a prefix to one
    cache. For models that take explicit breakpoints (GPT-5.6 on; ``cache_breakpoints`` decides
    when given), the text part ending each of Membrane's cached prefixes gets
    ``prompt_cache_breakpoint``: at most 3, or 4 with ``prompt_cache_options={"mode":
    "explicit"}``. Raises :class:`ToolPairingError` for a result without its call.

    >>> from types import SimpleNamespace
    >>> r = SimpleNamespace(messages=[{"role": "user", "content": "Hi"}], metadata={})
    >>> openai_request(r, model="gpt-4o-mini", prompt_cache_key="conv-9")
    {'model': 'gpt-4o-mini', 'messages': [{'role': 'user', 'content': 'Hi'}], \
'prompt_cache_key': 'conv-9'}
    """
    if prompt_cache_key is not None and not isinstance(prompt_cache_key, str):
        raise InvalidInputError("prompt_cache_key must be a string", field="prompt_cache_key")
    if "messages" in extra:
        raise InvalidInputError(
            "messages come from the compile result; do not pass them again", field="messages"
        )
    breakpoints, read = read_with_cuts(result, labels=False)
    marks = explicit_marks(
        result,
        breakpoints,
        read,
        model=model,
        on=cache_breakpoints,
        options=extra.get("prompt_cache_options"),
        markable=lambda m: _markable(m, result.messages[m.index]),
    )
    request = request_model(result, model, "openai")
    request["messages"] = [
        _chat_message(result.messages[m.index], m, marks.get(m.index)) for m in read
    ]
    specs = read_tools(result)
    if specs and "tools" not in extra:
        request["tools"] = openai_tools(specs)
    cap = output_cap(result)
    if cap is not None and not {"max_tokens", "max_completion_tokens"} & extra.keys():
        request["max_completion_tokens"] = cap
    if prompt_cache_key is not None:
        request["prompt_cache_key"] = prompt_cache_key
    request.update(extra)
    return request


def _markable(msg: Message, raw: Mapping[str, Any]) -> bool:
    """String content (any role) that says something, beside no tool calls."""
    return isinstance(raw.get("content"), str) and bool(msg.parts) and not raw.get("tool_calls")


def _chat_message(raw: Mapping[str, Any], msg: Message, marks: set[int] | None) -> dict[str, Any]:
    """The compiled message as sent: a copy, minus the Responses items it was read from (its
    chat form goes; reasoning is left out), its string content in marked parts when a cached
    prefix ends in it."""
    out = copy.deepcopy({k: v for k, v in raw.items() if k != ITEMS_KEY})
    if marks:
        texts = [p.text for p in msg.parts if isinstance(p, Text)]
        parts = [{"type": "text", "text": t} for t in texts]
        out["content"] = [marked(p, i in marks) for i, p in enumerate(parts)]
    return out


def build_system_messages(
    model_id: str | None,
    prefix: str,
    tail: str,
    *,
    counter: TokenCounter | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One OpenAI-style system message for a prompt you split yourself, and a cache hint.

    For models that cache by themselves (and unknown ones) the content is the string
    ``prefix + tail``: the provider caches the shared prefix without help. For models whose
    cache must be marked (Claude behind an OpenAI-compatible gateway), and once the prefix
    reaches the model's minimum, the content is two text parts with ``cache_control`` on the
    first. No message is returned when both texts are empty.

    The hint holds ``cache_mode`` ("automatic", "marked" or None), ``prompt_cache_used``
    (the model caches and the prefix, in provider tokens, reaches its minimum),
    ``cacheable_prefix_tokens`` (counted with ``counter``, default ``cl100k_base``),
    ``min_cacheable_tokens`` and ``token_scale``.
    """
    if not isinstance(prefix, str) or not isinstance(tail, str):
        raise TypeError("prefix and tail must be strings")
    pricing = get_cache_pricing(model_id)
    scale = get_token_scale(model_id)
    prefix_tokens = (counter or TiktokenAdapter("cl100k_base")).count(prefix) if prefix else 0
    reaches = (
        pricing is not None and prefix_tokens > 0 and (prefix_tokens * scale >= pricing.min_tokens)
    )

    content: str | list[dict[str, Any]]
    if pricing is not None and pricing.mode == "marked" and reaches:
        content = [{"type": "text", "text": prefix, "cache_control": {"type": "ephemeral"}}]
        if tail:
            content.append({"type": "text", "text": tail})
    else:
        content = prefix + tail
    messages = [{"role": "system", "content": content}] if prefix or tail else []
    hint = {
        "cache_mode": None if pricing is None else pricing.mode,
        "prompt_cache_used": reaches,
        "cacheable_prefix_tokens": prefix_tokens,
        "min_cacheable_tokens": None if pricing is None else pricing.min_tokens,
        "token_scale": scale,
    }
    return messages, hint
