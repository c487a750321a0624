"""CI smoke run of the benchmark harness: one seed, two scenarios, every strategy that installs.

Priompt joins when ``node`` and the pinned ``benchmarks/priompt_node/node_modules`` are present
(``python -m benchmarks.hard_suite`` installs them); the test never downloads anything itself.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from benchmarks._scenarios import HARD_SCENARIOS
from benchmarks._strategies import ALL_STRATEGIES, PRIOMPT_DIR, StrategyUnavailable, make_strategy
from benchmarks._suite import SuiteResult, run_suite
from benchmarks.tables import hard_suite_tables

SCENARIOS = ("tool_calls", "tight_budget")
MEMBRANE = ("membrane", "membrane_cheap", "membrane_system")
# Peers that count tokens their own way and may send more than the budget:
# LlamaIndex counts content without per-message framing (and Memory ignores the system prompt),
# Priompt does not count tool-call arguments.
MAY_OVERFLOW = ("llamaindex_buffer", "llamaindex_memory", "priompt")
KEYS = (
    "recall",
    "recall_memory",
    "recall_history",
    "recall_tool",
    "recall_paste",
    "answer_recall",
    "cost_05",
    "cost_01",
    "cost_anthropic",
    "cached_share",
    "anthropic_read_share",
    "turns_over_budget",
    "invalid_tool_requests",
    "errors",
    "compile_ms_median",
    "compile_ms_p95",
    "input_tokens",
    "probes",
)


def _wanted() -> list[str]:
    names = []
    for name in ALL_STRATEGIES:
        if name == "priompt" and (
            shutil.which("node") is None
            or not (PRIOMPT_DIR / "node_modules" / "@impowering" / "priompt").is_dir()
        ):
            continue
        try:
            make_strategy(name).close()
        except StrategyUnavailable:
            continue
        names.append(name)
    return names


@pytest.fixture(scope="module")
def suite() -> SuiteResult:
    specs = [HARD_SCENARIOS[s] for s in SCENARIOS]
    return run_suite(specs, seeds=1, strategy_names=_wanted(), jobs=1, desc="smoke")


def test_every_installed_strategy_ran(suite: SuiteResult) -> None:
    wanted = _wanted()
    assert "naive" in wanted and "membrane" in wanted
    for scenario in SCENARIOS:
        assert set(suite.per_scenario[scenario]) == set(wanted)
    assert all(run.skipped is None for run in suite.runs)
    assert all(len(run.turns) == HARD_SCENARIOS[run.scenario].turns for run in suite.runs)


def test_naive_is_the_cost_baseline(suite: SuiteResult) -> None:
    for scenario in SCENARIOS:
        naive = suite.per_scenario[scenario]["naive"]
        assert naive["cost_05"] == pytest.approx(100.0)
        assert naive["cost_01"] == pytest.approx(100.0)
        assert naive["cost_anthropic"] == pytest.approx(100.0)
        assert naive["turns_over_budget"] == 0


def test_metrics_are_present_and_sane(suite: SuiteResult) -> None:
    for scenario in SCENARIOS:
        for name, m in suite.per_scenario[scenario].items():
            assert set(KEYS) <= set(m), name
            for key in ("recall", "cached_share", "anthropic_read_share", "answer_recall"):
                assert m[key] is not None and 0.0 <= m[key] <= 1.0, (name, key)
            assert m["probes"] > 0
            assert m["cost_05"] > 0 and m["cost_01"] > 0 and m["cost_anthropic"] > 0
            # Cheaper cache reads can only lower relative cost when something was cached.
            if m["cached_share"] > 0:
                assert m["cost_01"] < m["cost_05"] + 1e-9
            assert m["compile_ms_median"] > 0 and m["compile_ms_p95"] >= m["compile_ms_median"]
            assert not math.isnan(m["compile_ms_p95"])
    tool = suite.per_scenario["tool_calls"]["naive"]
    assert tool["recall_tool"] is not None and tool["probes_tool"] > 0


def test_membrane_keeps_budget_and_tool_pairs(suite: SuiteResult) -> None:
    for scenario in SCENARIOS:
        for name in MEMBRANE:
            m = suite.per_scenario[scenario][name]
            assert m["turns_over_budget"] == 0, (scenario, name, m["max_over_budget_tokens"])
            assert m["invalid_tool_requests"] == 0, (scenario, name)
            assert m["errors"] == 0, (scenario, name, m.get("first_error"))


def test_only_known_peers_overflow_and_only_naive_breaks_tool_pairs(suite: SuiteResult) -> None:
    for scenario in SCENARIOS:
        for name, m in suite.per_scenario[scenario].items():
            if name not in MAY_OVERFLOW:
                assert m["turns_over_budget"] == 0, (scenario, name)
            if name != "naive":
                assert m["invalid_tool_requests"] == 0, (scenario, name)
    # The harness must be able to see a broken pair: the naive loop cuts through tool blocks.
    assert suite.per_scenario["tool_calls"]["naive"]["invalid_tool_requests"] > 0


def test_tables_render_from_a_payload(suite: SuiteResult, tmp_path: Path) -> None:
    del tmp_path
    payload: dict[str, Any] = {
        "settings": {"seeds": [1]},
        "strategies": suite.strategies,
        "summary": suite.summary,
        "scenarios": {
            s: {"title": HARD_SCENARIOS[s].title, "results": suite.per_scenario[s]}
            for s in SCENARIOS
        },
    }
    text = hard_suite_tables(payload)
    assert "| Naive loop | 100 / 100 | 100 |" in text
    assert HARD_SCENARIOS["tool_calls"].title in text
