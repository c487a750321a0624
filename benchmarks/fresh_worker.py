"""A fresh worker joining a long conversation through the state store, beside trim_messages.

    python -m benchmarks.compile_speed --fresh-worker [--quick]

A worker that compiled the conversation has saved its state (in an in-process store, handed
to the new process as its JSON, or in a real redis-server). Each sample is a new Python
process that loads the encodings and runs its side once on an unrelated conversation, then
times one call on the conversation's next turn:

- ``resumed``: a new ``ContextCompiler`` on the store (in-process or Redis), first compile;
- ``replayed``: the same with an empty store (what every fresh worker paid before);
- ``embedder``: ``resumed`` (in-process store) with ``embedder=local_embedder()``, the model
  loaded and run once at the process's start; the row also gives how many texts the timed
  call embedded (a fresh worker embeds what its turn ranks, never the history it joins);
- ``langchain``: ``trim_messages`` with fresh tiktoken counts (the harness's cl100k counter,
  whose memo is empty in a new process).

Both sides run in their own processes, so neither finds the other's memos. Also: the bytes
of the conversation's state value at 100 / 1,000 / 10,000 messages.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._report import machine
from benchmarks._suite import command_line
from membrane.state.keys import conversation_key

__all__ = ["fresh_worker_payload", "state_sizes"]

BUDGET = 6000
# The key every store files the conversation under (it changes with the key format version).
_KEY = conversation_key("joined")


def _inputs(messages: int, seed: int = 1) -> dict[str, Any]:
    from benchmarks.compile_speed import _history, _long_scenario

    scenario = _long_scenario(messages + 4, seed)
    history = _history(scenario, messages + 2)
    turn = scenario.turns[len(history) // 2 + 1]
    data = {
        "history": history,
        "user": turn.user_message,
        "system": scenario.system_prompt,
        "memories": [[m.id, m.content] for m in turn.memories],
    }
    # As the new process reads them: the prefix digest is of the messages' exact types.
    return json.loads(json.dumps(data))  # type: ignore[no-any-return]


def _compiler(system: str, store: Any, embedder: Any = None) -> Any:
    from membrane import ContextCompiler

    return ContextCompiler(
        max_tokens=BUDGET,
        model_id="openai/gpt-4o",
        core_content=system,
        token_scale=1.0,
        state_store=store,
        embedder=embedder,
    )


class _CountingEmbedder:
    """The local embedder, counting the texts it is given."""

    def __init__(self) -> None:
        from membrane.lod import local_embedder

        self._model = local_embedder()
        # A worker loads its model once, at start: embedding a text here reads the file, builds
        # the ONNX session and runs it once, so the timed call pays for its own texts only.
        self._model(["A worker warms its model on text unrelated to any conversation."])
        self.texts = 0

    def __call__(self, texts: list[str]) -> Any:
        self.texts += len(texts)
        return self._model(texts)


def _compile(
    data: dict[str, Any], store: Any, history: list[dict[str, Any]], embedder: Any = None
) -> Any:
    from membrane import MemoryItem

    memories = [MemoryItem(id=i, content=c) for i, c in data["memories"]]
    return _compiler(data["system"], store, embedder).compile(
        memories, data["user"], conversation_messages=history, conversation_id="joined"
    )


def _trim(data: dict[str, Any]) -> None:
    from langchain_core.messages import trim_messages
    from langchain_core.messages.utils import convert_to_openai_messages

    from benchmarks._tokens import count_message

    def lc_count(messages: list[Any]) -> int:
        return sum(count_message(m) for m in convert_to_openai_messages(messages))

    memories = "".join(f"\n- {c}" for _, c in data["memories"])
    trim_messages(
        [
            {"role": "system", "content": f"{data['system']}\n\nRelevant memories:{memories}"},
            *data["history"],
            {"role": "user", "content": data["user"]},
        ],
        max_tokens=BUDGET,
        token_counter=lc_count,
        strategy="last",
        include_system=True,
        start_on="human",
        allow_partial=False,
    )


def _store(kind: str, state: str | None, redis_url: str | None) -> Any:
    from membrane import InMemoryStateStore

    if kind == "redis":
        from membrane import RedisStateStore

        return RedisStateStore(url=redis_url, deadline_seconds=5.0)
    store = InMemoryStateStore()
    if state is not None:
        store.put(_KEY, json.loads(state))
    return store


def child(argv: list[str]) -> int:
    """One sample in this new process: ``side inputs.json state.json|- redis_url|-``."""
    side, inputs, state_file, redis_url = argv
    data = json.loads(Path(inputs).read_text())
    warm = json.loads(Path(inputs).with_suffix(".warm.json").read_text())
    state = None if state_file == "-" else Path(state_file).read_text()
    url = None if redis_url == "-" else redis_url
    from benchmarks._tokens import count_text
    from membrane.tokenizers import TiktokenAdapter

    TiktokenAdapter("cl100k_base").count("Encodings load on text unrelated to the conversation.")
    count_text("Encodings load on text unrelated to the conversation.")
    embedder = None
    if side == "langchain":
        _trim(warm)
        t0 = time.perf_counter_ns()
        _trim(data)
    else:
        from membrane import InMemoryStateStore

        if side == "embedder":
            embedder = _CountingEmbedder()
        _compile(warm, InMemoryStateStore(), warm["history"], embedder)
        if embedder is not None:
            embedder.texts = 0  # the warm-up's
        store = _store("memory" if side != "redis" else "redis", state, url)
        if side == "replayed":
            store = InMemoryStateStore()
        t0 = time.perf_counter_ns()
        result = _compile(data, store, data["history"], embedder)
        resume = result.metadata.get("history_resume")
        if side != "replayed" and resume != "resumed":
            raise SystemExit(f"the fresh worker did not resume: {resume}")
    ms = (time.perf_counter_ns() - t0) / 1e6
    print(json.dumps({"ms": ms, "embedded": embedder.texts if embedder is not None else None}))
    return 0


def _saved_state(data: dict[str, Any]) -> dict[str, Any]:
    """What the worker that compiled the conversation up to the last turn saved."""
    from membrane import InMemoryStateStore

    store = InMemoryStateStore()
    _compile(data, store, data["history"][:-2])
    value = store.get(_KEY)
    if value is None:
        raise SystemExit("the saving worker wrote no conversation state")
    return value


def _sample(side: str, inputs: Path, state: Path | None, url: str | None) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.fresh_worker",
            "--child",
            side,
            str(inputs),
            str(state) if state else "-",
            url or "-",
        ],
        capture_output=True,
        text=True,
    )
    if out.returncode:
        raise SystemExit(f"a {side} sample failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _row(messages: int, samples: int, url: str, tmp: Path) -> dict[str, Any]:
    from membrane import RedisStateStore

    data = _inputs(messages)
    inputs = tmp / f"inputs{messages}.json"
    inputs.write_text(json.dumps(data))
    warm = _inputs(40, seed=7)
    inputs.with_suffix(".warm.json").write_text(json.dumps(warm))
    value = _saved_state(data)
    state = tmp / f"state{messages}.json"
    state.write_text(json.dumps(value))
    redis = RedisStateStore(url=url, deadline_seconds=5.0)
    sides = ("resumed", "redis", "replayed", "langchain", "embedder")
    times: dict[str, list[float]] = {side: [] for side in sides}
    embedded: list[int] = []
    for _ in range(samples):
        for side in sides:
            if side == "redis":
                redis.put(_KEY, value)  # as the saving worker left it
            sample = _sample(side, inputs, state, url)
            times[side].append(float(sample["ms"]))
            if side == "embedder":
                embedded.append(int(sample["embedded"]))
    med = {side: statistics.median(ms) for side, ms in times.items()}
    lc = med["langchain"]
    row = {
        "history_messages": len(data["history"]),
        "samples": samples,
        "membrane_resumed_memory_ms_median": med["resumed"],
        "membrane_resumed_redis_ms_median": med["redis"],
        "membrane_replayed_ms_median": med["replayed"],
        "langchain_ms_median": lc,
        "ratio_resumed_memory": med["resumed"] / lc,
        "ratio_resumed_redis": med["redis"] / lc,
        "ratio_replayed": med["replayed"] / lc,
        "membrane_resumed_embedder_ms_median": med["embedder"],
        "ratio_resumed_embedder": med["embedder"] / lc,
        "texts_embedded": sorted(set(embedded)),
        "samples_ms": times,
    }
    print(
        f"  fresh worker {messages:>6} messages: resumed {med['resumed']:.1f} ms (memory), "
        f"{med['redis']:.1f} ms (redis), {med['embedder']:.1f} ms (embedder, "
        f"{max(embedded)} texts embedded), replayed {med['replayed']:.1f} ms, "
        f"langchain {lc:.1f} ms",
        file=sys.stderr,
    )
    return row


def state_sizes(sizes: tuple[int, ...] = (100, 1000, 10_000)) -> list[dict[str, Any]]:
    """Bytes of the conversation's state value (as every store keeps it) after ``n`` messages."""
    from membrane.state.protocol import encode_state

    rows = []
    for n in sizes:
        data = _inputs(n)
        value = _saved_state(data)
        tracker = value.get("tracker", {})
        rows.append(
            {
                "history_messages": n,
                "state_bytes": len(encode_state(value).encode("utf-8")),
                "sketch_bytes": len(tracker.get("df", "")),
                "index_lines": len(tracker.get("lines", [])),
                "kept_units": len(tracker.get("kept", [])),
            }
        )
        print(f"  state at {n:>6} messages: {rows[-1]['state_bytes']} bytes", file=sys.stderr)
    return rows


