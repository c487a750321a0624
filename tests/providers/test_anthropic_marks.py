"""anthropic_cache_marks names the markers anthropic_request places, in compiled-message terms."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks._agent_scenario import MEMORIES, RULES, TOOL, TURNS, tool_result
from membrane import ContextCompiler, MemoryItem
from membrane.errors import InvalidInputError
from membrane.providers.anthropic import CacheMarks, anthropic_cache_marks, anthropic_request
from tests.providers.samples import anthropic_blocks, no_cache_model, parallel_tools


def _agent_result(model_id: str | None, tools: list[dict[str, Any]]) -> Any:
    history: list[dict[str, Any]] = []
    for turn in TURNS[:3]:
        call = {
            "id": turn.call_id,
            "type": "function",
            "function": {"name": "lookup", "arguments": "{}"},
        }
        history += [
            {"role": "user", "content": turn.question},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": turn.call_id, "content": tool_result(turn)},
            {"role": "assistant", "content": f"Done with {turn.project}."},
        ]
    history.append({"role": "user", "content": TURNS[3].question})
    compiler = ContextCompiler(6_000, model_id=model_id)
    memories = [MemoryItem(id=i, content=t) for i, t in MEMORIES]
    return compiler.compile(
        memories,
        conversation_messages=history,
        continue_turn=True,
        agent_persona_prompt=RULES,
        tools=tools,
    )


def _request_marks(request: dict[str, Any]) -> tuple[list[int], list[str], bool]:
    """System block ends (chars) that are marked, texts of marked message blocks, tools."""
    ends, offset = [], 0
    for block in request.get("system", []):
        offset += len(block["text"])
        if "cache_control" in block:
            ends.append(offset)
    texts = [
        str(b.get("text", b.get("content", b.get("id"))))
        for m in request["messages"]
        for b in m["content"]
        if "cache_control" in b
    ]
    tools = any("cache_control" in t for t in request.get("tools", []))
    return ends, texts, tools


def _assert_agree(result: Any, **options: Any) -> CacheMarks:
    marks = anthropic_cache_marks(result, **options)
    ends, texts, tools = _request_marks(anthropic_request(result, **options))
    assert marks.tools == tools
    system = [chars for index, chars in marks.messages if index == 0]
    system_text = result.messages[0]["content"]
    assert [len(system_text) if c is None else c for c in system] == ends
    others = [result.messages[index] for index, _ in marks.messages if index > 0]
    assert len(others) == len(texts)
    for message, text in zip(others, texts, strict=True):
        content = message.get("content")
        if isinstance(content, str):
            assert content.endswith(text)
    return marks


@pytest.mark.parametrize("sample", [parallel_tools, anthropic_blocks, no_cache_model])
def test_the_marks_are_where_anthropic_request_puts_markers(sample: Any) -> None:
    _assert_agree(sample())


def test_fewer_places_and_the_top_level_marker_take_the_same_room() -> None:
    result = parallel_tools()
    full = _assert_agree(result)
    assert len(full.messages) >= 2
    assert len(_assert_agree(result, max_breakpoints=1).messages) == 1
    assert len(_assert_agree(result, cache_control=True).messages) == min(3, len(full.messages))


def test_an_agent_compile_and_a_stand_in_model() -> None:
    tools = [{"type": "function", "function": TOOL}]
    named = _assert_agree(_agent_result("anthropic/claude-sonnet-4-5", tools))
    assert named.messages
    unnamed = _agent_result(None, tools)
    assert anthropic_cache_marks(unnamed) == CacheMarks()  # no model: no cache minimum known
    stand_in = anthropic_cache_marks(unnamed, model_id="anthropic/claude-sonnet-4-5")
    assert stand_in.messages


def test_a_big_tool_set_is_marked_first() -> None:
    big = {**TOOL, "description": "Read a project's report. " * 400}
    marks = _assert_agree(
        _agent_result("anthropic/claude-sonnet-4-5", [{"type": "function", "function": big}])
    )
    assert marks.tools


def test_bad_options_are_refused() -> None:
    with pytest.raises(InvalidInputError):
        anthropic_cache_marks(parallel_tools(), max_breakpoints=5)
