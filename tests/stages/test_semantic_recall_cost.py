"""What an embedder is asked to embed: only what its vote can change, and only what is asked."""

from __future__ import annotations

import hashlib
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks._scenarios import HARD_SCENARIOS, build_scenario
from membrane.compiler import ContextCompiler
from membrane.records import MemoryItem
from membrane.stages.firewall import PIN_MIN_SCORE
from membrane.stages.history import HistoryTracker, recall_candidates, select_passages
from membrane.text.relevance import asked_text, query_weights
from membrane.tokenizers import count_tokens
from tests.strategies import WORDS

OVERHEAD = 3


def _vector(text: str) -> list[float]:
    digest = hashlib.sha256(" ".join(sorted(set(text.lower().split()))[:5]).encode()).digest()
    return [b / 255.0 for b in digest[:16]]


class Recording:
    """A deterministic stand-in embedder that records every batch it is given."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def __call__(self, texts: list[str]) -> list[list[float]]:
        self.batches.append(list(texts))
        return [_vector(t) for t in texts]


def test_asked_text_is_the_question_sentences_or_the_whole_turn() -> None:
    turn = (
        "The train was late again. I spent the morning on the budget. "
        "Who signed the lease for the Lisbon office?"
    )
    assert asked_text(turn) == "Who signed the lease for the Lisbon office?"
    # A question that leans on the sentence before it (short, or opening with a pronoun)
    # brings that sentence along.
    leaning = "We met the Osaka supplier last week. Which code was it?"
    assert asked_text(leaning) == "We met the Osaka supplier last week. Which code was it?"
    # A turn that asks nothing gives the embedder nothing to compare with.
    assert asked_text("The budget review moved to Tuesday. Nothing else changed.") is None
    # The embedded part is exactly the part whose words count fully in word matching.
    asked_words = {w for w, weight in query_weights(turn).items() if weight == 1.0}
    asked = asked_text(turn)
    assert asked is not None
    assert asked_words == set(query_weights(asked))


def _tracker(seed: int, filler_messages: int) -> HistoryTracker:
    rng = random.Random(seed)
    history: list[dict[str, Any]] = []
    for i in range(filler_messages):
        words = rng.choices(WORDS, k=rng.randint(20, 70))
        history.append({"role": "user" if i % 2 == 0 else "assistant", "content": " ".join(words)})
    tracker = HistoryTracker(300, 150, count_tokens, OVERHEAD, 200)
    tracker.update(history, "h")
    return tracker


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    messages=st.integers(10, 60),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join),
    shuffle=st.randoms(use_true_random=False),
)
def test_ranking_only_the_candidates_recalls_the_same_passages(
    seed: int, messages: int, query: str, shuffle: random.Random
) -> None:
    """A vote over every passage and a vote over recall's candidates only bring back the same
    passages: embedding the others would cost time and change nothing."""
    tracker = _tracker(seed, messages)
    everything = list(range(len(tracker.passages)))
    shuffle.shuffle(everything)  # any order an embedder might give
    candidates = set(recall_candidates(tracker, query, min_score=PIN_MIN_SCORE))
    only_candidates = [p for p in everything if p in candidates]
    options: dict[str, Any] = {"limit": 150, "count": count_tokens, "min_score": PIN_MIN_SCORE}
    full = select_passages(tracker, query, 150, extra_ranking=lambda: everything, **options)
    cut = select_passages(tracker, query, 150, extra_ranking=lambda: only_candidates, **options)
    assert full == cut
    assert {r.pid for r in full} <= candidates


def _replay(spec: str, seed: int, embedder: Any) -> list[Any]:
    scenario = build_scenario(HARD_SCENARIOS[spec], seed)
    compiler = ContextCompiler(
        scenario.budget,
        model_id="openai/gpt-4o",
        core_content=scenario.system_prompt,
        token_scale=1.0,
        embedder=embedder,
    )
    history: list[dict[str, Any]] = []
    out = []
    for turn in scenario.turns:
        before = len(embedder.batches)
        memories = [
            MemoryItem(id=m.id, content=m.content, memory_type=m.memory_type, priority=m.priority)
            for m in turn.memories
        ]
        result = compiler.compile(
            memories=memories, conversation_messages=history, user_message=turn.user_message
        )
        texts = [t for batch in embedder.batches[before:] for t in batch]
        out.append((turn, result, texts, {m.content for m in turn.memories}))
        history.append({"role": "user", "content": turn.user_message})
        history.extend(dict(m) for m in turn.reply)
    return out


def test_a_turn_embeds_what_it_asks_and_each_passage_once() -> None:
    embedder = Recording()
    turns = _replay("tool_calls", 2, embedder)
    silent = 0
    for turn, result, texts, _ in turns:
        asked = asked_text(turn.user_message)
        if asked is None:
            assert texts == []  # a turn that asks nothing is ranked by words alone
        if not texts:
            silent += 1
            assert not result.metadata.get("semantic_ranking")
            continue
        # Only the question is embedded, never the small talk around it.
        assert asked in texts
        assert asked == turn.user_message or turn.user_message not in texts
    # A dropped passage is compared by meaning with every later question, but its text goes
    # to the model once per compiler; the question of a turn that embeds nothing new is cached.
    embedded = [t for batch in embedder.batches for t in batch]
    assert len(embedded) == len(set(embedded))
    # Turns that ask nothing, or whose questions the kept window answers, embed nothing.
    assert 0 < silent < len(turns)


def test_the_vote_is_asked_only_when_not_every_candidate_fits() -> None:
    tracker = _tracker(3, 40)
    query = " ".join(tracker.passages[0].text.split()[:12])
    candidates = recall_candidates(tracker, query, min_score=PIN_MIN_SCORE)
    assert len(candidates) >= 2
    whole = sum(tracker.recalled(p).tokens for p in candidates)
    asked: list[int] = []

    def vote() -> list[int]:
        asked.append(1)
        return list(reversed(candidates))

    options: dict[str, Any] = {"count": count_tokens, "min_score": PIN_MIN_SCORE}
    roomy = whole + 50
    with_vote = select_passages(tracker, query, roomy, limit=roomy, extra_ranking=vote, **options)
    assert asked == []  # every candidate comes back whole, whatever the order
    assert with_vote == select_passages(tracker, query, roomy, limit=roomy, **options)
    assert {r.pid for r in with_vote} == set(candidates)
    tight = whole // 2
    select_passages(tracker, query, tight, limit=tight, extra_ranking=vote, **options)
    assert asked == [1]
