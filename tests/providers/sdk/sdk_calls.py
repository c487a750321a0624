"""Each request builder's output handed to its official SDK call, checked by mypy (strict).

``make typecheck`` runs mypy on this file with the SDKs' own type hints, so a builder whose
output stopped fitting the SDK's signature, or a ``CompileResult.messages`` type that
``chat.completions.create`` would not take, fails the build. The round-trip tests call these
functions against the loopback stub.
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
from google import genai
from google.genai import types as genai_types
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from membrane import (
    CompileResult,
    anthropic_request,
    bedrock_converse_request,
    gemini_request,
    openai_request,
    openai_responses_request,
)
from membrane.providers import CompiledPrompt

__all__ = [
    "send_anthropic",
    "send_bedrock",
    "send_gemini",
    "send_openai_chat",
    "send_openai_messages",
    "send_openai_responses",
]


def send_openai_messages(client: openai.OpenAI, result: CompileResult) -> ChatCompletion:
    """``result.messages`` as Chat Completions takes them, with no conversion and no cast."""
    return client.chat.completions.create(model="gpt-4.1", messages=result.messages)


def send_openai_chat(
    client: openai.OpenAI, result: CompiledPrompt, model: str | None = None
) -> ChatCompletion:
    request = openai_request(result, model=model, prompt_cache_key="conv-7")
    response: ChatCompletion = client.chat.completions.create(**request)
    return response


def send_openai_responses(
    client: openai.OpenAI, result: CompiledPrompt, model: str | None = None
) -> Response:
    response: Response = client.responses.create(**openai_responses_request(result, model=model))
    return response


def send_anthropic(
    client: anthropic.Anthropic, result: CompiledPrompt, model: str, ttl: str = "5m"
) -> anthropic.types.Message:
    # The seed's form: the caller's model first, the builder's fields after it.
    request = {"model": model, **anthropic_request(result, ttl, max_tokens=64)}
    response: anthropic.types.Message = client.messages.create(**request)
    return response


def send_gemini(
    client: genai.Client, result: CompiledPrompt, model: str
) -> genai_types.GenerateContentResponse:
    body = gemini_request(result, max_output_tokens=64)
    config = genai_types.GenerateContentConfig(
        system_instruction=body.get("system_instruction"),
        tools=body.get("tools"),
        max_output_tokens=body["generationConfig"]["maxOutputTokens"],
    )
    return client.models.generate_content(model=model, contents=body["contents"], config=config)


def send_bedrock(client: Any, result: CompiledPrompt, model_id: str, ttl: str = "5m") -> Any:
    # boto3 clients are generated at run time; botocore checks the parameters instead of mypy.
    kwargs = bedrock_converse_request(result, model_id=model_id, ttl=ttl, max_tokens=64)
    return client.converse(**kwargs)
