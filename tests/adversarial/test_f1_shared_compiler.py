"""One compiler shared by threads and asyncio tasks (issue 11, point 1; reproducer f1_race.py).

Every result is checked against an independent token count (tiktoken built here from the
encoding file the package ships, not through Membrane's counters) and against the budget, and
the calls are then replayed one at a time, in the order they ran their pipeline, on a fresh
compiler: each replayed result must equal the concurrent one (linearisability). The order is
recorded by the metrics callback, which runs inside a compile's critical section.
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import gzip
import hashlib
import json
import random
import threading
from importlib import resources
from typing import Any

import pytest
import tiktoken

from membrane import ContextCompiler, MemoryItem
from membrane.report import CompileMetrics
from membrane.result import CompileResult
from membrane.stages.history import HistoryTracker

BUDGET = 500
_CALL: contextvars.ContextVar[int] = contextvars.ContextVar("call")


def _independent_encoding() -> tiktoken.Encoding:
    raw = gzip.decompress(
        (resources.files("membrane.tokenizers") / "data" / "cl100k_base.tiktoken.gz").read_bytes()
    )
    # tiktoken's own pin of the cl100k ranks: the file is the published one.
    assert hashlib.sha256(raw).hexdigest() == (
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
    )
    ranks = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    pattern, special = _cl100k_pattern()
    return tiktoken.Encoding(
        "independent_cl100k", pat_str=pattern, mergeable_ranks=ranks, special_tokens=special
    )


def _cl100k_pattern() -> tuple[str, dict[str, int]]:
    """tiktoken's own cl100k split pattern, read without downloading its ranks."""
    import tiktoken_ext.openai_public as public

    loader = public.load_tiktoken_bpe
    public.load_tiktoken_bpe = lambda *_a, **_k: {}
    try:
        spec = public.cl100k_base()
    finally:
        public.load_tiktoken_bpe = loader
    return spec["pat_str"], spec["special_tokens"]


_ENCODING = _independent_encoding()


def _text(message: dict[str, Any]) -> str:
    """The text of one emitted message, read without membrane.messages."""
    content = message.get("content")
    parts = [content] if isinstance(content, str) else []
    if isinstance(content, list):
        parts = [str(b.get("text", "")) for b in content if isinstance(b, dict)]
    text = "\n".join(p for p in parts if p)
    calls = [
        f"{c['function']['name']}({c['function'].get('arguments', '')})"
        for c in message.get("tool_calls") or ()
    ]
    return "\n".join([text, *calls]) if text and calls else text or "\n".join(calls)


def _check_count_and_budget(result: CompileResult) -> None:
    content = sum(len(_ENCODING.encode_ordinary(_text(m))) for m in result.messages)
    assert result.metadata["token_count"] == content
    sent = content + 3 * len(result.messages)
    assert sent <= BUDGET or result.metadata["budget_exceeded"]


HISTORY: list[dict[str, Any]] = []
for _i in range(60):
    HISTORY += [
        {
            "role": "user",
            "content": f"user turn {_i}: order LF{_i:02d}-3G, code QX{_i}. " + "detail " * (_i % 7),
        },
        {"role": "assistant", "content": f"noted LF{_i:02d}-3G, ticket T-{_i}."},
    ]
MEMORIES = [
    MemoryItem(id=f"m{i}", content=f"Order LF{i:02d}-3G ships from depot {i % 5}; code QX{i}.")
    for i in range(30)
]


def _call(rng: random.Random) -> dict[str, Any]:
    turns = rng.randint(1, 60)
    return {
        "memories": MEMORIES[: rng.randint(0, 30)],
        "user_message": f"what about LF{turns - 1:02d}?",
        "conversation_messages": HISTORY[: 2 * turns],
        "conversation_id": rng.choice([None, None, "second"]),
    }


