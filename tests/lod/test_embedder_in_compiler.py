"""The local embedder as one vote in the compiler: it changes the tail only, never the prefix."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from benchmarks._scenarios import HARD_SCENARIOS, build_scenario
from membrane import ContextCompiler, MemoryItem
from membrane.lod import LocalEmbedder
from tests.lod.samples import QUESTION, memories


class Counting:
    """Wraps an embedder and counts how often each text is embedded."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner = inner
        self.seen: Counter[str] = Counter()
        self.calls = 0

    def __call__(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        self.seen.update(texts)
        return self.inner(texts)


@pytest.mark.parametrize("budget", [120, 160, 200])
def test_meaning_keeps_a_memory_that_shares_no_word_with_the_question(
    budget: int, embedder: LocalEmbedder
) -> None:
    words = ContextCompiler(budget, include_interrupt_instruction=False)
    meaning = ContextCompiler(budget, include_interrupt_instruction=False, embedder=embedder)
    without = words.compile(memories(), QUESTION)
    with_vote = meaning.compile(memories(), QUESTION)
    assert "hotel" not in without.ref_map.values()
    assert "hotel" in with_vote.ref_map.values()
    # One vote among three: the same number of memories fit, one of them is traded.
    assert len(with_vote.ref_map) == len(without.ref_map)
    assert with_vote.metadata["semantic_ranking"] is True
    assert "semantic_ranking" not in without.metadata
    assert with_vote.metadata["token_count"] <= budget


def test_when_everything_fits_the_embedder_is_not_asked(embedder: LocalEmbedder) -> None:
    counting = Counting(embedder)
    compiler = ContextCompiler(4000, embedder=counting)
    plain = ContextCompiler(4000)
    result = compiler.compile(memories(), QUESTION)
    assert result.messages == plain.compile(memories(), QUESTION).messages
    assert counting.calls == 0
    assert "semantic_ranking" not in result.metadata


def _replay(spec: str, seed: int, turns: int, embedder: Any) -> list[Any]:
    scenario = build_scenario(HARD_SCENARIOS[spec], seed)
    compiler = ContextCompiler(
        scenario.budget,
        model_id="openai/gpt-4o",
        core_content=scenario.system_prompt,
        token_scale=1.0,
        embedder=embedder,
    )
    history: list[dict[str, Any]] = []
    results = []
    for turn in scenario.turns[:turns]:
        memories = [
            MemoryItem(id=m.id, content=m.content, memory_type=m.memory_type, priority=m.priority)
            for m in turn.memories
        ]
        results.append(
            compiler.compile(
                memories=memories,
                conversation_messages=history,
                user_message=turn.user_message,
            )
        )
        history.append({"role": "user", "content": turn.user_message})
        history.extend(dict(m) for m in turn.reply)
    return results


# A chat whose history is cut and whose vote runs: since recall checks questions against the
# kept window, long_chat's first 40 turns never ask the embedder; tight_budget's do.
@pytest.mark.parametrize(("spec", "turns"), [("memory_flood_paraphrase", 24), ("tight_budget", 40)])
def test_the_cached_prefix_is_the_same_with_or_without_the_embedder(
    spec: str, turns: int, embedder: LocalEmbedder
) -> None:
    counting = Counting(embedder)
    plain = _replay(spec, 1, turns, None)
    voted = _replay(spec, 1, turns, counting)
    assert len(plain) == len(voted) == turns
    used = 0
    for a, b in zip(plain, voted, strict=True):
        # Everything before the final user message (system text, index, kept history) is the
        # cacheable prefix; it must be byte-identical.
        assert a.messages[:-1] == b.messages[:-1]
        assert a.metadata["history_messages_dropped"] == b.metadata["history_messages_dropped"]
        assert "semantic_ranking_error" not in b.metadata
        used += bool(b.metadata.get("semantic_ranking"))
    assert used > 0  # the vote really ran on this conversation
    # Each distinct text went to the model once per compiler, however many turns used it.
    assert counting.seen and max(counting.seen.values()) == 1


def test_on_an_executor_the_local_embedder_gives_the_same_prompts(
    embedder: LocalEmbedder,
) -> None:
    """``local_embedder(executor=...)`` waiting as long as it takes: the compiling-thread bytes."""
    from concurrent.futures import ThreadPoolExecutor

    from membrane.lod import local_embedder

    scenario = build_scenario(HARD_SCENARIOS["long_chat"], 1)
    with ThreadPoolExecutor(1) as pool:
        background = local_embedder(executor=pool, wait_seconds=None)
        assert background.executor is pool and background.wait_seconds is None
        compilers = [ContextCompiler(900, embedder=e) for e in (embedder, background)]
        history: list[dict[str, Any]] = []
        for turn in scenario.turns[:30]:
            a, b = (
                c.compile([], turn.user_message, conversation_messages=list(history))
                for c in compilers
            )
            assert a.messages == b.messages
            history.append({"role": "user", "content": turn.user_message})
            history.extend(dict(m) for m in turn.reply)


@pytest.mark.parametrize(("executor", "wait"), [("pool", 0.01), (None, -1), (None, True)])
def test_background_settings_are_checked_when_built(executor: Any, wait: Any) -> None:
    from membrane.errors import InvalidInputError
    from membrane.lod import local_embedder, static_embedder

    for build in (local_embedder, static_embedder):
        with pytest.raises(InvalidInputError):
            build(executor=executor, wait_seconds=wait)
