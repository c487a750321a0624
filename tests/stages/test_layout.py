"""Layout: the core, middle and end regions, ``[Mem:N]`` numbering and directives."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from membrane.interrupt import INTERRUPT_INSTRUCTION
from membrane.records import (
    TIER_EPISODIC,
    TIER_PROCEDURAL,
    TIER_SEMANTIC,
    EpisodicMemory,
    MemoryItem,
    SemanticMemory,
)
from membrane.stages.layout import (
    CURRENT_MESSAGE_HEADER,
    LAST_REPLY_HEADER,
    ContextLayoutEngine,
    format_directives,
    mem_tag,
    render_memories,
)


def test_mem_tag() -> None:
    assert mem_tag(1) == "[Mem:1]"
    assert mem_tag(42) == "[Mem:42]"


def test_render_memories_numbers_in_input_order() -> None:
    pairs = [
        (MemoryItem(id="a", content="Alpha."), TIER_EPISODIC),
        (EpisodicMemory(id="b", summary="Beta happened.", occurred_at="May"), TIER_PROCEDURAL),
        (SimpleNamespace(id=7, memory_kind="procedural", content="Gamma."), TIER_SEMANTIC),
    ]
    segments = render_memories(pairs, start_number=5)
    assert [s.number for s in segments] == [5, 6, 7]
    assert [s.position for s in segments] == [0, 1, 2]
    assert [s.ref_id for s in segments] == ["a", "b", "7"]
    assert [s.kind for s in segments] == ["semantic", "episodic", "procedural"]
    # The tier comes from the pair, not from the record.
    assert [s.tier for s in segments] == [TIER_EPISODIC, TIER_PROCEDURAL, TIER_SEMANTIC]
    assert segments[0].line == "[Mem:5] [fact] kind=note | text=Alpha. | conf=1.00"
    assert segments[1].line == "[Mem:6] [episode] kind=note | text=(May) Beta happened. | conf=1.00"
    assert segments[1].content == "(May) Beta happened."
    assert not any(s.truncated for s in segments)


def test_render_memories_flags_truncation() -> None:
    [segment] = render_memories([(MemoryItem(id="a", content="word " * 100), TIER_SEMANTIC)])
    assert segment.truncated
    assert segment.content == "word " * 100
    assert segment.line.endswith("… | conf=1.00")


def test_build_middle() -> None:
    layout = ContextLayoutEngine()
    retrieved = [
        (SemanticMemory(id="s1", subject="Tea", predicate="origin", object="China"), TIER_SEMANTIC),
        (MemoryItem(id="p1", content="Steep for 3 minutes.", memory_type="procedural"), 1),
    ]
    middle, ref_map, ref_map_type = layout.build_middle(retrieved)
    assert middle == [
        ("[Mem:1] [fact] kind=note | text=Tea origin: China | conf=1.00", TIER_SEMANTIC),
        ("[Mem:2] [procedure] kind=note | text=Steep for 3 minutes. | conf=1.00", 1),
    ]
    assert ref_map == {1: "s1", 2: "p1"}
    assert ref_map_type == {1: "semantic", 2: "procedural"}
    later, refs, _ = layout.build_middle(retrieved[:1], start_number=10)
    assert later[0][0].startswith("[Mem:10] ")
    assert refs == {10: "s1"}
    assert layout.build_middle([]) == ([], {}, {})


def test_build_core_parts_in_order() -> None:
    full = ContextLayoutEngine("  Rules.  ", agent_persona_prompt="Persona.")
    assert full.build_core() == f"Rules.\n\nPersona.\n\n{INTERRUPT_INSTRUCTION}"
    quiet = ContextLayoutEngine("Rules.", include_interrupt_instruction=False)
    assert quiet.build_core() == "Rules."
    assert ContextLayoutEngine(include_interrupt_instruction=False).build_core() == ""
    assert ContextLayoutEngine().build_core() == INTERRUPT_INSTRUCTION
    blank_persona = ContextLayoutEngine(
        "R.", agent_persona_prompt="   ", include_interrupt_instruction=False
    )
    assert blank_persona.build_core() == "R."


def test_build_end() -> None:
    layout = ContextLayoutEngine()
    assert layout.build_end(None, "Hi?") == f"{CURRENT_MESSAGE_HEADER}\nHi?"
    assert layout.build_end("", "Hi?") == f"{CURRENT_MESSAGE_HEADER}\nHi?"
    assert layout.build_end("Earlier.", "Hi?", ["Be brief."]) == (
        f"{LAST_REPLY_HEADER}\nEarlier.\n\n{CURRENT_MESSAGE_HEADER}\nHi?\n\n"
        "<ACTIVE_SYSTEM_DIRECTIVES>\n- Be brief.\n</ACTIVE_SYSTEM_DIRECTIVES>"
    )
    assert layout.build_end(user_message="") == f"{CURRENT_MESSAGE_HEADER}\n"


def test_format_directives() -> None:
    assert format_directives(None) == ""
    assert format_directives("") == ""
    assert format_directives([]) == ""
    assert format_directives(["  ", ""]) == ""
    assert format_directives("  Use metric units.  ") == (
        "<ACTIVE_SYSTEM_DIRECTIVES>\n- Use metric units.\n</ACTIVE_SYSTEM_DIRECTIVES>"
    )
    assert format_directives(("One.", "Two.")) == (
        "<ACTIVE_SYSTEM_DIRECTIVES>\n- One.\n- Two.\n</ACTIVE_SYSTEM_DIRECTIVES>"
    )


@given(
    core=st.text(max_size=40),
    question=st.text(max_size=40),
    directives=st.lists(st.text(max_size=20), max_size=4),
)
def test_regions_always_keep_the_question_and_close_with_directives(
    core: str, question: str, directives: list[str]
) -> None:
    layout = ContextLayoutEngine(core, include_interrupt_instruction=False)
    assert layout.build_core() == core.strip()
    end = layout.build_end(None, question, directives)
    block = format_directives(directives)
    assert end.startswith(f"{CURRENT_MESSAGE_HEADER}\n{question}")
    assert end.endswith(block)
    assert (block == "") == all(not d.strip() for d in directives)
