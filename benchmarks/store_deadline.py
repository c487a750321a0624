"""How far past its deadline a state-store call ends while redis-server is frozen (SIGSTOP).

    python -m benchmarks.store_deadline [--samples N] [--deadlines 0.1,0.25,0.5] [--no-defaults]

A private redis-server is started on a free loopback port and frozen; every call then waits
for an answer that never comes. For each deadline, in the same run and interleaved:

- ``membrane_get``: one ``RedisStateStore.get`` (``outage_policy="raise"``), wall clock until
  ``StoreUnavailable``, and the duration the store itself recorded in ``failed_calls``;
- ``membrane_compile``: a whole ``compile`` of a conversation turn that reads the state
  (``outage_policy="fallback"``), minus nothing: the overshoot is elapsed - deadline, so it
  includes the compile's own work (its median time with an in-process store is reported beside);
- ``redis_py_get`` (the peer): a bare redis-py ``GET`` on a client with socket and connect
  timeouts equal to the deadline and no retries: the floor any Redis client sits on.

Then the configurations the issue measured before the fix (``--no-defaults`` skips them; each
sample takes seconds): redis-py clients built with their defaults, as a caller would have passed
them. The report gives, per deadline and strategy, the overshoot (elapsed - deadline) median,
90th and 99th percentile and maximum in milliseconds, and the ratio of Membrane's median
overshoot to the peer's. The 1-minute load average is recorded: on a shared machine the wall
clock includes time spent waiting for a core.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from benchmarks._report import machine, write_result
from benchmarks._runner import percentile
from benchmarks._suite import command_line

__all__ = ["main"]


@contextmanager
def _frozen_redis() -> Iterator[tuple[str, int]]:
    """A private redis-server, yielded as (url, pid) once it answers; stopped by PID after."""
    import redis

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    workdir = tempfile.mkdtemp(prefix="membrane-bench-redis-")
    server = shutil.which("redis-server")
    if server is None:
        raise SystemExit("redis-server is not installed (make system-deps)")
    args = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(
        [server, *args, "--dir", workdir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        probe = redis.Redis(host="127.0.0.1", port=port, socket_timeout=2)
        for _ in range(200):
            try:
                probe.ping()
                break
            except redis.exceptions.ConnectionError:
                time.sleep(0.05)
        probe.close()
        yield f"redis://127.0.0.1:{port}/0", proc.pid
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


def _history(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(turns):
        out.append({"role": "user", "content": f"Turn {i}: locker L-{i * 7 + 3} " + "note " * 20})
        out.append({"role": "assistant", "content": f"Noted locker L-{i * 7 + 3}."})
    return out


HISTORY = _history(30)


def _compile(compiler: Any) -> Any:
    return compiler.compile(
        [], "Which locker?", conversation_messages=HISTORY, conversation_id="bench"
    )


def _elapsed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    with contextlib.suppress(Exception):  # the failure is what is being timed
        call()
    return time.perf_counter() - started


def _summary(values: Sequence[float], deadline: float) -> dict[str, Any]:
    over = [(v - deadline) * 1000 for v in values]
    return {
        "samples": len(values),
        "overshoot_ms_median": statistics.median(over),
        "overshoot_ms_p90": percentile(over, 0.9),
        "overshoot_ms_p99": percentile(over, 0.99),
        "overshoot_ms_max": max(over),
        "overshoot_ms_min": min(over),
    }


def _measure_deadline(url: str, pid: int, deadline: float, samples: int) -> dict[str, Any]:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    from membrane import ContextCompiler
    from membrane.state import InMemoryStateStore, RedisStateStore

    raising = RedisStateStore(
        url=url, deadline_seconds=deadline, outage_policy="raise", retry_after_seconds=0
    )
    fallback = RedisStateStore(url=url, deadline_seconds=deadline, retry_after_seconds=0)
    compiler = ContextCompiler(900, state_store=fallback)
    local = ContextCompiler(900, state_store=InMemoryStateStore())
    peer = redis.Redis.from_url(
        url, socket_timeout=deadline, socket_connect_timeout=deadline, retry=Retry(NoBackoff(), 0)
    )
    for _ in range(3):  # connections open, the conversation's state stored, code warm
        raising.get("k")
        peer.get("k")
        _compile(compiler)
        _compile(local)
    local_ms = [_elapsed(lambda: _compile(local)) * 1000 for _ in range(20)]
    os.kill(pid, signal.SIGSTOP)
    try:
        timings: dict[str, list[float]] = {"membrane_get": [], "redis_py_get": []}
        timings["membrane_compile"] = []
        recorded: list[float] = []
        for i in range(samples):
            order = ["membrane_get", "redis_py_get"] if i % 2 else ["redis_py_get", "membrane_get"]
            for name in order:
                if name == "membrane_get":
                    timings[name].append(_elapsed(lambda: raising.get("k")))
                    recorded.append(raising.failed_calls[-1].seconds)
                else:
                    timings[name].append(_elapsed(lambda: peer.get("k")))
            if i % 3 == 0:
                timings["membrane_compile"].append(_elapsed(lambda: _compile(compiler)))
    finally:
        os.kill(pid, signal.SIGCONT)
    out = {name: _summary(values, deadline) for name, values in timings.items()}
    out["membrane_get"]["recorded_by_store"] = _summary(recorded, deadline)
    out["membrane_compile"]["in_process_compile_ms_median"] = statistics.median(local_ms)
    peer_median = out["redis_py_get"]["overshoot_ms_median"]
    out["membrane_get_median_overshoot_minus_peer_ms"] = (
        out["membrane_get"]["overshoot_ms_median"] - peer_median
    )
    peer.close()
    return out


def _time_into(box: list[float], client: Any) -> None:
    box.append(_elapsed(lambda: client.get("k")))


def _measure_defaults(url: str, pid: int, samples: int) -> dict[str, Any]:
    """Clients as callers built them before the fix; a watchdog gives up after 90 s."""
    import redis

    variants: dict[str, Callable[[], Any]] = {
        "redis.Redis.from_url(url)": lambda: redis.Redis.from_url(url),
        "redis.Redis(host, port)": lambda: redis.Redis(host="127.0.0.1", port=_port(url)),
    }
    out: dict[str, Any] = {}
    for name, make in variants.items():
        seconds: list[float] = []
        for _ in range(samples):
            client = make()
            client.get("k")
            os.kill(pid, signal.SIGSTOP)
            box: list[float] = []
            worker = threading.Thread(target=_time_into, args=(box, client))
            worker.start()
            worker.join(90)
            os.kill(pid, signal.SIGCONT)
            worker.join(30)
            seconds.append(box[0] if box else float("inf"))
            client.close()
        out[name] = {"samples": len(seconds), "seconds": seconds}
    return out


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.store_deadline", description=__doc__
    )
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--deadlines", default="0.1,0.25,0.5")
    parser.add_argument("--no-defaults", action="store_true", help="skip the pre-fix clients")
    parser.add_argument("--no-write", action="store_true", help="print, do not write the JSON")
    args = parser.parse_args(argv)
    deadlines = [float(d) for d in args.deadlines.split(",")]
    warnings.simplefilter("ignore")  # the outage warning, once per store
    result: dict[str, Any] = {
        "suite": "store_deadline",
        "command": command_line(),
        "machine": machine(),
        "settings": {"samples": args.samples, "deadlines": deadlines},
        "load_average_1min_before": os.getloadavg()[0],
        "deadlines": {},
    }
    with _frozen_redis() as (url, pid):
        for deadline in deadlines:
            print(f"deadline {deadline} s ...", file=sys.stderr)
            result["deadlines"][str(deadline)] = _measure_deadline(url, pid, deadline, args.samples)
        if not args.no_defaults:
            print("clients with redis-py defaults ...", file=sys.stderr)
            result["before_the_fix_seconds"] = _measure_defaults(url, pid, 2)
    result["load_average_1min_after"] = os.getloadavg()[0]
    for deadline, rows in result["deadlines"].items():
        for name in ("membrane_get", "membrane_compile", "redis_py_get"):
            row = rows[name]
            print(
                f"{deadline:>5} s  {name:<17} overshoot median {row['overshoot_ms_median']:7.2f} ms"
                f"  p99 {row['overshoot_ms_p99']:7.2f} ms  max {row['overshoot_ms_max']:7.2f} ms"
            )
    if not args.no_write:
        print(write_result("store_deadline", result), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
