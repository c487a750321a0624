"""With an embedder, recall also brings back dropped passages close in meaning to the question.

A spread-out answer ("Which places has Omar been to?") is stated in words the question never
uses ("just got back from Lisbon"), so word matching cannot find it; the embedder's nearest
passages come back after the word matches, in the tail only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from membrane import ContextCompiler
from membrane.stages.history import MEANING_PASSAGES

_TOPICS = {
    "travel": {"lisbon", "edinburgh", "oslo", "places", "trips", "travelled", "visited"},
    "food": {"risotto", "curry", "dishes", "cooked", "meals"},
}
_FILLER = (
    "the weather has been grey all week and the bus was late again",
    "my neighbour keeps practising the trumpet at odd hours",
    "we painted the hallway a lighter shade and it looks bigger",
    "work is fine, lots of meetings and not much else going on",
)


class TopicEmbedder:
    """One axis per topic plus a constant one: deterministic, and records what it embeds."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, texts: list[str]) -> Sequence[Sequence[float]]:
        self.texts.extend(texts)
        out = []
        for text in texts:
            words = [w.strip(".,?!:") for w in text.lower().split()]
            out.append([*(float(sum(w in t for w in words)) for t in _TOPICS.values()), 0.2])
        return out


def _history() -> list[dict[str, Any]]:
    said = {
        3: ("user", "just got back from lisbon, completely exhausted after"),
        9: ("assistant", "the long weekend in edinburgh was lovely, thanks for asking"),
        15: ("user", "the weekend in oslo: way better than i expected"),
        21: ("assistant", "tried a new risotto tonight, it went fine"),
    }
    history = []
    for i in range(60):
        role, text = said.get(i, ("user" if i % 2 == 0 else "assistant", _FILLER[i % 4]))
        history.append({"role": role, "content": text})
    return history


def _compile(embedder: Any, question: str, **options: Any) -> Any:
    compiler = ContextCompiler(
        400, model_id="openai/gpt-4o", include_interrupt_instruction=False, embedder=embedder
    )
    return compiler.compile(
        memories=[], conversation_messages=_history(), user_message=question, **options
    )


def test_a_passage_sharing_no_word_with_the_question_comes_back_by_meaning() -> None:
    question = "Which places has Omar visited?"
    words = _compile(None, question)
    meaning = _compile(TopicEmbedder(), question)
    assert meaning.metadata["history_messages_dropped"] > 21  # the statements were dropped
    last = meaning.messages[-1]["content"]
    for city in ("lisbon", "edinburgh", "oslo"):
        assert city not in words.messages[-1]["content"]
        assert city in last
    assert words.metadata["history_recall_reason"] == "no_match"
    assert meaning.metadata["history_recall_reason"] == "recalled_by_meaning"
    assert meaning.metadata["semantic_ranking"] is True
    # The cached prefix is untouched: only the final message differs.
    assert meaning.messages[:-1] == words.messages[:-1]
    assert meaning.metadata["token_count"] <= 400


def test_a_question_naming_a_speaker_compares_only_that_speakers_passages() -> None:
    embedder = TopicEmbedder()
    speakers = {"Omar": "user", "Nadia": "assistant"}
    result = _compile(embedder, "Which places has Omar visited?", speakers=speakers)
    last = result.messages[-1]["content"]
    assert "lisbon" in last and "oslo" in last
    assert "edinburgh" not in last  # Nadia's, not Omar's
    embedded = set(embedder.texts)
    assert not any("edinburgh" in t for t in embedded)  # never even embedded


def test_a_turn_that_asks_nothing_gets_no_meaning_vote() -> None:
    embedder = TopicEmbedder()
    result = _compile(embedder, "I visited a few places this year.")
    assert embedder.texts == []
    assert "lisbon" not in result.messages[-1]["content"]


def test_each_passage_is_embedded_once_per_compiler() -> None:
    embedder = TopicEmbedder()
    compiler = ContextCompiler(400, model_id="openai/gpt-4o", embedder=embedder)
    history = _history()
    for question in ("Which places has Omar visited?", "What dishes has Omar cooked?"):
        compiler.compile(memories=[], conversation_messages=history, user_message=question)
    assert embedder.texts and len(embedder.texts) == len(set(embedder.texts))


def test_at_most_the_nearest_passages_come_back_by_meaning() -> None:
    result = _compile(TopicEmbedder(), "What dishes has Omar cooked?")
    assert "risotto" in result.messages[-1]["content"]
    assert result.metadata["history_messages_recalled"] <= MEANING_PASSAGES


def test_a_question_words_answer_well_gets_no_passages_by_meaning() -> None:
    # The best word match states two of the question's telling words ("lisbon", "exhausted"):
    # words found the answer, and passages by meaning would only cost.
    embedder = TopicEmbedder()
    result = _compile(embedder, "Which places has Omar visited? Was he exhausted in lisbon?")
    last = result.messages[-1]["content"]
    assert "just got back from lisbon" in last
    assert "edinburgh" not in last and "oslo" not in last
    assert result.metadata["history_recall_reason"] == "recalled"
    assert not any("edinburgh" in t for t in embedder.texts)
