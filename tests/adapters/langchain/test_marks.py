"""Cache markers on LangChain messages, as ChatAnthropic renders them."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_anthropic", reason="needs the dev extra: pip install -e '.[dev]'")

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from benchmarks.runtimes._claude import ScriptedClaude
from membrane.adapters.langchain._marks import MarkPlan, apply_marks, strip_marks

MARK = {"type": "ephemeral"}
CALL = {"name": "lookup", "args": {"project": "atlas"}, "id": "toolu_01"}


def _payload(system: SystemMessage | None, messages: list[BaseMessage]) -> dict[str, Any]:
    head = [system] if system is not None else []
    return ScriptedClaude()._get_request_payload([*head, *messages])


def test_the_system_message_is_split_where_the_core_ends() -> None:
    text = "Core rules." + " Index line."
    plan = MarkPlan(cuts={0: (11,)}, marks={0: (11, None)})
    system, _, done = apply_marks(plan, SystemMessage(text), [HumanMessage("Q?")], True)
    assert system is not None
    assert system.content == [
        {"type": "text", "text": "Core rules.", "cache_control": MARK},
        {"type": "text", "text": " Index line.", "cache_control": MARK},
    ]
    assert done.placed == 2
    assert _payload(system, [HumanMessage("Q?")])["system"] == system.content


def test_a_split_without_a_marker_still_splits() -> None:
    plan = MarkPlan(cuts={0: (4,)}, marks={})
    system, _, done = apply_marks(plan, SystemMessage("Core rest"), [], True)
    assert system is not None and system.content == [
        {"type": "text", "text": "Core"},
        {"type": "text", "text": " rest"},
    ]
    assert done.placed == 0


def test_a_tool_result_carries_its_marker_to_the_tool_result_block() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("Q?"),
        AIMessage("", tool_calls=[CALL]),
        ToolMessage("report", tool_call_id="toolu_01"),
    ]
    _, out, done = apply_marks(MarkPlan(marks={3: (None,)}), None, messages, True)
    assert done.placed == 1 and out[:2] == messages[:2]
    [result] = _payload(None, out)["messages"][-1]["content"]
    assert result["type"] == "tool_result" and result["cache_control"] == MARK


def test_a_call_is_marked_on_its_text_since_chat_anthropic_rebuilds_tool_use() -> None:
    call = AIMessage(
        [{"type": "text", "text": "Looking."}, {"type": "tool_use", **CALL, "input": {}}],
        tool_calls=[CALL],
    )
    _, out, done = apply_marks(MarkPlan(marks={2: (None,)}), None, [HumanMessage("Q?"), call], True)
    assert done.placed == 1
    content = _payload(None, out)["messages"][1]["content"]
    assert [("cache_control" in b, b["type"]) for b in content] == [
        (True, "text"),
        (False, "tool_use"),
    ]


def test_a_call_without_text_gets_no_marker() -> None:
    call = AIMessage("", tool_calls=[CALL])
    _, out, done = apply_marks(MarkPlan(marks={2: (None,)}), None, [HumanMessage("Q?"), call], True)
    assert done.placed == 0 and out[1] is call


def test_markers_a_message_brought_are_removed() -> None:
    marked = HumanMessage([{"type": "text", "text": "hi", "cache_control": MARK}])
    assert strip_marks(marked).content == [{"type": "text", "text": "hi"}]
    plain = HumanMessage("hi")
    assert strip_marks(plain) is plain
    _, out, _ = apply_marks(MarkPlan(), None, [marked], True)
    assert out[0].content == [{"type": "text", "text": "hi"}]
