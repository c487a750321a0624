"""Large inputs: one compile each, in a fresh process, the time it takes against its size.

    python -m benchmarks.slow_inputs [--quick] [--runs N] [--no-write]

The hardening issue's slow paths (point 21), each a new compiler's first compile in a process
that has loaded the encoding and compiled one small turn first:

- ``message_5mb``: a 5 MB user message of short sentences (the current turn);
- ``messages_100k``: 100,000 messages of real small talk as the history (about 7 MB: the
  ``chitchat-dataset`` utterances, one a message), an 8,000-token budget, nothing saved;
- ``memories_50k``: 50,000 memories on offer for one question.

The target is under 5 s each on the 2-core benchmark machine. Medians of ``--runs`` processes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._report import child_json, machine, write_result
from benchmarks._suite import command_line

__all__ = ["main"]

_ROOT = Path(__file__).resolve().parent.parent
CASES = ("message_5mb", "messages_100k", "memories_50k")


def _inputs(case: str, scale: float) -> tuple[dict[str, Any], int]:
    """The compile's keyword arguments, and the input's size in characters."""
    if case == "message_5mb":
        sentence = "The courier left the depot at dawn with parcel {} for Oslo. "
        text = "".join(sentence.format(i) for i in range(int(85_000 * scale)))
        return {"user_message": text}, len(text)
    if case == "messages_100k":
        from benchmarks._chats import _chitchat

        lines = [t for chat in _chitchat() for t, _ in chat]
        history = [
            {"role": "user" if i % 2 == 0 else "assistant", "content": lines[i % len(lines)]}
            for i in range(int(100_000 * scale))
        ]
        size = sum(len(m["content"]) for m in history)
        return {"conversation_messages": history, "user_message": "Where was I born?"}, size
    if case == "memories_50k":
        from membrane import MemoryItem

        memories = [
            MemoryItem(id=f"m{i}", content=f"Fact {i}: crate {i} is stored in room {i % 97}.")
            for i in range(int(50_000 * scale))
        ]
        return {"memories": memories, "user_message": "Where is crate 4242?"}, sum(
            len(m.content) for m in memories
        )
    raise SystemExit(f"unknown case {case!r}")


def _one(case: str, scale: float) -> dict[str, Any]:
    from membrane import ContextCompiler

    warm = ContextCompiler(8_000, model_id="openai/gpt-4o")
    warm.compile([], "Warm up: load the encoding.")
    kwargs, size = _inputs(case, scale)
    compiler = ContextCompiler(8_000, model_id="openai/gpt-4o")
    t0, c0 = time.perf_counter(), time.process_time()
    result = compiler.compile(**kwargs)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {
        "chars": size,
        "wall_s": wall,
        "cpu_s": cpu,
        "prompt_tokens": result.report.token_count,
        "budget_exceeded": result.report.budget_exceeded,
    }


def _child(case: str, scale: float) -> dict[str, Any]:
    row: dict[str, Any] = child_json("benchmarks.slow_inputs", [case, str(scale)], timeout=1800)
    return row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.slow_inputs", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a tenth of each size, one run")
    parser.add_argument("--runs", type=int, default=3, help="processes per case")
    parser.add_argument("--no-write", action="store_true", help="print only, write no JSON")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_one(args.child[0], float(args.child[1]))))
        return 0
    scale, runs = (0.1, 1) if args.quick else (1.0, args.runs)
    t0 = time.perf_counter()
    cases: dict[str, Any] = {}
    for case in CASES:
        rows = [_child(case, scale) for _ in range(runs)]
        cases[case] = {
            "runs": rows,
            "chars": rows[0]["chars"],
            "wall_s_median": statistics.median(r["wall_s"] for r in rows),
            "cpu_s_median": statistics.median(r["cpu_s"] for r in rows),
        }
        print(
            f"  {case}: {cases[case]['chars'] / 1e6:.1f} M chars, "
            f"{cases[case]['wall_s_median']:.2f} s wall, {cases[case]['cpu_s_median']:.2f} s CPU",
            file=sys.stderr,
        )
    payload = {
        "suite": "slow_inputs",
        "command": command_line(),
        "machine": machine(),
        "elapsed_seconds": round(time.perf_counter() - t0, 1),
        "scale": scale,
        "notes": (
            "Each run a fresh process: ContextCompiler(8000, model_id='openai/gpt-4o'), one "
            "small compile to load the encoding, then a new compiler's first compile of the case."
        ),
        "cases": cases,
    }
    if not args.no_write:
        print(f"wrote {write_result('slow_inputs', payload)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
