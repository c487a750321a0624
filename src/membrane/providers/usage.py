"""The whole prompt a provider billed, read from its SDK's usage object.

Each provider reports the prompt's size in its own fields, and some split it by cache state:

| provider | whole prompt |
| --- | --- |
| OpenAI Chat Completions | ``prompt_tokens`` (cached tokens included) |
| OpenAI Responses | ``input_tokens`` (cached tokens included) |
| Anthropic | ``input_tokens + cache_read_input_tokens + cache_creation_input_tokens`` |
| Gemini | ``prompt_token_count`` (``promptTokenCount`` in REST JSON) |
| Bedrock Converse | ``inputTokens + cacheReadInputTokens + cacheWriteInputTokens`` |

Anthropic's and Bedrock's ``input_tokens`` alone are only what came after the last cache
marker, so on a cache hit they are a small part of the prompt. :func:`prompt_tokens_from_usage`
takes a response, a streamed event that carries the final usage, the usage object itself or a
plain dict of those fields, and picks the reading by the fields it finds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from membrane.errors import InvalidInputError

__all__ = [
    "anthropic_prompt_tokens",
    "bedrock_prompt_tokens",
    "checked_prompt_tokens",
    "gemini_prompt_tokens",
    "openai_chat_prompt_tokens",
    "openai_responses_prompt_tokens",
    "prompt_tokens_from_usage",
]

# Where a response or a streamed event keeps its usage (Responses stream events hold the whole
# response; Anthropic's message_start holds the message; Bedrock's stream a metadata event).
_HOLDERS = ("usage", "usage_metadata", "usageMetadata", "response", "message", "metadata")
_DEPTH = 3


def _has(usage: object, name: str) -> bool:
    return name in usage if isinstance(usage, Mapping) else hasattr(usage, name)


def _get(usage: object, name: str) -> object:
    return usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)


def _count(usage: object, name: str, *, required: bool = True) -> int:
    value = _get(usage, name)
    if value is None and not required:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(
            f"usage field {name} must be a non-negative int, got {value!r}; pass the usage of a "
            "finished response (a stream's final usage, not a partial one)",
            field="usage",
        )
    return value


def openai_chat_prompt_tokens(usage: object) -> int:
    """Chat Completions: ``prompt_tokens``, cached tokens included."""
    return _count(usage, "prompt_tokens")


def openai_responses_prompt_tokens(usage: object) -> int:
    """Responses API: ``input_tokens``, cached tokens included."""
    return _count(usage, "input_tokens")


def anthropic_prompt_tokens(usage: object) -> int:
    """Messages API: ``input_tokens`` is only what follows the last cache marker; the cache
    reads and writes are the rest of the prompt."""
    return (
        _count(usage, "input_tokens")
        + _count(usage, "cache_read_input_tokens", required=False)
        + _count(usage, "cache_creation_input_tokens", required=False)
    )


def gemini_prompt_tokens(usage: object) -> int:
    """Gemini: ``prompt_token_count`` (REST: ``promptTokenCount``), cached content included."""
    name = "prompt_token_count" if _has(usage, "prompt_token_count") else "promptTokenCount"
    return _count(usage, name)


def bedrock_prompt_tokens(usage: object) -> int:
    """Bedrock Converse: ``inputTokens`` plus the cache reads and writes."""
    return (
        _count(usage, "inputTokens")
        + _count(usage, "cacheReadInputTokens", required=False)
        + _count(usage, "cacheWriteInputTokens", required=False)
    )


def _reader(usage: object) -> Callable[[object], int] | None:
    """The reading for a usage object, by the fields it has (None: not a usage object)."""
    if _has(usage, "prompt_tokens"):
        return openai_chat_prompt_tokens
    if _has(usage, "prompt_token_count") or _has(usage, "promptTokenCount"):
        return gemini_prompt_tokens
    if _has(usage, "inputTokens"):
        return bedrock_prompt_tokens
    if _has(usage, "cache_read_input_tokens") or _has(usage, "cache_creation_input_tokens"):
        return anthropic_prompt_tokens
    if _has(usage, "input_tokens"):
        return openai_responses_prompt_tokens
    return None


def prompt_tokens_from_usage(usage: object) -> int:
    """The whole prompt's provider tokens from a response, its usage, or a dict of its fields.

    >>> prompt_tokens_from_usage({"input_tokens": 40, "cache_read_input_tokens": 2000})
    2040
    >>> prompt_tokens_from_usage({"usage": {"prompt_tokens": 1200}})
    1200
    """
    found = usage
    for _ in range(_DEPTH):
        if found is None or isinstance(found, (str, bytes, int, float)):
            break
        read = _reader(found)
        if read is not None:
            return read(found)
        found = next((h for h in (_get(found, n) for n in _HOLDERS) if h is not None), None)
    raise InvalidInputError(
        "usage must be a provider response, its usage object or a dict with prompt_tokens "
        "(OpenAI Chat), input_tokens (OpenAI Responses; Anthropic with cache_read_input_tokens "
        "and cache_creation_input_tokens), prompt_token_count (Gemini) or inputTokens "
        f"(Bedrock); got {type(usage).__name__} without them (a stream chunk before the last?)",
        field="usage",
    )


def checked_prompt_tokens(actual: object, counted: int) -> int:
    """``actual``, the provider's count of a prompt Membrane counted as ``counted``, checked.

    No tokenizer differs from Membrane's counter by half (the smallest scale is 0.5), so a
    count below half is a part of the prompt: Anthropic's bare ``input_tokens`` on a cache
    hit, for one. 0 (no usage reported) is let through; observing it changes nothing.
    """
    if isinstance(actual, bool) or not isinstance(actual, int):
        raise TypeError("actual_prompt_tokens must be an int (the provider's prompt tokens)")
    if 0 < actual * 2 < counted:
        raise InvalidInputError(
            f"actual_prompt_tokens={actual} is under half of the {counted} tokens Membrane "
            "counted, so it cannot be the whole prompt (Anthropic's and Bedrock's input tokens "
            "leave out cache reads and writes); pass the provider's usage to "
            "compiler.observe_usage(result, usage), which adds them up",
            field="actual_prompt_tokens",
        )
    return actual
