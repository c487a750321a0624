"""The part every suite shares: pick strategies, run them, aggregate, describe the settings."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from benchmarks._providers import (
    ANTHROPIC_LOOKBACK_BLOCKS,
    ANTHROPIC_MAX_MARKERS,
    ANTHROPIC_MIN_TOKENS,
    ANTHROPIC_READ,
    ANTHROPIC_WRITE,
    OPENAI_BLOCK,
    OPENAI_MIN_TOKENS,
)
from benchmarks._runner import READ_PRICES, Run, Unit, aggregate, run_units, summarise
from benchmarks._scenarios import ScenarioSpec
from benchmarks._strategies import (
    ALL_STRATEGIES,
    ANTHROPIC_MODEL,
    OPENAI_MODEL,
    StrategyUnavailable,
    make_strategy,
)
from benchmarks._tokens import ENCODING, FRAMING_TOKENS

__all__ = ["SuiteResult", "add_common_args", "parse_strategies", "run_suite", "settings"]


def add_common_args(parser: argparse.ArgumentParser, seeds: int = 5) -> None:
    parser.add_argument("--seeds", type=int, default=seeds, help="seeds 1..N (default %(default)s)")
    parser.add_argument(
        "--strategies",
        default="all",
        help="comma-separated strategy names, or 'all' (the naive baseline always runs); "
        f"known: {', '.join(ALL_STRATEGIES)}",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="worker processes (default 1: compile times are cleanest without neighbours)",
    )
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--no-write", action="store_true", help="print only, write no JSON")


def parse_strategies(value: str) -> list[str]:
    if value == "all":
        return list(ALL_STRATEGIES)
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in ALL_STRATEGIES]
    if unknown:
        raise SystemExit(
            f"unknown strategy {', '.join(unknown)}; choose from {', '.join(ALL_STRATEGIES)}"
        )
    if "naive" not in names:
        names.insert(0, "naive")
    return names


def probe_strategies(names: Sequence[str]) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """Instantiate each strategy once here to learn which run; print why the others do not."""
    runnable: list[str] = []
    info: dict[str, dict[str, Any]] = {}
    for name in names:
        try:
            strategy = make_strategy(name)
        except StrategyUnavailable as exc:
            print(f"skipping {name}: {exc}", file=sys.stderr)
            info[name] = {"available": False, "skip_reason": str(exc)}
            continue
        info[name] = {
            "available": True,
            "label": strategy.label,
            "description": strategy.description,
        }
        strategy.close()
        runnable.append(name)
    return runnable, info


class SuiteResult:
    """Aggregated metrics of a suite run plus the raw runs for plotting."""

    def __init__(
        self, runs: list[Run], strategies: dict[str, dict[str, Any]], elapsed: float
    ) -> None:
        self.runs = runs
        self.strategies = strategies
        self.elapsed = elapsed
        self.per_scenario: dict[str, dict[str, dict[str, Any]]] = {}
        by_key: dict[tuple[str, str], list[Run]] = {}
        for run in runs:
            if run.skipped is None:
                by_key.setdefault((run.scenario, run.strategy), []).append(run)
        for (scenario, strategy), group in by_key.items():
            naive = by_key.get((scenario, "naive"), [])
            self.per_scenario.setdefault(scenario, {})[strategy] = aggregate(group, naive)
        self.summary: dict[str, dict[str, Any]] = {}
        names = {s for per in self.per_scenario.values() for s in per}
        for name in names:
            rows = {sc: per[name] for sc, per in self.per_scenario.items() if name in per}
            self.summary[name] = summarise(rows)


def run_suite(
    specs: Sequence[ScenarioSpec],
    seeds: int,
    strategy_names: Sequence[str],
    jobs: int = 1,
    desc: str = "runs",
) -> SuiteResult:
    """Every (scenario, seed, strategy) that can run here; naive first so it is the baseline."""
    runnable, info = probe_strategies(strategy_names)
    units = [
        Unit(spec, seed, name)
        for spec in specs
        for seed in range(1, seeds + 1)
        for name in runnable
    ]
    jobs = max(1, min(jobs, os.cpu_count() or 1))
    t0 = time.perf_counter()
    runs = run_units(units, jobs=jobs, desc=desc)
    return SuiteResult(runs, info, time.perf_counter() - t0)


def settings(seeds: int) -> dict[str, Any]:
    """The simulation's fixed parameters, recorded beside every result."""
    return {
        "seeds": list(range(1, seeds + 1)),
        "token_count": f"offline {ENCODING} plus {FRAMING_TOKENS} framing tokens per message, "
        "the same for every strategy",
        "openai_model": OPENAI_MODEL,
        "openai_cache": {
            "min_tokens": OPENAI_MIN_TOKENS,
            "block_tokens": OPENAI_BLOCK,
            "read_prices": list(READ_PRICES),
        },
        "anthropic_model": ANTHROPIC_MODEL,
        "anthropic_cache": {
            "min_tokens": ANTHROPIC_MIN_TOKENS,
            "max_markers": ANTHROPIC_MAX_MARKERS,
            "lookback_blocks": ANTHROPIC_LOOKBACK_BLOCKS,
            "write_price": ANTHROPIC_WRITE,
            "read_price": ANTHROPIC_READ,
        },
        "cost": "relative to the naive loop = 100 on the same scenario and seeds",
    }


def command_line() -> str:
    return "python -m " + " ".join([_module_name(), *sys.argv[1:]])


def _module_name() -> str:
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return spec.name if spec is not None else os.path.basename(sys.argv[0])
