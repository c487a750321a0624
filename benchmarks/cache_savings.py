"""Prompt-cache savings: a 20-turn chat with a 2,000-token system prompt and 5 new memories a turn.

    python -m benchmarks.cache_savings [--seeds N] [--strategies a,b]

The budget is the model's whole window, so nothing is trimmed: the suite isolates what placing
the changing memories does to the provider's prefix cache.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from benchmarks._report import machine, write_result
from benchmarks._scenarios import ScenarioSpec
from benchmarks._suite import add_common_args, command_line, parse_strategies, run_suite, settings
from benchmarks.hard_suite import per_turn_series, plot_series

__all__ = ["SPEC", "main"]

SPEC = ScenarioSpec(
    "cache_savings",
    "20-turn chat, 2,000-token system prompt, 5 new memories a turn",
    turns=20,
    budget=128_000,
    system_tokens=2000,
    memories=(5, 5),
    fresh_memories=True,
    ask={"memory": 0.5, "history": 0.5},
    distance=(2, 10),
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cache_savings", description=__doc__)
    add_common_args(parser)
    args = parser.parse_args(argv)
    result = run_suite(
        [SPEC], args.seeds, parse_strategies(args.strategies), args.jobs, desc="cache savings"
    )
    payload: dict[str, Any] = {
        "suite": "cache_savings",
        "command": command_line(),
        "machine": machine(),
        "elapsed_seconds": round(result.elapsed, 1),
        "settings": settings(args.seeds),
        "turns": SPEC.turns,
        "system_tokens": SPEC.system_tokens,
        "memories_per_turn": SPEC.memories[0],
        "budget": SPEC.budget,
        "strategies": result.strategies,
        "results": result.per_scenario.get(SPEC.name, {}),
        "series": {
            "scenario": SPEC.name,
            "seed": 1,
            "strategies": per_turn_series(result.runs, SPEC.name, 1),
        },
    }
    if not args.no_plots and not args.no_write:
        labels = {k: v.get("label", k) for k, v in result.strategies.items()}
        payload["plots"] = plot_series(
            "cache_savings_per_turn", SPEC.title, payload["series"]["strategies"], labels
        )
    if not args.no_write:
        print(f"wrote {write_result('cache_savings', payload)}", file=sys.stderr)

    from benchmarks.tables import cache_savings_tables

    print(cache_savings_tables(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
