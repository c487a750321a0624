"""``benchmarks/runtimes/openai_agents.py``: one row per model request, in the driver's shape."""

from __future__ import annotations

import pytest

from benchmarks.runtimes.openai_agents import STRATEGIES, run

KEYS = {"turn", "call", "tokens", "over_budget", "problems", "cache_read_tokens", "input_tokens"}


def test_each_strategy_gives_a_row_per_request_and_the_peer_goes_over() -> None:
    rows = {strategy: run(strategy) for strategy in STRATEGIES}
    for strategy_rows in rows.values():
        assert len(strategy_rows) == 24
        assert all(set(row) == KEYS for row in strategy_rows)
        assert [(r["turn"], r["call"]) for r in strategy_rows[:3]] == [(1, 1), (1, 2), (2, 1)]
        assert all(0 <= r["cache_read_tokens"] <= r["input_tokens"] for r in strategy_rows)
    assert not any(r["over_budget"] for r in rows["membrane"])
    # The trimmer keeps every turn and trims only older outputs to a preview: it grows past
    # the budget once about three turns are in.
    assert sum(r["over_budget"] for r in rows["session_trimmer"]) >= 6
    assert not any(r["problems"] for r in rows["session_trimmer"])


def test_an_unknown_strategy_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown strategy"):
        run("summaries")
