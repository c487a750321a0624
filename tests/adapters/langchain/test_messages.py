"""from_langchain_messages on what LangChain 1.x stores for Claude: each call is sent once."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_anthropic", reason="needs the dev extra: pip install -e '.[dev]'")

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from benchmarks.runtimes._claude import ScriptedClaude
from benchmarks.runtimes.langchain import lookup_tool
from membrane.adapters.langchain import from_langchain_messages

CALL = {"name": "lookup", "args": {"project": "atlas"}, "id": "toolu_01"}


def _claude_call(stream: bool) -> BaseMessage:
    model = ScriptedClaude(think_before_calls=True).bind_tools([lookup_tool()])
    question = [HumanMessage("Turn 1: when does project atlas ship, and who signs it off?")]
    if not stream:
        return model.invoke(question)
    chunks = list(model.stream(question))
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    return total


@pytest.mark.parametrize("stream", [False, True])
def test_a_claude_call_gives_one_tool_call_and_keeps_its_signed_thought(stream: bool) -> None:
    message = _claude_call(stream)
    assert message.response_metadata["model_provider"] == "anthropic"
    assert any(b.get("type") == "tool_use" for b in message.content)  # type: ignore[union-attr]
    [converted] = from_langchain_messages([message])
    assert [c["id"] for c in converted["tool_calls"]] == ["toolu_01"]
    assert converted["tool_calls"][0]["function"]["name"] == "lookup"
    kinds = [b["type"] for b in converted["content"]]
    assert kinds == ["thinking", "text"]
    assert converted["content"][0]["signature"] == "c2lnbmVkLXRoaW5raW5n"
    # LangChain's own standard view agrees on the calls.
    standard = [b["id"] for b in message.content_blocks if b["type"] == "tool_call"]
    assert standard == ["toolu_01"]


def test_v1_tool_call_blocks_are_not_sent_twice() -> None:
    message = AIMessage(
        [{"type": "text", "text": "Looking."}, {"type": "tool_call", **CALL}], tool_calls=[CALL]
    )
    [converted] = from_langchain_messages([message])
    assert converted["content"] == [{"type": "text", "text": "Looking."}]
    assert len(converted["tool_calls"]) == 1


def test_a_block_for_a_call_the_message_does_not_list_stays() -> None:
    other = {"type": "tool_use", "id": "toolu_99", "name": "search", "input": {}}
    message = AIMessage([{"type": "text", "text": "x"}, other], tool_calls=[CALL])
    [converted] = from_langchain_messages([message])
    assert converted["content"][-1] == other
