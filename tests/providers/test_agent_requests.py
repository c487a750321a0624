"""Requests with tools, images and the output reserve, checked against the official SDK types."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from pydantic_core import ValidationError

from benchmarks._sdk_types import (
    anthropic_messages,
    check_bedrock_converse,
    check_gemini_body,
    openai_chat,
)
from membrane import (
    ContextCompiler,
    anthropic_request,
    bedrock_converse_request,
    gemini_request,
    openai_request,
)
from tests.image_samples import data_url, png

SCHEMA = {
    "type": "object",
    "properties": {"url": {"type": "string", "description": "Page to open"}},
    "required": ["url"],
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": f"tool_{i}",
            "description": "Opens a page and returns a screenshot. " * 30,
            "parameters": SCHEMA,
        },
    }
    for i in range(5)
]
SHOT = data_url(png(1280, 800))
CORE = "You are a browsing agent. " * 20


def _openai_history() -> list[dict[str, Any]]:
    call = {"id": "call_1", "type": "function", "function": {"name": "tool_0", "arguments": "{}"}}
    return [
        {"role": "user", "content": "Open the pricing page."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Opened; screenshot follows."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Screenshot:"},
                {"type": "image_url", "image_url": {"url": SHOT, "detail": "high"}},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            ],
        },
        {"role": "assistant", "content": "The page lists three plans."},
    ]


def _anthropic_history() -> list[dict[str, Any]]:
    media, data = SHOT[5:].split(";base64,")
    shot = {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}
    return [
        {"role": "user", "content": "Open the pricing page."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "tool_0", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "Opened."}, shot],
                }
            ],
        },
        {"role": "assistant", "content": "The page lists three plans."},
    ]


def _compile(model: str, history: list[dict[str, Any]], **kwargs: Any) -> Any:
    compiler = ContextCompiler(30_000, model, core_content=CORE)
    return compiler.compile([], "Which plan fits?", conversation_messages=history, **kwargs)


def test_openai_request_is_a_valid_chat_completion_with_tools_images_and_cap() -> None:
    result = _compile("gpt-4o", _openai_history(), tools=TOOLS, reserve_output_tokens=2_000)
    request = openai_request(result, model="gpt-4o")
    openai_chat().validate_python(request)
    assert [t["function"]["name"] for t in request["tools"]] == [f"tool_{i}" for i in range(5)]
    assert request["max_completion_tokens"] == result.metadata["reserve_output_tokens"] == 2_000
    assert result.metadata["reserve_output_default"] is False
    assert result.metadata["images"] == 2 and result.metadata["images_unsized"] == 1


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-5.1", "o3", "gpt-6.2-sol"])
def test_the_default_reserve_shapes_the_budget_but_is_not_sent(model: str) -> None:
    result = _compile(model, _openai_history(), tools=TOOLS)
    md = result.metadata
    assert md["reserve_output_default"] is True
    assert md["reserve_output_tokens"] == {"gpt-4o": 12_800}.get(model, 25_000)
    assert md["token_count"] + md["reserve_output_tokens"] <= md["context_window"]
    request = openai_request(result, model=model)
    openai_chat().validate_python(request)
    assert "max_completion_tokens" not in request and "max_tokens" not in request


def test_openai_caller_settings_win() -> None:
    result = _compile("gpt-4o", _openai_history(), tools=TOOLS)
    request = openai_request(result, model="gpt-4o", max_tokens=50, tools=TOOLS[:1])
    openai_chat().validate_python(request)
    assert "max_completion_tokens" not in request
    assert request["max_tokens"] == 50 and len(request["tools"]) == 1


@pytest.mark.parametrize("history", [_openai_history(), _anthropic_history()])
def test_anthropic_request_is_valid_with_tools_first_and_marked(
    history: list[dict[str, Any]],
) -> None:
    result = _compile("claude-sonnet-4-5", history, tools=TOOLS)
    request = anthropic_request(result)
    # The seed's form: the caller's model and max_tokens, then the builder's fields.
    anthropic_messages().validate_python(
        {"model": "claude-sonnet-4-5", "max_tokens": 1024, **request}
    )
    assert next(k for k in request if k != "model") == "tools"
    assert [t["name"] for t in request["tools"]] == [f"tool_{i}" for i in range(5)]
    assert request["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert all("cache_control" not in t for t in request["tools"][:-1])
    markers = sum(
        "cache_control" in block
        for part in (request["system"], *(m["content"] for m in request["messages"]))
        for block in part
    )
    assert 1 + markers <= 4
    assert "max_tokens" not in request  # the default reserve (16,384) is not sent
    assert result.metadata["reserve_output_tokens"] == 16_384
    assert anthropic_request(result, max_tokens=1000)["max_tokens"] == 1000
    named = _compile("claude-sonnet-4-5", history, tools=TOOLS, reserve_output_tokens=3_000)
    assert anthropic_request(named)["max_tokens"] == 3_000
    assert anthropic_request(named, max_tokens=1000)["max_tokens"] == 1000


def test_anthropic_tools_below_the_minimum_are_not_marked() -> None:
    small = [{"name": "ping", "description": "Ping.", "input_schema": {"type": "object"}}]
    result = _compile("claude-sonnet-4-5", _anthropic_history(), tools=small)
    request = anthropic_request(result, max_tokens=512)
    anthropic_messages().validate_python({"model": "claude-sonnet-4-5", **request})
    assert "cache_control" not in request["tools"][0]
    # Anthropic requires max_tokens: a bare spread of a result without a named reserve is refused.
    with pytest.raises(ValidationError, match="max_tokens"):
        anthropic_messages().validate_python(
            {"model": "claude-sonnet-4-5", **anthropic_request(result)}
        )


def test_the_strict_validator_rejects_what_the_api_would() -> None:
    result = _compile("claude-sonnet-4-5", _anthropic_history(), tools=TOOLS)
    request = anthropic_request(result)
    request["tools"][0]["parameters"] = SCHEMA  # the OpenAI key in an Anthropic tool
    with pytest.raises(ValidationError):
        anthropic_messages().validate_python({"model": "claude-sonnet-4-5", **request})


def test_gemini_and_bedrock_carry_tools_and_the_cap() -> None:
    result = _compile("gemini-3-pro-preview", _openai_history(), tools=TOOLS)
    assert "generationConfig" not in gemini_request(result)  # no cap asked for
    assert result.metadata["reserve_output_tokens"] == 65_536  # Gemini thinks by default
    result = _compile(
        "gemini-3-pro-preview", _openai_history(), tools=TOOLS, reserve_output_tokens=16_384
    )
    request = gemini_request(result)
    check_gemini_body(request)
    declared = request["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declared] == [f"tool_{i}" for i in range(5)]
    assert declared[0]["parametersJsonSchema"] == SCHEMA
    assert request["generationConfig"] == {"maxOutputTokens": 16_384}
    history = [m for m in _openai_history() if m["role"] != "user" or isinstance(m["content"], str)]
    result = _compile("anthropic.claude-sonnet-4-5-20250929-v1:0", history, tools=TOOLS)
    converse = bedrock_converse_request(result, model_id="anthropic.claude-sonnet-4-5")
    check_bedrock_converse(converse)
    tools = converse["toolConfig"]["tools"]
    assert tools[0]["toolSpec"]["inputSchema"] == {"json": SCHEMA}
    assert tools[-1] == {"cachePoint": {"type": "default"}}
    assert "inferenceConfig" not in converse
    assert bedrock_converse_request(result, max_tokens=900)["inferenceConfig"] == {"maxTokens": 900}
    named = _compile(
        "anthropic.claude-sonnet-4-5-20250929-v1:0", history, tools=TOOLS, reserve_output_tokens=700
    )
    assert bedrock_converse_request(named)["inferenceConfig"] == {"maxTokens": 700}


def test_the_gemini_and_bedrock_checks_refuse_misplaced_keys() -> None:
    result = _compile("gemini-3-pro-preview", _openai_history(), tools=TOOLS)
    body = gemini_request(result)
    body["tools"][0]["functionDeclarations"][0]["input_schema"] = SCHEMA
    with pytest.raises(ValueError):
        check_gemini_body(body)
    history = [m for m in _openai_history() if m["role"] != "user" or isinstance(m["content"], str)]
    result = _compile("anthropic.claude-sonnet-4-5-20250929-v1:0", history, tools=TOOLS)
    converse = bedrock_converse_request(result, model_id="anthropic.claude-sonnet-4-5")
    converse["toolConfig"]["tools"][0]["toolSpec"]["parameters"] = SCHEMA
    with pytest.raises(ValueError):
        check_bedrock_converse(converse)


def test_a_result_built_by_hand_without_tools_or_reserve_is_unchanged() -> None:
    from types import SimpleNamespace

    hand = SimpleNamespace(messages=[{"role": "user", "content": "Hi"}], metadata={})
    assert openai_request(hand, model="gpt-4o") == {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "Hi"}],
    }
    hand = SimpleNamespace(
        messages=[{"role": "user", "content": "Hi"}],
        metadata={"memory_placement": "end"},
        tools=[{"name": "ping", "input_schema": {"type": "object"}}],
    )
    request = anthropic_request(hand)
    assert request["tools"] == [
        {"name": "ping", "description": "", "input_schema": {"type": "object"}}
    ]
    assert "max_tokens" not in request


def test_image_bytes_reach_anthropic_unchanged() -> None:
    result = _compile("claude-sonnet-4-5", _openai_history(), tools=TOOLS)
    request = anthropic_request(result)
    images = [b for m in request["messages"] for b in m["content"] if b.get("type") == "image"]
    assert base64.b64decode(images[0]["source"]["data"]) == png(1280, 800)
    assert images[1]["source"] == {"type": "url", "url": "https://example.com/a.png"}
