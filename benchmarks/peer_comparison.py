"""Peer comparison: a 24-turn chat under a hard budget, one fact asked per turn.

    python -m benchmarks.peer_comparison [--budget N] [--memories N] [--seeds N]
    OPENAI_API_KEY=... python -m benchmarks.peer_comparison --live [--model gpt-4.1-mini]
        [--strategies naive,langchain,membrane] [--max-turns N] [--base-url URL]

Each turn asks for a fact that sits either in one of this turn's retrieved memories or in a
user message exactly 10 turns back, stated in one sentence. Without ``--budget``/``--memories``
three configurations run: 6,000 and 12,000 tokens with 8 memories a turn, and the
memory-pressure variant of 4,000 tokens with 40 memories.

``--live`` sends every strategy's compiled messages to OpenAI Chat Completions through the
official ``openai`` SDK and measures real accuracy (the reply states the turn's code) and the
``cached_tokens`` OpenAI reports, instead of the simulated cache. It needs ``OPENAI_API_KEY``
and costs API credits; results go to ``peer_comparison_live.json``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from benchmarks._live import (
    add_live_args,
    ask_openai,
    live_conversation,
    openai_client,
    require_key,
    summarise_live,
)
from benchmarks._report import RESULTS_DIR, machine, plot_lines, write_result
from benchmarks._scenarios import ScenarioSpec
from benchmarks._suite import add_common_args, command_line, parse_strategies, run_suite, settings
from benchmarks.hard_suite import per_turn_series

__all__ = ["DEFAULT_CONFIGS", "main", "spec_for"]

DEFAULT_CONFIGS = ((6000, 8), (12000, 8), (4000, 40))


def spec_for(budget: int, memories: int) -> ScenarioSpec:
    return ScenarioSpec(
        f"peer_{budget}_{memories}",
        f"24-turn chat, {budget:,}-token budget, {memories} memories a turn",
        turns=24,
        budget=budget,
        memories=(memories, memories),
        ask={"memory": 0.5, "history": 0.5},
        distance=(10, 10),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.peer_comparison", description=__doc__
    )
    add_common_args(parser)
    parser.add_argument("--budget", type=int, help="token budget (default: the three configs)")
    parser.add_argument("--memories", type=int, help="memories per turn (default 8)")
    parser.add_argument("--out", default=None, help="results file stem")
    parser.add_argument("--live", action="store_true", help="call OpenAI (needs OPENAI_API_KEY)")
    add_live_args(parser, "gpt-4.1-mini")
    parser.add_argument("--max-turns", type=int, default=0, help="live: turns per chat (0: all)")
    args = parser.parse_args(argv)
    key = require_key("openai", "peer_comparison --live") if args.live else ""
    if args.budget is None and args.memories is None:
        configs = list(DEFAULT_CONFIGS)
    else:
        configs = [(args.budget or 6000, args.memories or 8)]
    specs = [spec_for(b, m) for b, m in configs]
    if args.live:
        return _live(args, key, configs, specs)
    args.out = args.out or "peer_comparison"

    result = run_suite(
        specs, args.seeds, parse_strategies(args.strategies), args.jobs, desc="peer comparison"
    )
    payload: dict[str, Any] = {
        "suite": "peer_comparison",
        "command": command_line(),
        "machine": machine(),
        "elapsed_seconds": round(result.elapsed, 1),
        "settings": settings(args.seeds),
        "strategies": result.strategies,
        "configs": [
            {
                "budget": b,
                "memories": m,
                "scenario": spec.name,
                "results": result.per_scenario.get(spec.name, {}),
                "series": per_turn_series(result.runs, spec.name, 1),
            }
            for (b, m), spec in zip(configs, specs, strict=True)
        ],
    }
    if not args.no_plots and not args.no_write:
        labels = {k: v.get("label", k) for k, v in result.strategies.items()}
        plots = []
        for config in payload["configs"]:
            series = config["series"]
            path = plot_lines(
                RESULTS_DIR / f"{args.out}_{config['budget']}_{config['memories']}.png",
                f"Peer comparison, {config['budget']:,} tokens, {config['memories']} memories "
                "(seed 1)",
                [
                    (
                        "cost per turn, reads at 0.5x",
                        {labels.get(k, k): v["cost_05"] for k, v in series.items()},
                    ),
                    (
                        "share of input served\nfrom cache",
                        {labels.get(k, k): v["cached_share"] for k, v in series.items()},
                    ),
                ],
            )
            if path:
                plots.append(path.name)
        payload["plots"] = plots
    if not args.no_write:
        print(f"wrote {write_result(args.out, payload)}", file=sys.stderr)

    from benchmarks.tables import peer_comparison_tables

    print(peer_comparison_tables(payload))
    return 0


def _live(
    args: argparse.Namespace, key: str, configs: list[tuple[int, int]], specs: list[ScenarioSpec]
) -> int:
    from benchmarks._scenarios import build_scenario
    from benchmarks._strategies import StrategyUnavailable, make_strategy
    from membrane.capabilities import get_cache_pricing

    pricing = get_cache_pricing(args.model)
    read = pricing.read if pricing else 0.5
    client = openai_client(key, args.base_url)
    results: list[dict[str, Any]] = []
    for (budget, memories), spec in zip(configs, specs, strict=True):
        rows: dict[str, Any] = {}
        for name in parse_strategies(args.strategies):
            try:
                strategy = make_strategy(name)
            except StrategyUnavailable as exc:
                rows[name] = {"skipped": str(exc)}
                continue
            turns = []
            for seed in range(1, args.seeds + 1):
                turns += live_conversation(
                    build_scenario(spec, seed),
                    strategy,
                    lambda built: ask_openai(client, built.messages, args.model, args.max_tokens),
                    max_turns=args.max_turns,
                )
            strategy.close()
            rows[name] = summarise_live(turns, 1.0, read)
            print(f"{spec.name} / {name}: {rows[name]}", file=sys.stderr)
        base = rows.get("naive", {}).get("cost")
        for row in rows.values():
            if "cost" in row:
                row["cost_vs_naive"] = 100.0 * row["cost"] / base if base else None
        results.append({"budget": budget, "memories": memories, "results": rows})
    payload = {
        "suite": "peer_comparison_live",
        "command": command_line(),
        "machine": machine(),
        "model": args.model,
        "seeds": args.seeds,
        "max_turns": args.max_turns,
        "cached_read_price": read,
        "configs": results,
    }
    if not args.no_write:
        print(f"wrote {write_result(args.out or 'peer_comparison_live', payload)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
