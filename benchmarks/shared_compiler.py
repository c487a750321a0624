"""Throughput of one ContextCompiler shared by 8 threads against one private compiler per thread.

    python -m benchmarks.shared_compiler [--quick]

A real ``redis-server`` (started here on a free loopback port, no persistence) holds the state.
Eight threads each run their own conversation of the hard suite's 80-turn chat, turn by turn,
every compile through a :class:`~membrane.state.RedisStateStore`. Three ways of running them,
interleaved round by round so machine load hits each alike:

- ``private``: each thread has its own compiler and its own store (the peer: no sharing at all);
- ``shared``: one compiler and one store for all eight threads (per-conversation locks);
- ``global_lock``: the shared compiler behind one process-wide lock, the design the
  per-conversation locks replace (a control: it shows what serialising every compile costs).

Each is run twice: against the local server as it is (a loopback round trip is tens of
microseconds, so compiles are bound by the interpreter), and with every store call delayed by
``--rtt-ms`` (default 0.5 ms, slept in the calling thread as a network wait would be) to stand
for a Redis on another host, where a compile spends real time waiting for the store.

The figure of merit is compiles per second over the whole run of a round; the ratio
``shared / private`` is taken within each round and its median reported.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from benchmarks._report import machine, write_result
from benchmarks._scenarios import HARD_SCENARIOS, Scenario, build_scenario
from benchmarks._suite import command_line

__all__ = ["main"]

THREADS = 8
BUDGET = 6000
MODES = ("private", "shared", "global_lock")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def redis_server() -> Iterator[str]:
    """A throw-away redis-server on loopback; yields its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed (make system-deps)")
    import redis

    port = _free_port()
    with tempfile.TemporaryDirectory() as workdir:
        args = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        proc = subprocess.Popen(
            [binary, *args, "--dir", workdir],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1)
            deadline = time.monotonic() + 10
            while True:
                try:
                    client.ping()
                    break
                except redis.exceptions.ConnectionError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            client.close()
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def _calls(scenario: Scenario, conversation: str, turns: int) -> list[dict[str, Any]]:
    """Each turn's compile arguments, the history growing turn by turn."""
    from membrane import MemoryItem

    history: list[dict[str, Any]] = []
    out = []
    for turn in scenario.turns[:turns]:
        memories = [
            MemoryItem(id=m.id, content=m.content, memory_type=m.memory_type, priority=m.priority)
            for m in turn.memories
        ]
        out.append(
            {
                "memories": memories,
                "user_message": turn.user_message,
                "conversation_messages": list(history),
                "conversation_id": conversation,
            }
        )
        history.append({"role": "user", "content": turn.user_message})
        history.extend(dict(m) for m in turn.reply)
    return out


class _Distant:
    """A state store whose every call first waits ``rtt`` seconds, as a network round trip."""

    def __init__(self, inner: Any, rtt: float) -> None:
        self.inner = inner
        self.rtt = rtt

    def get(self, key: str) -> Any:
        time.sleep(self.rtt)
        return self.inner.get(key)

    def put(self, key: str, value: Any) -> None:
        time.sleep(self.rtt)
        self.inner.put(key, value)


def _compiler(url: str, rtt: float) -> Any:
    from membrane import ContextCompiler
    from membrane.state import RedisStateStore

    store: Any = RedisStateStore(url=url, ttl_seconds=600)
    if rtt:
        store = _Distant(store, rtt)
    return ContextCompiler(BUDGET, model_id="openai/gpt-4o", state_store=store)


def _run(workers: Sequence[Callable[[dict[str, Any]], Any]], calls: list[list[dict]]) -> float:
    """Compiles per second with ``THREADS`` threads, thread ``i`` running ``calls[i]``."""
    start = threading.Barrier(THREADS + 1)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        start.wait()
        try:
            for kwargs in calls[i]:
                workers[i](kwargs)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return sum(len(c) for c in calls) / elapsed


