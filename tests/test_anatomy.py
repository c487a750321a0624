"""Region accounting: pieces tile every message and their tokens add up to the compile's count."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from membrane.anatomy import (
    REGION_LABELS,
    REGIONS,
    breakpoint_positions,
    cacheable_prefix_tokens,
    prompt_anatomy,
    sent_tokens,
)
from membrane.compiler import ContextCompiler
from membrane.messages import message_text
from membrane.prompt_text import CURRENT_MESSAGE_HEADER, RECALL_HEADER
from membrane.records import MemoryItem
from membrane.stages.layout import ContextLayoutEngine
from membrane.tokenizers import TiktokenAdapter
from tests.strategies import conversations, memory_items, text

QUESTION = "Explain the retry policy."


class _Words:
    """One token per whitespace-separated word: cheap, and not additive across a cut."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


def _history(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(turns):
        out.append({"role": "user", "content": f"Question {i} about the retry queue and backoff."})
        out.append(
            {
                "role": "assistant",
                "content": f"Answer {i}: the worker retries with jitter; attempt {i} waited "
                f"{2**i} seconds before the next try, and the queue drained afterwards.",
            }
        )
    return out


@given(
    memories=memory_items(),
    history=conversations(max_turns=20),
    question=text,
    budget=st.integers(300, 4000),
    placement=st.sampled_from(["end", "system"]),
)
def test_regions_tile_every_message_and_add_up_to_the_token_count(
    memories: list[MemoryItem],
    history: list[dict[str, Any]],
    question: str,
    budget: int,
    placement: str,
) -> None:
    compiler = ContextCompiler(budget, None, "Be careful.", memory_placement=placement)  # type: ignore[arg-type]
    result = compiler.compile(memories, question, conversation_messages=history)
    parts = prompt_anatomy(result, counter=TiktokenAdapter("cl100k_base"))
    assert parts.content_tokens == result.metadata["token_count"]
    for index, message in enumerate(result.messages):
        pieces = [p for p in parts.pieces if p.message_index == index]
        assert "".join(p.text for p in pieces) == message_text(message)
        # Consecutive, non-empty, in prompt order, and each piece is its span of the message.
        assert all(p.end > p.start for p in pieces)
        assert [p.start for p in pieces[1:]] == [p.end for p in pieces[:-1]]
        ranks = [REGIONS.index(p.region) for p in pieces]
        assert ranks == sorted(ranks)
        assert all(message_text(message)[p.start : p.end] == p.text for p in pieces)
    totals = parts.totals()
    assert list(totals) == list(REGIONS)
    assert totals["index"] == result.metadata.get("history_index_tokens", 0)
    kept_lines = [ln for p in parts.pieces if p.region == "memories" for ln in p.text.split("\n")]
    assert len([ln for ln in kept_lines if ln.strip()]) == result.metadata["segments_kept"]
    assert (totals["recall"] > 0) == bool(result.metadata.get("history_messages_recalled"))
    if placement == "system":
        assert {p.message_index for p in parts.pieces} == {0}
        assert totals["history"] == totals["index"] == 0


def test_the_default_counter_is_the_compilers_default() -> None:
    result = ContextCompiler(2048, None, "Be brief.").compile(
        [MemoryItem(id="a", content="Retries back off.")], QUESTION
    )
    default = prompt_anatomy(result)
    explicit = prompt_anatomy(result, counter=TiktokenAdapter("cl100k_base"))
    assert default == explicit
    assert default.content_tokens == result.metadata["token_count"]


def test_each_message_adds_up_under_a_counter_that_is_not_additive() -> None:
    counter = _Words()
    result = ContextCompiler(900, None, "Rules.", token_counter=counter).compile(
        [MemoryItem("a", "Backoff doubles each time."), MemoryItem("b", "Jitter is random.")],
        "What did attempt 3 wait?",
        conversation_messages=_history(30),
    )
    parts = prompt_anatomy(
        result,
        counter=counter,
    )
    for index, message in enumerate(result.messages):
        tokens = sum(p.tokens for p in parts.pieces if p.message_index == index)
        assert tokens == counter.count(message_text(message))
    recall = [p for p in parts.pieces if p.region == "recall"]
    assert recall and all(p.text.lstrip("\n").startswith(RECALL_HEADER) for p in recall)
    current = [p for p in parts.pieces if p.region == "current"]
    assert len(current) == 1
    assert current[0].text.endswith(f"{CURRENT_MESSAGE_HEADER}\nWhat did attempt 3 wait?")
    assert current[0].message_index == len(result.messages) - 1


def test_system_placement_finds_the_core_at_the_start_of_the_system_message() -> None:
    result = ContextCompiler(3000, None, "Be exact.", memory_placement="system").compile(
        [MemoryItem("a", "Backoff doubles each time.")], QUESTION
    )
    parts = prompt_anatomy(result)
    core = ContextLayoutEngine("Be exact.").build_core()
    first = parts.pieces[0]
    assert first.region == "core"
    assert first.start == 0
    assert first.text.rstrip("\n") == core
    assert [p.region for p in parts.pieces] == ["core", "memories", "current"]


def test_breakpoints_sit_on_region_boundaries() -> None:
    compiler = ContextCompiler(1500, "openai/gpt-4o", "Rules.", token_scale=1.0)
    result = compiler.compile(
        [MemoryItem("a", "Backoff doubles each time.")],
        QUESTION,
        conversation_messages=_history(40),
    )
    parts = prompt_anatomy(result)
    totals = parts.totals()
    boundaries = {
        "core": totals["core"],
        "index": totals["core"] + totals["index"],
        "history": totals["core"] + totals["index"] + totals["history"],
    }
    positions = breakpoint_positions(result, parts)
    assert [bp["reason"] for _, bp in positions] == ["core", "index", "history"]
    assert [(bp["reason"], pos) for pos, bp in positions] == [
        (bp["reason"], boundaries[bp["reason"]]) for _, bp in positions
    ]
    md = result.metadata
    assert cacheable_prefix_tokens(result) == md["cache_breakpoints"][-1]["tokens"]
    framing = parts.framing_per_message * len(result.messages)
    assert framing == md["message_framing_tokens"]
    assert sent_tokens(result) == md["token_count"] + md["message_framing_tokens"]
    assert sent_tokens(result) == parts.content_tokens + framing


def test_without_breakpoints_the_cacheable_prefix_is_empty() -> None:
    # System placement marks no cache breakpoint.
    result = ContextCompiler(1500, None, "Rules.", memory_placement="system").compile([], QUESTION)
    assert result.metadata["cache_breakpoints"] == []
    assert cacheable_prefix_tokens(result) == 0
    parts = prompt_anatomy(result)
    assert breakpoint_positions(result, parts) == []


def test_every_region_has_a_label() -> None:
    assert list(REGION_LABELS) == list(REGIONS)
    assert len(set(REGION_LABELS.values())) == len(REGIONS)