class _JsonStore:
    """A store of JSON strings that is not the in-process one, so compile_async runs each
    compile in a worker thread, as it does for Redis."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}
        self.lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        with self.lock:
            raw = self.data.get(key)
        return None if raw is None else json.loads(raw)

    def put(self, key: str, value: dict[str, Any]) -> None:
        with self.lock:
            self.data[key] = json.dumps(value)


def _topic_vector(texts: list[str]) -> list[list[float]]:
    """A deterministic embedder: letter counts of each text (so passages differ in meaning)."""
    return [[float(t.lower().count(c)) + 0.1 for c in "aeiourstlnq0123456789"] for t in texts]


def _recording_compiler(
    order: list[int], remote: bool = False, embedder: Any = None
) -> ContextCompiler:
    def record(_metrics: CompileMetrics) -> None:
        order.append(_CALL.get())

    store = _JsonStore() if remote else None
    return ContextCompiler(BUDGET, metrics_callback=record, state_store=store, embedder=embedder)


def _same(a: CompileResult, b: CompileResult) -> None:
    assert (a.messages, a.ref_map, a.metadata) == (b.messages, b.ref_map, b.metadata)


def _replay(
    calls: dict[int, dict[str, Any]],
    results: dict[int, CompileResult],
    order: list[int],
    embedder: Any = None,
) -> None:
    assert sorted(order) == sorted(calls)
    fresh = ContextCompiler(BUDGET, embedder=embedder)
    for n in order:
        kwargs = dict(calls[n])
        _same(
            fresh.compile(kwargs.pop("memories"), kwargs.pop("user_message"), **kwargs), results[n]
        )


@pytest.mark.parametrize("embedder", [None, _topic_vector], ids=["words", "embedder"])
def test_eight_threads_on_one_compiler_are_linearisable(embedder: Any) -> None:
    order: list[int] = []
    compiler = _recording_compiler(order, embedder=embedder)
    calls: dict[int, dict[str, Any]] = {}
    results: dict[int, CompileResult] = {}
    start = threading.Barrier(8)

    def work(worker: int) -> None:
        rng = random.Random(worker)
        start.wait()
        for k in range(25):
            n = worker * 1000 + k
            calls[n] = kwargs = _call(rng)
            _CALL.set(n)
            results[n] = compiler.compile(**kwargs)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 200
    for result in results.values():
        _check_count_and_budget(result)
    if embedder is not None:  # the vote, and recall by meaning, ran under the threads
        reasons = [r.metadata.get("history_recall_reason") for r in results.values()]
        assert any(r.metadata.get("semantic_ranking") for r in results.values())
        assert "recalled_by_meaning" in reasons
    _replay(calls, results, order, embedder)


@pytest.mark.parametrize("remote", [False, True], ids=["in-process store", "worker threads"])
def test_200_tasks_with_an_awaiting_compressor_are_linearisable(
    monkeypatch: pytest.MonkeyPatch, remote: bool
) -> None:
    monkeypatch.setenv("MEMORY_PREFLIGHT_TOKEN_THRESHOLD", "60")
    order: list[int] = []
    compiler = _recording_compiler(order, remote)
    calls: dict[int, dict[str, Any]] = {}
    summaries: dict[int, str] = {}

    async def task(n: int) -> CompileResult:
        rng = random.Random(n)
        kwargs = _call(rng)
        kwargs["conversation_id"] = "one"
        calls[n] = kwargs
        summaries[n] = f"Digest {n}: depots ship LF{n % 60:02d} [Mem:{n % 7 + 1}]."

        async def compress(raw: str, target: int, question: str) -> str:
            for _ in range(rng.randint(0, 5)):
                await asyncio.sleep(0)  # other tasks run while this one waits
            return summaries[n]

        _CALL.set(n)
        return await compiler.compile_async(compress_async=compress, **kwargs)

    async def run() -> list[CompileResult]:
        return await asyncio.gather(*(task(n) for n in range(200)))

    results = dict(enumerate(asyncio.run(run())))
    for result in results.values():
        _check_count_and_budget(result)
    assert any(r.messages[-1]["content"].count("Digest") for r in results.values())
    fresh = ContextCompiler(BUDGET, state_store=_JsonStore() if remote else None)
    assert sorted(order) == list(range(200))
    for n in order:
        kwargs = dict(calls[n])
        summary = summaries[n]
        replayed = fresh.compile(
            kwargs.pop("memories"),
            kwargs.pop("user_message"),
            compress_sync=lambda _r, _t, _q, s=summary: s,
            **kwargs,
        )
        _same(replayed, results[n])


class _SlowStore:
    """A state store whose reads wait until the event loop has run another task."""

    def __init__(self) -> None:
        self.data: dict[str, dict[str, Any]] = {}
        self.loop_ran = threading.Event()
        self.reads_that_saw_the_loop_run: list[bool] = []

    def get(self, key: str) -> dict[str, Any] | None:
        self.reads_that_saw_the_loop_run.append(self.loop_ran.wait(timeout=5))
        raw = self.data.get(key)
        return None if raw is None else json.loads(json.dumps(raw))

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.data[key] = json.loads(json.dumps(value))


def test_compile_async_keeps_store_io_off_the_event_loop() -> None:
    store = _SlowStore()
    compiler = ContextCompiler(BUDGET, state_store=store)

    async def heartbeat() -> None:
        await asyncio.sleep(0)
        store.loop_ran.set()

    async def run() -> CompileResult:
        beat = asyncio.create_task(heartbeat())
        result = await compiler.compile_async(
            MEMORIES[:3], "what about LF03?", conversation_messages=HISTORY[:8]
        )
        await beat
        return result

    result = asyncio.run(run())
    # The store was read while the loop was free to run the heartbeat: a compile on the
    # loop would have waited the whole timeout and recorded False.
    assert store.reads_that_saw_the_loop_run and all(store.reads_that_saw_the_loop_run)
    _same(
        result,
        ContextCompiler(BUDGET).compile(
            MEMORIES[:3], "what about LF03?", conversation_messages=HISTORY[:8]
        ),
    )


def test_conversation_locks_are_dropped_when_no_compile_holds_them() -> None:
    compiler = ContextCompiler(BUDGET)
    for cid in ("a", "b", "c"):
        compiler.compile([], "hi", conversation_id=cid)
    assert len(compiler._locks) == 0


def test_a_compressor_may_compile_the_same_conversation_inside_a_compile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMORY_PREFLIGHT_TOKEN_THRESHOLD", "20")
    compiler = ContextCompiler(BUDGET)
    inner: list[CompileResult] = []

    def compress(raw: str, target: int, question: str) -> str:
        inner.append(compiler.compile([], "inner", conversation_id="c"))
        return "A short digest."

    outer = compiler.compile(MEMORIES, "outer", conversation_id="c", compress_sync=compress)
    assert inner[0].messages[-1]["content"].endswith("inner")
    assert "A short digest." in outer.messages[-1]["content"]


def test_a_tracker_that_has_seen_nothing_matches_nothing() -> None:
    tracker = HistoryTracker(100, 50, len, 3, 20)
    assert not tracker.matches([])
    assert not tracker.matches(HISTORY[:4])
    tracker.update(HISTORY[:4], "conversation_messages")
    assert tracker.matches(HISTORY[:6]) and not tracker.matches(HISTORY[2:8])


def _inside_compile(
    compiler: ContextCompiler, inside: threading.Event, release: threading.Event, conversation: str
) -> threading.Thread:
    """A thread whose compile of ``conversation`` waits, inside its critical section, for
    ``release`` (its metrics callback runs there)."""

    def hold(_metrics: CompileMetrics) -> None:
        if threading.current_thread().name == "holder":
            inside.set()
            assert release.wait(timeout=30)

    compiler.metrics_callback = hold
    thread = threading.Thread(
        target=lambda: compiler.compile([], "first", conversation_id=conversation), name="holder"
    )
    thread.start()
    assert inside.wait(timeout=30)
    return thread


def test_another_conversation_compiles_while_one_is_inside_its_critical_section() -> None:
    compiler = ContextCompiler(BUDGET)
    inside, release = threading.Event(), threading.Event()
    holder = _inside_compile(compiler, inside, release, "a")
    # Would wait forever behind a process-wide lock; here it finishes while "a" is held.
    other = compiler.compile([], "second", conversation_messages=HISTORY[:4], conversation_id="b")
    release.set()
    holder.join()
    assert other.messages[-1]["content"].endswith("second")


def test_compiles_of_one_conversation_take_turns() -> None:
    compiler = ContextCompiler(BUDGET)
    inside, release = threading.Event(), threading.Event()
    holder = _inside_compile(compiler, inside, release, "a")
    done = threading.Event()
    waiter = threading.Thread(
        target=lambda: (compiler.compile([], "second", conversation_id="a"), done.set())
    )
    waiter.start()
    assert not done.wait(timeout=0.3)  # it waits for the holder, however long that takes
    release.set()
    holder.join()
    waiter.join()
    assert done.is_set()


def test_no_lock_is_held_while_compile_async_awaits_its_compressor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMORY_PREFLIGHT_TOKEN_THRESHOLD", "20")
    compiler = ContextCompiler(BUDGET)
    seen: list[CompileResult] = []

    async def compress(raw: str, target: int, question: str) -> str:
        # A sync compile of the same conversation, from another thread, while this awaits.
        seen.append(await asyncio.to_thread(compiler.compile, [], "meanwhile", conversation_id="c"))
        return "A short digest."

    async def run() -> CompileResult:
        return await compiler.compile_async(
            MEMORIES, "outer", conversation_id="c", compress_async=compress
        )

    outer = asyncio.run(asyncio.wait_for(run(), timeout=60))
    assert seen[0].messages[-1]["content"].endswith("meanwhile")
    assert "A short digest." in outer.messages[-1]["content"]
