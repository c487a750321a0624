"""Policies: rules per kind or tier the fit obeys, with conflicts resolved and reported."""

from __future__ import annotations

import pytest

from membrane import ContextCompiler
from membrane.errors import InvalidInputError
from membrane.profile import MembraneProfile, Policy, plan_policies
from membrane.prompt_text import THIN_MARK
from membrane.records import MemoryItem

VOCABULARY = (
    "alpha beta gamma delta river mountain invoice shipping order refund cluster latency "
    "budget cache token paris lagos tuesday amber cobalt"
)
WORDS = VOCABULARY.split()


def body(start: int, n: int = 30) -> str:
    return " ".join(WORDS[(start + j) % len(WORDS)] for j in range(n))


def facts(n: int) -> list[MemoryItem]:
    return [MemoryItem(id=f"fact-{i}", content=body(i)) for i in range(n)]


def compiler(budget: int, **options: object) -> ContextCompiler:
    return ContextCompiler(
        budget,
        core_content="Be brief.",
        include_interrupt_instruction=False,
        **options,  # type: ignore[arg-type]
    )


def test_must_include_keeps_a_memory_the_ranking_drops() -> None:
    memories = facts(8)
    plain = compiler(200, thin_before_drop=False).compile(memories, "Where?")
    assert "fact-7" not in plain.ref_map.values()
    profile = MembraneProfile(name="keep-7", must_include=("fact-7",))
    kept = compiler(200, thin_before_drop=False).compile(memories, "Where?", profile=profile)
    assert kept.ref_map[8] == "fact-7"
    assert f"[Mem:8] [fact] kind=note | text={body(7)[:60]}" in kept.messages[-1]["content"]
    assert len(kept.ref_map) == len(plain.ref_map)  # it took a slot, it did not add room
    report = kept.metadata["policy_report"]
    assert report["must_include_sent"] == ["fact-7"]
    assert report["conflicts"] == []
    assert not kept.metadata["budget_exceeded"]
    assert kept.metadata["token_count"] + kept.metadata["message_framing_tokens"] <= 200


def test_must_include_by_kind() -> None:
    memories = [*facts(6), MemoryItem(id="ep", content=body(3), memory_type="episodic")]
    plain = compiler(200, thin_before_drop=False).compile(memories, "Where?")
    assert "ep" not in plain.ref_map.values()
    profile = MembraneProfile(policies=[Policy("episodic", must_include=True)])
    kept = compiler(200, thin_before_drop=False).compile(memories, "Where?", profile=profile)
    assert "ep" in kept.ref_map.values()


def test_max_items_caps_a_kind_even_when_everything_fits() -> None:
    memories = [
        MemoryItem(id=f"ep-{i}", content=f"Episode {i}.", memory_type="episodic") for i in range(5)
    ]
    memories.append(MemoryItem(id="f", content="A fact."))
    profile = MembraneProfile(policies=[Policy("episodic", max_items=2)])
    result = compiler(4000).compile(memories, "What happened?", profile=profile)
    assert sorted(result.ref_map.values()) == ["ep-0", "ep-1", "f"]
    assert result.metadata["policy_report"]["max_items"] == {
        "episodic": {"limit": 2, "offered": 5, "sent": 2}
    }
    # A tier rule works the same way.
    by_tier = MembraneProfile(policies=[Policy(3, max_items=1)])
    assert len(compiler(4000).compile(memories, "What?", profile=by_tier).ref_map) == 2


def test_never_thin_sends_a_memory_whole_or_not_at_all() -> None:
    memories = [
        MemoryItem(
            id=f"p{i}",
            content=". ".join(body(i * 5 + k, 12) for k in range(5)) + ".",
            memory_type="procedural",
        )
        for i in range(3)
    ]
    plain = compiler(250).compile(memories, "Deploy?")
    assert plain.metadata["segments_thinned"] == 1
    assert THIN_MARK in plain.messages[-1]["content"]
    profile = MembraneProfile(policies=[Policy("procedural", never_thin=True)])
    whole = compiler(250).compile(memories, "Deploy?", profile=profile)
    tail = whole.messages[-1]["content"]
    assert THIN_MARK not in tail
    assert whole.metadata["segments_thinned"] == 0
    assert 0 < len(whole.ref_map) < 3


