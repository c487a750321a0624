"""Tools, images and the output reserve inside the budget (docs/agents.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from membrane import ContextCompiler, InMemoryStateStore
from membrane.errors import InvalidInputError
from membrane.messages import image_tokens, message_text
from membrane.report import CompileReport
from membrane.tokenizers import count_tokens
from tests.image_samples import data_url, png
from tests.strategies import conversations, text

CORE = "You are a careful agent. Use the tools."
OVERHEAD = 3


def _tool(i: int, words: int) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {
            f"arg{j}": {"type": "string", "description": "x " * words} for j in range(3)
        },
    }
    return {
        "type": "function",
        "function": {"name": f"tool_{i}", "description": "does " * words, "parameters": schema},
    }


def _tool_tokens(tools: list[dict[str, Any]], provider_overhead: int) -> int:
    """The documented rendering, rebuilt here: one compact JSON line per tool."""
    lines = [
        json.dumps(
            {
                "name": t["function"]["name"],
                "description": t["function"]["description"],
                "parameters": t["function"]["parameters"],
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )
        for t in tools
    ]
    return count_tokens("\n".join(lines)) + provider_overhead if tools else 0


@st.composite
def image_turns(draw: st.DrawFn) -> tuple[list[dict[str, Any]], dict[str, tuple[int, int, str]]]:
    """A conversation with screenshots in user turns; the sizes as generated, by URL."""
    history = draw(conversations(max_turns=10))
    sizes: dict[str, tuple[int, int, str]] = {}
    out: list[dict[str, Any]] = []
    for message in history:
        out.append(message)
        plain = isinstance(message.get("content"), str) and not message.get("tool_calls")
        if message.get("role") != "assistant" or not plain or not draw(st.booleans()):
            continue
        w, h = draw(st.integers(16, 3000)), draw(st.integers(16, 3000))
        detail = draw(st.sampled_from(["low", "high", "auto"]))
        url = data_url(png(w, h, body=bytes([len(sizes) % 256])))
        sizes[url] = (w, h, detail)
        part = {"type": "image_url", "image_url": {"url": url, "detail": detail}}
        out.append({"role": "user", "content": [{"type": "text", "text": "shot"}, part]})
        out.append({"role": "assistant", "content": "Seen."})
    return out, sizes


def _recount(messages: list[dict[str, Any]], sizes: dict[str, tuple[int, int, str]]) -> int:
    total = 0
    for m in messages:
        total += count_tokens(message_text(m)) + OVERHEAD
        content = m.get("content")
        for part in content if isinstance(content, list) else ():
            if part.get("type") == "image_url":
                w, h, detail = sizes[part["image_url"]["url"]]
                total += image_tokens((w, h), provider="openai", detail=detail)
    return total


@settings(max_examples=60, deadline=None)
@given(
    turns=image_turns(),
    question=text,
    n_tools=st.integers(0, 12),
    tool_words=st.integers(1, 30),
    budget=st.integers(800, 9000),
)
def test_budget_holds_with_tools_and_images_counted_independently(
    turns: tuple[list[dict[str, Any]], dict[str, tuple[int, int, str]]],
    question: str,
    n_tools: int,
    tool_words: int,
    budget: int,
) -> None:
    history, sizes = turns
    tools = [_tool(i, tool_words) for i in range(n_tools)]
    compiler = ContextCompiler(budget, "gpt-4o", core_content=CORE)
    result = compiler.compile([], question, conversation_messages=history, tools=tools)
    md = result.metadata
    tools_tokens = _tool_tokens(tools, 0)
    sent = tools_tokens + _recount(result.messages, sizes)
    assert sent == md["token_count"] + md["message_framing_tokens"]
    assert md.get("tools_tokens", 0) == tools_tokens
    shown = [p for m in result.messages if isinstance(m.get("content"), list) for p in m["content"]]
    assert md.get("images", 0) == sum(1 for p in shown if p.get("type") == "image_url")
    reserved = tools_tokens + count_tokens(CORE) + count_tokens(question) + 120
    if reserved <= budget // 2:
        assert not md["budget_exceeded"]
        assert sent <= budget
    else:
        assert md["budget_exceeded"] == (sent > budget)


@given(
    max_tokens=st.integers(1000, 2_000_000), reserve=st.one_of(st.none(), st.integers(0, 127_999))
)
def test_prompt_and_reserve_fit_the_window(max_tokens: int, reserve: int | None) -> None:
    result = ContextCompiler(max_tokens, "gpt-4o").compile([], "Hi", reserve_output_tokens=reserve)
    md = result.metadata
    expected = 12_800 if reserve is None else reserve  # a tenth of 128,000 under 16,384
    assert md["reserve_output_tokens"] == expected
    assert md["context_window"] == 128_000
    assert md["tokens_budget"] == min(max_tokens, 128_000 - expected)
    assert md["tokens_budget"] + expected <= 128_000
    assert md["reserve_output_default"] is (reserve is None)


@given(
    max_tokens=st.integers(1000, 2_000_000), reserve=st.one_of(st.none(), st.integers(0, 127_999))
)
def test_reasoning_models_keep_room_for_thinking_and_their_input_limit(
    max_tokens: int, reserve: int | None
) -> None:
    md = ContextCompiler(max_tokens, "gpt-5.1").compile([], "Hi", reserve_output_tokens=reserve)
    md = md.metadata
    expected = 25_000 if reserve is None else reserve  # OpenAI's reasoning reserve
    assert md["reserve_output_tokens"] == expected
    assert md["tokens_budget"] == min(max_tokens, 400_000 - expected, 272_000)
    assert md["tokens_budget"] + expected <= md["context_window"] == 400_000


def test_default_reserve_is_the_models_maximum_output_when_smaller() -> None:
    md = ContextCompiler(4000, "gemini-pro-1.5").compile([], "Hi").metadata
    assert md["reserve_output_tokens"] == 8192  # listed maximum, under a tenth of the window
    md = ContextCompiler(4000, "claude-sonnet-4-5").compile([], "Hi").metadata
    assert md["reserve_output_tokens"] == 16_384  # the ceiling, under 64,000 and 20,000


def test_unknown_model_has_no_window_and_reports_only_an_explicit_reserve() -> None:
    plain = ContextCompiler(4000).compile([], "Hi").metadata
    assert "reserve_output_tokens" not in plain
    named = ContextCompiler(4000).compile([], "Hi", reserve_output_tokens=900).metadata
    assert named["reserve_output_tokens"] == 900
    assert named["context_window"] is None
    assert named["tokens_budget"] == 4000


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"reserve_output_tokens": -1}, "reserve_output_tokens"),
        ({"reserve_output_tokens": True}, "reserve_output_tokens"),
        ({"reserve_output_tokens": 128_000}, "reserve_output_tokens"),
        ({"image_sizes": {"https://x/a.png": (0, 10)}}, "image_sizes"),
        ({"image_sizes": [("https://x/a.png", (10, 10))]}, "image_sizes"),
        ({"tools": [{"type": "function", "function": {"name": ""}}]}, "tools[0]"),
    ],
)
def test_bad_agent_arguments_name_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        ContextCompiler(4000, "gpt-4o").compile([], "Hi", **kwargs)
    assert info.value.field == field


def test_metadata_reports_tokens_per_region_and_reads_back() -> None:
    remote = {"type": "image_url", "image_url": {"url": "https://x/shot.png"}}
    sized = {"type": "image_url", "image_url": {"url": "https://x/known.png", "detail": "low"}}
    history = [
        {"role": "user", "content": [{"type": "text", "text": "Look."}, remote, sized]},
        {"role": "assistant", "content": "Seen."},
    ]
    result = ContextCompiler(20_000, "gpt-4o", core_content=CORE).compile(
        [],
        "What changed?",
        conversation_messages=history,
        tools=[_tool(0, 5)],
        image_sizes={"https://x/known.png": (640, 480)},
    )
    md = result.metadata
    assert md["tools"] == 1
    assert md["tools_tokens"] == _tool_tokens([_tool(0, 5)], 0)
    assert md["images"] == 2
    assert md["images_unsized"] == 1
    assert md["image_tokens"] == 1445 + 85  # unsized: OpenAI's largest; sized and low: 85
    report = CompileReport.from_metadata(md)
    assert report.metadata() == md
    assert report.agent is not None and report.agent.image_tokens == 1530


def test_tools_lead_the_cached_prefix_and_a_change_is_reported() -> None:
    store = InMemoryStateStore()
    compiler = ContextCompiler(20_000, "gpt-4o", core_content=CORE, state_store=store)
    tools = [_tool(i, 40) for i in range(6)]
    first = compiler.compile([], "Hi", tools=tools, conversation_id="c").metadata
    again = compiler.compile([], "Hi", tools=tools, conversation_id="c").metadata
    edited = [_tool(i, 41 if i == 3 else 40) for i in range(6)]
    changed = compiler.compile([], "Hi", tools=edited, conversation_id="c").metadata
    assert (first["tools_changed"], again["tools_changed"], changed["tools_changed"]) == (
        False,
        False,
        True,
    )
    # Breakpoint token figures count from the start of the prompt: the tools come first.
    core_only = compiler.compile([], "Hi", conversation_id="d").metadata
    assert first["cache_breakpoints"][0]["tokens"] == (
        core_only["cache_breakpoints"][0]["tokens"] + first["tools_tokens"]
    )
    assert first["prompt_cache_used"] and not core_only["prompt_cache_used"]
    # A second compiler sharing the store sees the same tools as unchanged.
    other = ContextCompiler(20_000, "gpt-4o", core_content=CORE, state_store=store)
    assert (
        other.compile([], "Hi", tools=edited, conversation_id="c").metadata["tools_changed"]
        is False
    )


def test_observe_sees_the_tools_in_the_counted_prompt() -> None:
    compiler = ContextCompiler(20_000, "gpt-4o", core_content=CORE)
    result = compiler.compile([], "Hi", tools=[_tool(0, 50)])
    sent = result.metadata["token_count"] + result.metadata["message_framing_tokens"]
    assert compiler.observe(result, sent) == pytest.approx(1.0)