def fresh_worker_payload(quick: bool) -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.redis_process import RedisProcess

    t0 = time.perf_counter()
    samples = {1000: 3, 10_000: 2} if quick else {1000: 9, 10_000: 5}
    with tempfile.TemporaryDirectory() as tmp, RedisProcess() as server:
        rows = [_row(n, k, server.url, Path(tmp)) for n, k in samples.items()]
    sizes = state_sizes()
    return {
        "suite": "compile_speed_fresh_worker",
        "command": command_line(),
        "machine": machine(),
        "elapsed_seconds": round(time.perf_counter() - t0, 1),
        "budget": BUDGET,
        "notes": (
            "Each sample is a new process: encodings loaded and each side run once on an "
            "unrelated 40-message conversation, then one timed call on the conversation's next "
            "turn. resumed: a new ContextCompiler(max_tokens=6000, model_id='openai/gpt-4o', "
            "token_scale=1.0) whose state store holds what the worker that compiled the "
            "previous turn saved (in-process store loaded from its JSON, or a real "
            "redis-server); embedder: resumed (in-process store) with embedder="
            "local_embedder(), the model loaded and run once at the process's start, "
            "texts_embedded the texts the timed call gave it; replayed: resumed's compiler "
            "with an empty store; langchain: trim_messages(strategy='last', "
            "include_system=True, start_on='human') on the raw dicts with the "
            "harness's cl100k counter plus 3 tokens a message, its memo empty."
        ),
        "fresh_worker": rows,
        "state_bytes": sizes,
    }


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        raise SystemExit(child(sys.argv[2:]))
    raise SystemExit("run it as: python -m benchmarks.compile_speed --fresh-worker")
