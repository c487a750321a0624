"""What the local embedder adds to each compile, turn by turn, on the hard suite's chats.

    python -m benchmarks.embed_cost [--seeds N] [--scenarios a,b]

For every turn of every scenario the same inputs go to three strategies in the same process:
Membrane with defaults, Membrane with ``embedder=local_embedder()`` (a compiler per
conversation, the model loaded once per process), and LangChain ``trim_messages`` as the peer.
The order of the two Membrane compiles alternates from turn to turn. The added time of a turn
is the embedder compile's time minus the plain compile's time on that turn, as wall-clock time
and as CPU time of the process (on a machine shared with other jobs the wall clock also counts
the time the process waited for a core; the 1-minute load average is recorded). The report
gives medians and 90th percentiles, what was embedded (texts and word pieces) and the model's
load time, paid once per process.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from benchmarks._report import machine, write_result
from benchmarks._runner import percentile
from benchmarks._scenarios import HARD_SCENARIOS, build_scenario
from benchmarks._strategies import (
    LangChainTrim,
    MembraneStrategy,
    StrategyUnavailable,
    shared_local_embedder,
)
from benchmarks._suite import command_line

__all__ = ["main"]

TARGET_MS = 20.0


class _Recording:
    """Passes texts to the model and remembers them (word pieces are counted after timing)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.texts: list[str] = []

    def __call__(self, texts: list[str]) -> Any:
        self.texts.extend(texts)
        return self.inner(texts)


def _word_pieces(model: Any, texts: Sequence[str]) -> int:
    _, _, tokenizer = model._parts()
    return sum(len(tokenizer.encode(t).ids) for t in texts)


