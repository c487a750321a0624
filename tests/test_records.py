"""Memory records: validation, tiers, typed records, rendering and text caps."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane import records
from membrane.errors import InvalidInputError
from membrane.records import (
    DEFAULT_TEXT_CAPS,
    TIER_EPISODIC,
    TIER_PROCEDURAL,
    TIER_SEMANTIC,
    EpisodicMemory,
    KernelMemoryObject,
    KernelMemoryRecord,
    MemoryItem,
    MemoryKind,
    ProceduralMemory,
    SemanticMemory,
    load_kernel_memory_json_schema,
    memory_body,
    memory_id,
    memory_kind,
    memory_tier,
)


def _text_of(body: str) -> str:
    return body.split(" | text=", 1)[1].rsplit(" | conf=", 1)[0]


# ---------------------------------------------------------------- MemoryItem


def test_memory_item_defaults() -> None:
    item = MemoryItem(id="m1", content="Prefers tea.")
    assert (item.memory_type, item.priority, item.kind, item.confidence) == (
        "semantic",
        TIER_SEMANTIC,
        "note",
        1.0,
    )
    assert item.memory_kind == "semantic"
    assert item.metadata == {}


@pytest.mark.parametrize(
    ("kind", "tier"),
    [("procedural", TIER_PROCEDURAL), ("semantic", TIER_SEMANTIC), ("episodic", TIER_EPISODIC)],
)
def test_priority_defaults_to_the_kind_tier(kind: str, tier: int) -> None:
    item = MemoryItem(id="m", content="x", memory_type=kind)  # type: ignore[arg-type]
    assert item.priority == tier
    assert memory_tier(item) == tier


def test_explicit_priority_wins() -> None:
    item = MemoryItem(id="m", content="x", memory_type="episodic", priority=1)
    assert memory_tier(item) == 1
    assert memory_kind(item) == "episodic"


def test_memory_item_is_frozen_and_metadata_does_not_affect_equality() -> None:
    a = MemoryItem(id="m", content="x", metadata={"source": "crm"})
    b = MemoryItem(id="m", content="x", metadata={"source": "wiki"})
    assert a == b and hash(a) == hash(b)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.content = "y"  # type: ignore[misc]


def test_tier_constants() -> None:
    assert (TIER_PROCEDURAL, TIER_SEMANTIC, TIER_EPISODIC) == (1, 2, 3)


# ---------------------------------------------------------------- typed records


def test_typed_records_render_their_content_and_kind() -> None:
    fact = SemanticMemory(id="s", subject="Membrane", predicate="license", object="Apache-2.0")
    event = EpisodicMemory(id="e", summary="User compared compilers.", occurred_at="2025-03-02")
    undated = EpisodicMemory(id="e2", summary="User said hi.")
    howto = ProceduralMemory(id="p", instruction="Run the tests first.", name="Before merging")
    bare = ProceduralMemory(id="p2", instruction="Cite sources.")
    assert fact.content == "Membrane license: Apache-2.0"
    assert event.content == "(2025-03-02) User compared compilers."
    assert undated.content == "User said hi."
    assert howto.content == "Before merging: Run the tests first."
    assert bare.content == "Cite sources."
    assert [r.memory_kind for r in (fact, event, howto)] == ["semantic", "episodic", "procedural"]
    assert [memory_tier(r) for r in (fact, event, howto)] == [2, 3, 1]


def test_protocol_is_structural() -> None:
    assert isinstance(MemoryItem(id="m", content="x"), KernelMemoryRecord)
    assert isinstance(
        SemanticMemory(id="s", subject="a", predicate="b", object="c"), KernelMemoryRecord
    )
    assert isinstance(SimpleNamespace(id="n", memory_kind="episodic"), KernelMemoryRecord)
    assert not isinstance(SimpleNamespace(id="n"), KernelMemoryRecord)


def test_foreign_records() -> None:
    record = KernelMemoryObject(id="k", memory_kind="Procedural", content="Do X.")
    assert memory_kind(record) == "procedural"
    assert memory_tier(record) == TIER_PROCEDURAL
    odd = KernelMemoryObject(id="k2", memory_kind="preference", content="Likes jazz.")
    assert memory_kind(odd) == "semantic"
    with_bad_priority = SimpleNamespace(id="k3", memory_kind="episodic", priority=9, content="x")
    assert memory_tier(with_bad_priority) == TIER_EPISODIC
    assert memory_id(SimpleNamespace(id=42)) == "42"
    with pytest.raises(InvalidInputError):
        memory_id(SimpleNamespace(id=""))
    with pytest.raises(InvalidInputError):
        memory_kind(SimpleNamespace(id="x"))


def test_schema_is_a_fresh_copy_each_call() -> None:
    schema = load_kernel_memory_json_schema()
    assert schema["required"] == ["id", "memory_kind"]
    assert schema["properties"]["memory_kind"]["enum"] == ["semantic", "episodic", "procedural"]
    schema["required"].append("mutated")
    assert load_kernel_memory_json_schema()["required"] == ["id", "memory_kind"]


# ---------------------------------------------------------------- rendering


def test_memory_body_format() -> None:
    item = MemoryItem(id="m", content="Likes  short\nanswers.", kind="preference", confidence=0.5)
    assert memory_body(item) == (
        "[fact] kind=preference | text=Likes short answers. | conf=0.50",
        False,
    )
    episode = MemoryItem(id="e", content="Met on Monday.", memory_type="episodic")
    assert memory_body(episode)[0] == "[episode] kind=note | text=Met on Monday. | conf=1.00"
    step = ProceduralMemory(id="p", instruction="Say hello.")
    assert memory_body(step)[0] == "[procedure] kind=note | text=Say hello. | conf=1.00"
    odd = SimpleNamespace(id="o", memory_kind="semantic", content="x", confidence="high")
    assert memory_body(odd)[0].endswith("| conf=1.00")


@given(
    content=st.text(max_size=300),
    kind=st.sampled_from(["semantic", "episodic", "procedural"]),
    note_kind=st.sampled_from(["note", "preference", ""]),
    confidence=st.sampled_from([1.0, 0.5, 0.0, -0.0, 0.004999, 0.005]),
    cap=st.sampled_from([None, 5, 50, 200]),
)
def test_memoised_memory_body_equals_the_plain_rendering(
    content: str, kind: MemoryKind, note_kind: str, confidence: float, cap: int | None
) -> None:
    item = MemoryItem(
        id="m", content=content, memory_type=kind, kind=note_kind, confidence=confidence
    )
    caps = dict.fromkeys(DEFAULT_TEXT_CAPS, cap)
    expected = records._body(kind, content, note_kind, confidence, cap)
    for _ in range(2):  # the second call may be answered from the memo
        assert memory_body(item, caps) == expected
    assert expected[0].endswith(f"conf={confidence:.2f}")  # "-0.00" stays "-0.00"


def test_a_record_without_any_text_says_what_is_missing() -> None:
    with pytest.raises(InvalidInputError) as info:
        memory_body(SimpleNamespace(id="o", memory_kind="semantic"))
    message = str(info.value)
    assert info.value.field == "memories"
    assert "'o'" in message and "(semantic)" in message
    for name in ("`content`", "`subject`", "`summary`", "`instruction`"):
        assert name in message


@pytest.mark.parametrize(
    ("record", "text"),
    [
        (
            SimpleNamespace(
                id="f", memory_kind="semantic", subject="Ada", predicate="likes", object="tea"
            ),
            "Ada likes: tea",
        ),
        (
            SimpleNamespace(
                id="e", memory_kind="episodic", summary="Met Bo.", occurred_at="2026-05-01"
            ),
            "(2026-05-01) Met Bo.",
        ),
        (
            SimpleNamespace(id="p", memory_kind="procedural", instruction="Run it.", name="deploy"),
            "deploy: Run it.",
        ),
        (
            SimpleNamespace(id="c", memory_kind="episodic", content="Given.", summary="Ignored."),
            "Given.",
        ),
    ],
)
def test_a_protocol_record_is_rendered_from_its_schema_fields(record: object, text: str) -> None:
    body, cut = memory_body(record)
    assert f"text={text} |" in body and not cut


def test_a_protocol_record_compiles_and_maps_back_to_its_id() -> None:
    from membrane import ContextCompiler

    record = SimpleNamespace(id="kb-9", memory_kind="procedural", instruction="Restart the pod.")
    result = ContextCompiler(1024).compile([record], "How do I fix it?")
    assert result.ref_map == {1: "kb-9"} and result.ref_map_type == {1: "procedural"}
    assert "[Mem:1] [procedure] kind=note | text=Restart the pod." in str(result.messages[-1])


def test_typed_records_read_like_the_same_fields_on_a_plain_object() -> None:
    typed = SemanticMemory(id="s", subject="a", predicate="b", object="c")
    plain = SimpleNamespace(id="s", memory_kind="semantic", subject="a", predicate="b", object="c")
    assert memory_body(typed) == memory_body(plain)


@pytest.mark.parametrize("kind", ["semantic", "episodic", "procedural"])
def test_default_caps(kind: str) -> None:
    cap = DEFAULT_TEXT_CAPS[kind]
    exact = "a" * cap
    body, cut = memory_body(MemoryItem(id="m", content=exact, memory_type=kind))  # type: ignore[arg-type]
    assert (_text_of(body), cut) == (exact, False)
    longer = "word " * cap
    body, cut = memory_body(MemoryItem(id="m", content=longer, memory_type=kind))  # type: ignore[arg-type]
    assert cut is True
    assert len(_text_of(body)) <= cap
    assert _text_of(body).endswith("word…")


@given(
    words=st.lists(st.text("abcdefgh", min_size=1, max_size=12), min_size=1, max_size=80),
    cap=st.integers(2, 300),
)
def test_env_cap_property(words: list[str], cap: int) -> None:
    content = " ".join(words)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEMBRANE_MEMORY_TEXT_MAX_CHARS", str(cap))
        body, cut = memory_body(MemoryItem(id="m", content=content))
    text = _text_of(body)
    assert cut == (len(content) > cap)
    assert len(text) <= cap
    if cut:
        assert text.endswith("…")
        assert content.startswith(text[:-1])
        assert len(text) > cap // 2
    else:
        assert text == content


def test_env_cap_of_one_character_is_respected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBRANE_MEMORY_TEXT_MAX_CHARS", "1")
    body, cut = memory_body(MemoryItem(id="m", content="Hello"))
    assert cut is True
    assert len(_text_of(body)) <= 1


def test_env_cap_zero_means_no_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBRANE_MEMORY_TEXT_MAX_CHARS", "0")
    content = "x" * 5000
    body, cut = memory_body(MemoryItem(id="m", content=content, memory_type="episodic"))
    assert (_text_of(body), cut) == (content, False)


def test_env_cap_must_be_an_integer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBRANE_MEMORY_TEXT_MAX_CHARS", "lots")
    with pytest.raises(ValueError, match="MEMBRANE_MEMORY_TEXT_MAX_CHARS"):
        memory_body(MemoryItem(id="m", content="x"))
