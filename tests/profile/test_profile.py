"""MembraneProfile: presets, the order its modules run in, validation and explain()."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane import ContextCompiler
from membrane.errors import InvalidInputError
from membrane.profile import MembraneProfile, ProfileOutcome
from membrane.records import EpisodicMemory, MemoryItem
from tests.strategies import memory_items

NOW = datetime(2026, 6, 15, 12, 0, tzinfo=timezone.utc)


def ids(memories: Sequence[Any]) -> list[str]:
    return [m.id for m in memories]


@given(memories=memory_items(), message=st.text(max_size=20))
def test_minimal_changes_nothing(memories: list[MemoryItem], message: str) -> None:
    profile = MembraneProfile.minimal()
    out = profile.prepare(memories, message)
    assert len(out) == len(memories)
    assert all(a is b for a, b in zip(out, memories, strict=True))
    assert profile == MembraneProfile()
    assert profile.changes_nothing


@given(memories=memory_items(), message=st.text(max_size=20))
def test_every_preset_returns_a_subset_of_the_same_objects(
    memories: list[MemoryItem], message: str
) -> None:
    for name in MembraneProfile.PRESETS:
        outcome = MembraneProfile.preset(name).apply(memories, message, now=NOW)
        assert len({id(m) for m in outcome.memories}) == len(outcome.memories)
        assert {id(m) for m in outcome.memories} <= {id(m) for m in memories}
        dropped = {d for d, _ in outcome.duplicates}
        assert len(outcome.memories) + len(dropped) == len(memories)


def test_coding_drops_copies_strictly_and_puts_procedures_first() -> None:
    memories = [
        MemoryItem(id="f1", content="The project uses pytest 8 for tests."),
        MemoryItem(id="f2", content="the project uses PYTEST 8 for tests"),  # exact copy
        MemoryItem(id="f3", content="The project uses pytest 7 for tests."),  # one word differs
        MemoryItem(id="p1", content="Run ruff before committing.", memory_type="procedural"),
        MemoryItem(id="e1", content="Fixed the flaky test yesterday.", memory_type="episodic"),
        MemoryItem(id="p2", content="Type-check with mypy --strict.", memory_type="procedural"),
    ]
    outcome = MembraneProfile.coding().apply(memories, "Write a test for parse_date().")
    assert ids(outcome.memories) == ["p1", "p2", "f1", "f3", "e1"]
    assert outcome.duplicates == (("f2", "f1"),)
    assert outcome.steps == ("dedup_meaning", "kinds_first")  # the embed extra is installed


def test_conversational_merges_restatements_and_moves_old_episodes_back() -> None:
    memories = [
        MemoryItem(
            id="old",
            content="Talked about moving to Lisbon.",
            memory_type="episodic",
            metadata={"timestamp": NOW - timedelta(days=21)},
        ),
        MemoryItem(id="pref", content="User prefers concise answers."),
        MemoryItem(id="pref2", content="The user prefers concise answers."),
        EpisodicMemory(id="recent", summary="Asked about visas.", occurred_at="2026-06-15T09:00Z"),
        MemoryItem(id="city", content="User lives in Porto."),
    ]
    outcome = MembraneProfile.conversational().apply(memories, "Any news?", now=NOW)
    # "old" is 3 half-lives old: position 1 / 0.125 = 8, after everything else.
    assert ids(outcome.memories) == ["pref", "recent", "city", "old"]
    assert outcome.duplicates == (("pref2", "pref"),)
    assert outcome.steps == ("dedup_meaning", "freshness")


def test_clock_and_now() -> None:
    memories = [
        MemoryItem(
            id="e", content="x", memory_type="episodic", metadata={"timestamp": "2026-06-01"}
        ),
        MemoryItem(id="f", content="y"),
    ]
    # On June 1st the episode is new; by June 15th it is two half-lives old and moves back.
    on_the_day = MembraneProfile.conversational(clock=lambda: datetime(2026, 6, 1))
    two_weeks_on = MembraneProfile.conversational(clock=lambda: NOW)
    assert ids(on_the_day.prepare(memories, "")) == ["e", "f"]
    assert ids(two_weeks_on.prepare(memories, "")) == ["f", "e"]
    assert ids(two_weeks_on.prepare(memories, "", now=datetime(2026, 6, 1))) == ["e", "f"]
    # Without a clock, the system's (aware, UTC) time is used.
    before = datetime.now(timezone.utc)
    assert before <= MembraneProfile.conversational()._now() <= datetime.now(timezone.utc)


def test_modules_run_in_the_documented_order() -> None:
    memories = [
        MemoryItem(id="a", content="alpha", memory_type="episodic",
                   metadata={"timestamp": NOW - timedelta(days=7)}),
        MemoryItem(id="b", content="bravo"),
        MemoryItem(id="b2", content="Bravo."),
        MemoryItem(id="c", content="charlie", memory_type="procedural"),
        MemoryItem(id="d", content="delta"),
    ]  # fmt: skip
    calls: list[list[str]] = []

    def reverse(_message: str, items: Sequence[Any]) -> list[Any]:
        calls.append(ids(items))
        return list(reversed(items))

    profile = MembraneProfile(
        name="custom",
        dedup=True,
        reranker=reverse,
        freshness_half_life=timedelta(days=7),
        kinds_first=("procedural",),
    )
    outcome = profile.apply(memories, "q", now=NOW)
    # The reranker sees the deduplicated list; freshness works on the reranked order
    # (a: position 4 -> 8), and procedures come first at the very end.
    assert calls == [["a", "b", "c", "d"]]
    assert ids(outcome.memories) == ["c", "d", "b", "a"]
    assert outcome.steps == ("dedup", "rerank", "freshness", "kinds_first")
    assert profile.prepare(memories, "q", now=NOW) == list(outcome.memories)


def test_empty_input() -> None:
    for name in MembraneProfile.PRESETS:
        assert MembraneProfile.preset(name).apply([], "hi") == ProfileOutcome(memories=())


def test_preset_lookup() -> None:
    assert MembraneProfile.preset("coding") == MembraneProfile.coding()
    assert MembraneProfile.preset(" Conversational ") == MembraneProfile.conversational()
    with pytest.raises(InvalidInputError, match="choose one of: minimal, coding, conversational"):
        MembraneProfile.preset("research")


def test_profiles_are_frozen_values() -> None:
    coding = MembraneProfile.coding()
    with pytest.raises(dataclasses.FrozenInstanceError):
        coding.dedup = False  # type: ignore[misc]
    assert coding == MembraneProfile.coding(reranker=lambda _m, items: items)
    assert hash(coding) == hash(MembraneProfile.coding())
    looser = dataclasses.replace(coding, near_duplicate_threshold=0.5)
    assert looser.near_duplicate_threshold == 0.5
    assert looser.kinds_first == ("procedural",)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"name": ""}, "name"),
        ({"near_duplicate_threshold": 0.8}, "near_duplicate_threshold"),
        ({"dedup": True, "near_duplicate_threshold": 1.2}, "near_duplicate_threshold"),
        ({"shingle_size": 0}, "shingle_size"),
        ({"kinds_first": ("procedural", "procedural")}, "kinds_first"),
        ({"kinds_first": ("rules",)}, "kinds_first"),
        ({"freshness_half_life": timedelta(0)}, "freshness_half_life"),
        ({"freshness_half_life": 7}, "freshness_half_life"),
    ],
)
def test_invalid_settings(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        MembraneProfile(**kwargs)
    assert info.value.field == field


def test_invalid_callables_and_inputs() -> None:
    with pytest.raises(TypeError, match="reranker must be callable"):
        MembraneProfile(reranker="sort")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="clock must be a callable"):
        MembraneProfile(clock=NOW)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="memories must be a list"):
        MembraneProfile.coding().prepare("not a list", "hi")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="user_message must be a str"):
        MembraneProfile.coding().prepare([], None)  # type: ignore[arg-type]


def test_explain() -> None:
    minimal = MembraneProfile.minimal().explain()
    assert minimal.splitlines()[0] == "Profile 'minimal'"
    assert "exactly as given" in minimal

    coding = MembraneProfile.coding(embedder=None).explain()
    assert coding.splitlines() == [
        "Profile 'coding'",
        "  1. Duplicates: exact copies (same words, ignoring case and punctuation at word edges)"
        " and near copies (3-word shingle Jaccard >= 0.90; with an embedder, cosine of the"
        " embedder's vectors >= 0.95) are dropped; the first one offered stays.",
        "  2. Reranker: none; your order is kept.",
        "  3. Freshness: off.",
        "  4. Kind order: procedural memories are offered first; the rest keep their order.",
        "  5. Classifier: classify_query (built-in rules: code, lookup, chit-chat, task) labels"
        " the message, seeing the last 3 user messages; metadata['query_label'] records it.",
        "     chit-chat: memories take at most 10% of the budget.",
        "     lookup: under pressure tiers are kept in the order facts, procedures, episodes.",
        "     other labels: no change.",
        "  6. Policies:",
        "     procedural memories: never thinned (whole or dropped).",
        "     When rules collide: budget > never_thin > must_include > max_items > memory_share"
        " > ranking (reported in metadata).",
        "  7. Profiler: off (costs nothing).",
        "  Kept memories keep their [Mem:N] numbers from your input order.",
    ]

    def by_overlap(_message: str, items: Sequence[Any]) -> list[Any]:
        return list(items)

    chat = MembraneProfile.conversational(reranker=by_overlap).explain()
    assert "2-word shingle Jaccard >= 0.75" in chat
    assert "by_overlap(user_message, memories)" in chat
    assert "one 7 days old is offered as if it ranked twice as far down" in chat
    assert "4. Kind order: unchanged." in chat
    hourly = MembraneProfile(freshness_half_life=timedelta(hours=1)).explain()
    assert "one 1 hour old" in hourly


def test_to_dict_is_json_ready() -> None:
    data = MembraneProfile.conversational(embedder=None).to_dict()
    assert json.loads(json.dumps(data)) == {
        "name": "conversational",
        "dedup": True,
        "near_duplicate_threshold": 0.75,
        "shingle_size": 2,
        "semantic_duplicate_threshold": 0.9,
        "embedder": None,
        "kinds_first": [],
        "freshness_half_life_seconds": 604800.0,
        "reranker": None,
        "clock": None,
        "classifier": "classify_query",
        "classifier_history": 3,
        "label_effects": {
            "chit-chat": {"tier_order": [3, 2, 1], "memory_share": 0.25},
            "lookup": {"tier_order": [2, 3, 1], "memory_share": None},
        },
        "policies": [
            {
                "target": "episodic",
                "max_items": 8,
                "must_include": False,
                "never_thin": False,
                "max_chars": None,
            }
        ],
        "must_include": [],
        "conflict_order": [
            "budget",
            "never_thin",
            "must_include",
            "max_items",
            "memory_share",
            "ranking",
        ],
        "profiler": False,
    }
    assert MembraneProfile.minimal().to_dict()["conflict_order"] == []


def test_compiler_keeps_input_numbering_under_a_profile() -> None:
    compiler = ContextCompiler(max_tokens=4096, model_id="openai/gpt-4o")
    memories = [
        MemoryItem(id="a", content="Use pytest for tests."),
        MemoryItem(id="b", content="use pytest for tests"),
        MemoryItem(id="c", content="Run ruff first.", memory_type="procedural"),
    ]
    result = compiler.compile(
        memories=memories, user_message="Write a test.", profile=MembraneProfile.coding()
    )
    assert result.ref_map == {1: "a", 3: "c"}
