"""A/B of per-turn compile time between two commits, in alternating fresh processes.

python -m benchmarks.ab_compile BASE_REV NEW_REV [--rounds 10] [--out NAME] [--instructions]

Each round starts one process per side (order alternating), each timing every turn of the
80-turn chat for two seeds with one reused compiler, after a discarded warm-up conversation.
The result is the median of each process's median, per side, and their ratio. Both sides run
this tree's scenario generator; only ``membrane`` comes from the commit under test (a git
worktree made for the run and removed after it).

Wall-clock medians move with whatever else the machine runs. ``--instructions`` adds a count
that does not: each side runs under ``valgrind --tool=callgrind`` twice, once with only the
imports, scenarios and warm-up and once with the timed turns as well; the difference divided by
the turns is the instructions one compile costs. It also counts a fixed sample of the hard
suite the same way: the last turn of each of the first ten scenarios for seeds 1 and 2 (20
compiles), each on a compiler that has compiled the scenario's earlier turns.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._report import machine, write_result

ROOT = Path(__file__).resolve().parents[1]

_TIMER = """
import gc, json, statistics, sys, time
from benchmarks._scenarios import HARD_SCENARIOS, build_scenario
from membrane import ContextCompiler, MemoryItem

def run(scenario):
    compiler = ContextCompiler(scenario.budget, model_id="openai/gpt-4o",
                               core_content=scenario.system_prompt, token_scale=1.0)
    history, times = [], []
    for turn in scenario.turns:
        memories = [MemoryItem(id=m.id, content=m.content, memory_type=m.memory_type,
                               priority=m.priority) for m in turn.memories]
        t0 = time.perf_counter_ns()
        compiler.compile(memories=memories, conversation_messages=list(history),
                         user_message=turn.user_message)
        times.append(time.perf_counter_ns() - t0)
        history.append({"role": "user", "content": turn.user_message})
        history.extend(dict(m) for m in turn.reply)
    return times

spec = HARD_SCENARIOS["long_chat"]
run(build_scenario(spec, 10_000))
times = []
for seed in (1, 2) if sys.argv[-1] != "setup-only" else ():
    gc.collect()
    times += run(build_scenario(spec, seed))
print(json.dumps({"median_ms": statistics.median(times) / 1e6 if times else 0.0,
                  "turns": len(times)}))
"""


_HARD_SAMPLE = """
import sys
from benchmarks._scenarios import HARD_SCENARIOS, build_scenario
from membrane import ContextCompiler, MemoryItem

def run(scenario, count_last):
    compiler = ContextCompiler(scenario.budget, model_id="openai/gpt-4o",
                               core_content=scenario.system_prompt, token_scale=1.0)
    history = []
    for i, turn in enumerate(scenario.turns):
        if i == len(scenario.turns) - 1 and not count_last:
            return
        memories = [MemoryItem(id=m.id, content=m.content, memory_type=m.memory_type,
                               priority=m.priority) for m in turn.memories]
        compiler.compile(memories=memories, conversation_messages=list(history),
                         user_message=turn.user_message)
        history.append({"role": "user", "content": turn.user_message})
        history.extend(dict(m) for m in turn.reply)

names = sorted(HARD_SCENARIOS)[:10]
for name in names:
    for seed in (1, 2):
        run(build_scenario(HARD_SCENARIOS[name], seed), sys.argv[-1] != "setup-only")
print(len(names) * 2)
"""


def _commit(rev: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", rev], capture_output=True, text=True
    )
    return f"{rev} ({done.stdout.strip()})" if done.returncode == 0 else rev


def _time(src: Path) -> dict[str, Any]:
    env_path = f"{src}:{ROOT}"
    done = subprocess.run(
        [sys.executable, "-c", _TIMER],
        env={"PYTHONPATH": env_path, "PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


_CALLGRIND = ("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null")


def _instructions(src: Path, mode: str, script: str = _TIMER) -> int:
    done = subprocess.run(
        [*_CALLGRIND, sys.executable, "-c", script, mode],
        env={"PYTHONPATH": f"{src}:{ROOT}", "PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    collected = re.search(r"Collected : (\d+)", done.stderr)
    if collected is None:
        raise RuntimeError("callgrind printed no instruction count:\n" + done.stderr[-2000:])
    return int(collected.group(1))


def _per_turn_instructions(src: Path) -> float:
    turns = _time(src)["turns"]
    return (_instructions(src, "full") - _instructions(src, "setup-only")) / turns


def _hard_sample_instructions(src: Path) -> float:
    full = _instructions(src, "full", _HARD_SAMPLE)
    return (full - _instructions(src, "setup-only", _HARD_SAMPLE)) / 20


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ab_compile", description=__doc__)
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--out", default="ab_compile")
    parser.add_argument("--instructions", action="store_true", help="also count with callgrind")
    args = parser.parse_args(argv)
    instructions: dict[str, float] = {}
    hard: dict[str, float] = {}
    medians: dict[str, list[float]] = {"base": [], "new": []}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {}
        for side in ("base", "new"):
            tree = Path(tmp) / side
            rev = getattr(args, side)
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), rev],
                check=True,
            )
            trees[side] = tree
        try:
            for round_no in range(args.rounds):
                order = ("base", "new") if round_no % 2 == 0 else ("new", "base")
                for side in order:
                    medians[side].append(_time(trees[side] / "src")["median_ms"])
                print(
                    f"  round {round_no + 1}: base {medians['base'][-1]:.3f} ms, "
                    f"new {medians['new'][-1]:.3f} ms",
                    file=sys.stderr,
                )
            if args.instructions:
                for side in ("base", "new"):
                    instructions[side] = _per_turn_instructions(trees[side] / "src")
                    hard[side] = _hard_sample_instructions(trees[side] / "src")
        finally:
            for tree in trees.values():
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                    check=False,
                )
    base = statistics.median(medians["base"])
    new = statistics.median(medians["new"])
    payload = {
        "suite": "ab_compile",
        "command": "python -m benchmarks.ab_compile " + " ".join(argv or sys.argv[1:]),
        "machine": machine(),
        "base": _commit(args.base),
        "new": _commit(args.new),
        "rounds": args.rounds,
        "per_process_median_ms": medians,
        "base_median_of_medians_ms": base,
        "new_median_of_medians_ms": new,
        "ratio_new_to_base": new / base,
    }
    if instructions:
        payload["instructions_per_turn"] = instructions
        payload["instructions_ratio_new_to_base"] = instructions["new"] / instructions["base"]
        print(
            f"instructions per turn: base {instructions['base']:,.0f}, "
            f"new {instructions['new']:,.0f}, ratio {payload['instructions_ratio_new_to_base']:.3f}"
        )
    if hard:
        payload["hard_sample_instructions_per_compile"] = hard
        payload["hard_sample_ratio_new_to_base"] = hard["new"] / hard["base"]
        print(
            f"hard-suite sample, instructions per compile: base {hard['base']:,.0f}, "
            f"new {hard['new']:,.0f}, ratio {payload['hard_sample_ratio_new_to_base']:.3f}"
        )
    write_result(args.out, payload)
    print(f"base {base:.3f} ms, new {new:.3f} ms, ratio {new / base:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
