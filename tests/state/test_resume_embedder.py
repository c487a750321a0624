"""A fresh worker with an embedder embeds what its turn ranks, never the whole history it joins."""

from __future__ import annotations

import random
from typing import Any

import pytest

from membrane import ContextCompiler, InMemoryStateStore
from membrane.compile_state import conversation_key
from membrane.stages.history import EMBEDDED_PASSAGES, MEANING_SCAN
from tests.stages.test_semantic_recall_cost import Recording
from tests.strategies import WORDS

KEY = conversation_key("c")


def _history(messages: int) -> list[dict[str, Any]]:
    rng = random.Random(messages)
    history = []
    for i in range(messages):
        words = rng.choices(WORDS, k=rng.randint(20, 60))
        if i % 25 == 0:  # a rare topic that comes back now and then
            words += ["the", "zanzibar", "lease", f"clause {i}"]
        history.append({"role": "user" if i % 2 == 0 else "assistant", "content": " ".join(words)})
    return history


def _compile(store: InMemoryStateStore, embedder: Recording, history: list[Any], ask: str) -> Any:
    compiler = ContextCompiler(
        1500, core_content="Be brief.", token_scale=1.0, state_store=store, embedder=embedder
    )
    return compiler.compile([], ask, conversation_messages=history, conversation_id="c")


@pytest.mark.parametrize("messages", [300, 3000])
def test_a_fresh_worker_embeds_no_more_than_one_turn_ranks(messages: int) -> None:
    history = _history(messages)
    # Asked about a topic of many dropped messages: recall has more candidates than room and
    # asks the embedder to order the best of them.
    question = "What did we decide about the zanzibar lease?"
    saved = InMemoryStateStore()
    _compile(saved, Recording(), history[:-2], history[-2]["content"])
    state = saved.get(KEY)
    assert state is not None and "tracker" in state

    resuming, joined = InMemoryStateStore(), Recording()
    resuming.put(KEY, state)
    fresh = _compile(resuming, joined, history, question)
    assert fresh.metadata["history_resume"] == "resumed"
    replayer = Recording()
    replayed = _compile(InMemoryStateStore(), replayer, history, question)
    assert fresh.messages == replayed.messages

    for embedder in (joined, replayer):
        texts = [t for batch in embedder.batches for t in batch]
        # The question, the best candidates by word match and the newest dropped passages
        # compared by meaning: bounded, at any history length.
        assert 2 <= len(texts) <= 1 + EMBEDDED_PASSAGES + MEANING_SCAN
        assert len(texts) == len(set(texts))
        assert texts[0] == question
        kept = [m["content"] for m in fresh.messages[1:-1]]
        assert kept and not set(kept) & set(texts)  # kept turns stay unembedded
