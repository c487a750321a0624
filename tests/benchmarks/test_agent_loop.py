"""The agent-loop benchmark's harness: one short seed, judged as the full run is."""

from __future__ import annotations

from benchmarks.agent_loop import BUDGET, build_scenario, run


def test_scenario_pairs_every_call_and_sizes_every_screenshot() -> None:
    scenario = build_scenario(1, 20)
    assert len(scenario.tools) == 20
    last = scenario.calls[-1].history
    calls = {c["id"] for m in last for c in m.get("tool_calls") or ()}
    results = {m["tool_call_id"] for m in last if m["role"] == "tool"}
    assert calls == results
    shots = [p for m in last if m["role"] == "tool" for p in m["content"] if p["type"] != "text"]
    assert len(shots) == len(results) == len(scenario.sizes)


def test_membrane_stays_inside_the_budget_where_the_naive_loop_does_not() -> None:
    rows = run(1, 20)["strategies"]
    assert rows["membrane"]["over_budget"] == 0
    assert rows["membrane"]["invalid"] == 0
    assert rows["naive"]["over_budget"] > 0
    assert rows["naive"]["max_tokens"] > BUDGET >= rows["membrane"]["max_tokens"]
    assert rows["membrane"]["recall"] == 1.0
