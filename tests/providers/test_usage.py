"""Reading the whole prompt from each provider's usage: dicts, SDK objects, streamed events."""

from __future__ import annotations

from typing import Any

import pytest

from membrane import ContextCompiler
from membrane.errors import InvalidInputError
from membrane.providers.usage import (
    anthropic_prompt_tokens,
    bedrock_prompt_tokens,
    checked_prompt_tokens,
    gemini_prompt_tokens,
    prompt_tokens_from_usage,
)


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"prompt_tokens": 1200, "prompt_tokens_details": {"cached_tokens": 1024}}, 1200),
        ({"input_tokens": 900, "input_tokens_details": {"cached_tokens": 512}}, 900),
        (
            {
                "input_tokens": 26,
                "cache_read_input_tokens": 1024,
                "cache_creation_input_tokens": 150,
            },
            1200,
        ),
        ({"input_tokens": 26, "cache_read_input_tokens": None}, 26),
        ({"promptTokenCount": 700, "cachedContentTokenCount": 600}, 700),
        ({"prompt_token_count": 701}, 701),
        ({"inputTokens": 30, "cacheReadInputTokens": 1024, "cacheWriteInputTokens": 150}, 1204),
        ({"inputTokens": 30}, 30),
        # Responses and replies that hold their usage.
        ({"usage": {"prompt_tokens": 5}}, 5),
        ({"usageMetadata": {"promptTokenCount": 6}}, 6),
        ({"metadata": {"usage": {"inputTokens": 7, "cacheReadInputTokens": 1}}}, 8),
        ({"response": {"usage": {"input_tokens": 9}}}, 9),
    ],
)
def test_each_shape_reads_the_whole_prompt(usage: dict[str, Any], expected: int) -> None:
    assert prompt_tokens_from_usage(usage) == expected


def test_the_per_provider_readers_add_the_cache_parts() -> None:
    assert anthropic_prompt_tokens({"input_tokens": 3, "cache_creation_input_tokens": 4}) == 7
    assert bedrock_prompt_tokens({"inputTokens": 3, "cacheWriteInputTokens": 4}) == 7
    assert gemini_prompt_tokens({"promptTokenCount": 3}) == 3


def test_streamed_final_usage_from_the_sdk_types() -> None:
    from anthropic.types import RawMessageDeltaEvent, RawMessageStartEvent
    from google.genai import types as genai_types
    from openai.types.chat import ChatCompletionChunk
    from openai.types.responses import ResponseCompletedEvent

    chunk = ChatCompletionChunk.model_validate(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "gpt-4.1",
            "choices": [],
            "usage": {"prompt_tokens": 1500, "completion_tokens": 3, "total_tokens": 1503},
        }
    )
    assert prompt_tokens_from_usage(chunk) == 1500
    completed = ResponseCompletedEvent.model_validate(
        {
            "type": "response.completed",
            "sequence_number": 9,
            "response": {
                "id": "r",
                "object": "response",
                "created_at": 0,
                "model": "gpt-5.1",
                "output": [],
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
                "metadata": {"conversation": "c1"},
                "usage": {
                    "input_tokens": 1400,
                    "input_tokens_details": {"cached_tokens": 1024, "cache_write_tokens": 0},
                    "output_tokens": 2,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 1402,
                },
            },
        }
    )
    assert prompt_tokens_from_usage(completed) == 1400
    delta = RawMessageDeltaEvent.model_validate(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {
                "input_tokens": 20,
                "cache_read_input_tokens": 1300,
                "cache_creation_input_tokens": 80,
                "output_tokens": 9,
            },
        }
    )
    assert prompt_tokens_from_usage(delta) == 1400
    start = RawMessageStartEvent.model_validate(
        {
            "type": "message_start",
            "message": {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": "claude-opus-5-5",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 20, "cache_read_input_tokens": 1300, "output_tokens": 1},
            },
        }
    )
    assert prompt_tokens_from_usage(start) == 1320
    last = genai_types.GenerateContentResponse(
        usage_metadata=genai_types.GenerateContentResponseUsageMetadata(prompt_token_count=1234)
    )
    assert prompt_tokens_from_usage(last) == 1234
    bedrock_event = {"metadata": {"usage": {"inputTokens": 4, "outputTokens": 1}, "metrics": {}}}
    assert prompt_tokens_from_usage(bedrock_event) == 4


@pytest.mark.parametrize(
    "bad",
    [
        None,
        42,
        {"choices": []},
        {"usage": None},
        {"prompt_tokens": -1},
        {"prompt_tokens": 1.5},
        {"input_tokens": None, "cache_read_input_tokens": 3},  # a partial stream delta
        {"prompt_token_count": None},
    ],
)
def test_what_is_not_a_usage_is_refused(bad: object) -> None:
    with pytest.raises(InvalidInputError) as caught:
        prompt_tokens_from_usage(bad)
    assert caught.value.field == "usage"


def test_a_count_under_half_of_membranes_is_refused_and_zero_is_let_through() -> None:
    assert checked_prompt_tokens(500, 1000) == 500
    assert checked_prompt_tokens(0, 1000) == 0
    with pytest.raises(InvalidInputError, match="observe_usage") as caught:
        checked_prompt_tokens(499, 1000)
    assert caught.value.field == "actual_prompt_tokens"
    with pytest.raises(TypeError, match="must be an int"):
        checked_prompt_tokens(True, 10)


def test_observe_usage_takes_a_plain_dict_and_refuses_nothing_silently() -> None:
    compiler = ContextCompiler(8000, model_id="anthropic/claude-opus-5-5", core_content="Be kind.")
    result = compiler.compile([], "Hello there, what is new?")
    sent = result.report.sent_tokens
    usage = {"input_tokens": 2, "cache_read_input_tokens": sent + 10, "output_tokens": 1}
    scale = compiler.observe_usage(result, usage)
    assert scale == compiler.token_scale_for() and 1.0 <= scale <= 1.35
    with pytest.raises(InvalidInputError):
        compiler.observe(result, 2)
