"""compile_prompt_async: the seed's example, one compiler per configuration, stable prefixes,
topic shifts only with an embedder, and no connection or download unless asked for."""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from membrane import (
    TIER_PROCEDURAL,
    TIER_SEMANTIC,
    CompilerPool,
    InMemoryStateStore,
    InvalidInputError,
    MemoryItem,
    compile_prompt_async,
    compile_prompt_payload,
)
from membrane.backend import default_pool, split_history
from membrane.messages import _digest
from membrane.state.keys import conversation_key

SRC = Path(__file__).resolve().parents[1] / "src"

# The seed's "Async usage" example, verbatim.
SEED_EXAMPLE = """
import asyncio

from membrane import TIER_EPISODIC, TIER_SEMANTIC, MemoryItem, compile_prompt_async


async def main() -> None:
    result = await compile_prompt_async(
        user_msg="Can you remind me what we decided?",
        messages_list=[
            {"role": "user", "content": "Let's pick a database."},
            {"role": "assistant", "content": "Postgres fits your workload."},
        ],
        user_id="user-1",
        conversation_id="conv-9",
        max_tokens=8192,
        model_id="openai/gpt-4o",
        core_content="You are a helpful assistant.",
        retrieved_objects=[
            (MemoryItem(id="d1", content="Team chose Postgres over MongoDB."), TIER_SEMANTIC),
            (MemoryItem(id="e1", content="Discussed sharding last week.", memory_type="episodic"), TIER_EPISODIC),
        ],
    )
    print(result.ref_map)


asyncio.run(main())
"""  # noqa: E501


