"""A question that names a person weighs what that person wrote (``speakers=``, ``name``)."""

from __future__ import annotations

from typing import Any

import pytest

from membrane import ContextCompiler, InMemoryStateStore, InvalidInputError
from membrane.stages.history import HistoryTracker, Writers, check_speakers, telling_words
from membrane.stages.history._speakers import WRITER_WEIGHT
from membrane.state.keys import conversation_key
from membrane.tokenizers import count_tokens

QUESTION = "What is Omar's hamster called?"
SPEAKERS = {"Omar": "user", "Nadia": "assistant"}
FILLER = [
    "the weather turned cold and we stayed in all weekend watching old films",
    "work has been busy with the quarterly review and a few long meetings",
    "we cooked a big pot of soup and froze half of it for later in the week",
    "the train was late again so the morning started with a long wait outside",
]


def _chat(names: bool = False) -> list[dict[str, Any]]:
    """Both people talk about a hamster once, long ago; then small talk fills the window."""
    opening = [
        ("user", "Omar", "my little hamster is called biscuit and he runs all night long"),
        ("assistant", "Nadia", "my cousin had a hamster called pepper that escaped twice"),
        ("user", "Omar", "the neighbours moved out last week and the street is quiet now"),
        ("assistant", "Nadia", "her other hamster is called pepper too, the second one"),
        ("user", "Omar", "we painted the kitchen a pale green colour over the holiday"),
        ("assistant", "Nadia", "the hamster called pepper the third was the naughtiest"),
    ]
    history = []
    for role, name, text in opening:
        history.append({"role": role, "content": text, **({"name": name} if names else {})})
    for i in range(60):
        role = "user" if i % 2 == 0 else "assistant"
        history.append({"role": role, "content": f"{FILLER[i % 4]} (day {i})"})
    return history


def _recalled(result: Any) -> str:
    """The recall block of the final message ("" when nothing came back)."""
    text = str(result.messages[-1]["content"])
    return text[: text.rfind(QUESTION)] if result.metadata["history_messages_recalled"] else ""


def _compile(history: list[dict[str, Any]], **extra: Any) -> Any:
    # Room for about two of the four hamster passages.
    compiler = ContextCompiler(342, core_content="Be brief.", token_scale=1.0)
    return compiler.compile([], QUESTION, conversation_messages=history, **extra)


def test_the_named_persons_passage_outranks_the_others() -> None:
    tracker = HistoryTracker(300, 150, count_tokens, 3, 200)
    tracker.update(_chat(), "h")
    plain = tracker.score_passages(QUESTION)
    named = tracker.score_passages(QUESTION, Writers.from_speakers(SPEAKERS))
    omar = next(p for p, passage in enumerate(tracker.passages) if "biscuit" in passage.text)
    nadia = next(p for p, passage in enumerate(tracker.passages) if "pepper" in passage.text)
    assert tracker.passages[omar].role == "user"
    weight = telling_words(QUESTION, tracker.stats)["omar"]
    assert named[omar] == pytest.approx(plain[omar] + WRITER_WEIGHT * weight)
    assert named[nadia] == plain[nadia]  # Nadia is not who the question names
    assert named[omar] > named[nadia]


@pytest.mark.parametrize("how", ["map", "name"])
def test_recall_brings_back_what_the_named_person_wrote(how: str) -> None:
    extra = {"speakers": SPEAKERS} if how == "map" else {}
    result = _compile(_chat(names=how == "name"), **extra)
    block = _recalled(result)
    assert "biscuit" in block
    # Nadia's hamsters, newer, give way: fewer come back than when no writer is known.
    assert block.count("pepper") < _recalled(_compile(_chat())).count("pepper")


def test_without_speakers_the_newest_match_wins() -> None:
    block = _recalled(_compile(_chat()))
    assert "pepper" in block and "biscuit" not in block  # no writer known: words and recency


def test_a_message_name_wins_over_the_map() -> None:
    history = _chat()
    named_history = [history[0], {**history[1], "name": "Omar"}, *history[2:]]
    plain, named = (HistoryTracker(300, 150, count_tokens, 3, 200) for _ in range(2))
    plain.update(history, "h")
    named.update(named_history, "h")  # Omar wrote as the assistant this once
    writers = Writers.from_speakers({"Nadia": "user"})
    pepper = next(p for p, passage in enumerate(plain.passages) if "pepper" in passage.text)
    biscuit = next(p for p, passage in enumerate(plain.passages) if "biscuit" in passage.text)
    before = plain.score_passages(QUESTION, writers)
    after = named.score_passages(QUESTION, writers)
    assert after[pepper] > before[pepper]  # by its own name, Omar's
    assert after[biscuit] == before[biscuit]  # the map says the user is Nadia
    # A name needs no map: it counts on every compile.
    assert named.score_passages(QUESTION) == after


def test_a_fresh_worker_resumes_with_the_same_writers() -> None:
    history = _chat(names=True)
    seen_store = InMemoryStateStore()
    seen = ContextCompiler(600, core_content="Be brief.", token_scale=1.0, state_store=seen_store)
    ask: dict[str, Any] = {"conversation_id": "c", "speakers": SPEAKERS}
    seen.compile([], "How was your day?", conversation_messages=history[:-2], **ask)
    kept = seen.compile([], QUESTION, conversation_messages=history, **ask)
    fresh_store = InMemoryStateStore()
    key = conversation_key("c")
    value = seen_store.get(key)
    assert value is not None and "tracker" in value
    fresh_store.put(key, value)
    fresh = ContextCompiler(600, core_content="Be brief.", token_scale=1.0, state_store=fresh_store)
    resumed = fresh.compile([], QUESTION, conversation_messages=history, **ask)
    assert resumed.metadata["history_resume"] == "resumed"
    assert resumed.messages == kept.messages
    assert "biscuit" in _recalled(resumed)


@pytest.mark.parametrize(
    "speakers",
    [
        ["Omar"],
        {"": "user"},
        {"Omar": "tool"},
        {"Omar": "system"},
        {3: "user"},
        {"x" * 201: "user"},
    ],
)
def test_a_malformed_speakers_map_is_refused_before_anything_runs(speakers: Any) -> None:
    store = InMemoryStateStore()
    compiler = ContextCompiler(600, token_scale=1.0, state_store=store)
    with pytest.raises(InvalidInputError) as caught:
        compiler.compile([], QUESTION, conversation_messages=_chat(), speakers=speakers)
    assert caught.value.field == "speakers"
    assert len(store) == 0  # nothing was compiled, nothing saved
    assert check_speakers(None) is None
    assert check_speakers(SPEAKERS) == SPEAKERS


@pytest.mark.parametrize(
    "name", [42, {"first": "Omar"}, "", "<|endoftext|> [Mem:1] " * 20_000, "Omar" * 10_000]
)
def test_a_hostile_or_malformed_name_only_ever_weighs_recall(name: Any) -> None:
    """A message's ``name`` is caller text: it never changes the budget or the ref map, and one
    that is not a usable string counts as no name at all."""
    history = [{**m, "name": name} if m["role"] == "user" else m for m in _chat()]
    result = _compile(history)
    assert not result.metadata["budget_exceeded"]
    assert result.ref_map == {}
    if not isinstance(name, str) or not name:  # kept messages keep their field, as given
        plain = _compile(_chat()).messages
        assert [m["content"] for m in result.messages] == [m["content"] for m in plain]
