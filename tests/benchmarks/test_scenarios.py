"""Scenario generators: deterministic, varied, and every probe answerable from one place."""

from __future__ import annotations

import os
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks._runner import invalid_tool_sequence
from benchmarks._scenarios import HARD_SCENARIOS, Scenario, build_scenario
from benchmarks._text import TextFactory

SEEDS = (1, 2)
_EXAMPLES = int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", "100"))


@pytest.fixture(scope="module", params=list(HARD_SCENARIOS))
def scenario(request: pytest.FixtureRequest) -> Scenario:
    return build_scenario(HARD_SCENARIOS[request.param], 1)


def test_same_seed_same_text_other_seed_other_text() -> None:
    spec = HARD_SCENARIOS["tool_calls"]
    assert build_scenario(spec, 3) == build_scenario(spec, 3)
    a, b = build_scenario(spec, 3), build_scenario(spec, 4)
    assert a.turns[0].user_message != b.turns[0].user_message
    assert a.system_prompt != b.system_prompt


def test_probes_live_exactly_where_their_kind_says(scenario: Scenario) -> None:
    spec = HARD_SCENARIOS[scenario.name]
    for t, turn in enumerate(scenario.turns):
        assert len(turn.memories) <= spec.memories[1]
        for probe in turn.probes:
            assert probe.code not in turn.user_message
            in_memories = [m for m in turn.memories if probe.code in m.content]
            users = [
                i for i, old in enumerate(scenario.turns[:t]) if probe.code in old.user_message
            ]
            tools = [
                i
                for i, old in enumerate(scenario.turns[:t])
                if any(
                    probe.code in (m.get("content") or "") for m in old.reply if m["role"] == "tool"
                )
            ]
            replies = [
                i
                for i, old in enumerate(scenario.turns)
                if any(
                    probe.code in (m.get("content") or "")
                    for m in old.reply
                    if m["role"] == "assistant"
                )
            ]
            assert not replies, "scripted replies never repeat a code"
            if probe.kind == "memory":
                assert len(in_memories) == 1 and not users and not tools
            elif probe.kind == "tool":
                assert len(tools) == 1 and not users and not in_memories
            else:
                assert len(users) == 1 and not tools and not in_memories
                lo, hi = spec.distance
                assert lo <= t - users[0] <= hi
                if probe.kind == "paste":
                    assert users[0] in spec.paste_turns


def test_codes_are_unique_random_strings(scenario: Scenario) -> None:
    text = scenario.system_prompt + "".join(
        t.user_message
        + "".join(m.content for m in t.memories)
        + "".join(str(r.get("content") or "") for r in t.reply)
        for t in scenario.turns
    )
    for turn in scenario.turns:
        for probe in turn.probes:
            assert text.count(probe.code) == 1, probe
            assert re.search(r"\d", probe.code) and re.search(r"[A-Z]", probe.code)


def test_histories_have_valid_tool_pairs_and_distinct_memory_ids(scenario: Scenario) -> None:
    history = []
    for turn in scenario.turns:
        history += [{"role": "user", "content": turn.user_message}, *turn.reply]
        ids = [m.id for m in turn.memories]
        assert len(ids) == len(set(ids))
    assert not invalid_tool_sequence(history)
    if scenario.name == "tool_calls":
        assert sum(1 for m in history if m["role"] == "tool") >= 10


def test_scenarios_put_the_budget_under_pressure() -> None:
    from benchmarks._tokens import count_messages

    for name, spec in HARD_SCENARIOS.items():
        s = build_scenario(spec, 1)
        history = [
            m for t in s.turns for m in [{"role": "user", "content": t.user_message}, *t.reply]
        ]
        if name != "big_budget":
            assert count_messages(history) > 1.5 * spec.budget, name


@settings(max_examples=_EXAMPLES)
@given(st.integers(0, 10_000))
def test_paraphrased_questions_share_no_name_with_the_fact(seed: int) -> None:
    text = TextFactory(random.Random(seed))
    fact = text.fact()
    question = text.question(fact, "paraphrase").lower()
    for word in (*fact.entity.lower().split(), fact.city.lower(), *fact.attr.lower().split()):
        if len(word) > 3:
            assert not re.search(rf"\b{re.escape(word)}\b", question), (word, question)
    assert fact.code not in question
    assert fact.adj.lower() in question


@settings(max_examples=_EXAMPLES)
@given(st.integers(0, 10_000), st.sampled_from(["plain", "two_sentence", "spread"]))
def test_every_statement_style_carries_the_code_and_the_entity(seed: int, style: str) -> None:
    text = TextFactory(random.Random(seed))
    fact = text.fact()
    statement = text.statement(fact, style)
    assert fact.code in statement and fact.entity in statement and fact.city in statement
    if style == "two_sentence":
        # The code sits in a sentence that does not name the entity.
        last = statement.rsplit(". ", 1)[-1]
        assert fact.code in last and fact.entity not in last