def _workers(mode: str, url: str, rtt: float) -> list[Callable[[dict[str, Any]], Any]]:
    if mode == "private":
        return [_compile_fn(_compiler(url, rtt)) for _ in range(THREADS)]
    shared = _compile_fn(_compiler(url, rtt))
    if mode == "shared":
        return [shared] * THREADS
    lock = threading.Lock()

    def locked(kwargs: dict[str, Any]) -> Any:
        with lock:
            return shared(kwargs)

    return [locked] * THREADS


def _compile_fn(compiler: Any) -> Callable[[dict[str, Any]], Any]:
    def run(kwargs: dict[str, Any]) -> Any:
        return compiler.compile(**kwargs)

    return run


def measure(url: str, rounds: int, turns: int, rtt: float) -> dict[str, Any]:
    """Rates of each mode, interleaved round by round, with ``rtt`` seconds added per store call."""
    spec = HARD_SCENARIOS["long_chat"]
    scenarios = [build_scenario(spec, seed) for seed in range(1, THREADS + 1)]
    rates: dict[str, list[float]] = {m: [] for m in MODES}
    ratios: list[float] = []
    lock_ratios: list[float] = []
    tag = f"rtt{rtt * 1e3:g}"
    # One discarded round warms imports, the encoding and the connection pools.
    warm = [_calls(s, f"{tag}-warm-{i}", 5) for i, s in enumerate(scenarios)]
    for mode in MODES:
        _run(_workers(mode, url, rtt), warm)
    for r in range(rounds):
        order = MODES if r % 2 == 0 else tuple(reversed(MODES))
        got: dict[str, float] = {}
        for mode in order:
            calls = [_calls(s, f"{tag}-{mode}-{r}-{i}", turns) for i, s in enumerate(scenarios)]
            got[mode] = _run(_workers(mode, url, rtt), calls)
            rates[mode].append(got[mode])
        ratios.append(got["shared"] / got["private"])
        lock_ratios.append(got["global_lock"] / got["private"])
        print(
            f"  {tag} round {r + 1}: "
            + ", ".join(f"{m} {got[m]:.0f}/s" for m in MODES)
            + f"; shared/private {ratios[-1]:.2f}",
            file=sys.stderr,
        )
    return {
        "store_call_added_ms": rtt * 1e3,
        "rounds": rounds,
        "turns_per_thread": turns,
        "compiles_per_round_and_mode": THREADS * turns,
        "per_second_median": {m: statistics.median(v) for m, v in rates.items()},
        "per_second_by_round": rates,
        "shared_over_private_by_round": ratios,
        "shared_over_private_median": statistics.median(ratios),
        "global_lock_over_private_by_round": lock_ratios,
        "global_lock_over_private_median": statistics.median(lock_ratios),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.shared_compiler", description=__doc__
    )
    parser.add_argument("--quick", action="store_true", help="fewer rounds (smoke runs)")
    parser.add_argument("--no-write", action="store_true", help="print only, write no JSON")
    parser.add_argument("--rtt-ms", type=float, default=0.5, help="delay added per store call")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    rounds, turns = (2, 10) if args.quick else (9, 80)
    with redis_server() as url:
        runs = [measure(url, rounds, turns, rtt) for rtt in (0.0, args.rtt_ms / 1e3)]
    payload = {
        "suite": "shared_compiler",
        "command": command_line(),
        "machine": machine(),
        "elapsed_seconds": round(time.perf_counter() - t0, 1),
        "budget": BUDGET,
        "threads": THREADS,
        "notes": (
            "8 threads, each its own conversation of the hard suite's 80-turn chat (seeds 1-8), "
            "every compile through RedisStateStore(url=...) on a local redis-server. private: a "
            "compiler and store per thread; shared: one compiler and store for all threads; "
            "global_lock: the shared compiler behind one lock. Rate = compiles / wall seconds. "
            "Second run: every store call delayed by store_call_added_ms (a remote Redis)."
        ),
        "runs": runs,
    }
    for run in runs:
        print(
            f"+{run['store_call_added_ms']:g} ms per store call: shared / private "
            f"{run['shared_over_private_median']:.2f}, global lock / private "
            f"{run['global_lock_over_private_median']:.2f}",
            file=sys.stderr,
        )
    if not args.no_write:
        print(f"wrote {write_result('shared_compiler', payload)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
