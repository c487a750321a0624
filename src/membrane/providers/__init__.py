"""Request builders that turn a compile result into a provider's request body.

Each builder takes anything with ``messages`` (OpenAI chat shape) and ``metadata``, such as a
``CompileResult``, and returns a plain dict for the provider's SDK or HTTP API. None of them
sends anything.
"""

from __future__ import annotations

import typing

from membrane._lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from membrane.providers._convert import CompiledPrompt
    from membrane.providers.anthropic import anthropic_request, anthropic_system_blocks
    from membrane.providers.bedrock import bedrock_converse_request
    from membrane.providers.gemini import gemini_request
    from membrane.providers.openai import build_system_messages, openai_request
    from membrane.providers.openai_responses import openai_responses_request
    from membrane.providers.usage import prompt_tokens_from_usage

# Where each name lives: imported on first use (see membrane._lazy).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "membrane.providers._convert": ("CompiledPrompt",),
    "membrane.providers.anthropic": ("anthropic_request", "anthropic_system_blocks"),
    "membrane.providers.bedrock": ("bedrock_converse_request",),
    "membrane.providers.gemini": ("gemini_request",),
    "membrane.providers.openai": ("build_system_messages", "openai_request"),
    "membrane.providers.openai_responses": ("openai_responses_request",),
    "membrane.providers.usage": ("prompt_tokens_from_usage",),
}
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

__all__ = [
    "CompiledPrompt",
    "anthropic_request",
    "anthropic_system_blocks",
    "bedrock_converse_request",
    "build_system_messages",
    "gemini_request",
    "openai_request",
    "openai_responses_request",
    "prompt_tokens_from_usage",
]