def test_max_chars_replaces_the_kind_cap() -> None:
    memories = [MemoryItem(id="f", content=body(0, 40)), MemoryItem(id="g", content="Short.")]
    profile = MembraneProfile(policies=[Policy("semantic", max_chars=30)])
    result = compiler(4000).compile(memories, "?", profile=profile)
    line = next(x for x in result.messages[-1]["content"].split("\n") if x.startswith("[Mem:1]"))
    text = line.split("text=", 1)[1].split(" | ")[0]
    assert len(text) <= 30 and text.endswith("…")
    assert result.metadata["memories_truncated"] == 1


def test_a_must_include_that_cannot_fit_yields_to_the_budget_and_is_reported() -> None:
    memories = [MemoryItem(id=f"big-{i}", content=body(i, 40)) for i in range(4)]
    profile = MembraneProfile(
        must_include=("big-0", "big-1", "big-2", "big-3"),
        policies=[Policy("semantic", never_thin=True, max_chars=500)],
    )
    result = compiler(150).compile(memories, "Where?", profile=profile)
    md = result.metadata
    assert md["token_count"] + md["message_framing_tokens"] <= 150
    assert not md["budget_exceeded"]
    conflicts = md["policy_report"]["conflicts"]
    dropped = sorted({f"big-{i}" for i in range(4)} - set(result.ref_map.values()))
    assert dropped
    assert [c["memory"] for c in conflicts] == dropped
    assert {c["yielded_to"] for c in conflicts} == {"never_thin"}


def test_must_include_overrides_max_items_and_says_so() -> None:
    memories = [
        MemoryItem(id=f"ep-{i}", content=f"Episode {i}.", memory_type="episodic") for i in range(4)
    ]
    profile = MembraneProfile(
        must_include=("ep-2", "ep-3"), policies=[Policy("episodic", max_items=1)]
    )
    result = compiler(4000).compile(memories, "?", profile=profile)
    assert sorted(result.ref_map.values()) == ["ep-2", "ep-3"]
    assert result.metadata["policy_report"]["conflicts"] == [
        {"rule": "max_items (episodic)", "memory": None, "yielded_to": "must_include"}
    ]


def test_system_placement_obeys_the_policies_too() -> None:
    memories = facts(8)
    profile = MembraneProfile(must_include=("fact-7",), policies=[Policy("semantic", max_items=3)])
    result = compiler(4000, memory_placement="system").compile(memories, "?", profile=profile)
    assert sorted(result.ref_map.values()) == ["fact-0", "fact-1", "fact-7"]


def test_plan_matches_kinds_tiers_and_ids() -> None:
    plan = plan_policies(
        [Policy("episodic", max_chars=50), Policy(3, max_chars=40, never_thin=True)],
        ["b"],
        [("episodic", 3, "a"), ("semantic", 2, "b"), (None, 3, None)],
    )
    assert plan.must == frozenset({1})
    assert plan.never_thin == frozenset({0})  # extras are left as they are
    assert plan.max_chars == {0: 40}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"target": "rules"}, "policies"),
        ({"target": 4}, "policies"),
        ({"target": True}, "policies"),
        ({"target": "episodic", "max_items": -1}, "max_items"),
        ({"target": "episodic", "max_chars": 1}, "max_chars"),
        ({"target": "episodic", "max_items": 2.5}, "max_items"),
    ],
)
def test_policy_validation(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        Policy(**kwargs)  # type: ignore[arg-type]
    assert info.value.field == field


def test_profile_policy_settings_are_checked() -> None:
    with pytest.raises(InvalidInputError) as info:
        MembraneProfile(policies=["episodic"])  # type: ignore[list-item]
    assert info.value.field == "policies"
    with pytest.raises(InvalidInputError) as info:
        MembraneProfile(must_include="fact-1")
    assert info.value.field == "must_include"
    with pytest.raises(InvalidInputError) as info:
        MembraneProfile(must_include=[""])
    assert info.value.field == "must_include"
    profile = MembraneProfile(policies=[Policy("episodic")], must_include=["x"])
    assert profile.policies == (Policy("episodic"),)
    assert profile.must_include == ("x",)
    assert hash(profile) == hash(
        MembraneProfile(policies=(Policy("episodic"),), must_include=("x",))
    )
