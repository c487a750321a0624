"""The stub's validators refuse what the provider would: unknown keys, wrong values, deep down.

(pydantic's ValidationError is a ValueError.)
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.providers.sdk.strict import strict_adapter, validate


def _anthropic(message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": "claude-opus-5-5", "max_tokens": 8, "messages": [message], **extra}


def test_openai_chat_refuses_an_unknown_key_inside_a_message() -> None:
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

    adapter = strict_adapter(CompletionCreateParamsNonStreaming)
    ok = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi", "name": "ada"}]}
    validate(adapter, ok)
    bad = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi", "speaker": "ada"}]}
    with pytest.raises(ValueError, match="speaker"):
        validate(adapter, bad)


def test_anthropic_refuses_a_name_field_a_bad_ttl_and_a_bad_image() -> None:
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

    adapter = strict_adapter(MessageCreateParamsNonStreaming)
    marker = {"type": "ephemeral", "ttl": "1h"}
    text = {"type": "text", "text": "hi", "cache_control": marker}
    validate(adapter, _anthropic({"role": "user", "content": [text]}))
    with pytest.raises(ValueError, match="name"):
        validate(adapter, _anthropic({"role": "user", "name": "ada", "content": "hi"}))
    bad_ttl = {**text, "cache_control": {"type": "ephemeral", "ttl": "2h"}}
    with pytest.raises(ValueError):
        validate(adapter, _anthropic({"role": "user", "content": [bad_ttl]}))
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png"}}
    with pytest.raises(ValueError, match="data"):
        validate(adapter, _anthropic({"role": "user", "content": [image]}))


def test_responses_refuses_an_image_without_detail() -> None:
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

    adapter = strict_adapter(ResponseCreateParamsNonStreaming)
    part = {"type": "input_image", "image_url": "https://example.com/a.png"}
    body = {"model": "gpt-5.1", "input": [{"role": "user", "content": [part]}]}
    with pytest.raises(ValueError, match="detail"):
        validate(adapter, body)
    part["detail"] = "auto"
    validate(adapter, body)