def test_the_seed_example_runs_verbatim_and_prints_the_ref_map(
    capsys: pytest.CaptureFixture[str],
) -> None:
    exec(compile(SEED_EXAMPLE, "seed-async-usage", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out == "{1: 'd1', 2: 'e1'}\n"


def _chat(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(turns):
        out.append(
            {"role": "user", "content": f"Question {i} about the export job and its memory limit."}
        )
        out.append(
            {
                "role": "assistant",
                "content": f"Answer {i}: the export job streams rows in batches of {100 * i} "
                "and the worker keeps at most two batches in memory at once. " * 3,
            }
        )
    return out


MEMORIES = [
    (MemoryItem(id="p1", content="Always cite the runbook.", memory_type="procedural"), 1),
    (MemoryItem(id="s1", content="The export job runs nightly at 02:00."), TIER_SEMANTIC),
]


class _ValidationSpy:
    """Counts the history messages each compile validates (a replay validates them all)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.validated: list[int] = []
        real = _digest.validate_messages

        def spy(messages: Any, **kwargs: Any) -> Any:
            self.validated.append(len(messages or []) - kwargs.get("start", 0))
            return real(messages, **kwargs)

        monkeypatch.setattr(_digest, "validate_messages", spy)


async def test_two_turns_share_the_prefix_bytes_and_the_second_does_not_replay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spy = _ValidationSpy(monkeypatch)
    pool = CompilerPool()
    chat = _chat(20)  # far more history than 1,500 tokens: the first turn cuts it
    first = await compile_prompt_async(
        "What batch size do we use now?",
        chat,
        conversation_id="c-1",
        max_tokens=1500,
        core_content="You are the on-call assistant.",
        retrieved_objects=MEMORIES,
        pool=pool,
    )
    grown = [
        *chat,
        {"role": "user", "content": "What batch size do we use now?"},
        {"role": "assistant", "content": "Batches of 1900 rows."},
    ]
    second = await compile_prompt_async(
        "And how many batches stay in memory?",
        grown,
        conversation_id="c-1",
        max_tokens=1500,
        core_content="You are the on-call assistant.",
        retrieved_objects=MEMORIES,
        pool=pool,
    )
    assert len(pool) == 1
    assert first.metadata["history_messages_dropped"] > 0
    kept = len(first.messages) - 1  # system + kept history; the last message is the tail
    assert kept >= 2
    assert json.dumps(second.messages[:kept]) == json.dumps(first.messages[:kept])
    # The first turn validated the whole history, the second only the two new messages.
    assert spy.validated == [len(chat), 2]


async def test_a_one_shot_compiler_per_turn_would_replay_the_whole_history(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The counter above counts something real: a new pool (a new compiler) replays everything.
    spy = _ValidationSpy(monkeypatch)
    chat = _chat(4)
    for pool in (CompilerPool(), CompilerPool()):
        await compile_prompt_async("Next?", chat, conversation_id="c", max_tokens=4096, pool=pool)
    assert spy.validated == [len(chat), len(chat)]


async def test_a_trailing_copy_of_the_current_turn_is_not_history() -> None:
    chat = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Which region?"},
    ]
    assert split_history(chat, "Which region?") == chat[:2]
    assert split_history(chat, "Something else") == chat
    result = await compile_prompt_async("Which region?", chat, max_tokens=4096, pool=CompilerPool())
    assert [m["role"] for m in result.messages] == ["system", "user", "assistant", "user"]
    assert str(result.messages[-1]["content"]).count("Which region?") == 1


async def test_tiers_come_from_the_pairs() -> None:
    fact = MemoryItem(id="f", content="A fact filed as a procedure by the caller.")
    result = await compile_prompt_async(
        "Go", [], max_tokens=4096, retrieved_objects=[(fact, TIER_PROCEDURAL)], pool=CompilerPool()
    )
    assert result.ref_map == {1: "f"}
    with pytest.raises(InvalidInputError) as info:
        await compile_prompt_async("Go", [], max_tokens=4096, retrieved_objects=[(fact, 7)])
    assert info.value.field == "retrieved_objects[0]"
    with pytest.raises(InvalidInputError) as info:
        await compile_prompt_async("Go", [], max_tokens=4096, retrieved_objects=[fact])  # type: ignore[list-item]
    assert info.value.field == "retrieved_objects[0]"


def test_the_pool_makes_one_compiler_per_configuration_under_concurrent_first_use() -> None:
    pool = CompilerPool()
    store = InMemoryStateStore()
    got: list[object] = []
    barrier = threading.Barrier(8)

    def first_use() -> None:
        barrier.wait()
        got.append(pool.get(2048, "openai/gpt-4o", "Rules.", state_store=store))

    threads = [threading.Thread(target=first_use) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(c) for c in got}) == 1 and len(pool) == 1
    assert pool.get(2048, "openai/gpt-4o", "Rules.", state_store=InMemoryStateStore()) is not got[0]
    assert pool.get(4096, "openai/gpt-4o", "Rules.") is not got[0]
    assert len(pool) == 3
    with pytest.raises(TypeError, match="no_such_option"):
        pool.get(2048, None, "", no_such_option=1)


def test_the_pool_forgets_the_least_recently_used_configuration() -> None:
    pool = CompilerPool(size=2)
    a = pool.get(1000, None, "")
    pool.get(2000, None, "")
    assert pool.get(1000, None, "") is a  # refreshes a
    pool.get(3000, None, "")
    assert len(pool) == 2
    assert pool.get(1000, None, "") is a


async def test_concurrent_tasks_of_one_conversation_all_compile() -> None:
    pool = CompilerPool()

    async def turn(i: int) -> int:
        result = await compile_prompt_async(
            f"Question {i}", _chat(3), conversation_id=f"c{i % 2}", max_tokens=2048, pool=pool
        )
        return len(result.messages)

    sizes = await asyncio.gather(*(turn(i) for i in range(10)))
    assert sizes == [8] * 10 and len(pool) == 1


def test_no_pool_exists_until_first_use() -> None:
    code = (
        "import membrane.backend as b; assert b._default_pool is None; "
        "p = b.default_pool(); assert b.default_pool() is p"
    )
    subprocess.run(
        [sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": str(SRC)}
    )
    assert default_pool() is default_pool()


def _words(texts: list[str]) -> list[list[float]]:
    vocabulary = ["python", "test", "pytest", "kubernetes", "deploy", "cluster"]
    return [[float(w in t.lower()) + 0.01 for w in vocabulary] for t in texts]


async def test_topic_shift_only_with_an_embedder_and_metadata_says_why_not() -> None:
    chat = [
        {"role": "user", "content": "What's the best Python test framework?"},
        {"role": "assistant", "content": "pytest."},
        {"role": "user", "content": "How does pytest find a test?"},
        {"role": "assistant", "content": "By name."},
    ]
    pool = CompilerPool()
    plain = await compile_prompt_async(
        "Deploy to a Kubernetes cluster?", chat, max_tokens=4096, pool=pool
    )
    assert plain.metadata["topic_shift"] is None
    assert "no embedder" in plain.metadata["topic_shift_reason"]

    shifted = await compile_prompt_async(
        "Deploy to a Kubernetes cluster?", chat, max_tokens=4096, embedder=_words, pool=pool
    )
    assert shifted.metadata["topic_shift"] is True
    assert "topic_shift_reason" not in shifted.metadata
    same = await compile_prompt_async(
        "Can pytest run one test?", chat, max_tokens=4096, embedder=_words, pool=pool
    )
    assert same.metadata["topic_shift"] is False

    first = await compile_prompt_async("Hello", [], max_tokens=4096, embedder=_words, pool=pool)
    assert first.metadata["topic_shift"] is None
    assert first.metadata["topic_shift_reason"] == "no earlier user message to compare with"

    def broken(texts: list[str]) -> list[list[float]]:
        raise RuntimeError("model offline")

    failed = await compile_prompt_async(
        "Deploy?", chat, max_tokens=4096, embedder=broken, pool=pool
    )
    assert failed.metadata["topic_shift"] is None
    assert "model offline" in failed.metadata["topic_shift_reason"]


def test_installed_extras_never_embed_download_or_connect() -> None:
    # fastembed, onnxruntime and redis are installed here; MEMBRANE_REDIS_URL points at a port
    # nobody listens on. A call that asks for none of them must touch none of them.
    code = """
import asyncio, socket, sys
def no_network(*args, **kwargs):
    raise AssertionError("a socket was opened")
socket.socket.connect = no_network
socket.create_connection = no_network
from membrane import MemoryItem, compile_prompt_async
result = asyncio.run(compile_prompt_async(
    "And now Kubernetes?",
    [{"role": "user", "content": "Python tests?"}, {"role": "assistant", "content": "pytest."}],
    conversation_id="c", max_tokens=4096,
    retrieved_objects=[(MemoryItem(id="m", content="Uses pytest."), 2)],
))
loaded = sorted(m for m in ("fastembed", "onnxruntime", "numpy", "redis") if m in sys.modules)
print(loaded, result.metadata["topic_shift"])
"""
    env = {**os.environ, "PYTHONPATH": str(SRC), "MEMBRANE_REDIS_URL": "redis://127.0.0.1:1/0"}
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env
    ).stdout
    assert out == "[] None\n"


async def test_alias_and_argument_checks() -> None:
    assert compile_prompt_payload is compile_prompt_async
    with pytest.raises(InvalidInputError) as info:
        await compile_prompt_async("Hi", [], max_tokens=4096, persist_ref_map_to_redis=True)
    assert info.value.field == "conversation_id"
    with pytest.raises(InvalidInputError) as info:
        await compile_prompt_async("Hi", [], max_tokens=4096, conversation_id="")
    assert info.value.field == "conversation_id"


async def test_user_id_scopes_the_conversation_state() -> None:
    store = InMemoryStateStore()
    pool = CompilerPool()
    for user in ("u1", "u2"):
        await compile_prompt_async(
            "Next?",
            _chat(20),
            user_id=user,
            conversation_id="shared",
            max_tokens=1500,
            state_store=store,
            pool=pool,
        )
    keys = {conversation_key("2:u1/shared"), conversation_key("2:u2/shared")}
    assert keys == {
        "membrane:v2:conversation:{2:u1/shared}",
        "membrane:v2:conversation:{2:u2/shared}",
    }
    assert keys <= set(store._data)
    with pytest.raises(InvalidInputError) as info:
        await compile_prompt_async(None, [], max_tokens=4096)  # type: ignore[arg-type]
    assert info.value.field == "user_msg"


def test_options_given_as_fresh_dicts_find_the_same_compiler() -> None:
    pool = CompilerPool()
    a = pool.get(2048, None, "", memory_text_max_chars={"semantic": 1500})
    b = pool.get(2048, None, "", memory_text_max_chars={"semantic": 1500})
    c = pool.get(2048, None, "", memory_text_max_chars={"semantic": 1000})
    assert a is b and a is not c


def test_the_same_embedder_object_shares_a_compiler_and_another_does_not() -> None:
    pool = CompilerPool()
    a = pool.get(2048, None, "", embedder=_words)
    assert pool.get(2048, None, "", embedder=_words) is a
    assert pool.get(2048, None, "", embedder=lambda texts: _words(texts)) is not a


def _pool_turn(pool: CompilerPool, conversation: str, callback: Any) -> None:
    asyncio.run(
        compile_prompt_async(
            "Which database did we pick?",
            [{"role": "user", "content": "We picked Postgres."}],
            conversation_id=conversation,
            max_tokens=2048,
            retrieved_objects=[(MemoryItem(id="d1", content="Team chose Postgres."), 2)],
            metrics_callback=callback,
            pool=pool,
        )
    )


def test_pooled_compiles_of_different_conversations_never_wait_for_each_other() -> None:
    """Issue 32: one pooled compiler per configuration used to compile one turn at a time.

    Each compile waits inside ``metrics_callback`` (within the compile's critical section)
    until a compile of every other conversation is inside too: that can only happen when the
    pooled compiler lets different conversations run side by side.
    """
    pool = CompilerPool()
    inside = threading.Barrier(4, timeout=10)
    errors: list[BaseException] = []

    def meet(_metrics: object) -> None:
        inside.wait()

    def run(conversation: str) -> None:
        try:
            _pool_turn(pool, conversation, meet)
        except BaseException as exc:  # a broken barrier means someone waited for another
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(f"conv-{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors and len(pool) == 1


def test_pooled_compiles_of_one_conversation_still_take_turns() -> None:
    pool = CompilerPool()
    guard = threading.Lock()
    active: dict[str, int] = {}
    most: dict[str, int] = {}
    # A context variable, not a thread-local: compile_async may run the compile in a worker
    # thread (asyncio.to_thread carries the context there).
    current: contextvars.ContextVar[str] = contextvars.ContextVar("conversation")

    def hold(_metrics: object) -> None:
        conversation = current.get()
        with guard:
            active[conversation] = active.get(conversation, 0) + 1
            most[conversation] = max(most.get(conversation, 0), active[conversation])
        threading.Event().wait(0.02)  # long enough for another thread of it to arrive
        with guard:
            active[conversation] -= 1

    def run(conversation: str) -> None:
        current.set(conversation)
        for _ in range(5):
            _pool_turn(pool, conversation, hold)

    threads = [threading.Thread(target=run, args=(f"conv-{i % 2}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert most == {"conv-0": 1, "conv-1": 1}
