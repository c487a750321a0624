"""What Membrane costs a server: memory per conversation, cold start, the per-turn tail, a joining
worker, the event loop.

    python -m benchmarks.server_costs [--quick] [--parts memory,rss,cold,tail,join,loop]
                                      [--meaning] [--merge] [--no-write]

- ``memory``: bytes the compiler keeps per conversation of 100 / 1,000 / 10,000 long messages,
  against the conversation's text (``benchmarks/_server_memory.py``), each in a fresh process.
- ``rss``: resident-memory growth over 600 chats of 80 messages through one compiler, with the
  default ``cache_bytes`` and with one small enough to bind, against the documented bound.
- ``cold``: ``import membrane`` against ``import tiktoken``, and the first compile against
  tiktoken loading ``cl100k_base``; medians of fresh processes (``benchmarks/_cold_start.py``).
- ``tail``: per-turn median / p95 / p99 / max of a chat of long messages (30-220 words) at 8k,
  128k and 900k-token budgets, against LangChain ``trim_messages`` with memoised counts (every
  turn) and with fresh counts (every k-th turn: a fresh count of a long history is slow),
  timed back to back in the same run. ``--meaning`` adds a Membrane compiler with
  ``embedder=membrane.lod.local_embedder(executor=...)`` (one background thread) on the same
  turns (the ``embed`` extra).
- ``join``: a new compiler's first compile of a 1,000-message conversation (no saved state:
  it replays), against ``trim_messages`` with fresh counts; each sample a new process.
- ``loop``: how late a 1 ms timer fires on an event loop serving 50 conversations at once
  through ``compile_async`` (the loop's lag).

Wall-clock numbers drift on a shared machine: read the ratios measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks._long_messages import long_message_chat
from benchmarks._report import child_json, machine, read_result, write_result
from benchmarks._runner import percentile
from benchmarks._suite import command_line

__all__ = ["main"]

_ROOT = Path(__file__).resolve().parent.parent
PARTS = ("memory", "rss", "cold", "tail", "join", "loop")
BUDGETS = (8_000, 128_000, 900_000)


def _child(part: str, *args: Any) -> Any:
    """Run one measurement in a fresh process; its JSON answer."""
    return child_json("benchmarks.server_costs", [part, json.dumps(args)], timeout=3600)


def _run_child(part: str, args: list[Any]) -> Any:
    from benchmarks import _server_memory

    if part == "memory":
        return _server_memory.bytes_per_conversation(*args)
    if part == "rss":
        return _server_memory.rss_growth(*args)
    if part == "join_membrane":
        return _join_membrane(*args)
    if part == "join_langchain":
        return _join_langchain(*args)
    raise SystemExit(f"unknown child part {part!r}")


# --------------------------------------------------------------------------- memory, rss


def memory(sizes: Sequence[int]) -> list[dict[str, Any]]:
    rows = []
    for n in sizes:
        row = _child("memory", n)
        rows.append(row)
        print(
            f"  memory, {n:>6} messages: state {row['state_bytes'] / 1e3:,.0f} KB "
            f"({row['state_over_text']:.2f}x the text), total {row['total_over_text']:.2f}x",
            file=sys.stderr,
        )
    return rows


def rss(conversations: int, messages: int, caches: Sequence[int]) -> list[dict[str, Any]]:
    rows = []
    for cache_bytes in caches:
        row = _child("rss", conversations, messages, cache_bytes)
        rows.append(row)
        print(
            f"  rss, cache_bytes {cache_bytes >> 20} MiB: grew {row['rss_growth_bytes'] >> 20} "
            f"MiB, {row['rss_growth_over_bound']:.2f} of the bound",
            file=sys.stderr,
        )
    return rows


# --------------------------------------------------------------------------- tail


def _membrane(budget: int, embedder: Any = None) -> Any:
    from membrane import ContextCompiler

    return ContextCompiler(budget, model_id="openai/gpt-4o", token_scale=1.0, embedder=embedder)


def _langchain(fresh: bool) -> Callable[[list[Any], int], None]:
    from langchain_core.messages import trim_messages

    from benchmarks._tokens import FRAMING_TOKENS, encode_fresh

    memo: dict[str, int] = {}

    def count(messages: list[Any]) -> int:
        total = 0
        for message in messages:
            n = None if fresh else memo.get(message.content)
            if n is None:
                n = FRAMING_TOKENS + len(encode_fresh(message.content))
                if not fresh:
                    memo[message.content] = n
            total += n
        return total

    def trim(messages: list[Any], budget: int) -> None:
        trim_messages(
            messages,
            max_tokens=budget,
            token_counter=count,
            strategy="last",
            include_system=True,
            start_on="human",
            allow_partial=False,
        )

    return trim


def _compile(compiler: Any, history: list[dict[str, Any]], question: str) -> None:
    compiler.compile([], question, conversation_messages=history)


def _timed(call: Callable[..., Any], *args: Any) -> int:
    t0 = time.perf_counter_ns()
    call(*args)
    return time.perf_counter_ns() - t0


def _summary(ns: Sequence[int]) -> dict[str, Any]:
    ms = [n / 1e6 for n in ns]
    median = statistics.median(ms)
    p99 = percentile(ms, 0.99)
    return {
        "turns": len(ms),
        "median_ms": median,
        "p95_ms": percentile(ms, 0.95),
        "p99_ms": p99,
        "max_ms": max(ms),
        "p99_over_median": p99 / median if median else None,
    }


def tail(messages: int, seeds: int, meaning: bool) -> list[dict[str, Any]]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    embedder = _meaning_embedder() if meaning else None
    _warm_up(embedder)
    rows = []
    for budget in BUDGETS:
        sides: dict[str, list[int]] = {"membrane": [], "memoised": [], "fresh": []}
        if embedder is not None:
            sides["membrane_meaning"] = []
        for seed in range(seeds):
            chat = long_message_chat(messages, 500 + seed)
            compilers = {"membrane": _membrane(budget)}
            if embedder is not None:
                compilers["membrane_meaning"] = _membrane(budget, embedder)
            memoised, fresh = _langchain(fresh=False), _langchain(fresh=True)
            turns = chat.turns()
            every = max(1, len(turns) // 40)
            lc: list[Any] = [SystemMessage("You are a helpful assistant.")]
            gc.collect()
            for i, (history, question) in enumerate(turns):
                for name, compiler in compilers.items():
                    sides[name].append(_timed(_compile, compiler, history, question))
                while len(lc) - 1 < len(history):  # LangChain keeps its message objects
                    m = history[len(lc) - 1]
                    lc.append((HumanMessage if m["role"] == "user" else AIMessage)(m["content"]))
                asked = [*lc, HumanMessage(question)]
                sides["memoised"].append(_timed(memoised, asked, budget))
                if i % every == 0:
                    sides["fresh"].append(_timed(fresh, asked, budget))
        row: dict[str, Any] = {"budget": budget, "messages": messages, "seeds": seeds}
        for name, ns in sides.items():
            row[name] = _summary(ns)
        row["median_over_memoised"] = row["membrane"]["median_ms"] / row["memoised"]["median_ms"]
        row["median_over_fresh"] = row["membrane"]["median_ms"] / row["fresh"]["median_ms"]
        rows.append(row)
        print(
            f"  tail at {budget:>7,}: membrane median {row['membrane']['median_ms']:.2f} ms, "
            f"p99 {row['membrane']['p99_ms']:.2f} ({row['membrane']['p99_over_median']:.1f}x), "
            f"trim memoised {row['memoised']['median_ms']:.2f}, "
            f"fresh {row['fresh']['median_ms']:.1f}",
            file=sys.stderr,
        )
    return rows


def _warm_up(embedder: Any = None) -> None:
    """A chat of its own seed through every side: loads the encoding (and the embedder's model)
    and the modules, as a server has before the turns that are timed."""
    from langchain_core.messages import HumanMessage, SystemMessage

    for compiler in (_membrane(8_000), _membrane(8_000, embedder) if embedder else None):
        if compiler is not None:
            for history, question in long_message_chat(40, 9_999).turns():
                _compile(compiler, history, question)
    for trim in (_langchain(fresh=False), _langchain(fresh=True)):
        trim([SystemMessage("Warm up."), HumanMessage("Hello there.")], 8_000)


def _meaning_embedder() -> Any:
    """``local_embedder()`` for the ``--meaning`` column, set up as docs/lod.md advises for a
    server (one background thread embeds messages as they arrive), or None without the extra."""
    try:
        from concurrent.futures import ThreadPoolExecutor

        from membrane.lod import local_embedder

        return local_embedder(executor=ThreadPoolExecutor(max_workers=1))
    except Exception as exc:  # any failure just leaves the column out
        print(f"  --meaning: no local embedder ({exc})", file=sys.stderr)
        return None


# --------------------------------------------------------------------------- join


def _join_inputs(messages: int) -> tuple[list[dict[str, Any]], str]:
    chat = long_message_chat(messages + 1, 77)
    return json.loads(json.dumps(chat.messages[:messages])), str(chat.messages[messages]["content"])


def _join_membrane(messages: int) -> dict[str, float]:
    history, question = _join_inputs(messages)
    warm = _membrane(8_000)  # loads the encoding; a chat of its own, so no memo helps
    for h, q in long_message_chat(8, 1).turns():
        warm.compile([], q, conversation_messages=h)
    compiler = _membrane(8_000)
    t0, c0 = time.perf_counter(), time.thread_time()
    compiler.compile([], question, conversation_messages=history)
    return {"wall_ms": (time.perf_counter() - t0) * 1e3, "cpu_ms": (time.thread_time() - c0) * 1e3}


def _join_langchain(messages: int) -> dict[str, float]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    history, question = _join_inputs(messages)
    trim = _langchain(fresh=True)
    trim([SystemMessage("warm"), HumanMessage("up")], 8_000)
    lc: list[Any] = [SystemMessage("You are a helpful assistant.")]
    lc += [(HumanMessage if m["role"] == "user" else AIMessage)(m["content"]) for m in history]
    lc.append(HumanMessage(question))
    t0, c0 = time.perf_counter(), time.thread_time()
    trim(lc, 8_000)
    return {"wall_ms": (time.perf_counter() - t0) * 1e3, "cpu_ms": (time.thread_time() - c0) * 1e3}


def join(messages: int, runs: int) -> dict[str, Any]:
    samples: dict[str, list[dict[str, float]]] = {"membrane": [], "langchain_fresh": []}
    for _ in range(runs):
        samples["membrane"].append(_child("join_membrane", messages))
        samples["langchain_fresh"].append(_child("join_langchain", messages))
    out: dict[str, Any] = {"messages": messages, "runs": runs}
    for side, rows in samples.items():
        for clock in ("wall_ms", "cpu_ms"):
            out[f"{side}_{clock}_median"] = statistics.median(r[clock] for r in rows)
    out["ratio_wall"] = out["membrane_wall_ms_median"] / out["langchain_fresh_wall_ms_median"]
    out["ratio_cpu"] = out["membrane_cpu_ms_median"] / out["langchain_fresh_cpu_ms_median"]
    print(f"  joining worker, {messages} messages: {out['ratio_cpu']:.2f}x trim", file=sys.stderr)
    return out


# --------------------------------------------------------------------------- loop


async def _loop_lag(conversations: int, messages: int) -> dict[str, Any]:
    compiler = _membrane(8_000)
    chats = [long_message_chat(messages, 900 + i) for i in range(conversations)]
    lags: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            t0 = time.perf_counter()
            await asyncio.sleep(0.001)
            lags.append((time.perf_counter() - t0 - 0.001) * 1e3)

    async def converse(i: int) -> None:
        for history, question in chats[i].turns():
            await compiler.compile_async(
                [], question, conversation_messages=history, conversation_id=f"c{i}"
            )

    tick = asyncio.create_task(ticker())
    t0 = time.perf_counter()
    await asyncio.gather(*(converse(i) for i in range(conversations)))
    elapsed = time.perf_counter() - t0
    done.set()
    await tick
    return {
        "conversations": conversations,
        "messages_per_conversation": messages,
        "seconds": elapsed,
        "ticks": len(lags),
        "lag_median_ms": statistics.median(lags),
        "lag_p99_ms": percentile(lags, 0.99),
        "lag_max_ms": max(lags),
    }


def loop(conversations: int, messages: int) -> dict[str, Any]:
    _warm_up()
    out = asyncio.run(_loop_lag(conversations, messages))
    print(
        f"  event loop, {conversations} conversations: lag p99 {out['lag_p99_ms']:.1f} ms, "
        f"max {out['lag_max_ms']:.1f} ms",
        file=sys.stderr,
    )
    return out


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.server_costs", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke runs)")
    parser.add_argument("--parts", default=",".join(PARTS), help="comma-separated parts")
    parser.add_argument("--meaning", action="store_true", help="a column with local_embedder()")
    parser.add_argument("--no-write", action="store_true", help="print only, write no JSON")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="replace only the parts run in the existing results file (each part keeps the "
        "command, commit and date that made it under parts_run)",
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_run_child(args.child[0], json.loads(args.child[1]))))
        return 0
    parts = [p for p in args.parts.split(",") if p]
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise SystemExit(f"unknown parts {sorted(unknown)}; known: {', '.join(PARTS)}")
    quick = args.quick
    t0 = time.perf_counter()
    previous = read_result("server_costs") if args.merge else None
    payload: dict[str, Any] = previous or {}
    payload.update({"suite": "server_costs", "command": command_line(), "machine": machine()})
    made = {"command": payload["command"], "git_commit": payload["machine"]["git_commit"]}
    made["date"] = payload["machine"]["date"]
    payload.setdefault("parts_run", {}).update({part: made for part in parts})
    if "memory" in parts:
        payload["memory"] = memory((100, 1_000) if quick else (100, 1_000, 10_000))
    if "rss" in parts:
        from membrane.config import DEFAULT_CACHE_BYTES

        count = 40 if quick else 600
        payload["rss"] = rss(count, 80, (DEFAULT_CACHE_BYTES, 8 * 2**20))
    if "cold" in parts:
        from benchmarks._cold_start import cold_start

        payload["cold_start"] = cold_start(5 if quick else 15)
    if "tail" in parts:
        payload["tail"] = tail(120 if quick else 400, 1 if quick else 3, args.meaning)
    if "join" in parts:
        payload["joining_worker"] = join(1_000, 3 if quick else 15)
    if "loop" in parts:
        payload["event_loop"] = loop(10 if quick else 50, 40 if quick else 80)
    payload["elapsed_seconds"] = round(time.perf_counter() - t0, 1)
    if not args.no_write:
        print(f"wrote {write_result('server_costs', payload)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