def _median_of(values: Sequence[float], indices: Sequence[int]) -> float | None:
    return round(statistics.median(values[i] for i in indices), 2) if indices else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.embed_cost", description=__doc__)
    parser.add_argument("--seeds", type=int, default=2, help="seeds 1..N (default %(default)s)")
    parser.add_argument("--scenarios", default="all", help="comma-separated, or 'all'")
    parser.add_argument("--no-write", action="store_true", help="print only, write no JSON")
    args = parser.parse_args(argv)
    names = list(HARD_SCENARIOS) if args.scenarios == "all" else args.scenarios.split(",")

    t0 = time.perf_counter()
    try:
        model = shared_local_embedder()
    except StrategyUnavailable as exc:
        print(f"cannot run: {exc}", file=sys.stderr)
        return 1
    load_seconds = time.perf_counter() - t0
    try:
        peer: LangChainTrim | None = LangChainTrim()
    except StrategyUnavailable as exc:
        print(f"no LangChain peer: {exc}", file=sys.stderr)
        peer = None

    per_scenario: dict[str, Any] = {}
    all_added: list[float] = []
    all_added_cpu: list[float] = []
    load_before = os.getloadavg()
    all_plain: list[float] = []
    all_embed: list[float] = []
    all_peer: list[float] = []
    all_texts: list[int] = []
    loads: list[float] = [load_before[0]]
    for name in names:
        added: list[float] = []
        plain_ms: list[float] = []
        embed_ms: list[float] = []
        peer_ms: list[float] = []
        added_cpu: list[float] = []
        cpu: dict[int, float] = {}
        texts_per_turn: list[int] = []
        pieces_per_turn: list[int] = []
        for seed in range(1, args.seeds + 1):
            scenario = build_scenario(HARD_SCENARIOS[name], seed)
            recording = _Recording(model)
            plain = MembraneStrategy("membrane", "", "")
            embed = MembraneStrategy("membrane-embed", "", "", embedder=recording)
            strategies: list[Any] = [plain, embed] + ([peer] if peer is not None else [])
            for s in strategies:
                s.timing_only = True
                s.start(scenario)
            history: list[dict[str, Any]] = []
            for i, turn in enumerate(scenario.turns):
                before = len(recording.texts)
                pair = (plain, embed) if i % 2 == 0 else (embed, plain)
                times: dict[int, float] = {}
                for s in pair:
                    c0 = time.process_time_ns()
                    times[id(s)] = s.build(list(history), turn).compile_ns / 1e6
                    cpu[id(s)] = (time.process_time_ns() - c0) / 1e6
                if peer is not None:
                    peer_ms.append(peer.build(list(history), turn).compile_ns / 1e6)
                plain_ms.append(times[id(plain)])
                embed_ms.append(times[id(embed)])
                added.append(times[id(embed)] - times[id(plain)])
                added_cpu.append(cpu[id(embed)] - cpu[id(plain)])
                new = recording.texts[before:]
                texts_per_turn.append(len(new))
                pieces_per_turn.append(_word_pieces(model, new))
                history.append({"role": "user", "content": turn.user_message})
                history.extend(dict(m) for m in turn.reply)
        embedding_turns = sum(1 for n in texts_per_turn if n)
        per_scenario[name] = {
            "turns": len(added),
            "added_ms_median": round(statistics.median(added), 2),
            "added_ms_p90": round(percentile(added, 0.9), 2),
            "added_cpu_ms_median": round(statistics.median(added_cpu), 2),
            "membrane_ms_median": round(statistics.median(plain_ms), 3),
            "membrane_embed_ms_median": round(statistics.median(embed_ms), 2),
            "langchain_ms_median": round(statistics.median(peer_ms), 3) if peer_ms else None,
            "turns_that_embed": embedding_turns,
            "texts_embedded_per_turn_median": statistics.median(texts_per_turn),
            "texts_embedded_per_turn_max": max(texts_per_turn),
            "word_pieces_per_turn_median": statistics.median(pieces_per_turn),
            "word_pieces_per_turn_max": max(pieces_per_turn),
        }
        all_added += added
        all_added_cpu += added_cpu
        all_plain += plain_ms
        all_embed += embed_ms
        all_peer += peer_ms
        all_texts += texts_per_turn
        loads.append(os.getloadavg()[0])
        per_scenario[name]["load_average_1min_after"] = round(loads[-1], 2)
        print(f"{name}: {per_scenario[name]}", file=sys.stderr)

    overall_median = statistics.median(all_added)
    embedding = [i for i, n in enumerate(all_texts) if n]
    summary = {
        "turns": len(all_added),
        "added_ms_median": round(overall_median, 2),
        "added_ms_p90": round(percentile(all_added, 0.9), 2),
        "added_ms_mean": round(statistics.mean(all_added), 2),
        "added_cpu_ms_median": round(statistics.median(all_added_cpu), 2),
        "added_cpu_ms_p90": round(percentile(all_added_cpu, 0.9), 2),
        "added_cpu_ms_mean": round(statistics.mean(all_added_cpu), 2),
        "turns_that_embed": len(embedding),
        "added_ms_median_turns_that_embed": _median_of(all_added, embedding),
        "added_cpu_ms_median_turns_that_embed": _median_of(all_added_cpu, embedding),
        "texts_embedded_per_turn_median": statistics.median(all_texts),
        "membrane_ms_median": round(statistics.median(all_plain), 3),
        "membrane_embed_ms_median": round(statistics.median(all_embed), 2),
        "langchain_ms_median": round(statistics.median(all_peer), 3) if all_peer else None,
        "embed_over_langchain_median": (
            round(statistics.median(all_embed) / statistics.median(all_peer), 1)
            if all_peer
            else None
        ),
        "model_load_seconds_once_per_process": round(load_seconds, 2),
        "target_ms": TARGET_MS,
        "target_met": overall_median <= TARGET_MS,
        "load_average_1min_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "load_average_1min_median_of_samples": round(statistics.median(loads), 2),
        "load_average_1min_samples": len(loads),
    }
    payload = {
        "suite": "embed_cost",
        "command": command_line(),
        "machine": machine(),
        "settings": {
            "seeds": list(range(1, args.seeds + 1)),
            "embedder": "membrane.lod.local_embedder() (all-MiniLM-L6-v2 int8 ONNX, 1 thread)",
            "added_time": "per turn: compile with the embedder minus compile without, same turn; "
            "wall clock (perf_counter) and CPU time of the process (process_time)",
        },
        "summary": summary,
        "scenarios": per_scenario,
    }
    if not args.no_write:
        path = write_result("embed_cost", payload)
        print(f"wrote {path}", file=sys.stderr)
    print(
        f"added per turn: median {summary['added_ms_median']} ms, p90 {summary['added_ms_p90']} "
        f"ms over {summary['turns']} turns, CPU {summary['added_cpu_ms_median']} ms "
        f"({summary['turns_that_embed']} turns embed; on those: "
        f"{summary['added_ms_median_turns_that_embed']} ms, CPU "
        f"{summary['added_cpu_ms_median_turns_that_embed']} ms; load average "
        f"{summary['load_average_1min_median_of_samples']}) "
        f"(target <= {TARGET_MS} ms: "
        f"{'met' if summary['target_met'] else 'not met'}); model load "
        f"{summary['model_load_seconds_once_per_process']} s once per process"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
