"""The demo: real properties of its run, and a printed report that matches a recomputation."""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

import pytest

from membrane.compiler import ContextCompiler
from membrane.demo import (
    DEFAULT_BUDGET,
    DemoRun,
    DemoTurn,
    _retrieve,
    load_demo_data,
    main,
    render_report,
    run_demo,
)
from membrane.messages import message_text
from membrane.stages.history import RECALL_HEADER
from membrane.tokenizers import TiktokenAdapter

DATA = load_demo_data()
CORE_RULES, MEMORIES, TURNS = DATA.core_rules, DATA.memories, DATA.turns

ROW = re.compile(
    r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d,]+)/([\d,]+)\s+"
    r"(\d+)/(\d+)/(\d+)\s+(\d+)/(\d+)\s+(\d+)%\s+(first|hit|too small|changed)\s*$"
)


@cache
def _run() -> DemoRun:
    return run_demo()


@cache
def _printed() -> str:
    return render_report(_run())


def _sent(result: Any) -> int:
    return int(result.metadata["token_count"]) + int(result.metadata["message_framing_tokens"])


def test_main_prints_the_report_and_is_deterministic(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    first = capsys.readouterr().out
    assert main([]) == 0
    assert capsys.readouterr().out == first == _printed()


def test_the_chat_is_the_promised_size() -> None:
    assert 28 <= len(TURNS) <= 32
    assert len(MEMORIES) == 15
    assert {m.memory_type for m in MEMORIES} == {"procedural", "semantic", "episodic"}
    tool_turns = [t for t in TURNS if any(m.get("tool_calls") for m in t.replies)]
    assert len(tool_turns) >= 2
    counter = TiktokenAdapter("cl100k_base")
    assert max(counter.count(t.user) for t in TURNS) > 400  # the long paste


def test_the_data_is_a_json_resource_shipped_in_the_package() -> None:
    source = resources.files("membrane").joinpath("demo_data.json")
    raw = json.loads(source.read_text(encoding="utf-8"))
    assert set(raw) == {"core_rules", "memories", "turns"}
    assert [m["id"] for m in raw["memories"]] == [m.id for m in MEMORIES]
    assert [t["user"] for t in raw["turns"]] == [t.user for t in TURNS]
    assert load_demo_data() is DATA  # read once
    # Every tool call is answered by the tool result that follows it.
    for turn in TURNS:
        for asked, answered in zip(turn.replies, turn.replies[1:], strict=False):
            for call in asked.get("tool_calls") or []:
                assert answered == {**answered, "role": "tool", "tool_call_id": call["id"]}


def test_a_shorter_chat_replays_the_first_turns_of_the_full_run() -> None:
    short = run_demo(turns=TURNS[:4])
    assert [t.turn for t in short.turns] == [1, 2, 3, 4]
    for mine, full in zip(short.turns, _run().turns, strict=False):
        assert mine.result.messages == full.result.messages
        assert mine.regions == full.regions
    own = (DemoTurn("Where is the export?", ({"role": "assistant", "content": "In S3."},)),)
    alone = run_demo(turns=own, memories=[MEMORIES[4]])
    assert alone.turns[0].result.ref_map == {1: MEMORIES[4].id}


def test_no_turn_goes_over_budget() -> None:
    run = _run()
    for turn in run.turns:
        assert _sent(turn.result) <= run.budget, turn.turn
        assert turn.result.metadata["budget_exceeded"] is False
    assert run.turns_over_budget == 0


def test_history_is_cut_indexed_and_recalled() -> None:
    run = _run()
    dropped = [int(t.result.metadata["history_messages_dropped"]) for t in run.turns]
    assert dropped == sorted(dropped)  # the cut only moves forward
    assert run.cut_turns and run.cut_turns[0] > 1
    assert all(dropped[n - 1] > dropped[n - 2] for n in run.cut_turns)
    assert run.recall_turns
    for turn in run.turns:
        md = turn.result.metadata
        tail = message_text(turn.result.messages[-1])
        assert (RECALL_HEADER in tail) == (md["history_messages_recalled"] > 0)
        if md["history_messages_dropped"]:
            assert md["history_index_lines"] > 0
            assert turn.regions["index"] == md["history_index_tokens"] > 0


def test_late_questions_get_their_answers_back_from_dropped_history() -> None:
    # Turns 27-29 ask for details that only early tool results carried.
    wanted = {27: ["02:31:07", "exit code 137"], 28: ["184,220"], 29: ["pi_3PRk4gLx9QeT1c7z"]}
    run = _run()
    for number, facts in wanted.items():
        turn = run.turns[number - 1]
        kept_history = turn.result.messages[1:-1]
        recalled = message_text(turn.result.messages[-1]).split(RECALL_HEADER, 1)[1]
        for fact in facts:
            assert not any(fact in message_text(m) for m in kept_history), (number, fact)
            assert fact in recalled, (number, fact)


def test_memories_are_thinned_and_dropped_only_under_pressure() -> None:
    run = _run()
    squeezed = [
        t
        for t in run.turns
        if t.result.metadata["segments_kept"] < t.result.metadata["segments_offered"]
        or t.result.metadata["segments_thinned"]
    ]
    assert squeezed
    assert any(t.result.metadata["segments_thinned"] for t in squeezed)
    for turn in squeezed:
        # Whatever was trimmed, the prompt is full: less than one memory line of room is left.
        assert run.budget - _sent(turn.result) < 60, turn.turn


def test_regions_add_up_and_prefix_is_measured_from_the_messages() -> None:
    run = _run()
    counter = TiktokenAdapter("cl100k_base")
    for turn in run.turns:
        md = turn.result.metadata
        assert sum(turn.regions.values()) == md["token_count"]
        stable = md["stable_prefix_messages"]
        prefix = sum(counter.count(message_text(m)) + 3 for m in turn.result.messages[:stable])
        assert prefix == md["cache_breakpoints"][-1]["tokens"]
        assert (
            prefix - 3 * stable
            == turn.regions["core"] + turn.regions["index"] + turn.regions["history"]
        )


def test_cache_column_matches_an_independent_comparison() -> None:
    run = _run()
    assert run.turns[0].prefix_same is None
    for before, now in zip(run.turns, run.turns[1:], strict=False):
        stable = before.result.metadata["stable_prefix_messages"]
        same = before.result.messages[:stable] == now.result.messages[:stable]
        assert now.prefix_same is same, now.turn
        # The prefix changes exactly when the history cut moves.
        assert same == (now.turn not in run.cut_turns), now.turn
        prefix = before.result.metadata["cache_breakpoints"][-1]["tokens"]
        assert now.reused_tokens == (prefix if same and prefix >= 1024 else 0)


def test_printed_rows_match_the_metadata() -> None:
    run = _run()
    rows = [ROW.match(line) for line in _printed().splitlines()]
    parsed = [m.groups() for m in rows if m]
    assert len(parsed) == len(run.turns)
    for groups, turn in zip(parsed, run.turns, strict=True):
        md = turn.result.metadata
        number, *regions = (int(g) for g in groups[:7])
        assert number == turn.turn
        assert regions == [
            turn.regions[r] for r in ("core", "index", "history", "memories", "recall", "current")
        ]
        assert int(groups[7].replace(",", "")) == _sent(turn.result)
        assert int(groups[8].replace(",", "")) == run.budget
        full, thin, drop = (int(g) for g in groups[9:12])
        assert full + thin == md["segments_kept"] and thin == md["segments_thinned"]
        assert full + thin + drop == md["segments_offered"]
        assert (int(groups[12]), int(groups[13])) == (
            md["history_messages_dropped"],
            md["history_messages_recalled"],
        )
        share = md["cache_breakpoints"][-1]["tokens"] / _sent(turn.result) * 100
        assert int(groups[14]) == round(share)
        word = groups[15]
        assert word == {None: "first", False: "changed"}.get(
            turn.prefix_same, "hit" if turn.reused_tokens else "too small"
        )


def test_summary_numbers_match_a_recomputation() -> None:
    # Recompute from scratch with a fresh compiler and the messages themselves.
    compiler = ContextCompiler(DEFAULT_BUDGET, "openai/gpt-4o", CORE_RULES, token_scale=1.0)
    run = _run()
    history: list[dict[str, Any]] = []
    sent_total = reused_total = same_count = 0
    previous = None
    for turn, report in zip(TURNS, run.turns, strict=True):
        result = compiler.compile(
            _retrieve(turn.user, MEMORIES), turn.user, conversation_messages=list(history)
        )
        assert result.messages == report.result.messages
        sent_total += _sent(result)
        if previous is not None:
            stable = previous.metadata["stable_prefix_messages"]
            if previous.messages[:stable] == result.messages[:stable]:
                same_count += 1
                prefix = previous.metadata["cache_breakpoints"][-1]["tokens"]
                reused_total += prefix if prefix >= 1024 else 0
        history.append({"role": "user", "content": turn.user})
        history.extend(dict(m) for m in turn.replies)
        previous = result
    text = _printed()
    assert f"tokens sent              {sent_total:,} over {len(TURNS)} turns" in text
    assert "turns over budget        0 " in text
    assert f"prefix repeated          {same_count} of {len(TURNS) - 1} turns" in text
    share = reused_total / sent_total * 100
    assert (
        f"served from that prefix  {reused_total:,} of {sent_total:,} tokens sent ({share:.1f}%)"
        in text
    )
    assert reused_total / sent_total > 0.5
    cuts = ", ".join(map(str, run.cut_turns))
    assert f"history cuts             {len(run.cut_turns)} (turns {cuts})" in text
    passages = sum(t.result.metadata["history_messages_recalled"] for t in run.turns)
    assert f"{len(run.recall_turns)} turns brought back {passages} passages" in text


def test_final_turn_is_shown_abbreviated() -> None:
    text = _printed()
    final = text.split("Final turn (30), compiled messages", 1)[1]
    lines = final.splitlines()[1:]
    last = _run().turns[-1].result
    shown = {int(m.group(1)) for m in (re.match(r"^  \[\s*(\d+)\]", ln) for ln in lines) if m}
    assert shown == set(range(len(last.messages)))
    assert all(len(line) <= 100 for line in text.splitlines())
