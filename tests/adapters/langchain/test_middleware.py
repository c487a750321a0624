"""``MembraneMiddleware`` inside ``create_agent``: the 12-turn agent under 3,000 tokens.

Every request a model receives is judged independently (``check_request``: budget, tool
pairs, invented user turns, rules and question sent once, memories in the question message).
The thread's stored history must hold all 48 messages after the run, and ``[Mem:2]`` in each
answer must resolve to ``team-2`` through ``response_metadata["membrane"]``.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip(
    "langchain.agents", reason="needs the langchain extra: pip install -e '.[langchain]'"
)

from langchain_core.messages import AIMessage

from tests.adapters.langchain._agent import (
    ASYNC_MODES,
    SYNC_MODES,
    ScriptedChat,
    ScriptedClaude,
    agent_with,
    arun_turns,
    assert_history_complete,
    judge_chat_requests,
    judge_claude_payloads,
    run_turns,
    scripted_responses,
)


def _answers(stored: list[Any]) -> list[AIMessage]:
    return [m for m in stored if isinstance(m, AIMessage) and not m.tool_calls]


def assert_cited(stored: list[Any], thread: str) -> None:
    answers = _answers(stored)
    assert len(answers) == 12
    for answer in answers:
        assert "[Mem:2]" in answer.text
        info = answer.response_metadata["membrane"]
        assert info["ref_map"]["2"] == "team-2"
        assert info["conversation_id"] == thread
        assert info["budget_exceeded"] is False
        assert "[Mem" not in str(answer.content).replace("[Mem:2]", "")


def assert_all_pass(checks: list[Any]) -> None:
    assert len(checks) == 24
    assert [c.tokens for c in checks if c.over_budget] == []
    assert [c.problems for c in checks if c.problems] == []


@pytest.mark.parametrize("mode", SYNC_MODES)
def test_fake_model_agent_fits_every_request(mode: str) -> None:
    model = ScriptedChat(responses=scripted_responses())
    stored = run_turns(agent_with(model), mode)
    assert_all_pass(judge_chat_requests(model.requests))
    assert_history_complete(stored)
    assert_cited(stored, "thread-1")


@pytest.mark.parametrize("mode", ASYNC_MODES)
async def test_fake_model_agent_fits_every_request_async(mode: str) -> None:
    model = ScriptedChat(responses=scripted_responses())
    stored = await arun_turns(agent_with(model), mode)
    assert_all_pass(judge_chat_requests(model.requests))
    assert_history_complete(stored)
    assert_cited(stored, "thread-1")


def _assert_claude_payloads(payloads: list[dict[str, Any]]) -> None:
    assert_all_pass(judge_claude_payloads(payloads))
    for payload in payloads:
        blocks = [b for m in payload["messages"] for b in m["content"] if isinstance(b, dict)]
        blocks += payload["system"] if isinstance(payload["system"], list) else []
        uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        assert len(uses) == len(set(uses)), "a tool_use block is sent twice"
        assert sum("cache_control" in b for b in blocks) <= 4
        assert "cache_control" not in payload  # no top-level marker on Membrane's tail


@pytest.mark.parametrize("mode", SYNC_MODES)
def test_claude_agent_fits_every_request(mode: str) -> None:
    model = ScriptedClaude()
    stored = run_turns(agent_with(model), mode)
    _assert_claude_payloads(model.payloads)
    assert_history_complete(stored)
    assert_cited(stored, "thread-1")
    # Claude's own blocks are stored as it sent them.
    call = stored[1]
    assert call.response_metadata["model_provider"] == "anthropic"
    assert [b["type"] for b in call.content] == ["text", "tool_use"]


@pytest.mark.parametrize("mode", ASYNC_MODES)
async def test_claude_agent_fits_every_request_async(mode: str) -> None:
    model = ScriptedClaude()
    stored = await arun_turns(agent_with(model), mode)
    _assert_claude_payloads(model.payloads)
    assert_history_complete(stored)
    assert_cited(stored, "thread-1")


def test_claude_thoughts_go_back_signed_beside_their_calls() -> None:
    # Three turns: long enough for the first turn to be cut, so kept and stepped calls both show.
    model = ScriptedClaude(think_before_calls=True)
    stored = run_turns(agent_with(model), "stream", turns=3)
    assert_history_complete(stored, turns=3)
    assert [b["type"] for b in stored[1].content] == ["thinking", "text", "tool_use"]
    calls_seen = 0
    for payload in model.payloads:
        for message in payload["messages"]:
            content = message["content"]
            if not isinstance(content, list):
                continue
            uses = [b for b in content if b.get("type") == "tool_use"]
            if uses:
                calls_seen += 1
                thinking = [b for b in content if b.get("type") == "thinking"]
                assert [b["signature"] for b in thinking] == ["c2lnbmVkLXRoaW5raW5n"]
                assert content.index(thinking[0]) < content.index(uses[0])
                assert len(uses) == 1
    assert calls_seen >= 3
