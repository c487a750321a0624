"""The 12-turn tool-calling agent inside each runtime, with Membrane and with its own tools.

    python -m benchmarks.agent_runtimes [--frameworks langchain,pydantic_ai,...]

Each framework module in ``benchmarks/runtimes/`` runs the scenario of
``benchmarks._agent_scenario`` (12 turns, a ~1,050-token tool result each, a 3,000-token
budget) with the framework's own fake or scripted model, once through Membrane's adapter and
once through the framework's documented context management, and returns one row per model
request as the independent judge saw it. This script sums the rows per framework and strategy:
requests over budget, invalid requests (broken tool pairs, invented user turns, an opening
assistant turn, the rules or the question not sent exactly once, memories outside the question
message), the cache-read share of input, and the input cost at $3 per million input tokens with
cache reads at a tenth (Anthropic's and OpenAI's current ratio for their mid models).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any

from benchmarks._report import fmt_num, fmt_pct, machine, markdown_table, write_result

__all__ = ["FRAMEWORKS", "main", "summarise"]

FRAMEWORKS = ("langchain", "pydantic_ai", "openai_agents", "llamaindex")
PRICE_PER_TOKEN = 3 / 1_000_000
CACHE_READ_FACTOR = 0.1


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One strategy's totals over its requests."""
    tokens = sum(r["tokens"] for r in rows)
    reads = sum(r.get("cache_read_tokens") or 0 for r in rows)
    cost = (tokens - reads + CACHE_READ_FACTOR * reads) * PRICE_PER_TOKEN
    problems = [p for r in rows for p in r["problems"]]
    return {
        "requests": len(rows),
        "over_budget": sum(bool(r["over_budget"]) for r in rows),
        "invalid": sum(bool(r["problems"]) for r in rows),
        "problem_examples": sorted(set(problems))[:5],
        "input_tokens": tokens,
        "cache_read_tokens": reads,
        "cache_share": reads / tokens if tokens else 0.0,
        "input_cost_usd": cost,
        "max_tokens": max((r["tokens"] for r in rows), default=0),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    parser.add_argument("--out", default="agent_runtimes")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    table = []
    for name in args.frameworks.split(","):
        module = importlib.import_module(f"benchmarks.runtimes.{name}")
        results[name] = {}
        for strategy in module.STRATEGIES:
            rows = module.run(strategy)
            summary = summarise(rows)
            results[name][strategy] = {"summary": summary, "rows": rows}
            table.append(
                [
                    name,
                    strategy,
                    str(summary["requests"]),
                    str(summary["over_budget"]),
                    str(summary["invalid"]),
                    fmt_num(summary["max_tokens"]),
                    fmt_pct(summary["cache_share"]),
                    f"${summary['input_cost_usd']:.4f}",
                ]
            )
    header = ["framework", "strategy", "requests", "over budget", "invalid", "largest"]
    header += ["cache share", "input cost"]
    print(markdown_table(header, table, "llrrrrrr"))
    payload = {
        "command": "python -m benchmarks.agent_runtimes " + " ".join(argv or sys.argv[1:]),
        "machine": machine(),
        "budget": 3_000,
        "price_per_input_token": PRICE_PER_TOKEN,
        "cache_read_factor": CACHE_READ_FACTOR,
        "results": results,
    }
    print(write_result(args.out, payload))
    return 0


if __name__ == "__main__":
    sys.exit(main())
