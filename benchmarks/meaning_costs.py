"""What meaning costs per turn: the defaults against each offline embedder, on the same turns.

    python -m benchmarks.meaning_costs [--chats 1,2] [--gap 1.0] [--quick] [--no-write]

Three histories are replayed turn by turn (a compile for every turn of person A, with the
history so far): the long-message chat (80 messages of 30-220 words, 8,000 tokens) and two real
chats of the conversation benchmark (``benchmarks/_chats.py``, 4,000 tokens, speakers named).
Every turn is compiled by each strategy in the same process, the order rotating from turn to
turn; one compiler per strategy and history, the models loaded once before any timing:

- ``off``: the defaults, no embedder;
- ``minilm``: ``local_embedder()``, vectors made on the compiling thread when first needed;
- ``minilm_executor``: ``local_embedder(executor=pool)``, one background thread, a compile
  waits at most 10 ms for vectors (then words decide and ``semantic_vectors_pending`` says so);
  between turns the benchmark lets the thread work for up to ``--gap`` seconds, standing in
  for the model call a real turn waits for;
- ``static``: ``static_embedder()``, on the compiling thread.

Reported per strategy and history: per-turn wall-clock median, p95, p99 and max (ms), p99 and
the joining worker's first compile over the defaults', the turns left to words, and the joining
worker: a fresh compiler's first compile of the whole history (the last turn), median of
``--joins`` fresh compilers, and how many of those first compiles were left to words.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from benchmarks._chats import build_conversation
from benchmarks._report import machine, write_result
from benchmarks._runner import percentile
from benchmarks._suite import command_line

__all__ = ["main"]

STRATEGIES = ("off", "minilm", "minilm_executor", "static")
TARGET_RATIO = 3.0


class Replay:
    """One history to replay: the turns (history so far, the user message), budget, speakers."""

    def __init__(
        self, name: str, budget: int, turns: list[tuple[list[dict[str, Any]], str]], who: Any
    ) -> None:
        self.name, self.budget, self.turns, self.speakers = name, budget, turns, who


def long_message_chat(seed: int = 7, messages: int = 80) -> Replay:
    """80 messages of 30-220 words made of real chat lines (the conversation benchmark's)."""
    rng = random.Random(seed)
    words = " ".join(m.text for s in (1, 2, 4) for m in build_conversation(s).messages).split()
    history: list[dict[str, Any]] = []
    turns = []
    for i in range(messages):
        n, start = rng.randint(30, 220), rng.randrange(0, len(words) - 230)
        text = " ".join(words[start : start + n])
        role = "user" if i % 2 == 0 else "assistant"
        if role == "user":
            turns.append((list(history), text))
        history.append({"role": role, "content": text})
    return Replay("long_message_chat_8000", 8000, turns, None)


def real_chat(seed: int) -> Replay:
    conv = build_conversation(seed)
    history: list[dict[str, Any]] = []
    turns = []
    for m in conv.messages:
        if m.role == "user":
            turns.append((list(history), m.text))
        history.append({"role": m.role, "content": m.text})
    who = {m.speaker: m.role for m in conv.messages}
    return Replay(f"real_chat_{seed}_4000", 4000, turns, who)


def _embedders(pool: ThreadPoolExecutor) -> dict[str, Any]:
    from membrane.lod import local_embedder, static_embedder

    minilm, static = local_embedder(), static_embedder()
    background = local_embedder(executor=pool, wait_seconds=0.01)
    for model in (minilm, static, background):
        model.load()
    return {"off": None, "minilm": minilm, "minilm_executor": background, "static": static}


def _compiler(replay: Replay, embedder: Any) -> Any:
    from membrane import ContextCompiler

    return ContextCompiler(replay.budget, model_id="openai/gpt-4o", embedder=embedder)


def _timed(compiler: Any, replay: Replay, history: list[dict[str, Any]], text: str) -> Any:
    """One compile's wall-clock milliseconds, and its result."""
    t0 = time.perf_counter()
    result = compiler.compile([], text, conversation_messages=history, speakers=replay.speakers)
    return (time.perf_counter() - t0) * 1000, result


def _drain(pool: ThreadPoolExecutor, gap: float) -> None:
    """Let the background thread work up to ``gap`` seconds: the model call between turns."""
    wait([pool.submit(lambda: None)], timeout=gap)


def _warm_up(embedders: dict[str, Any], pool: ThreadPoolExecutor) -> None:
    """One untimed compile per strategy: the encoding and each model's first run are paid."""
    history = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"note {i} about the trip"}
        for i in range(40)
    ]
    warm = Replay("warm-up", 300, [], None)
    for embedder in embedders.values():
        _timed(_compiler(warm, embedder), warm, history, "Where did we go?")
    _drain(pool, 60.0)


