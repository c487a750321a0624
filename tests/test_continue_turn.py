"""``continue_turn``: a model call in the middle of an agent's turn is a compile of its own.

No user message is invented, the question is sent once with the memories, the turn's steps
follow it within the budget with every call paired, and the question message keeps its bytes
across the turn's calls while the steps fit.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks._agent_scenario import (
    BUDGET,
    MEMORIES,
    RULES,
    TOOL,
    TURNS,
    check_request,
    scripted_answer,
    tool_result,
)
from membrane import ContextCompiler, InvalidInputError
from membrane.records import MemoryItem
from membrane.tokenizers import count_tokens

MEMS = [MemoryItem(id=i, content=t) for i, t in MEMORIES]
TOOLS = [{"type": "function", "function": TOOL}]


def _call(turn: Any) -> dict[str, Any]:
    arguments = json.dumps({"project": turn.project})
    function = {"name": "lookup", "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": turn.call_id, "type": "function", "function": function}],
    }


def _result(turn: Any, text: str | None = None) -> dict[str, Any]:
    content = tool_result(turn) if text is None else text
    return {"role": "tool", "tool_call_id": turn.call_id, "content": content}


def _compile(compiler: ContextCompiler, history: list[dict[str, Any]], **extra: Any) -> Any:
    return compiler.compile(
        MEMS,
        conversation_messages=history,
        agent_persona_prompt=RULES,
        tools=TOOLS,
        conversation_id="agent",
        **extra,
    )


def test_the_twelve_turn_agent_fits_and_invents_nothing() -> None:
    compiler = ContextCompiler(BUDGET)
    history: list[dict[str, Any]] = []
    reused = []
    for turn in TURNS:
        history.append({"role": "user", "content": turn.question})
        sent = []
        for step in range(2):
            result = _compile(compiler, history, continue_turn=True)
            sent.append(result.messages)
            check = check_request(result.messages, [TOOL], turn)
            assert check.ok, (turn.index, step, check)
            assert not result.metadata["budget_exceeded"]
            assert result.metadata["turn_steps"] == 2 * step
            if step == 0:
                history += [_call(turn), _result(turn)]
        answer = scripted_answer(turn)
        history.append({"role": "assistant", "content": answer})
        assert result.ref_map[2] == "team-2"  # the answer's [Mem:2] resolves
        reused.append(sent[1][: len(sent[0])] == sent[0])
    # From the second turn on, the first call leaves room for the tool result the conversation's
    # turns bring, so the second call sends the first call's request again, then its steps.
    assert sum(reused[1:]) >= 9, reused


def test_the_steps_follow_the_question_message_as_given() -> None:
    turn = TURNS[0]
    history = [{"role": "user", "content": turn.question}, _call(turn), _result(turn)]
    result = _compile(ContextCompiler(BUDGET), history, continue_turn=True)
    roles = [m["role"] for m in result.messages]
    assert roles == ["system", "user", "assistant", "tool"]
    assert result.messages[2:] == history[1:]
    final = result.messages[1]["content"]
    assert final.endswith(turn.question)
    assert all(text in final for _, text in MEMORIES)
    assert RULES in result.messages[0]["content"]


def test_a_history_ending_in_tool_results_continues_by_itself() -> None:
    turn = TURNS[0]
    history = [{"role": "user", "content": turn.question}, _call(turn), _result(turn)]
    auto = _compile(ContextCompiler(BUDGET), history)
    asked = _compile(ContextCompiler(BUDGET), history, continue_turn=True)
    assert auto.messages == asked.messages
    old = _compile(ContextCompiler(BUDGET), history, continue_turn=False)
    assert old.messages[-1]["role"] == "user" and old.messages[-2]["role"] == "tool"
    assert "turn_steps" not in old.metadata


def test_the_question_message_keeps_its_bytes_through_the_turn() -> None:
    compiler = ContextCompiler(8_000)
    turn = TURNS[0]
    history: list[dict[str, Any]] = [{"role": "user", "content": turn.question}]
    sent = []
    for i in range(3):
        result = _compile(compiler, history, continue_turn=True)
        sent.append(result)
        history += [_call(turn) | {"tool_calls": [_call(turn)["tool_calls"][0] | {"id": f"c{i}"}]}]
        history.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"step {i} done"})
    first, second, third = (r.messages[:2] for r in sent)
    assert first == second == third
    assert [r.metadata["turn_question_reused"] for r in sent] == [False, True, True]


def test_a_tool_result_too_big_for_the_budget_becomes_a_note() -> None:
    turn = TURNS[0]
    huge = tool_result(turn) * 4  # ~4,200 tokens under a 3,000-token budget
    history = [
        {"role": "user", "content": turn.question},
        _call(turn),
        _result(turn, huge),
    ]
    result = _compile(ContextCompiler(BUDGET), history, continue_turn=True)
    assert not result.metadata["budget_exceeded"]
    assert result.metadata["turn_steps_stubbed"] == 1
    note = result.messages[-1]
    assert note["role"] == "tool" and note["tool_call_id"] == turn.call_id
    assert "did not fit" in note["content"] and huge not in note["content"]
    assert check_request(result.messages, [TOOL], turn).ok


def test_anthropic_results_are_not_questions_and_thinking_stays_with_its_call() -> None:
    turn = TURNS[0]
    thinking = {"type": "thinking", "thinking": "I should look it up.", "signature": "c2ln" * 50}
    use = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"project": "atlas"}}
    history = [
        {"role": "user", "content": [{"type": "text", "text": turn.question}]},
        {"role": "assistant", "content": [thinking, use]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}],
        },
    ]
    result = _compile(ContextCompiler(BUDGET), history)  # ends in results: continued
    assert result.messages[2:] == history[1:]
    assert result.metadata["turn_steps"] == 2
    without = _compile(
        ContextCompiler(BUDGET), [history[0], {**history[1], "content": [use]}, history[2]]
    )
    # The thinking block and its signature are paid for.
    extra = count_tokens(f"{thinking['thinking']}\n{thinking['signature']}")
    assert result.metadata["token_count"] - without.metadata["token_count"] >= extra


def test_an_image_in_the_question_goes_with_its_text() -> None:
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    question = [{"type": "text", "text": "What is in this picture?"}, image]
    result = ContextCompiler(BUDGET).compile(
        MEMS, conversation_messages=[{"role": "user", "content": question}], continue_turn=True
    )
    content = result.messages[-1]["content"]
    assert content[0]["type"] == "text" and content[0]["text"].endswith("What is in this picture?")
    assert content[1:] == [image]


@pytest.mark.parametrize(
    ("history", "extra", "words"),
    [
        ([{"role": "user", "content": "hi"}], {"continue_turn": "yes"}, "True, False or None"),
        ([{"role": "user", "content": "hi"}], {"user_message": "hey", "continue_turn": True}, "''"),
        ([{"role": "assistant", "content": "hello"}], {"continue_turn": True}, "a question"),
    ],
)
def test_bad_turn_arguments_are_typed_errors(
    history: list[dict[str, Any]], extra: dict[str, Any], words: str
) -> None:
    with pytest.raises(InvalidInputError, match=words) as error:
        ContextCompiler(BUDGET).compile(MEMS, conversation_messages=history, **extra)
    assert error.value.field == "continue_turn"


_ROLES = st.sampled_from(["user", "assistant"])


@settings(max_examples=60, deadline=None)
@given(
    roles=st.lists(_ROLES, min_size=1, max_size=40),
    words=st.lists(st.integers(min_value=1, max_value=60), min_size=40, max_size=40),
    budget=st.integers(min_value=200, max_value=1_500),
)
def test_after_a_cut_the_kept_history_opens_with_a_question(
    roles: list[str], words: list[int], budget: int
) -> None:
    history = [
        {"role": role, "content": " ".join(["word"] * n)}
        for role, n in zip(roles, words, strict=False)
    ]
    result = ContextCompiler(budget).compile([], "And now?", conversation_messages=history)
    kept = result.messages[1:-1]
    if result.metadata["history_messages_dropped"] and kept:
        assert kept[0]["role"] == "user"
    if not result.metadata["history_messages_dropped"]:
        assert kept == history  # nothing cut: sent as given, assistant-first or not
