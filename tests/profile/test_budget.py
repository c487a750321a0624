"""The budget invariant with every profile module on at once."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from membrane.compiler import ContextCompiler
from membrane.messages import message_text
from membrane.profile import LabelEffect, MembraneProfile, Policy
from membrane.records import MemoryItem
from membrane.tokenizers import count_tokens
from tests.strategies import WORDS, conversations, memory_items, text

CORE = "You are a careful assistant. Cite memories as [Mem:N]."
OVERHEAD = 3
NOW = datetime(2026, 6, 15, tzinfo=timezone.utc)


def embed(texts: list[str]) -> list[list[float]]:
    return [[float(t.lower().count(w)) for w in WORDS[:8]] for t in texts]


def reverse(_message: str, memories: Sequence[Any]) -> list[Any]:
    return list(reversed(memories))


effects = st.builds(
    LabelEffect,
    tier_order=st.permutations([1, 2, 3]).map(tuple),
    memory_share=st.one_of(st.none(), st.floats(0.01, 1.0)),
)
policies = st.lists(
    st.builds(
        Policy,
        target=st.sampled_from(["semantic", "episodic", "procedural", 1, 2, 3]),
        max_items=st.one_of(st.none(), st.integers(0, 5)),
        must_include=st.booleans(),
        never_thin=st.booleans(),
        max_chars=st.one_of(st.none(), st.integers(2, 400)),
    ),
    max_size=3,
)


@st.composite
def full_profiles(draw: st.DrawFn, ids: list[str]) -> MembraneProfile:
    label = draw(st.sampled_from(["code", "lookup", "chit-chat", "task"]))
    return MembraneProfile(
        name="everything",
        dedup=True,
        near_duplicate_threshold=draw(st.floats(0.3, 1.0)),
        shingle_size=draw(st.integers(1, 3)),
        embedder=embed if draw(st.booleans()) else None,
        semantic_duplicate_threshold=0.99,
        kinds_first=("procedural",),
        freshness_half_life=timedelta(days=3),
        clock=lambda: NOW,
        reranker=reverse,
        classifier=lambda _m, _r: label,
        label_effects=draw(
            st.dictionaries(st.sampled_from(["code", "lookup", "chit-chat"]), effects)
        ),
        policies=draw(policies),
        must_include=draw(st.lists(st.sampled_from(ids), unique=True)) if ids else (),
        profiler=True,
    )


@given(
    data=st.data(),
    memories=memory_items(),
    history=conversations(max_turns=10),
    question=text,
    budget=st.integers(300, 4000),
    placement=st.sampled_from(["end", "system"]),
)
def test_budget_holds_with_every_module_on(
    data: st.DataObject,
    memories: list[MemoryItem],
    history: list[dict[str, Any]],
    question: str,
    budget: int,
    placement: str,
) -> None:
    profile = data.draw(full_profiles([m.id for m in memories]))
    compiler = ContextCompiler(budget, core_content=CORE, memory_placement=placement)  # type: ignore[arg-type]
    result = compiler.compile(memories, question, conversation_messages=history, profile=profile)
    md = result.metadata
    sent = sum(count_tokens(message_text(m)) + OVERHEAD for m in result.messages)
    assert sent == md["token_count"] + md["message_framing_tokens"]
    reserved = count_tokens(CORE) + count_tokens(question) + 40
    if reserved <= budget // 2:
        assert not md["budget_exceeded"]
        assert sent <= budget
    else:
        assert md["budget_exceeded"] == (sent > budget)
    # Citations still map to the caller's records, and every must-include either went or is
    # reported as a conflict.
    tail = result.messages[-1]["content"]
    assert set(result.ref_map) == {int(n) for n in re.findall(r"\[Mem:(\d+)\]", tail)}
    for n, ref in result.ref_map.items():
        assert memories[n - 1].id == ref
    report = md.get("policy_report", {"conflicts": []})
    missing = [c["memory"] for c in report["conflicts"] if c["rule"] == "must_include"]
    offered = set(result.ref_map.values()) | set(missing)
    deduplicated = {m.id for m in profile.prepare(memories, question)}
    assert {ref for ref in profile.must_include if ref in deduplicated} <= offered
    assert list(md["profile_timings"])[-1] == "state_store"
