"""State-store round trips per compile: in process, one Redis server, a three-node Redis Cluster.

    python -m benchmarks.store_round_trips [--turns N] [--no-cluster] [--label NAME]

The 80-turn ``long_chat`` scenario (its memories, replies and budget), compiled turn by turn by
one worker, and again with its turns alternating between two workers (two compilers, two
clients), each with and without a tool definition. Every command a Redis client sends is one
network round trip (nothing is pipelined); the client's commands are counted (``GET``, ``EVAL``,
``SET``, by key kind) and checked against the servers' own ``INFO commandstats`` (summed over
the cluster's nodes). In process, the store's calls are counted instead (they cost no round
trip). The servers are private, on loopback (tests/redis_process.py starts them).

``--label before`` with ``PYTHONPATH`` pointing at an older tree's ``src`` measures that code
(without the cluster, which it does not support) into ``store_round_trips_<label>.json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import membrane
from benchmarks._report import machine, write_result
from benchmarks._scenarios import HARD_SCENARIOS, Scenario, build_scenario
from benchmarks._suite import command_line
from membrane import ContextCompiler, InMemoryStateStore, MemoryItem, RedisStateStore

__all__ = ["main"]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_record",
            "description": "Look a record up by id.",
            "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
        },
    }
]
_COUNTED = ("get", "set", "eval", "evalsha")


def _kind(key: str) -> str:
    return "scale" if ":scale:" in key else "conversation"


class _CountingStore(InMemoryStateStore):
    def __init__(self, seen: Counter[str]) -> None:
        super().__init__()
        self._seen = seen

    def get(self, key: str) -> dict[str, Any] | None:
        self._seen[f"get {_kind(key)}"] += 1
        return super().get(key)

    def put(self, key: str, value: dict[str, Any]) -> None:
        self._seen[f"put {_kind(key)}"] += 1
        super().put(key, value)


def _count_client(client: Any, seen: Counter[str]) -> None:
    send = client.execute_command

    def counted(*args: Any, **kwargs: Any) -> Any:
        name = str(args[0]).lower()
        key = args[3] if name == "eval" else args[1]
        seen[f"{name} {_kind(key.decode() if isinstance(key, bytes) else str(key))}"] += 1
        return send(*args, **kwargs)

    client.execute_command = counted


def _server_calls(nodes: Sequence[Any]) -> Counter[str]:
    """``INFO commandstats`` calls of the commands a store sends, summed over ``nodes``."""
    calls: Counter[str] = Counter()
    for node in nodes:
        stats = node.info("commandstats")
        for name in _COUNTED:
            calls[name] += int(stats.get(f"cmdstat_{name}", {}).get("calls", 0))
    return calls


def _server_round_trips(calls: Counter[str]) -> int:
    """Commands clients sent, from the servers' counts.

    ``commandstats`` also counts the commands a script runs: each ``EVAL`` of the store's
    compare-and-set script runs one ``GET`` and, when it writes, one ``SET``. A store that
    sends ``EVAL`` never sends ``SET`` itself (the older code sent ``SET`` and no ``EVAL``), so
    with scripts every ``SET`` counted ran inside one.
    """
    scripts = calls["eval"] + calls["evalsha"]
    own_sets = 0 if scripts else calls["set"]
    return (calls["get"] - scripts) + own_sets + scripts


def _run(
    scenario: Scenario, workers: list[ContextCompiler], seen: Counter[str], tools: bool
) -> list[dict[str, int]]:
    """Compile every turn (alternating between ``workers``); per turn, what was counted."""
    history: list[dict[str, Any]] = []
    per_turn = []
    for i, turn in enumerate(scenario.turns):
        seen.clear()
        memories = [
            MemoryItem(id=m.id, content=m.content, memory_type=m.memory_type, priority=m.priority)
            for m in turn.memories
        ]
        workers[i % len(workers)].compile(
            memories,
            turn.user_message,
            conversation_messages=history,
            conversation_id=f"bench-{tools}-{len(workers)}",
            tools=TOOLS if tools else None,
        )
        per_turn.append(dict(seen))
        history.append({"role": "user", "content": turn.user_message})
        history.extend(dict(m) for m in turn.reply)
    return per_turn


def _summary(per_turn: list[dict[str, int]]) -> dict[str, Any]:
    def total(row: dict[str, int], prefix: str = "") -> int:
        return sum(v for k, v in row.items() if k.startswith(prefix))

    trips = [total(row) for row in per_turn]
    keys = sorted({k for row in per_turn for k in row})
    return {
        "compiles": len(per_turn),
        "per_compile_mean": round(statistics.fmean(trips), 3),
        "per_compile_max": max(trips),
        "per_compile_max_after_first": max(trips[1:]) if len(trips) > 1 else None,
        "compiles_by_count": {str(n): trips.count(n) for n in sorted(set(trips))},
        "by_command": {k: sum(row.get(k, 0) for row in per_turn) for k in keys},
        "max_per_compile_by_command": {k: max(row.get(k, 0) for row in per_turn) for k in keys},
    }


def _measure(
    name: str,
    scenario: Scenario,
    make_store: Callable[[Counter[str]], Any],
    nodes: Sequence[Any],
    flush: Callable[[], object],
) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for workers in (1, 2):
        for tools in (False, True):
            flush()
            seen: Counter[str] = Counter()
            compilers = [
                ContextCompiler(
                    scenario.budget,
                    model_id="openai/gpt-4o",
                    core_content=scenario.system_prompt,
                    state_store=make_store(seen),
                )
                for _ in range(workers)
            ]
            before = _server_calls(nodes)
            per_turn = _run(scenario, compilers, seen, tools)
            row = _summary(per_turn)
            if nodes:
                calls = _server_calls(nodes)
                calls.subtract(before)
                row["server_commandstats_calls"] = dict(calls)
                row["server_round_trips"] = _server_round_trips(calls)
                row["client_round_trips"] = sum(sum(t.values()) for t in per_turn)
            who = "two_workers" if workers == 2 else "one_worker"
            rows[f"{who}_{'tools' if tools else 'no_tools'}"] = row
            print(
                f"{name:10} workers={workers} tools={tools!s:5} {row['per_compile_mean']:.2f} "
                f"round trips per compile (max {row['per_compile_max']})",
                file=sys.stderr,
            )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=80)
    parser.add_argument("--no-cluster", action="store_true", help="skip the Redis Cluster rows")
    parser.add_argument("--label", help="write store_round_trips_<label>.json")
    args = parser.parse_args(argv)
    import redis

    from tests.redis_process import RedisClusterProcess, RedisProcess

    spec = HARD_SCENARIOS["long_chat"]
    scenario = build_scenario(spec, 1)
    scenario = replace(scenario, turns=scenario.turns[: args.turns])
    result: dict[str, Any] = {
        "command": command_line(),
        "machine": machine(),
        "membrane_source": membrane.__file__,
        "scenario": spec.name,
        "turns": len(scenario.turns),
        "note": "a Redis command is one network round trip (nothing is pipelined); in process, "
        "store calls are counted and cost no round trip",
    }
    shared: dict[int, tuple[Counter[str], _CountingStore]] = {}

    def in_process(seen: Counter[str]) -> _CountingStore:  # one store for a row's workers
        return shared.setdefault(id(seen), (seen, _CountingStore(seen)))[1]

    result["in_process"] = _measure("in_process", scenario, in_process, [], lambda: None)
    with RedisProcess() as server:
        node = redis.Redis.from_url(server.url)

        def single(seen: Counter[str]) -> RedisStateStore:
            client = redis.Redis.from_url(server.url, socket_timeout=5, socket_connect_timeout=5)
            _count_client(client, seen)
            return RedisStateStore(client, deadline_seconds=5.0)

        result["redis"] = _measure("redis", scenario, single, [node], node.flushall)
        node.close()
    if not args.no_cluster:
        from membrane.state.redis import bounded_client

        with RedisClusterProcess() as cluster:
            nodes = [redis.Redis(host="127.0.0.1", port=n.port) for n in cluster.nodes]

            def clustered(seen: Counter[str]) -> RedisStateStore:
                client = bounded_client(cluster.url, deadline_seconds=5.0, cluster=True)
                _count_client(client, seen)
                return RedisStateStore(client, deadline_seconds=5.0)

            def flush() -> None:
                for n in nodes:
                    n.flushall()

            result["cluster"] = _measure("cluster", scenario, clustered, nodes, flush)
    name = "store_round_trips" + (f"_{args.label}" if args.label else "")
    print(write_result(name, result), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
