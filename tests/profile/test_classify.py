"""The classifier: rule-based labels, the caller's hook, and a label's effect on the bytes."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from membrane import ContextCompiler
from membrane.errors import InvalidInputError
from membrane.profile import LabelEffect, MembraneProfile, classify_query
from membrane.records import MemoryItem
from membrane.tokenizers import count_tokens


@pytest.mark.parametrize(
    ("message", "label"),
    [
        ("Write a test for parse_date().", "code"),
        ("Why does `make lint` fail?", "code"),
        ("I get a KeyError in the loader", "code"),
        ("the deploy script breaks after the docker build", "code"),
        ("hi!", "chit-chat"),
        ("Thanks, that was helpful", "chit-chat"),
        ("good morning", "chit-chat"),
        ("When is my dentist appointment?", "lookup"),
        ("Which city does Ana live in?", "lookup"),
        ("Draft an email to the landlord about the heating.", "task"),
        ("Plan a three-day trip to Porto", "task"),
        ("Great, now draft the release notes for Friday", "task"),
        ("Can you write a poem about rain?", "task"),
        ("please summarize the meeting", "task"),
        ("Is the build green?", "lookup"),
        ("The weather was nice today", "task"),
        ("my sister's birthday?", "lookup"),
    ],
)
def test_rule_based_labels(message: str, label: str) -> None:
    assert classify_query(message) == label


def test_a_short_follow_up_takes_the_label_of_the_recent_turn() -> None:
    assert classify_query("and the other one?") == "lookup"
    assert classify_query("and the other one?", ["Fix the flaky test in utils.py"]) == "code"
    assert classify_query("why?", ["hello", "Summarize the meeting notes"]) == "task"
    # Small talk earlier does not make a new question small talk.
    assert classify_query("and tomorrow?", ["hi"]) == "lookup"
    # A message with its own marks ignores the history.
    assert classify_query("hi", ["Fix the bug in utils.py"]) == "chit-chat"


def test_the_caller_hook_sees_the_message_and_the_last_user_turns() -> None:
    seen: list[tuple[str, tuple[str, ...]]] = []

    def mine(message: str, recent: Sequence[str]) -> str:
        seen.append((message, tuple(recent)))
        return "  billing "

    profile = MembraneProfile(name="mine", classifier=mine, classifier_history=2)
    history = [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "reply"},
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": "reply"},
        {"role": "user", "content": "three"},
        {"role": "assistant", "content": "reply"},
    ]
    label = profile.classify("four", history)
    assert label is not None
    assert (label.label, label.effect) == ("billing", None)
    assert seen == [("four", ("two", "three"))]
    result = ContextCompiler(2000).compile(
        [], "four", conversation_messages=history, profile=profile
    )
    assert result.metadata["query_label"] == "billing"
    assert result.metadata["query_label_effect"] is None


@pytest.mark.parametrize("bad", [None, "", "two\nlines", 3])
def test_a_classifier_must_return_a_one_line_label(bad: object) -> None:
    profile = MembraneProfile(classifier=lambda _m, _r: bad)  # type: ignore[arg-type, return-value]
    with pytest.raises(InvalidInputError) as info:
        ContextCompiler(2000).compile([], "hi", profile=profile)
    assert info.value.field == "classifier"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"tier_order": (1, 2)}, "tier_order"),
        ({"tier_order": (1, 1, 2)}, "tier_order"),
        ({"memory_share": 0.0}, "memory_share"),
        ({"memory_share": 1.5}, "memory_share"),
        ({"memory_share": True}, "memory_share"),
    ],
)
def test_label_effect_validation(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        LabelEffect(**kwargs)  # type: ignore[arg-type]
    assert info.value.field == field


def test_profile_classifier_settings_are_checked() -> None:
    with pytest.raises(InvalidInputError) as info:
        MembraneProfile(label_effects={"code": LabelEffect()})
    assert info.value.field == "label_effects"
    with pytest.raises(InvalidInputError) as info:
        MembraneProfile(classifier=classify_query, label_effects={"code": "x"})  # type: ignore[dict-item]
    assert info.value.field == "label_effects"
    with pytest.raises(InvalidInputError) as info:
        MembraneProfile(classifier=classify_query, classifier_history=-1)
    assert info.value.field == "classifier_history"
    with pytest.raises(TypeError, match="classifier must be callable"):
        MembraneProfile(classifier="rules")  # type: ignore[arg-type]


# ------------------------------------------------------------------ effect on the compiled bytes

FACTS = [
    MemoryItem(id=f"fact-{i}", content=f"Fact {i}: the staging cluster node {i} runs in rack {i}.")
    for i in range(12)
]


def _fixed(label: str) -> MembraneProfile:
    return MembraneProfile(
        name="fixed",
        classifier=lambda _m, _r: label,
        label_effects={"chit-chat": LabelEffect(memory_share=0.1)},
    )


def test_a_label_with_a_memory_share_keeps_fewer_memories_in_the_bytes() -> None:
    budget = 1000
    compiler = ContextCompiler(budget, core_content="Be brief.")
    code = compiler.compile(FACTS, "hello there", profile=_fixed("code"))
    chat = compiler.compile(FACTS, "hello there", profile=_fixed("chit-chat"))
    # "code" has no effect here: every memory fits, exactly as without a profile.
    plain = compiler.compile(FACTS, "hello there")
    assert code.messages == plain.messages
    assert len(code.ref_map) == 12
    # "chit-chat" may give memories only 10% of the budget.
    assert 0 < len(chat.ref_map) < 12
    memory_lines = [line for line in chat.messages[-1]["content"].split("\n") if "[Mem:" in line]
    assert sum(count_tokens(line) + 1 for line in memory_lines) <= budget // 10
    assert chat.metadata["query_label"] == "chit-chat"
    assert chat.metadata["query_label_effect"] == {"tier_order": [1, 2, 3], "memory_share": 0.1}
    assert chat.messages[0] == code.messages[0]  # the cached prefix does not move


def test_a_label_with_a_tier_order_keeps_facts_over_procedures_under_pressure() -> None:
    vocabulary = (
        "alpha beta gamma delta river mountain invoice shipping order refund cluster latency "
        "budget cache token paris lagos tuesday amber cobalt"
    )
    words = vocabulary.split()

    def body(start: int) -> str:
        return " ".join(words[(start + j) % 20] for j in range(30))

    memories = [
        MemoryItem(id=f"proc-{i}", content=body(i), memory_type="procedural") for i in range(3)
    ]
    memories += [MemoryItem(id=f"fact-{i}", content=body(3 * i)) for i in range(3)]
    profile = MembraneProfile(
        name="lookup-facts",
        classifier=lambda _m, _r: "lookup",
        label_effects={"lookup": LabelEffect(tier_order=(2, 1, 3))},
    )
    compiler = ContextCompiler(
        180, core_content="Be brief.", include_interrupt_instruction=False, thin_before_drop=False
    )
    plain = compiler.compile(memories, "Where?")
    shaped = compiler.compile(memories, "Where?", profile=profile)
    assert sorted(plain.ref_map.values()) == ["proc-0", "proc-1", "proc-2"]
    assert sorted(shaped.ref_map.values()) == ["fact-0", "fact-1", "fact-2"]
    assert shaped.metadata["query_label_effect"] == {"tier_order": [2, 1, 3], "memory_share": None}
    assert all(f"[Mem:{n}] [fact]" in shaped.messages[-1]["content"] for n in (4, 5, 6))


def test_presets_classify_small_talk_and_shrink_the_memories() -> None:
    compiler = ContextCompiler(1500, core_content="Be brief.")
    many = FACTS * 1 + [
        MemoryItem(
            id=f"ep-{i}",
            content=f"On day {i} the user hiked a trail near lake {i}.",
            memory_type="episodic",
        )
        for i in range(12)
    ]
    chat = compiler.compile(many, "hi, how are you?", profile=MembraneProfile.conversational())
    task = compiler.compile(many, "Plan my weekend.", profile=MembraneProfile.conversational())
    assert chat.metadata["query_label"] == "chit-chat"
    assert task.metadata["query_label"] == "task"
    assert len(chat.ref_map) < len(task.ref_map)
    # conversational keeps at most 8 episodes whatever the label
    assert sum(1 for ref in task.ref_map.values() if ref.startswith("ep-")) == 8
