"""The stub's validators (benchmarks/_sdk_types) refuse unknown keys and wrong values, deep down.

(pydantic's ValidationError is a ValueError.)
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks._sdk_types import strict_validator


def _anthropic(message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": "claude-opus-5-5", "max_tokens": 8, "messages": [message], **extra}


def test_openai_chat_refuses_an_unknown_key_inside_a_message() -> None:
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

    validator = strict_validator(CompletionCreateParamsNonStreaming)
    ok = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi", "name": "ada"}]}
    validator.validate_python(ok)
    bad = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi", "speaker": "ada"}]}
    with pytest.raises(ValueError, match="speaker"):
        validator.validate_python(bad)


def test_anthropic_refuses_a_name_field_a_bad_ttl_and_a_bad_image() -> None:
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    validator = strict_validator(MessageCreateParamsNonStreaming)
    marker = {"type": "ephemeral", "ttl": "1h"}
    text = {"type": "text", "text": "hi", "cache_control": marker}
    validator.validate_python(_anthropic({"role": "user", "content": [text]}))
    with pytest.raises(ValueError, match="name"):
        validator.validate_python(_anthropic({"role": "user", "name": "ada", "content": "hi"}))
    bad_ttl = {**text, "cache_control": {"type": "ephemeral", "ttl": "2h"}}
    with pytest.raises(ValueError):
        validator.validate_python(_anthropic({"role": "user", "content": [bad_ttl]}))
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png"}}
    with pytest.raises(ValueError, match="data"):
        validator.validate_python(_anthropic({"role": "user", "content": [image]}))


def test_responses_refuses_an_image_without_detail() -> None:
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

    validator = strict_validator(ResponseCreateParamsNonStreaming)
    part = {"type": "input_image", "image_url": "https://example.com/a.png"}
    body = {"model": "gpt-5.1", "input": [{"role": "user", "content": [part]}]}
    with pytest.raises(ValueError, match="detail"):
        validator.validate_python(body)
    part["detail"] = "auto"
    validator.validate_python(body)