def replay_turns(replay: Replay, embedders: dict[str, Any], pool: Any, gap: float) -> dict:
    compilers = {name: _compiler(replay, e) for name, e in embedders.items()}
    times: dict[str, list[float]] = {name: [] for name in embedders}
    words_only = dict.fromkeys(embedders, 0)
    names = list(embedders)
    for i, (history, text) in enumerate(replay.turns):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            ms, result = _timed(compilers[name], replay, history, text)
            times[name].append(ms)
            words_only[name] += bool(result.metadata.get("semantic_vectors_pending"))
        _drain(pool, gap)
    return {"times": times, "words_only": words_only}


def joining_worker(replay: Replay, embedders: dict[str, Any], pool: Any, joins: int) -> dict:
    history, text = replay.turns[-1]
    out: dict[str, list[float]] = {name: [] for name in embedders}
    words: dict[str, int] = dict.fromkeys(embedders, 0)
    for _ in range(joins):
        for name, embedder in embedders.items():
            ms, result = _timed(_compiler(replay, embedder), replay, history, text)
            out[name].append(ms)
            words[name] += bool(result.metadata.get("semantic_vectors_pending"))
            _drain(pool, 60.0)  # each join starts with an idle background thread
    return {"ms": {name: statistics.median(v) for name, v in out.items()}, "words": words}


def _row(ms: Sequence[float]) -> dict[str, float]:
    return {
        "turns": len(ms),
        "median_ms": round(statistics.median(ms), 2),
        "p95_ms": round(percentile(ms, 0.95), 2),
        "p99_ms": round(percentile(ms, 0.99), 2),
        "max_ms": round(max(ms), 2),
    }


def measure(replay: Replay, embedders: dict[str, Any], pool: Any, gap: float, joins: int) -> dict:
    played = replay_turns(replay, embedders, pool, gap)
    joined = joining_worker(replay, embedders, pool, joins)
    rows: dict[str, Any] = {}
    base = _row(played["times"]["off"])
    for name in embedders:
        row = _row(played["times"][name])
        row["p99_over_off"] = round(row["p99_ms"] / base["p99_ms"], 2)
        row["turns_left_to_words"] = played["words_only"][name]
        row["joining_first_compile_ms"] = round(joined["ms"][name], 1)
        row["joining_over_off"] = round(joined["ms"][name] / joined["ms"]["off"], 2)
        row["joins_left_to_words"] = joined["words"][name]
        row["target_met"] = (
            row["p99_over_off"] <= TARGET_RATIO and row["joining_over_off"] <= TARGET_RATIO
        )
        rows[name] = row
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.meaning_costs", description=__doc__)
    parser.add_argument("--chats", default="1,2", help="real chats (conversation seeds)")
    parser.add_argument("--gap", type=float, default=1.0, help="seconds between turns, at most")
    parser.add_argument("--joins", type=int, default=3, help="fresh compilers per history")
    parser.add_argument("--quick", action="store_true", help="first 20 turns of each history")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    replays = [long_message_chat(), *(real_chat(int(s)) for s in args.chats.split(","))]
    if args.quick:
        for replay in replays:
            replay.turns = replay.turns[:20]
    pool = ThreadPoolExecutor(1, thread_name_prefix="membrane-embed")
    try:
        embedders = _embedders(pool)
        _warm_up(embedders, pool)
        load = os.getloadavg()[0]
        results = {r.name: measure(r, embedders, pool, args.gap, args.joins) for r in replays}
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    for name, rows in results.items():
        for strategy, row in rows.items():
            print(f"{name} {strategy}: {row}")
    payload = {
        "suite": "meaning_costs",
        "command": command_line(),
        "machine": machine(),
        "settings": {
            "strategies": list(STRATEGIES),
            "gap_seconds": args.gap,
            "joins": args.joins,
            "wait_seconds": 0.01,
            "target": f"p99 and the joining worker's first compile <= {TARGET_RATIO}x the "
            "defaults' on the same turns",
            "load_average_1min_start_end": [round(load, 2), round(os.getloadavg()[0], 2)],
        },
        "results": results,
    }
    if not args.no_write:
        print(f"wrote {write_result('meaning_costs', payload)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
