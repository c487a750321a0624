"""The hard suite's requests sent to the Claude API: real accuracy, real cache use, real cost.

    ANTHROPIC_API_KEY=... python -m benchmarks.hard_suite_live [--model claude-opus-5-5]
        [--seeds 1] [--scenarios all|a,b] [--strategies langchain,llamaindex_memory,membrane,...]
        [--max-turns N] [--base-url URL] [--out PATH]

Every strategy builds its Anthropic Messages request per turn (Membrane through
``anthropic_request``, with its cache markers; the peers without markers, as they ship), and the
request goes out through the official ``anthropic`` SDK. Accuracy: the reply contains the
turn's code. Wrong: it states a different code instead. Cost: uncached input + write x cache
writes + read x cache reads, with the model's multipliers from the capability map, relative to
LangChain = 100. The paraphrase scenario's memory questions are left out of accuracy (they
name projects by an alias no model can resolve). Costs API credits: check ``--max-turns`` and
the strategy list before a full run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._live import (
    add_live_args,
    anthropic_client,
    ask_anthropic,
    live_conversation,
    require_key,
    summarise_live,
)

__all__ = ["DEFAULT_STRATEGIES", "main"]

DEFAULT_STRATEGIES = ("langchain", "llamaindex_memory", "membrane", "membrane_cheap")
_IGNORED = {"memory_flood_paraphrase": ("memory",)}


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.hard_suite_live", description=__doc__
    )
    add_live_args(parser, "claude-opus-5-5")
    parser.add_argument("--seeds", type=int, default=1, help="seeds 1..N (default 1)")
    parser.add_argument("--scenarios", default="all", help="'all' or comma-separated names")
    parser.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES))
    parser.add_argument("--max-turns", type=int, default=0, help="turns per conversation (0: all)")
    parser.add_argument("--out", type=Path, default=None, help="results JSON path")
    return parser.parse_args(argv)


def _relative(rows: dict[str, dict[str, Any]], base: str) -> None:
    ref = rows.get(base, {}).get("cost")
    for row in rows.values():
        row["cost_vs_" + base] = 100.0 * row["cost"] / ref if ref else None


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    key = require_key("anthropic", "hard_suite_live")  # before any work
    from benchmarks._report import RESULTS_DIR, machine
    from benchmarks._scenarios import HARD_SCENARIOS, build_scenario
    from benchmarks._strategies import StrategyUnavailable, make_strategy
    from membrane.capabilities import get_cache_pricing

    names = list(HARD_SCENARIOS) if args.scenarios == "all" else args.scenarios.split(",")
    unknown = [n for n in names if n not in HARD_SCENARIOS]
    if unknown:
        raise SystemExit(
            f"unknown scenario {', '.join(unknown)}; known: {', '.join(HARD_SCENARIOS)}"
        )
    pricing = get_cache_pricing(args.model)
    write, read = (pricing.write, pricing.read) if pricing else (1.25, 0.1)
    client = anthropic_client(key, args.base_url)
    per_scenario: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    for name in names:
        rows: dict[str, dict[str, Any]] = {}
        for strategy_name in args.strategies.split(","):
            try:
                strategy = make_strategy(strategy_name)
            except StrategyUnavailable as exc:
                skipped[strategy_name] = str(exc)
                continue
            if hasattr(strategy, "anthropic_model_id"):
                strategy.anthropic_model_id = f"anthropic/{args.model}"
            turns = []
            for seed in range(1, args.seeds + 1):
                scenario = build_scenario(HARD_SCENARIOS[name], seed)
                turns += live_conversation(
                    scenario,
                    strategy,
                    lambda built, s=strategy: ask_anthropic(
                        client, s.anthropic_request(built), args.model, args.max_tokens
                    ),
                    max_turns=args.max_turns,
                    ignore_kinds=_IGNORED.get(name, ()),
                )
            strategy.close()
            rows[strategy_name] = summarise_live(turns, write, read)
            print(f"{name} / {strategy_name}: {json.dumps(rows[strategy_name])}", file=sys.stderr)
        _relative(rows, "langchain")
        per_scenario[name] = rows
    payload = {
        "suite": "hard_suite_live",
        "date": datetime.date.today().isoformat(),
        "model": args.model,
        "seeds": args.seeds,
        "max_turns": args.max_turns,
        "cache_prices": {"write": write, "read": read},
        "machine": machine(),
        "skipped": skipped,
        "scenarios": per_scenario,
    }
    out = args.out or RESULTS_DIR / "hard_suite_live.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
