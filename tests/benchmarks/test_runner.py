"""Tool-pair validity and metric aggregation of the benchmark runner."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks._runner import Run, TurnRecord, aggregate, invalid_tool_sequence, summarise

_EXAMPLES = int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", "100"))


def _call(i: int) -> dict[str, Any]:
    return {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@st.composite
def valid_chats(draw: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "s"}]
    n = 0
    for _ in range(draw(st.integers(1, 8))):
        out.append({"role": "user", "content": "u"})
        for _ in range(draw(st.integers(0, 2))):
            k = draw(st.integers(1, 3))
            calls = [_call(n + j) for j in range(k)]
            n += k
            out.append({"role": "assistant", "content": None, "tool_calls": calls})
            order = draw(st.permutations(calls))
            out += [{"role": "tool", "tool_call_id": c["id"], "content": "r"} for c in order]
        out.append({"role": "assistant", "content": "a"})
    return out


@settings(max_examples=_EXAMPLES)
@given(valid_chats(), st.data())
def test_dropping_one_side_of_a_pair_is_invalid(chat: list[dict[str, Any]], data: Any) -> None:
    assert not invalid_tool_sequence(chat)
    paired = [i for i, m in enumerate(chat) if m["role"] == "tool" or m.get("tool_calls")]
    if not paired:
        return
    i = data.draw(st.sampled_from(paired))
    assert invalid_tool_sequence(chat[:i] + chat[i + 1 :])


def test_a_result_separated_from_its_call_is_invalid() -> None:
    chat = [
        {"role": "assistant", "content": None, "tool_calls": [_call(1)]},
        {"role": "user", "content": "interrupting"},
        {"role": "tool", "tool_call_id": "c1", "content": "r"},
    ]
    assert invalid_tool_sequence(chat)
    assert invalid_tool_sequence([{"role": "tool", "tool_call_id": "c1", "content": "r"}])


def _turn(input_tokens: int, cached: int, hits: list[bool], over: int = 0) -> TurnRecord:
    return TurnRecord(
        input_tokens=input_tokens,
        cached_tokens=cached,
        anthropic_input=input_tokens,
        anthropic_uncached=input_tokens,
        anthropic_write=0,
        anthropic_read=0,
        over_by=over,
        invalid_tools=False,
        probes=[("history", h) for h in hits],
        compile_ns=1_000_000,
    )


def test_aggregate_relative_cost_recall_and_counts() -> None:
    naive = Run("s", 1, "naive", 100, [_turn(1000, 0, [True]), _turn(1000, 0, [False])])
    other = Run("s", 1, "x", 100, [_turn(1000, 0, [True]), _turn(1000, 1000, [True], over=7)])
    a = aggregate([naive], [naive])
    assert a["cost_05"] == a["cost_01"] == a["cost_anthropic"] == 100.0
    assert a["recall"] == a["recall_history"] == 0.5 and a["recall_memory"] is None
    b = aggregate([other], [naive])
    assert b["cost_05"] == 75.0  # (1000 + 0.5 * 1000) / 2000
    assert b["cost_01"] == 55.0
    assert b["cached_share"] == 0.5 and b["recall"] == 1.0
    assert b["turns_over_budget"] == 1 and b["max_over_budget_tokens"] == 7
    s = summarise({"s": b, "t": a})
    assert s["recall"] == 0.75 and s["turns_over_budget"] == 1 and s["scenarios"] == 2
