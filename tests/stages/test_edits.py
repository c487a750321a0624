"""Edits and redaction (invariant 11): a compile after a caller changes a message is the
compile a compiler that only ever saw the new text would give, and the old text is gone from
the index, recall and the stored state."""

from __future__ import annotations

import json
import random
from typing import Any

from membrane import ContextCompiler, InMemoryStateStore
from membrane.compile_state import conversation_key
from membrane.stages.history import HistoryTracker
from membrane.state import STATE_FORMAT_VERSION, forget_conversation
from membrane.state.keys import scoped_conversation
from membrane.text.relevance import stem

WORDS = "apple banana cherry delta echo foxtrot golf hotel india juliet kilo lima mike"
POOL = WORDS.split()
CARD, SSN = "4929 7183 5526 0417", "521-83-9046"
SECRET = f"My card is {CARD} and my SSN is {SSN}, for the Zurich booking."
QUESTION = "What card and SSN did I give you for the Zurich booking?"
AT = 42  # the secret's message: cut, and still in the index


def _chat(n: int = 40, words: int = 40, seed: int = 1) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"Message {i}: " + " ".join(rng.choice(POOL) for _ in range(words)) + ".",
        }
        for i in range(n)
    ]


def _compiler(store: InMemoryStateStore | None = None) -> ContextCompiler:
    store = store if store is not None else InMemoryStateStore()  # an empty store is falsy
    return ContextCompiler(1500, core_content="Be brief.", token_scale=1.0, state_store=store)


def _sent(result: Any) -> str:
    return json.dumps(result.messages)


def _trackers(compiler: ContextCompiler) -> list[HistoryTracker]:
    return list(compiler._window._trackers._data.values())


def test_an_edit_inside_the_kept_window_is_compiled_as_if_it_always_read_so() -> None:
    history = _chat()
    compiler = _compiler()
    compiler.compile([], "next?", conversation_messages=history, conversation_id="c")
    edited = list(history)
    edited[-5] = {"role": edited[-5]["role"], "content": "Edited: " + "golf hotel " * 350}
    again = compiler.compile([], "next?", conversation_messages=edited, conversation_id="c")
    fresh = _compiler().compile([], "next?", conversation_messages=edited, conversation_id="c")
    assert again.metadata["token_count"] <= again.metadata["tokens_budget"]
    assert not again.metadata["budget_exceeded"]
    assert again.messages == fresh.messages
    assert again.metadata["token_count"] == fresh.metadata["token_count"]
    assert again.metadata["history_resume"] == "replayed:edited"


def test_an_edit_that_keeps_the_length_is_noticed_too() -> None:
    """About as many tokens, other words: the counts and text are the new ones (a guard)."""
    history = _chat()
    compiler = _compiler()
    compiler.compile([], "next?", conversation_messages=history, conversation_id="c")
    edited = list(history)
    edited[-6] = {"role": edited[-6]["role"], "content": edited[-6]["content"].replace("o", "0")}
    again = compiler.compile([], "next?", conversation_messages=edited, conversation_id="c")
    fresh = _compiler().compile([], "next?", conversation_messages=edited, conversation_id="c")
    assert again.messages == fresh.messages


def _with_secret() -> list[dict[str, Any]]:
    history = _chat(60)
    history[AT] = {"role": "user", "content": SECRET}
    return history


def _redacted(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = list(history)
    text = SECRET.replace(CARD, "[redacted]").replace(SSN, "[redacted]")
    out[AT] = {"role": "user", "content": text}
    return out


def _assert_gone(compiler: ContextCompiler, store: InMemoryStateStore, result: Any) -> None:
    for old in (CARD, SSN):
        assert old not in _sent(result)
        assert old not in json.dumps(store.get(conversation_key("c")))
        for tracker in _trackers(compiler):
            assert all(old not in line.text for line in tracker.lines)
            assert all(old not in " ".join(p.sentences) for p in tracker.passages)
            assert tracker.postings.get(stem(old.split()[0].lower())) is None


def test_a_redacted_old_message_is_gone_from_index_recall_and_store() -> None:
    history, store = _with_secret(), InMemoryStateStore()
    compiler = _compiler(store)
    before = compiler.compile([], QUESTION, conversation_messages=history, conversation_id="c")
    assert before.metadata["history_messages_dropped"] > AT  # the secret was cut ...
    assert CARD in _sent(before)  # ... and is sent again by the index or recall
    # The stored snapshot holds index lines as sentence numbers, never as text (format 3).
    assert CARD not in json.dumps(store.get(conversation_key("c")))
    redacted = _redacted(history)
    after = compiler.compile([], QUESTION, conversation_messages=redacted, conversation_id="c")
    _assert_gone(compiler, store, after)
    fresh = _compiler().compile([], QUESTION, conversation_messages=redacted, conversation_id="c")
    assert after.messages == fresh.messages


def test_a_worker_that_joins_after_a_redaction_replaces_the_stored_state() -> None:
    history, store = _with_secret(), InMemoryStateStore()
    _compiler(store).compile([], QUESTION, conversation_messages=history, conversation_id="c")
    stored = store.get(conversation_key("c"))
    assert stored is not None and "tracker" in stored  # a snapshot a joiner would resume from
    joiner = _compiler(store)
    redacted = _redacted(history)
    after = joiner.compile([], QUESTION, conversation_messages=redacted, conversation_id="c")
    assert after.metadata["history_resume"] == "replayed:prefix"
    _assert_gone(joiner, store, after)


def test_forget_erases_the_conversation_from_the_store_and_the_compiler() -> None:
    history, store = _with_secret(), InMemoryStateStore()
    compiler = _compiler(store)
    compiler.compile([], QUESTION, conversation_messages=history, conversation_id="c")
    compiler.compile([], "hi", conversation_messages=_chat(30), conversation_id="other")
    assert store.get(conversation_key("c")) is not None
    compiler.forget("c")
    assert store.get(conversation_key("c")) is None
    assert store.get(conversation_key("other")) is not None  # only that conversation
    assert all(CARD not in line.text for t in _trackers(compiler) for line in t.lines)
    assert compiler._window.proofs.get("c") is None
    after = compiler.compile([], QUESTION, conversation_messages=history, conversation_id="c")
    assert after.metadata["history_resume"] == "replayed:no_state"


class _NoDelete:
    """A caller's store with only get and put."""

    def __init__(self) -> None:
        self.data: dict[str, dict[str, Any]] = {}

    def get(self, key: str) -> dict[str, Any] | None:
        return self.data.get(key)

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.data[key] = value


def test_forget_conversation_empties_the_value_of_a_store_without_delete() -> None:
    store = _NoDelete()
    compiler = ContextCompiler(1500, token_scale=1.0, state_store=store, state_namespace="t")
    compiler.compile([], QUESTION, conversation_messages=_with_secret(), conversation_id="c")
    key = conversation_key("c", "t")
    assert "tracker" in store.data[key]
    forget_conversation(store, "c", "t")
    assert store.data[key] == {"version": STATE_FORMAT_VERSION}
    forget_conversation(store, "c", "t", user_id="u")  # compile_prompt_async's folded id
    assert store.data[conversation_key(scoped_conversation("u", "c"), "t")] == {
        "version": STATE_FORMAT_VERSION
    }
