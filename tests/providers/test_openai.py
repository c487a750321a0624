"""openai_request and build_system_messages."""

from __future__ import annotations

import copy

import pytest

from membrane.errors import InvalidInputError, ToolPairingError
from membrane.providers import build_system_messages, openai_request
from membrane.tokenizers import count_tokens
from tests.providers.samples import FakeResult, parallel_tools


class WordCounter:
    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


def test_request_passes_messages_through_as_copies() -> None:
    result = parallel_tools()
    request = openai_request(result, model="gpt-4o", prompt_cache_key="conv-1", temperature=0)
    assert request == {
        "model": "gpt-4o",
        "messages": result.messages,
        "prompt_cache_key": "conv-1",
        "temperature": 0,
    }
    before = copy.deepcopy(result.messages)
    request["messages"][1]["content"] = "edited"
    assert result.messages == before


def test_prompt_cache_key_is_left_out_unless_given() -> None:
    assert "prompt_cache_key" not in openai_request(parallel_tools(), model="gpt-4o")


def test_system_placement_is_fine_for_openai() -> None:
    result = FakeResult([{"role": "system", "content": "all in one"}], {"memory_placement": None})
    assert openai_request(result, model="gpt-4o")["messages"] == result.messages


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"model": ""}, "model"),
        ({"model": "gpt-4o", "prompt_cache_key": 7}, "prompt_cache_key"),
        ({"model": "gpt-4o", "messages": []}, "messages"),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        openai_request(parallel_tools(), **kwargs)  # type: ignore[arg-type]
    assert err.value.field == field


def test_orphan_tool_message_raises() -> None:
    result = FakeResult(
        [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "c", "content": "y"}]
    )
    with pytest.raises(ToolPairingError):
        openai_request(result, model="gpt-4o")


def test_automatic_cache_models_get_one_plain_system_message() -> None:
    prefix, tail = "Rules line.\n" * 400, "[Mem:1] fact\n"
    messages, hint = build_system_messages("openai/gpt-4o", prefix, tail)
    assert messages == [{"role": "system", "content": prefix + tail}]
    assert hint == {
        "cache_mode": "automatic",
        "prompt_cache_used": True,
        "cacheable_prefix_tokens": count_tokens(prefix),
        "min_cacheable_tokens": 1024,
        "token_scale": 1.0,
    }


def test_short_prefix_is_not_cacheable() -> None:
    messages, hint = build_system_messages("gpt-4o", "Short rules.\n", "Tail.")
    assert messages == [{"role": "system", "content": "Short rules.\nTail."}]
    assert hint["prompt_cache_used"] is False


def test_marked_models_get_a_cache_control_part_once_the_minimum_is_reached() -> None:
    counter = WordCounter()
    prefix = "word " * 400  # 400 words * 1.51 >= 512 for Claude Opus 5.5
    messages, hint = build_system_messages("claude-opus-5-5", prefix, "tail", counter=counter)
    assert messages == [
        {
            "role": "system",
            "content": [
                {"type": "text", "text": prefix, "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "tail"},
            ],
        }
    ]
    assert hint["cache_mode"] == "marked"
    assert hint["cacheable_prefix_tokens"] == 400
    short, short_hint = build_system_messages("claude-opus-5-5", "word " * 300, "", counter=counter)
    assert short == [{"role": "system", "content": "word " * 300}]
    assert short_hint["prompt_cache_used"] is False


def test_unknown_model_and_empty_text() -> None:
    messages, hint = build_system_messages(None, "", "")
    assert messages == []
    assert hint == {
        "cache_mode": None,
        "prompt_cache_used": False,
        "cacheable_prefix_tokens": 0,
        "min_cacheable_tokens": None,
        "token_scale": 1.0,
    }
