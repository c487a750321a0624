"""The eleven-scenario hard suite: recall, cost, caching, budget and tool safety per strategy.

python -m benchmarks.hard_suite --seeds 5 --scenarios all [--strategies a,b] [--jobs N]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from benchmarks._report import RESULTS_DIR, machine, plot_bars, plot_lines, write_result
from benchmarks._runner import Run
from benchmarks._scenarios import HARD_SCENARIOS
from benchmarks._suite import (
    SuiteResult,
    add_common_args,
    command_line,
    parse_strategies,
    run_suite,
    settings,
)

__all__ = ["main", "per_turn_series"]


def per_turn_series(runs: Sequence[Run], scenario: str, seed: int) -> dict[str, dict[str, Any]]:
    """Per-turn cost (tokens-equivalent) and cached share of each strategy on one conversation."""
    out: dict[str, dict[str, Any]] = {}
    for run in runs:
        if run.scenario != scenario or run.seed != seed or run.skipped:
            continue
        out[run.strategy] = {
            "input_tokens": [t.input_tokens for t in run.turns],
            "cost_05": [round(t.openai_cost(0.5), 1) for t in run.turns],
            "cost_01": [round(t.openai_cost(0.1), 1) for t in run.turns],
            "cost_anthropic": [round(t.anthropic_cost(), 1) for t in run.turns],
            "cached_share": [
                round(t.cached_tokens / t.input_tokens, 4) if t.input_tokens else 0.0
                for t in run.turns
            ],
        }
    return out


def plot_series(
    name: str, title: str, series: dict[str, dict[str, Any]], labels: dict[str, str]
) -> list[str]:
    """Cost and cache share per turn, one line per strategy."""
    panels = [
        (
            "cost per turn, reads at 0.5x\n(token-equivalents)",
            {labels.get(k, k): v["cost_05"] for k, v in series.items()},
        ),
        (
            "cost per turn, reads at 0.1x",
            {labels.get(k, k): v["cost_01"] for k, v in series.items()},
        ),
        (
            "share of input served\nfrom cache",
            {labels.get(k, k): v["cached_share"] for k, v in series.items()},
        ),
    ]
    path = plot_lines(RESULTS_DIR / f"{name}.png", title, panels)
    return [path.name] if path else []


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hard_suite", description=__doc__)
    add_common_args(parser)
    parser.add_argument(
        "--scenarios",
        default="all",
        help=f"comma-separated, or 'all'; known: {', '.join(HARD_SCENARIOS)}",
    )
    parser.add_argument("--out", default="hard_suite", help="results file stem")
    args = parser.parse_args(argv)

    if args.scenarios == "all":
        specs = list(HARD_SCENARIOS.values())
    else:
        names = [s.strip() for s in args.scenarios.split(",") if s.strip()]
        unknown = [n for n in names if n not in HARD_SCENARIOS]
        if unknown:
            parser.error(f"unknown scenario {', '.join(unknown)}")
        specs = [HARD_SCENARIOS[n] for n in names]

    result = run_suite(
        specs, args.seeds, parse_strategies(args.strategies), args.jobs, desc="hard suite"
    )
    payload = build_payload(result, specs, args.seeds)
    if not args.no_plots and not args.no_write:
        payload["plots"] = make_plots(payload, args.out)
    if not args.no_write:
        path = write_result(args.out, payload)
        print(f"wrote {path}", file=sys.stderr)

    from benchmarks.tables import hard_suite_tables

    print(hard_suite_tables(payload))
    return 0


def build_payload(result: SuiteResult, specs: Sequence[Any], seeds: int) -> dict[str, Any]:
    scenarios = {
        spec.name: {
            "title": spec.title,
            "budget": spec.budget,
            "turns_per_seed": spec.turns,
            "results": result.per_scenario.get(spec.name, {}),
        }
        for spec in specs
    }
    first = specs[0].name
    return {
        "suite": "hard_suite",
        "command": command_line(),
        "machine": machine(),
        "elapsed_seconds": round(result.elapsed, 1),
        "settings": settings(seeds),
        "strategies": result.strategies,
        "scenarios": scenarios,
        "summary": result.summary,
        "series": {
            "scenario": first,
            "seed": 1,
            "strategies": per_turn_series(result.runs, first, 1),
        },
    }


def make_plots(payload: dict[str, Any], stem: str) -> list[str]:
    """Every hard-suite PNG, drawn from the payload alone (so a committed JSON can be redrawn)."""
    strategies = payload["strategies"]
    labels = {k: v.get("label", k) for k, v in strategies.items()}
    series = payload["series"]
    files = plot_series(
        f"{stem}_per_turn",
        f"{payload['scenarios'][series['scenario']]['title']} (seed {series['seed']})",
        series["strategies"],
        labels,
    )
    groups = list(payload["scenarios"])
    names = [n for n in strategies if strategies[n].get("available")]
    for key, ylabel, fname in (
        ("recall", "recall (fact in prompt)", f"{stem}_recall"),
        ("cost_05", "cost vs naive = 100, reads at 0.5x", f"{stem}_cost"),
    ):
        bars: dict[str, Sequence[float | None]] = {
            labels.get(n, n): [
                payload["scenarios"][g]["results"].get(n, {}).get(key) for g in groups
            ]
            for n in names
        }
        path = plot_bars(
            RESULTS_DIR / f"{fname}.png", f"Hard suite: {ylabel}", groups, bars, ylabel
        )
        if path:
            files.append(path.name)
    return files


if __name__ == "__main__":
    raise SystemExit(main())
