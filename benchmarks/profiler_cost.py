"""What the profile modules cost per compile, in one process: profiler off vs on, and presets.

    python -m benchmarks.profiler_cost [--seeds 1 2 3] [--repeats 5]

The hard suite's 80-turn chat is compiled turn by turn, one reused compiler per variant; the
variants take turns on every turn (order rotating), so drift hits them alike. Each variant's
figure is the median of its per-turn times over all seeds and repeats; ratios are to the
compile without a profile, measured in the same run. The zero-cost-when-off claim is checked
across builds by ``benchmarks.ab_compile`` (result ``ab_profiler_off.json``); this suite says
what turning the profiler, or a preset, on costs.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import statistics
import time
import timeit
from collections.abc import Sequence
from typing import Any

from benchmarks._report import machine, write_result
from benchmarks._scenarios import HARD_SCENARIOS, build_scenario
from benchmarks._suite import command_line
from membrane import ContextCompiler, MemoryItem
from membrane.profile import MembraneProfile, start_watch

__all__ = ["main"]

VARIANTS: dict[str, MembraneProfile | None] = {
    "no profile": None,
    "minimal, profiler off": MembraneProfile.minimal(),
    "minimal, profiler on": dataclasses.replace(MembraneProfile.minimal(), profiler=True),
    "coding, profiler off": MembraneProfile.coding(),
    "coding, profiler on": dataclasses.replace(MembraneProfile.coding(), profiler=True),
    "conversational, profiler off": MembraneProfile.conversational(),
}


def _run(seed: int, times: dict[str, list[int]]) -> None:
    scenario = build_scenario(HARD_SCENARIOS["long_chat"], seed)
    compilers = {
        name: ContextCompiler(
            scenario.budget,
            model_id="openai/gpt-4o",
            core_content=scenario.system_prompt,
            token_scale=1.0,
        )
        for name in VARIANTS
    }
    names = list(VARIANTS)
    history: list[dict[str, Any]] = []
    for number, turn in enumerate(scenario.turns):
        memories = [
            MemoryItem(id=m.id, content=m.content, memory_type=m.memory_type, priority=m.priority)
            for m in turn.memories
        ]
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            messages = list(history)
            t0 = time.perf_counter_ns()
            compilers[name].compile(
                memories,
                turn.user_message,
                conversation_messages=messages,
                profile=VARIANTS[name],
            )
            times[name].append(time.perf_counter_ns() - t0)
        history.append({"role": "user", "content": turn.user_message})
        history.extend(dict(m) for m in turn.reply)


def _off_watch_ns() -> float:
    """What an unprofiled compile spends on the stopwatch: the lookup and six empty laps."""

    def laps() -> None:
        watch = start_watch(None)
        for stage in ("normalise", "layout", "history", "fit", "render", "state_store"):
            watch.lap(stage)

    number = 100_000
    return min(timeit.repeat(laps, number=number, repeat=5)) / number * 1e9


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profiler_cost", description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="profiler_cost")
    args = parser.parse_args(argv)
    _run(10_000, {name: [] for name in VARIANTS})  # warm-up: encodings, caches
    times: dict[str, list[int]] = {name: [] for name in VARIANTS}
    for _ in range(args.repeats):
        for seed in args.seeds:
            gc.collect()
            _run(seed, times)
    base = statistics.median(times["no profile"])
    off_ns = _off_watch_ns()
    rows = {
        name: {
            "median_ms": statistics.median(values) / 1e6,
            "ratio_to_no_profile": statistics.median(values) / base,
            "turns": len(values),
        }
        for name, values in times.items()
    }
    write_result(
        args.out,
        {
            "suite": "profiler_cost",
            "command": command_line(),
            "machine": machine(),
            "scenario": "long_chat",
            "seeds": args.seeds,
            "repeats": args.repeats,
            "variants": rows,
            "off_watch_ns_per_compile": off_ns,
            "off_watch_share_of_no_profile_median": off_ns / base,
        },
    )
    print(f"profiler off: {off_ns:.0f} ns per compile ({off_ns / base:.2%} of a compile)")
    print(f"{'variant':<32}{'median ms':>10}{'ratio':>8}")
    for name, row in rows.items():
        print(f"{name:<32}{row['median_ms']:>10.3f}{row['ratio_to_no_profile']:>8.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
