"""Stub routes per provider API: the body checked against the SDK's types, a minimal reply.

Replies carry usage figures (``USAGE``) so the live benchmarks' tests can check what they read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import TypeAdapter

from benchmarks._sdk_types import strict_validator
from tests.providers.sdk.stub import Route

__all__ = [
    "USAGE",
    "anthropic_beta_route",
    "anthropic_route",
    "count_tokens_route",
    "gemini_route",
    "openai_chat_route",
    "openai_responses_route",
]

USAGE = {"input": 1200, "cached": 1024, "written": 150, "output": 7}
REPLY_TEXT = "The code is 4417."


Answer = Callable[[Any], str]


def openai_chat_route(answer: Answer | None = None) -> Route:
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

    validator = strict_validator(CompletionCreateParamsNonStreaming)

    def reply(body: Any) -> dict[str, Any]:
        return {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {
                        "role": "assistant",
                        "content": answer(body) if answer else REPLY_TEXT,
                    },
                }
            ],
            "usage": {
                "prompt_tokens": USAGE["input"],
                "completion_tokens": USAGE["output"],
                "total_tokens": USAGE["input"] + USAGE["output"],
                "prompt_tokens_details": {"cached_tokens": USAGE["cached"]},
            },
        }

    return Route("/chat/completions", validator.validate_python, reply)


def openai_responses_route() -> Route:
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

    validator = strict_validator(ResponseCreateParamsNonStreaming)

    def reply(body: Any) -> dict[str, Any]:
        return {
            "id": "resp_stub",
            "object": "response",
            "created_at": 0,
            "model": body["model"],
            "status": "completed",
            "output": [
                {
                    "type": "message",
                    "id": "msg_stub",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": REPLY_TEXT, "annotations": []}],
                }
            ],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": USAGE["input"],
                "input_tokens_details": {"cached_tokens": USAGE["cached"]},
                "output_tokens": USAGE["output"],
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": USAGE["input"] + USAGE["output"],
            },
        }

    return Route("/responses", validator.validate_python, reply)


def anthropic_route(answer: Answer | None = None) -> Route:
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    validator = strict_validator(MessageCreateParamsNonStreaming)

    def reply(body: Any) -> dict[str, Any]:
        return {
            "id": "msg_stub",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": answer(body) if answer else REPLY_TEXT}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": USAGE["input"] - USAGE["cached"] - USAGE["written"],
                "cache_read_input_tokens": USAGE["cached"],
                "cache_creation_input_tokens": USAGE["written"],
                "output_tokens": USAGE["output"],
            },
        }

    return Route("/v1/messages", validator.validate_python, reply)


def anthropic_beta_route() -> Route:
    """``client.beta.messages.create``: checked against the beta request type, where compaction
    blocks, ``context_management`` and top-level ``cache_control`` live."""
    from anthropic.types.beta.message_create_params import MessageCreateParamsNonStreaming

    validator = strict_validator(MessageCreateParamsNonStreaming)
    reply = anthropic_route().reply
    return Route("/v1/messages", validator.validate_python, reply)


def count_tokens_route() -> Route:
    from anthropic.types.message_count_tokens_params import MessageCountTokensParams

    validator = strict_validator(MessageCountTokensParams)

    def reply(body: Any) -> dict[str, Any]:
        # One token per four characters of the JSON body: a stand-in that grows with the text.
        return {"input_tokens": max(1, len(json.dumps(body)) // 4)}

    return Route("/v1/messages/count_tokens", validator.validate_python, reply)


_GEMINI_KEYS = {"contents", "systemInstruction", "generationConfig", "tools", "toolConfig"}


def gemini_route() -> Route:
    from google.genai import types

    contents = TypeAdapter(list[types.Content])
    content = TypeAdapter(types.Content)

    def check(body: Any) -> None:
        unknown = set(body) - _GEMINI_KEYS
        if unknown:
            raise ValueError(f"unknown generateContent fields {sorted(unknown)}")
        # JSON mode: bytes fields (inline data, thought signatures) must be base64 on the wire.
        contents.validate_json(json.dumps(body["contents"]))
        if "systemInstruction" in body:
            content.validate_json(json.dumps(body["systemInstruction"]))

    def reply(body: Any) -> dict[str, Any]:
        del body
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": REPLY_TEXT}]},
                    "finishReason": "STOP",
                }
            ],
            "usageMetadata": {
                "promptTokenCount": USAGE["input"],
                "cachedContentTokenCount": USAGE["cached"],
                "candidatesTokenCount": USAGE["output"],
                "totalTokenCount": USAGE["input"] + USAGE["output"],
            },
        }

    return Route(":generateContent", check, reply)
