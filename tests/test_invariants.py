"""Property tests for the invariants in docs/architecture.md."""

from __future__ import annotations

import re
import socket
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.compiler import ContextCompiler
from membrane.messages import message_text, validate_messages
from membrane.records import MemoryItem
from membrane.state import InMemoryStateStore
from membrane.tokenizers import count_tokens
from tests.strategies import conversations, memory_items, text

CORE = "You are a careful assistant. Cite memories as [Mem:N]."
OVERHEAD = 3


def _recount(messages: list[dict[str, Any]]) -> int:
    return sum(count_tokens(message_text(m)) + OVERHEAD for m in messages)


@given(
    memories=memory_items(),
    history=conversations(),
    question=text,
    budget=st.integers(400, 6000),
    placement=st.sampled_from(["end", "system"]),
)
def test_budget_holds_whenever_reserved_content_fits(
    memories: list[MemoryItem],
    history: list[dict[str, Any]],
    question: str,
    budget: int,
    placement: str,
) -> None:
    compiler = ContextCompiler(budget, core_content=CORE, memory_placement=placement)  # type: ignore[arg-type]
    result = compiler.compile(memories, question, conversation_messages=history)
    md = result.metadata
    sent = _recount(result.messages)
    assert sent == md["token_count"] + md["message_framing_tokens"]
    reserved = count_tokens(CORE) + count_tokens(question) + 40
    if reserved <= budget // 2:
        assert not md["budget_exceeded"]
        assert sent <= budget
    else:
        assert md["budget_exceeded"] == (sent > budget)


@given(memories=memory_items(), history=conversations(max_turns=12), question=text)
def test_ref_map_is_exactly_the_tags_sent_in_input_order(
    memories: list[MemoryItem], history: list[dict[str, Any]], question: str
) -> None:
    compiler = ContextCompiler(1500, core_content=CORE)
    result = compiler.compile(memories, question, conversation_messages=history)
    tail = result.messages[-1]["content"]
    present = {int(n) for n in re.findall(r"\[Mem:(\d+)\]", tail)}
    assert set(result.ref_map) == present
    for n, ref in result.ref_map.items():
        assert ref == memories[n - 1].id
        assert result.ref_map_type[n] == memories[n - 1].memory_type


@given(
    memories=memory_items(),
    history=conversations(max_turns=15),
    question=text,
    budget=st.integers(500, 5000),
)
def test_same_inputs_same_bytes(
    memories: list[MemoryItem], history: list[dict[str, Any]], question: str, budget: int
) -> None:
    a = ContextCompiler(budget, core_content=CORE).compile(
        memories, question, conversation_messages=history
    )
    b = ContextCompiler(budget, core_content=CORE).compile(
        memories, question, conversation_messages=history
    )
    assert a.messages == b.messages
    assert a.metadata == b.metadata
    assert a.ref_map == b.ref_map


@given(
    memories=memory_items(),
    history=conversations(max_turns=10),
    question=text,
    budget=st.integers(50, 3000),
    directives=st.lists(text, max_size=2),
)
def test_rules_and_current_turn_are_never_cut(
    memories: list[MemoryItem],
    history: list[dict[str, Any]],
    question: str,
    budget: int,
    directives: list[str],
) -> None:
    result = ContextCompiler(budget, core_content=CORE).compile(
        memories, question, conversation_messages=history, dynamic_directives=directives
    )
    assert result.messages[0]["role"] == "system"
    assert result.messages[0]["content"].startswith(CORE)
    tail = result.messages[-1]["content"]
    assert f"--- Current user message ---\n{question}" in tail
    for d in directives:
        assert d.strip() in tail


@given(history=conversations(max_turns=25), question=text, budget=st.integers(300, 4000))
def test_tool_calls_and_results_stay_paired(
    history: list[dict[str, Any]], question: str, budget: int
) -> None:
    result = ContextCompiler(budget, core_content=CORE).compile(
        [], question, conversation_messages=history
    )
    sent_history = result.messages[1:-1]
    validate_messages(sent_history)  # raises ToolPairingError on a broken pair
    # What is sent is a suffix of what was given, untouched.
    assert sent_history == history[len(history) - len(sent_history) :]


def _refuse(*args: object, **kwargs: object) -> None:
    raise AssertionError("Membrane tried to open a network connection")


@given(memories=memory_items(), history=conversations(max_turns=20), question=text)
def test_compiles_with_sockets_disabled(
    memories: list[MemoryItem], history: list[dict[str, Any]], question: str
) -> None:
    with pytest.MonkeyPatch.context() as mp:
        for name in ("socket", "create_connection", "getaddrinfo"):
            mp.setattr(socket, name, _refuse)
        for model in ("openai/gpt-4o", "anthropic/claude-opus-5-5", None):
            compiler = ContextCompiler(2000, model_id=model, core_content=CORE)
            result = compiler.compile(memories, question, conversation_messages=history)
            assert result.messages[-1]["role"] == "user"
            compiler.observe(result, result.metadata["token_count"] + 10)


def _grow(history: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Prefixes of a conversation at user-turn boundaries."""
    cuts = [
        i
        for i, m in enumerate(history)
        if m["role"] == "user" and isinstance(m.get("content"), str)
    ]
    return [history[:i] for i in cuts] + [history]


@given(history=conversations(max_turns=30), question=text, budget=st.integers(600, 4000))
def test_prefix_is_byte_stable_until_the_cut_moves(
    history: list[dict[str, Any]], question: str, budget: int
) -> None:
    compiler = ContextCompiler(budget, core_content=CORE, token_scale=1.0)
    previous = None
    for prefix in _grow(history):
        result = compiler.compile([], question, conversation_messages=prefix)
        md = result.metadata
        if previous is not None and md["history_messages_dropped"] == previous[1]:
            stable_before = previous[0][: previous[2]]
            assert result.messages[: len(stable_before)] == stable_before
        previous = (result.messages, md["history_messages_dropped"], md["stable_prefix_messages"])


@given(history=conversations(max_turns=30), memories=memory_items(), budget=st.integers(600, 4000))
def test_two_compilers_sharing_a_store_emit_what_one_would(
    history: list[dict[str, Any]], memories: list[MemoryItem], budget: int
) -> None:
    alone = ContextCompiler(budget, core_content=CORE)
    store = InMemoryStateStore()
    pair = [ContextCompiler(budget, core_content=CORE, state_store=store) for _ in range(2)]
    for turn, prefix in enumerate(_grow(history)):
        question = f"question {turn} about code vault"
        expected = alone.compile(
            memories, question, conversation_messages=prefix, conversation_id="c1"
        )
        got = pair[turn % 2].compile(
            memories, question, conversation_messages=prefix, conversation_id="c1"
        )
        assert got.messages == expected.messages
