"""OpenAI Chat Completions requests (and OpenAI-compatible APIs)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from membrane.capabilities import get_cache_pricing, get_token_scale
from membrane.errors import InvalidInputError
from membrane.messages import ITEMS_KEY
from membrane.providers._agent import openai_tools, output_cap, read_tools
from membrane.providers._convert import CompiledPrompt, read_messages, request_model
from membrane.tokenizers import TiktokenAdapter

if TYPE_CHECKING:
    from membrane.tokenizers import TokenCounter

__all__ = ["build_system_messages", "openai_request"]


def openai_request(
    result: CompiledPrompt,
    *,
    model: str | None = None,
    prompt_cache_key: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A Chat Completions request body: ``model``, the compiled ``messages`` and your extras.

    ``model`` is included when you pass it, or when the result's ``model_id`` names exactly
    one OpenAI model in the capability map (``openai/gpt-4.1`` -> ``gpt-4.1``); otherwise
    leave it to the call: ``create(model=..., **openai_request(result))``.
    Messages go out as compiled (copied, so editing the request leaves the result alone),
    ``name`` included (Chat Completions takes a speaker's name as it is), with the result's
    ``tools`` as function tools (unless ``tools`` is among your extras). An output cap goes out
    only when you asked for one: ``compile(reserve_output_tokens=...)`` becomes
    ``max_completion_tokens`` unless ``max_tokens`` or ``max_completion_tokens`` is among your
    extras; Membrane's default reserve is not sent, because a reasoning model's thinking counts
    against the cap and a long think would end the answer early.
    OpenAI caches shared prefixes by itself; ``prompt_cache_key`` (e.g. a conversation id)
    helps it route requests that share a prefix to the same cache. Raises
    :class:`ToolPairingError` when a tool result has no call before it or a call no result.

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
    read_messages(result.messages)
    request = request_model(result, model, "openai")
    # A message read from Responses items goes in its chat form (reasoning left out).
    request["messages"] = [
        copy.deepcopy({k: v for k, v in m.items() if k != ITEMS_KEY} if ITEMS_KEY in m else m)
        for m in result.messages
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
