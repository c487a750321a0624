"""``MembraneMiddleware`` replaces ``SummarizationMiddleware`` and
``AnthropicPromptCachingMiddleware``; these tests pin what happens when they stay."""

from __future__ import annotations

import copy
from typing import Any

import pytest

pytest.importorskip("langchain_anthropic", reason="needs the dev extra: pip install -e '.[dev]'")

from langchain.agents.middleware import SummarizationMiddleware
from langchain_anthropic.middleware import AnthropicPromptCachingMiddleware
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage

from benchmarks.runtimes._claude import ScriptedClaude, cache_form
from benchmarks.runtimes.langchain import SUMMARY, memory_items
from membrane.adapters.langchain import MembraneMiddleware
from tests.adapters.langchain._agent import (
    ScriptedChat,
    agent_with,
    judge_chat_requests,
    new_compiler,
    run_turns,
    scripted_responses,
)


def _membrane() -> MembraneMiddleware:
    return MembraneMiddleware(new_compiler(), memories=memory_items())


def _markers(payload: dict[str, Any]) -> int:
    return str(cache_form(payload)).count("cache_control")


def _claude_run(middleware: list[Any], turns: int = 4) -> ScriptedClaude:
    model = ScriptedClaude()
    run_turns(agent_with(model, middleware), "invoke", turns=turns)
    return model


def test_prompt_caching_listed_first_is_replaced_by_membranes_markers() -> None:
    alone = _claude_run([_membrane()])
    stacked = _claude_run([AnthropicPromptCachingMiddleware(), _membrane()])
    # Its top-level marker, system marker and tool marker are all removed: the requests are
    # the ones Membrane sends alone.
    assert stacked.payloads == alone.payloads
    assert all("cache_control" not in p for p in stacked.payloads)
    assert sum(map(_markers, alone.payloads)) > 0


def _system_marked(payload: dict[str, Any]) -> bool:
    system = payload.get("system")
    return isinstance(system, list) and "cache_control" in system[-1]


def test_prompt_caching_listed_after_adds_its_three_markers() -> None:
    alone = _claude_run([_membrane()])
    stacked = _claude_run([_membrane(), AnthropicPromptCachingMiddleware()])
    for ours, both in zip(alone.payloads, stacked.payloads, strict=True):
        # The inner middleware adds a top-level marker, one on the last tool and one on the
        # system's last block, on top of Membrane's: a request can then carry more than the
        # four markers Anthropic accepts.
        assert both["cache_control"] == {"type": "ephemeral", "ttl": "5m"}
        assert "cache_control" in both["tools"][-1] and "cache_control" in both["system"][-1]
        theirs_removed = copy.deepcopy(both)
        del theirs_removed["cache_control"]
        del theirs_removed["tools"][-1]["cache_control"]
        if not _system_marked(ours):
            del theirs_removed["system"][-1]["cache_control"]
        # What is left is exactly what Membrane sends alone.
        assert cache_form(theirs_removed) == cache_form(ours)


def test_summarization_listed_first_rewrites_the_stored_history() -> None:
    model = ScriptedChat(responses=scripted_responses())
    summariser = FakeListChatModel(responses=[SUMMARY])
    summarization = SummarizationMiddleware(
        summariser, trigger=("tokens", 2_600), keep=("tokens", 1_600)
    )
    stored = run_turns(agent_with(model, [summarization, _membrane()]), "invoke")
    checks = judge_chat_requests(model.requests)
    # Membrane still holds every request to the budget ...
    assert [c.tokens for c in checks if c.over_budget] == []
    # ... but the summariser deleted stored messages and wrote a user turn nobody wrote,
    # which Membrane then compiles as history.
    assert len(stored) < 48
    summaries = [m for m in stored if isinstance(m, HumanMessage) and SUMMARY in m.text]
    assert summaries and summaries[0].additional_kwargs["lc_source"] == "summarization"
    assert any("invented user turn" in p for c in checks for p in c.problems)
