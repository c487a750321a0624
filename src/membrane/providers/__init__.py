"""Request builders that turn a compile result into a provider's request body.

Each builder takes anything with ``messages`` (OpenAI chat shape) and ``metadata``, such as a
``CompileResult``, and returns a plain dict for the provider's SDK or HTTP API. None of them
sends anything.
"""

from __future__ import annotations

from membrane.providers._convert import CompiledPrompt
from membrane.providers.anthropic import anthropic_request, anthropic_system_blocks
from membrane.providers.bedrock import bedrock_converse_request
from membrane.providers.gemini import gemini_request
from membrane.providers.openai import build_system_messages, openai_request
from membrane.providers.openai_responses import openai_responses_request
from membrane.providers.usage import prompt_tokens_from_usage

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
