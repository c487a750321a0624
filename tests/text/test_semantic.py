"""The optional embedder vote: used when given, cached, and a failing model falls back."""

from __future__ import annotations

from collections.abc import Sequence

from membrane.compiler import ContextCompiler
from membrane.records import MemoryItem
from membrane.text.semantic import SemanticRanker, cosine

_AXES = ("weather", "money", "travel")


def _toy_embedder(calls: list[list[str]]) -> object:
    """One axis per topic: a text's vector counts its topic words (a real, deterministic model)."""
    topics = {
        "weather": {"rain", "storm", "umbrella", "forecast", "weather"},
        "money": {"invoice", "refund", "price", "budget", "money"},
        "travel": {"flight", "train", "hotel", "trip", "travel"},
    }

    def embed(texts: list[str]) -> Sequence[Sequence[float]]:
        calls.append(list(texts))
        return [
            [
                float(sum(w.strip(".,?") in topics[axis] for w in t.lower().split()))
                for axis in _AXES
            ]
            for t in texts
        ]

    return embed


def test_cosine_handles_mismatched_and_zero_vectors() -> None:
    assert cosine([1.0, 0.0], [1.0, 0.0]) == 1.0
    assert cosine([1.0, 0.0], [0.0, 1.0]) == 0.0
    assert cosine([1.0], [1.0, 0.0]) == 0.0
    assert cosine([0.0, 0.0], [1.0, 1.0]) == 0.0


def test_ranker_orders_by_similarity_and_embeds_each_text_once() -> None:
    calls: list[list[str]] = []
    ranker = SemanticRanker(_toy_embedder(calls))  # type: ignore[arg-type]
    texts = ["The flight and hotel are booked.", "Bring an umbrella, rain later.", "Refund sent."]
    assert ranker.call().order("Is a storm in the forecast?", texts) == [1, 0, 2]
    assert ranker.call().order("Is a storm in the forecast?", texts) == [1, 0, 2]
    assert sum(len(c) for c in calls) == 4  # the question and three texts, once each


def test_failing_embedder_falls_back_to_words_and_says_why() -> None:
    def broken(texts: list[str]) -> Sequence[Sequence[float]]:
        raise RuntimeError("model offline")

    memories = [
        MemoryItem(id=f"m{i}", content=f"Note {i} about the trip budget. " * 4) for i in range(30)
    ]
    compiler = ContextCompiler(300, embedder=broken, include_interrupt_instruction=False)
    result = compiler.compile(memories, "What was the trip budget?")
    assert result.metadata["semantic_ranking_error"] == "RuntimeError: model offline"
    assert "semantic_ranking" not in result.metadata
    assert result.metadata["token_count"] + result.metadata["message_framing_tokens"] <= 300
    plain = ContextCompiler(300, include_interrupt_instruction=False).compile(
        memories, "What was the trip budget?"
    )
    assert result.messages == plain.messages  # the fallback is exactly word matching


def test_embedder_vote_is_recorded_when_memories_compete() -> None:
    calls: list[list[str]] = []
    memories = [
        MemoryItem(id="w", content="Pack an umbrella: the forecast says storm and rain all week."),
        *[
            MemoryItem(id=f"f{i}", content=f"Filler note number {i} about nothing much at all.")
            for i in range(25)
        ],
    ]
    compiler = ContextCompiler(
        260,
        embedder=_toy_embedder(calls),
        include_interrupt_instruction=False,  # type: ignore[arg-type]
    )
    result = compiler.compile(memories, "Should I expect bad weather?")
    assert result.metadata.get("semantic_ranking") is True
    assert "w" in result.ref_map.values()
    assert calls


def test_the_vector_cache_keeps_only_the_most_recently_used_texts() -> None:
    calls: list[list[str]] = []
    ranker = SemanticRanker(_toy_embedder(calls), max_texts=3)  # type: ignore[arg-type]
    texts = ["rain today", "refund sent", "train booked", "storm warning", "price list"]
    first = ranker.similarities("Is the weather bad?", texts)
    assert ranker.cached_texts() == 3  # bounded, however many texts were compared
    # The same similarities after eviction: an evicted text is embedded again, nothing else.
    assert ranker.similarities("Is the weather bad?", texts) == first
    assert ranker.cached_texts() == 3
    ranker.similarities("Is the weather bad?", ["price list"])
    calls.clear()
    ranker.similarities("Is the weather bad?", ["price list"])  # just used: still cached
    assert calls == []


def test_a_shared_ranker_gives_every_thread_the_same_similarities() -> None:
    import threading

    ranker = SemanticRanker(_toy_embedder([]), max_texts=8)  # type: ignore[arg-type]
    texts = [f"{w} note {i}" for i in range(40) for w in ("rain", "refund", "hotel")]
    expected = SemanticRanker(_toy_embedder([])).similarities("storm and hotel?", texts)  # type: ignore[arg-type]
    results: list[list[float]] = []

    def work() -> None:
        for _ in range(5):
            results.append(ranker.similarities("storm and hotel?", texts))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 20 and all(r == expected for r in results)
    assert ranker.cached_texts() <= 8


def test_a_long_question_is_embedded_by_its_last_words_only() -> None:
    from membrane.text.semantic import QUESTION_WORDS

    calls: list[list[str]] = []
    ranker = SemanticRanker(_toy_embedder(calls))  # type: ignore[arg-type]
    words = [f"w{i}" for i in range(50)]
    question = " ".join(words) + " rain?"
    assert ranker.call().order(question, ["rain today", "refund sent"]) == [0, 1]
    embedded_question = calls[0][0]
    assert embedded_question.split() == [*words[-(QUESTION_WORDS - 1) :], "rain?"]
