"""Compile time of Membrane beside LangChain ``trim_messages`` on the same inputs, same run.

    python -m benchmarks.compile_speed [--quick]

(a) Fresh inputs: a new compiler for every call, 10 / 100 / 1,000 history messages, 8 memories.
(b) The hard suite's 80-turn chat: one compiler per conversation, per-turn time.
(c) Per-turn time around 100 / 1,000 / 10,000 history messages, one compiler, turns appended.
(d) The history proof at 1,000 and 10,000 messages: the prefix digest that lets a compile skip
    re-validating what it checked last turn, full validation (what a compile without a proof
    pays), and per-turn compile time with the digest against ``history_version=`` (no digest).
    ``--history-proof`` runs only this part and writes ``compile_speed_history_proof.json``.
(e) Per turn, an independent-style harness: the 80-turn chat with 5 new memories a turn, a
    6,000-token budget, one compiler reused, each turn timed for both sides back to back.
    LangChain keeps its message objects and counts with a memoised tiktoken ``token_counter``
    (its best case); Membrane compiles the same history, question and memories. A second row
    gives both sides the caller's counts for the history (Membrane ``message_token_counts=``,
    LangChain a ``token_counter`` reading them). ``--turns`` runs only this part and writes
    ``compile_speed_turns.json``.
(f) A fresh worker joining a 1,000- and a 10,000-message conversation through the state store
    (in-process and a real redis-server), each sample in a new process for both sides, and the
    state value's bytes at 100 / 1,000 / 10,000 messages (``benchmarks/fresh_worker.py``).
    ``--fresh-worker`` runs only this part and writes ``compile_speed_fresh_worker.json``.

Times are ``time.perf_counter_ns`` around the call alone, after warm-up runs; medians and 95th
percentiles over many repetitions. Wall-clock numbers drift between runs on a shared machine:
read the ratio to LangChain measured in the same process, not the bare milliseconds.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from benchmarks._report import machine, write_result
from benchmarks._runner import percentile
from benchmarks._scenarios import HARD_SCENARIOS, Scenario, Turn, build_scenario
from benchmarks._strategies import LangChainTrim, StrategyUnavailable, make_strategy
from benchmarks._suite import command_line

__all__ = ["main"]

BUDGET = 6000


def _history(scenario: Scenario, upto: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for turn in scenario.turns:
        if len(out) >= upto:
            break
        out.append({"role": "user", "content": turn.user_message})
        out.extend(dict(m) for m in turn.reply)
    return out[:upto]


def _long_scenario(messages: int, seed: int = 1) -> Scenario:
    # Every turn adds at least two messages; a few more turns than needed leave room to append.
    spec = replace(HARD_SCENARIOS["long_chat"], turns=messages // 2 + 60, budget=BUDGET)
    return build_scenario(spec, seed)


def _stats(ns: Sequence[int]) -> tuple[float, float]:
    ms = [n / 1e6 for n in ns]
    return statistics.median(ms), percentile(ms, 0.95)


def _membrane() -> tuple[Any, Any]:
    try:
        from membrane import ContextCompiler, MemoryItem
    except ImportError as exc:
        raise SystemExit(f"membrane cannot be imported: {exc}") from exc
    return ContextCompiler, MemoryItem


def _memory_items(turn: Turn, memory_cls: Any) -> list[Any]:
    return [
        memory_cls(id=m.id, content=m.content, memory_type=m.memory_type, priority=m.priority)
        for m in turn.memories
    ]


def fresh(sizes: Sequence[int], reps: dict[int, int]) -> list[dict[str, Any]]:
    """(a) A new compiler per call against trim_messages on the raw dicts, same inputs."""
    return [_fresh_one(n, reps[n]) for n in sizes]


def _fresh_one(n: int, reps: int) -> dict[str, Any]:
    compiler_cls, memory_cls = _membrane()
    from langchain_core.messages import trim_messages
    from langchain_core.messages.utils import convert_to_openai_messages

    from benchmarks._strategies import memory_block
    from benchmarks._tokens import count_message

    scenario = _long_scenario(n)
    history = _history(scenario, n)
    turn = scenario.turns[len(history) // 2]
    memories = _memory_items(turn, memory_cls)
    system = scenario.system_prompt
    lc_input = [
        {"role": "system", "content": system + memory_block(turn.memories)},
        *history,
        {"role": "user", "content": turn.user_message},
    ]

    def lc_count(messages: list[Any]) -> int:
        return sum(count_message(m) for m in convert_to_openai_messages(messages))

    def run_membrane() -> None:
        compiler = compiler_cls(
            max_tokens=BUDGET, model_id="openai/gpt-4o", core_content=system, token_scale=1.0
        )
        compiler.compile(
            memories=memories, conversation_messages=history, user_message=turn.user_message
        )

    def run_langchain() -> None:
        trim_messages(
            lc_input,
            max_tokens=BUDGET,
            token_counter=lc_count,
            strategy="last",
            include_system=True,
            start_on="human",
            allow_partial=False,
        )

    mm, mp = _stats(_repeat(run_membrane, reps))
    lm, lp = _stats(_repeat(run_langchain, reps))
    print(
        f"  fresh {len(history):>5} messages: membrane {mm:.2f} ms, langchain {lm:.2f} ms",
        file=sys.stderr,
    )
    return {
        "history_messages": len(history),
        "repetitions": reps,
        "membrane_ms_median": mm,
        "membrane_ms_p95": mp,
        "langchain_ms_median": lm,
        "langchain_ms_p95": lp,
        "ratio_median": mm / lm if lm else None,
    }


def _repeat(fn: Callable[[], None], reps: int, warmup: int = 3) -> list[int]:
    for _ in range(warmup):
        fn()
    out = []
    gc.collect()
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn()
        out.append(time.perf_counter_ns() - t0)
    return out


def _conversation_times(
    name: str, scenario: Scenario, start: int, turns: int, warmup: int
) -> list[int]:
    """Per-turn build time of one strategy, one instance reused, from message ``start`` on."""
    strategy = make_strategy(name)
    strategy.timing_only = True
    strategy.start(scenario)
    history: list[dict[str, Any]] = []
    times: list[int] = []
    done = 0
    for turn in scenario.turns:
        if len(history) >= start:
            built = strategy.build(list(history), turn)
            if done >= warmup:
                times.append(built.compile_ns)
            done += 1
            if done >= warmup + turns:
                break
        history.append({"role": "user", "content": turn.user_message})
        history.extend(dict(m) for m in turn.reply)
    strategy.close()
    return times


def chat_80(seeds: int, passes: int) -> dict[str, Any]:
    """(b) Every turn of the 80-turn chat, one compiler per conversation."""
    m_ns: list[int] = []
    l_ns: list[int] = []
    spec = HARD_SCENARIOS["long_chat"]
    # One discarded conversation warms imports, the encoding and the allocator. It has its own
    # seed: a warm-up on the measured text would leave both sides' text memos (token counts,
    # word lists) already filled, which a real conversation's new turns never find.
    warm = build_scenario(spec, 10_000)
    _conversation_times("membrane", warm, 0, spec.turns, 0)
    _conversation_times("langchain", warm, 0, spec.turns, 0)
    for seed in range(1, seeds + 1):
        for p in range(passes):
            scenario = build_scenario(spec, seed + 100 * p)
            gc.collect()
            m_ns += _conversation_times("membrane", scenario, 0, spec.turns, 0)
            gc.collect()
            l_ns += _conversation_times("langchain", scenario, 0, spec.turns, 0)
    mm, mp = _stats(m_ns)
    lm, lp = _stats(l_ns)
    print(f"  80-turn chat: membrane {mm:.2f} ms, langchain {lm:.2f} ms", file=sys.stderr)
    return {
        "seeds": seeds,
        "passes_per_seed": passes,
        "turns_measured": len(m_ns),
        "membrane_ms_median": mm,
        "membrane_ms_p95": mp,
        "membrane_ms_mean": statistics.fmean(n / 1e6 for n in m_ns),
        "langchain_ms_median": lm,
        "langchain_ms_p95": lp,
        "ratio_median": mm / lm if lm else None,
    }


def growing(sizes: Sequence[int], turns: int, warmup: int, passes: int) -> list[dict[str, Any]]:
    """(c) A reused compiler around ``n`` history messages, measuring appended turns."""
    out = []
    for n in sizes:
        scenario = _long_scenario(n + 2 * (turns + warmup) + 20)
        m_ns: list[int] = []
        l_ns: list[int] = []
        for _ in range(passes):
            gc.collect()
            m_ns += _conversation_times("membrane", scenario, n, turns, warmup)
            gc.collect()
            l_ns += _conversation_times("langchain", scenario, n, turns, warmup)
        mm, mp = _stats(m_ns)
        lm, lp = _stats(l_ns)
        out.append(
            {
                "history_messages": n,
                "turns_measured": len(m_ns),
                "membrane_ms_median": mm,
                "membrane_ms_p95": mp,
                "langchain_ms_median": lm,
                "langchain_ms_p95": lp,
                "ratio_median": mm / lm if lm else None,
            }
        )
        print(
            f"  growing ~{n:>5} messages: membrane {mm:.2f} ms, langchain {lm:.2f} ms",
            file=sys.stderr,
        )
    return out


def history_proof(sizes: Sequence[int], turns: int, warmup: int, passes: int) -> list[dict]:
    """(d) What proving the history unchanged costs per turn, and what it saves."""
    from membrane.messages import prefix_digest, validate_messages

    compiler_cls, memory_cls = _membrane()
    out = []
    for n in sizes:
        scenario = _long_scenario(n + 2 * (turns + warmup) + 20)
        history = _history(scenario, n)
        digest_ns = _repeat(lambda h=history: prefix_digest(h, len(h)), 3 * turns)
        validate_ns = _repeat(lambda h=history: validate_messages(h), 3 * turns)
        per_turn: dict[str, list[int]] = {"digest": [], "history_version": []}
        for _ in range(passes):
            for way in per_turn:
                gc.collect()
                per_turn[way] += _proof_turns(
                    compiler_cls, memory_cls, scenario, n, turns, warmup, way
                )
        row: dict[str, Any] = {
            "history_messages": n,
            "digest_ms_median": _stats(digest_ns)[0],
            "full_validation_ms_median": _stats(validate_ns)[0],
        }
        for way, ns in per_turn.items():
            row[f"compile_{way}_ms_median"], row[f"compile_{way}_ms_p95"] = _stats(ns)
        out.append(row)
        print(
            f"  history proof ~{n:>5} messages: digest {row['digest_ms_median']:.2f} ms, "
            f"full validation {row['full_validation_ms_median']:.2f} ms, compile "
            f"{row['compile_digest_ms_median']:.2f} ms (digest) / "
            f"{row['compile_history_version_ms_median']:.2f} ms (history_version)",
            file=sys.stderr,
        )
    return out


def _proof_turns(
    compiler_cls: Any,
    memory_cls: Any,
    scenario: Scenario,
    start: int,
    turns: int,
    warmup: int,
    way: str,
) -> list[int]:
    """Per-turn compile time from message ``start`` on, proving the prefix one ``way``."""
    compiler = compiler_cls(BUDGET, model_id="openai/gpt-4o", token_scale=1.0)
    history: list[dict[str, Any]] = []
    times: list[int] = []
    for version, turn in enumerate(scenario.turns):
        if len(history) >= start:
            memories = _memory_items(turn, memory_cls)
            extra = {"history_version": version} if way == "history_version" else {}
            t0 = time.perf_counter_ns()
            compiler.compile(memories, turn.user_message, conversation_messages=history, **extra)
            elapsed = time.perf_counter_ns() - t0
            times.append(elapsed)
            if len(times) >= warmup + turns:
                break
        history.append({"role": "user", "content": turn.user_message})
        history.extend(dict(m) for m in turn.reply)
    return times[warmup:]


def turns(seeds: int, passes: int) -> dict[str, Any]:
    """(e) Per-turn time, both sides timed back to back on every turn of the same chat."""
    spec = replace(HARD_SCENARIOS["long_chat"], memories=(5, 5), fresh_memories=True)
    supplied = _accepts_counts()
    ways = ("counted", "supplied") if supplied else ("counted",)
    # A discarded conversation of its own seed loads the encoding and warms the allocator.
    for way in ways:
        _turn_pairs(build_scenario(spec, 10_000), way)
    # way -> clock -> (Membrane ns, LangChain ns), turn by turn
    times = {way: {"wall": ([], []), "cpu": ([], [])} for way in ways}
    for seed in range(1, seeds + 1):
        for p in range(passes):
            scenario = build_scenario(spec, seed + 100 * p)
            for way in ways:
                gc.collect()
                for clock, pair in _turn_pairs(scenario, way).items():
                    times[way][clock][0].extend(pair[0])
                    times[way][clock][1].extend(pair[1])
    out: dict[str, Any] = {"budget": spec.budget, "turns": spec.turns, "seeds": seeds}
    out["passes_per_seed"] = passes
    for way, clocks in times.items():
        out[way] = {clock: _pair_row(*pair) for clock, pair in clocks.items()}
        for clock, row in out[way].items():
            print(
                f"  per turn ({way}, {clock}): membrane {row['membrane_ms_median']:.3f} ms "
                f"(p95 {row['membrane_ms_p95']:.3f}), langchain {row['langchain_ms_median']:.3f} "
                f"ms (p95 {row['langchain_ms_p95']:.3f}), ratio {row['ratio_median']:.2f}, "
                f"p95/median {row['membrane_p95_over_median']:.2f}, "
                f"p99/median {row['membrane_p99_over_median']:.2f}",
                file=sys.stderr,
            )
    return out


def _pair_row(m_ns: list[int], l_ns: list[int]) -> dict[str, Any]:
    mm, mp = _stats(m_ns)
    lm, lp = _stats(l_ns)
    m99 = percentile([n / 1e6 for n in m_ns], 0.99)
    return {
        "turns_measured": len(m_ns),
        "membrane_ms_median": mm,
        "membrane_ms_p95": mp,
        "membrane_ms_p99": m99,
        "membrane_ms_max": max(m_ns) / 1e6,
        "membrane_p95_over_median": mp / mm if mm else None,
        "membrane_p99_over_median": m99 / mm if mm else None,
        "langchain_ms_median": lm,
        "langchain_ms_p95": lp,
        "ratio_median": mm / lm if lm else None,
    }


def _accepts_counts() -> bool:
    import inspect

    compiler_cls, _ = _membrane()
    return "message_token_counts" in inspect.signature(compiler_cls.compile).parameters


def _turn_pairs(scenario: Scenario, way: str) -> dict[str, tuple[list[int], list[int]]]:
    """Per-turn ns of Membrane and of LangChain, one compiler / one message list per side.

    Wall time, and this thread's CPU time (steadier on a machine shared with other jobs).
    """
    compiler_cls, memory_cls = _membrane()
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, trim_messages

    from benchmarks._strategies import memory_block
    from benchmarks._tokens import FRAMING_TOKENS, encode_fresh
    from membrane.messages import message_text

    compiler = compiler_cls(
        max_tokens=scenario.budget,
        model_id="openai/gpt-4o",
        core_content=scenario.system_prompt,
        token_scale=1.0,
    )
    memo: dict[str, int] = {}
    given: dict[int, int] = {}

    def lc_count(messages: list[Any]) -> int:
        total = 0
        for msg in messages:
            n = given.get(id(msg))
            if n is None:
                n = memo.get(msg.content)
                if n is None:
                    n = memo[msg.content] = FRAMING_TOKENS + len(encode_fresh(msg.content))
            total += n
        return total

    history: list[dict[str, Any]] = []
    lc_history: list[Any] = []
    counts: list[int] = []
    out: dict[str, tuple[list[int], list[int]]] = {"wall": ([], []), "cpu": ([], [])}
    for turn in scenario.turns:
        memories = _memory_items(turn, memory_cls)
        extra: dict[str, Any] = {}
        if way == "supplied":
            # The caller's counts, made before the turn (e.g. stored beside each message).
            counts += [len(encode_fresh(message_text(m))) for m in history[len(counts) :]]
            extra["message_token_counts"] = counts
        c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
        compiler.compile(memories, turn.user_message, conversation_messages=history, **extra)
        out["wall"][0].append(time.perf_counter_ns() - t0)
        out["cpu"][0].append(time.thread_time_ns() - c0)
        c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
        system = SystemMessage(content=scenario.system_prompt + memory_block(turn.memories))
        user = HumanMessage(content=turn.user_message)
        trim_messages(
            [system, *lc_history, user],
            max_tokens=scenario.budget,
            token_counter=lc_count,
            strategy="last",
            include_system=True,
            start_on="human",
            allow_partial=False,
        )
        out["wall"][1].append(time.perf_counter_ns() - t0)
        out["cpu"][1].append(time.thread_time_ns() - c0)
        history.append({"role": "user", "content": turn.user_message})
        history.extend(dict(m) for m in turn.reply)
        for m in history[len(lc_history) :]:
            cls = HumanMessage if m["role"] == "user" else AIMessage
            lc_history.append(cls(content=m["content"]))
            if way == "supplied":
                given[id(lc_history[-1])] = FRAMING_TOKENS + len(encode_fresh(m["content"]))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compile_speed", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (smoke runs)")
    parser.add_argument("--no-write", action="store_true", help="print only, write no JSON")
    parser.add_argument("--history-proof", action="store_true", help="only part (d)")
    parser.add_argument("--turns", action="store_true", help="only part (e)")
    parser.add_argument("--fresh-worker", action="store_true", help="only part (f)")
    args = parser.parse_args(argv)
    if args.history_proof:
        return _history_proof_only(args.quick, args.no_write)
    if args.turns:
        return _turns_only(args.quick, args.no_write)
    if args.fresh_worker:
        from benchmarks.fresh_worker import fresh_worker_payload

        fresh_payload = fresh_worker_payload(args.quick)
        if not args.no_write:
            written = write_result("compile_speed_fresh_worker", fresh_payload)
            print(f"wrote {written}", file=sys.stderr)
        return 0
    try:
        LangChainTrim()
    except StrategyUnavailable as exc:
        raise SystemExit(f"compile_speed needs langchain-core as its reference: {exc}") from exc

    t0 = time.perf_counter()
    if args.quick:
        reps = {10: 20, 100: 10, 1000: 3}
        a = fresh((10, 100, 1000), reps)
        b = chat_80(seeds=1, passes=1)
        c = growing((100, 1000), turns=10, warmup=3, passes=1)
    else:
        reps = {10: 300, 100: 100, 1000: 20}
        a = fresh((10, 100, 1000), reps)
        b = chat_80(seeds=5, passes=3)
        c = growing((100, 1000, 10_000), turns=40, warmup=5, passes=3)
    d = history_proof((1000, 10_000), turns=10 if args.quick else 40, warmup=3, passes=3)
    payload = {
        "suite": "compile_speed",
        "command": command_line(),
        "machine": machine(),
        "elapsed_seconds": round(time.perf_counter() - t0, 1),
        "budget": BUDGET,
        "notes": (
            "Membrane: ContextCompiler(max_tokens=6000, model_id='openai/gpt-4o', token_scale=1.0)"
            ".compile(...). LangChain: trim_messages(strategy='last', include_system=True, "
            "start_on='human') with the harness's cl100k counter plus 3 tokens a message; in (a) "
            "on the raw dicts with no memo, in (b) and (c) on message objects kept across turns "
            "with counts memoised per message, as the hard suite runs it."
        ),
        "fresh": a,
        "chat_80_turns": b,
        "growing": c,
        "history_proof": d,
    }
    if not args.no_write:
        print(f"wrote {write_result('compile_speed', payload)}", file=sys.stderr)

    from benchmarks.tables import compile_speed_tables

    print(compile_speed_tables(payload))
    return 0


def _history_proof_only(quick: bool, no_write: bool) -> int:
    t0 = time.perf_counter()
    rows = history_proof((1000, 10_000), turns=10 if quick else 40, warmup=3, passes=3)
    payload = {
        "suite": "compile_speed_history_proof",
        "command": command_line(),
        "machine": machine(),
        "elapsed_seconds": round(time.perf_counter() - t0, 1),
        "budget": BUDGET,
        "notes": (
            "ContextCompiler(max_tokens=6000, model_id='openai/gpt-4o', token_scale=1.0), one "
            "compiler, the same list grown turn by turn (the hard suite's long chat). digest: "
            "membrane.messages.prefix_digest of the whole history; full validation: "
            "validate_messages of it; compile: per-turn time proving the prefix by digest "
            "(the default) or by history_version= (an int counter, no digest)."
        ),
        "history_proof": rows,
    }
    if not no_write:
        print(f"wrote {write_result('compile_speed_history_proof', payload)}", file=sys.stderr)
    return 0


def _turns_only(quick: bool, no_write: bool) -> int:
    t0 = time.perf_counter()
    result = turns(seeds=1 if quick else 5, passes=1 if quick else 2)
    payload = {
        "suite": "compile_speed_turns",
        "command": command_line(),
        "machine": machine(),
        "elapsed_seconds": round(time.perf_counter() - t0, 1),
        "notes": (
            "The hard suite's 80-turn chat with 5 new memories a turn, 6,000-token budget. "
            "Membrane: one ContextCompiler(max_tokens=6000, model_id='openai/gpt-4o', "
            "token_scale=1.0) per conversation, compile(memories, question, "
            "conversation_messages=history). LangChain: trim_messages(strategy='last', "
            "include_system=True, start_on='human') over message objects kept across turns, "
            "token_counter memoised by text (cl100k plus 3 a message), system message with the "
            "memories appended. Each turn times Membrane then LangChain, back to back. "
            "'supplied': both sides get the caller's history counts (Membrane "
            "message_token_counts=, LangChain a token_counter reading them)."
        ),
        "turns": result,
    }
    if not no_write:
        print(f"wrote {write_result('compile_speed_turns', payload)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
