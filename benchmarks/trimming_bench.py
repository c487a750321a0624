"""Trimming keeps high-priority memories and the U-shaped layout, checked with live answers.

    OPENAI_API_KEY=... python -m benchmarks.trimming_bench [--model gpt-4.1-mini]
        [--seeds 5] [--budgets 6000,3000,1500,800] [--base-url URL] [--out PATH]

Each seed offers 30 memories: one procedure (tier 1) and one episode (tier 3) each hold a code,
the rest are semantic and episodic filler. For every budget the turn is compiled twice, once
asking for each code, and checked offline: the prompt is within budget, the rules come first
and the question last (the U shape), which codes survived, and how many memories were kept.
Each prompt then goes to OpenAI Chat Completions through the official ``openai`` SDK and the
reply is scored. Expect the procedure's code at every budget; the episode's code stays while it
is asked for (relevance ranks it up) and goes early when the question is about something else.
Needs ``OPENAI_API_KEY``; costs API credits.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._live import add_live_args, ask_openai, judge, openai_client, require_key

__all__ = ["build_memories", "layout_checks", "main"]

RULES = "You are the operations assistant. Quote codes exactly. Say so when a code is unknown."


def build_memories(seed: int) -> tuple[list[Any], dict[str, tuple[str, str]]]:
    """30 memories and, per tier name, (question, code) of the fact it holds."""
    from benchmarks._text import TextFactory
    from membrane import MemoryItem

    factory = TextFactory(random.Random(seed))
    high, low = factory.fact(), factory.fact()
    memories = [
        MemoryItem(
            id=f"m{i}",
            content=" ".join(factory.filler(3)),
            memory_type="episodic" if i % 2 else "semantic",
            priority=3 if i % 2 else 2,
        )
        for i in range(28)
    ]
    memories.insert(
        5,
        MemoryItem(
            id="proc", content=factory.statement(high), memory_type="procedural", priority=1
        ),
    )
    memories.append(
        MemoryItem(id="ep", content=factory.statement(low), memory_type="episodic", priority=3)
    )
    return memories, {
        "procedural": (factory.question(high), high.code),
        "episodic": (factory.question(low), low.code),
    }


def layout_checks(messages: list[dict[str, Any]], question: str, budget: int) -> dict[str, bool]:
    """Within budget, rules first, question last."""
    from benchmarks._tokens import count_messages

    last = messages[-1]
    return {
        "within_budget": count_messages(messages) <= budget,
        "rules_first": messages[0]["role"] == "system" and messages[0]["content"].startswith(RULES),
        "question_last": last["role"] == "user" and last["content"].rstrip().endswith(question),
    }


def _add(row: dict[str, Any], key: str, value: float) -> None:
    row[key] = row.get(key, 0) + value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.trimming_bench", description=__doc__
    )
    add_live_args(parser, "gpt-4.1-mini")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budgets", default="6000,3000,1500,800")
    parser.add_argument("--out", type=Path, default=None, help="results JSON path")
    args = parser.parse_args(argv)
    key = require_key("openai", "trimming_bench")
    from benchmarks._report import RESULTS_DIR
    from membrane import ContextCompiler

    client = openai_client(key, args.base_url)
    budgets = [int(b) for b in args.budgets.split(",")]
    rows: dict[str, dict[str, Any]] = {}
    for budget in budgets:
        row: dict[str, Any] = {"checks_failed": 0}
        for seed in range(1, args.seeds + 1):
            memories, asks = build_memories(seed)
            for tier, (question, code) in asks.items():
                compiler = ContextCompiler(max_tokens=budget, core_content=RULES, token_scale=1.0)
                result = compiler.compile(memories=memories, user_message=question)
                messages = list(result.messages)
                row["checks_failed"] += not all(layout_checks(messages, question, budget).values())
                answer = ask_openai(client, messages, args.model, args.max_tokens)
                text = json.dumps(messages)
                other = "episodic" if tier == "procedural" else "procedural"
                _add(row, f"{tier}_kept", code in text)
                _add(row, f"{tier}_answered", judge(answer.text, [code])[0])
                _add(row, f"{other}_kept_when_not_asked", asks[other][1] in text)
                _add(row, "memories_kept", len(result.ref_map) / len(memories) / 2)
        rows[str(budget)] = {
            k: round(v / args.seeds, 4) if k != "checks_failed" else v for k, v in row.items()
        }
        print(f"budget {budget}: {rows[str(budget)]}", file=sys.stderr)
    payload = {
        "suite": "trimming_bench",
        "date": datetime.date.today().isoformat(),
        "model": args.model,
        "seeds": args.seeds,
        "budgets": rows,
    }
    out = args.out or RESULTS_DIR / "trimming.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
