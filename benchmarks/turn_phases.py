"""Where a reused compiler's per-turn time goes: the turns that move the cut against the others.

    python -m benchmarks.turn_phases [--seeds 5]

The harness of ``compile_speed --turns`` (the hard suite's 80-turn chat, 5 new memories a turn,
a 6,000-token budget, one compiler per conversation), compiled with the built-in profiler
(``MembraneProfile(profiler=True)``, whose stage laps are ``metadata["profile_timings"]``). A
turn *moves the cut* when it drops more history messages than the turn before. Reported per
group: how many turns, the median total and the median of each stage. The profiler's own cost
is in ``profiler_cost.json``; read the groups against each other, not against ``trim_messages``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace
from typing import Any

from benchmarks._report import machine, write_result
from benchmarks._scenarios import HARD_SCENARIOS, build_scenario
from benchmarks._suite import command_line
from benchmarks.compile_speed import _memory_items
from membrane import ContextCompiler, MemoryItem
from membrane.profile import MembraneProfile

__all__ = ["main"]

SPEC = replace(HARD_SCENARIOS["long_chat"], memories=(5, 5), fresh_memories=True)


def _turns(seed: int) -> list[dict[str, Any]]:
    """One conversation: each turn's total ms, stage ms and whether it moved the cut."""
    scenario = build_scenario(SPEC, seed)
    compiler = ContextCompiler(
        max_tokens=scenario.budget,
        model_id="openai/gpt-4o",
        core_content=scenario.system_prompt,
        token_scale=1.0,
    )
    profile = MembraneProfile(profiler=True)
    history: list[dict[str, Any]] = []
    rows, dropped = [], 0
    for turn in scenario.turns:
        memories = _memory_items(turn, MemoryItem)
        t0 = time.perf_counter_ns()
        result = compiler.compile(
            memories, turn.user_message, conversation_messages=history, profile=profile
        )
        total = (time.perf_counter_ns() - t0) / 1e6
        now = int(result.metadata.get("history_messages_dropped") or 0)
        stages = {s: v["ms"] for s, v in result.metadata["profile_timings"].items()}
        rows.append({"ms": total, "moves_cut": now > dropped, "stages": stages})
        dropped = now
        history.append({"role": "user", "content": turn.user_message})
        history.extend(dict(m) for m in turn.reply)
    return rows


def _group(rows: list[dict[str, Any]]) -> dict[str, Any]:
    stages = sorted({s for r in rows for s in r["stages"]})
    return {
        "turns": len(rows),
        "ms_median": statistics.median(r["ms"] for r in rows),
        "stage_ms_median": {
            s: statistics.median(r["stages"].get(s, 0.0) for r in rows) for s in stages
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    _turns(10_000)  # warm-up on text of its own: imports, encodings, allocator
    rows = [r for seed in range(1, args.seeds + 1) for r in _turns(seed)]
    groups = {
        "all": _group(rows),
        "moves_cut": _group([r for r in rows if r["moves_cut"]]),
        "other": _group([r for r in rows if not r["moves_cut"]]),
    }
    ms = sorted(r["ms"] for r in rows)
    groups["all"]["ms_p95"] = ms[int(0.95 * (len(ms) - 1))]
    for name, group in groups.items():
        parts = ", ".join(f"{s} {v:.3f}" for s, v in group["stage_ms_median"].items())
        print(f"{name}: {group['turns']} turns, median {group['ms_median']:.3f} ms ({parts})")
    write_result(
        "turn_phases",
        {
            "suite": "turn_phases",
            "command": command_line(),
            "machine": machine(),
            "elapsed_seconds": round(time.perf_counter() - started, 1),
            "settings": {"seeds": args.seeds, "budget": SPEC.budget, "turns": SPEC.turns},
            "groups": groups,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
