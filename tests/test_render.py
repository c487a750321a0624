"""Region spans recorded while the prompt is laid out, and per-call compile state."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from benchmarks._scenarios import HARD_SCENARIOS, build_scenario
from membrane import ContextCompiler, MemoryItem
from membrane.messages import message_text
from membrane.prompt_text import CURRENT_MESSAGE_HEADER, INDEX_HEADER, RECALL_HEADER

ORDER = ("core", "index", "history", "memories", "recall", "current")


def _turns(name: str, seed: int) -> list[tuple[list[MemoryItem], list[dict[str, Any]], str]]:
    scenario = build_scenario(HARD_SCENARIOS[name], seed)
    history: list[dict[str, Any]] = []
    out = []
    for turn in scenario.turns:
        memories = [
            MemoryItem(id=m.id, content=m.content, memory_type=m.memory_type) for m in turn.memories
        ]
        out.append((memories, list(history), turn.user_message))
        history.append({"role": "user", "content": turn.user_message})
        history.extend(dict(m) for m in turn.reply)
    return out


@pytest.mark.parametrize("placement", ["end", "system"])
@pytest.mark.parametrize("name", ["long_chat", "tight_budget", "memory_many"])
def test_regions_tile_every_message_in_prompt_order(name: str, placement: str) -> None:
    scenario = build_scenario(HARD_SCENARIOS[name], 1)
    compiler = ContextCompiler(
        scenario.budget,
        core_content=scenario.system_prompt,
        memory_placement=placement,  # type: ignore[arg-type]
    )
    for memories, history, question in _turns(name, 1)[::5]:
        result = compiler.compile(memories, question, conversation_messages=history)
        by_message: dict[int, list[Any]] = {}
        for region in result.regions:
            by_message.setdefault(region.message_index, []).append(region)
        assert sorted(by_message) == list(range(len(result.messages)))
        ranks = [(r.message_index, ORDER.index(r.region)) for r in result.regions]
        assert ranks == sorted(ranks)
        for index, regions in by_message.items():
            text = message_text(result.messages[index])
            assert regions[0].start == 0 and regions[-1].end == len(text)
            assert all(a.end == b.start for a, b in itertools.pairwise(regions))
            assert all(r.end > r.start for r in regions)
        spans = {
            r.region: message_text(result.messages[r.message_index])[r.start : r.end]
            for r in result.regions
            if r.region != "history"
        }
        assert spans["current"].startswith(("--- Your previous reply ---", CURRENT_MESSAGE_HEADER))
        assert spans["current"].rstrip().endswith(question.strip()[-20:])
        if "index" in spans:
            assert spans["index"].startswith("\n\n" + INDEX_HEADER)
        if "recall" in spans:
            assert spans["recall"].lstrip("\n").startswith(RECALL_HEADER)
        if "memories" in spans:
            assert all(line.startswith("[Mem:") for line in spans["memories"].strip().split("\n"))
        assert result.metadata["memory_placement"] == placement


def test_interleaved_conversations_on_one_compiler_match_separate_compilers() -> None:
    a, b = _turns("long_chat", 2), _turns("two_fact", 3)
    shared = ContextCompiler(6000, core_content="Rules.")
    own = {
        "a": ContextCompiler(6000, core_content="Rules."),
        "b": ContextCompiler(6000, core_content="Rules."),
    }
    for (ma, ha, qa), (mb, hb, qb) in zip(a, b, strict=False):
        for cid, (memories, history, question) in (("a", (ma, ha, qa)), ("b", (mb, hb, qb))):
            got = shared.compile(
                memories, question, conversation_messages=history, conversation_id=cid
            )
            want = own[cid].compile(
                memories, question, conversation_messages=history, conversation_id=cid
            )
            assert got.messages == want.messages
            assert got.metadata == want.metadata
            assert got.ref_map == want.ref_map
            assert got.regions == want.regions
