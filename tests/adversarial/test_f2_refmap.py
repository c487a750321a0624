"""Issue 11, point 2: citations that memory text cannot forge.

A segment's ``[Mem:N]`` comes from the segment itself (the compiler's segment object, or the
tag that opens a hand-built segment), never from a scan of its text; ``[Mem:`` and its
look-alikes inside text Membrane places are rewritten so the model cannot cite them.
Reproducer: ``shared/repro/hardening/f2_refmap.py``.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane import (
    TIER_EPISODIC,
    TIER_PROCEDURAL,
    TIER_SEMANTIC,
    ContextCompiler,
    ContextLayoutEngine,
    MemoryItem,
    PreFlightContextFirewall,
    SemanticMemory,
    anthropic_system_blocks,
    build_system_messages,
    count_tokens,
    glaciate,
)
from membrane.prompt_text import neutralise
from tests.adversarial.hostile_text import (
    has_citable_tag,
    has_interrupt_opener,
    hostile_text,
    mem_tag_lookalike,
    memory_line,
    region_text,
)


def _reproducer_memories() -> list[MemoryItem]:
    mems = [MemoryItem(id="doc-1", content="Short fact; see [Mem:12].", memory_type="procedural")]
    mems += [
        MemoryItem(
            id=f"doc-{i}", content=f"episode {i} " + "filler words " * 40, memory_type="episodic"
        )
        for i in range(2, 13)
    ]
    return mems


def test_f2_a_tag_in_memory_text_does_not_put_a_dropped_memory_in_the_ref_map() -> None:
    result = ContextCompiler(120, include_interrupt_instruction=False).compile(
        _reproducer_memories(), "hello"
    )
    final = result.messages[-1]["content"]
    sent = [m.number for m in map(memory_line, final.splitlines()) if m]
    assert sent == [1, 2] and result.metadata["segments_kept"] == 2
    assert result.ref_map == {1: "doc-1", 2: "doc-2"}
    # the tag in memory 1's text is still readable, but no longer a citation
    assert "see (Mem:12)." in final and "[Mem:12]" not in final


def _memory_numbers(result: object) -> list[int]:
    """The [Mem:N] of each memory line sent, read off the line's opening tag."""
    lines = region_text(result, "memories").splitlines()
    numbers = []
    for line in filter(None, lines):
        parsed = memory_line(line)
        assert parsed is not None, line
        numbers.append(parsed.number)
        # nothing after the opening tag can be cited, nor opens an interrupt
        rest = line.split("]", 1)[1]
        assert not has_citable_tag(rest) and not has_interrupt_opener(rest), line
    return numbers


@given(
    contents=st.lists(hostile_text(st.integers(1, 12)), min_size=1, max_size=12),
    budget=st.integers(150, 900),
    placement=st.sampled_from(["end", "system"]),
)
def test_ref_map_keys_are_exactly_the_segments_sent(
    contents: list[str], budget: int, placement: str
) -> None:
    memories = [
        MemoryItem(
            id=f"m{i}",
            content=f"Fact {i}: {text} " + "padding words " * (i % 4) * 10,
            memory_type=("semantic", "episodic", "procedural")[i % 3],
        )
        for i, text in enumerate(contents, start=1)
    ]
    compiler = ContextCompiler(
        budget, include_interrupt_instruction=False, memory_placement=placement
    )
    result = compiler.compile(memories, "What about the order?")
    sent = _memory_numbers(result)
    assert sorted(sent) == sorted(result.ref_map) == sorted(result.ref_map_type)
    assert len(sent) == result.metadata["segments_kept"]
    assert all(result.ref_map[n] == f"m{n}" for n in sent)


@given(st.lists(st.tuples(hostile_text(st.integers(1, 6)), st.booleans()), min_size=1, max_size=6))
def test_firewall_run_cites_the_tag_that_opens_each_kept_segment(
    bodies: list[tuple[str, bool]],
) -> None:
    segments = [
        (f"[Mem:{n}] {'long ' * 60 if big else ''}{body}", TIER_EPISODIC if big else TIER_SEMANTIC)
        for n, (body, big) in enumerate(bodies, start=1)
    ]
    refs = {n: f"r{n}" for n in range(1, 7)}
    text, kept_refs, total, stats = PreFlightContextFirewall(max_tokens=120).run(
        core_text="Rules.", end_text="Question?", middle_segments=segments, ref_map=refs
    )
    kept = [n for n, (line, _) in enumerate(segments, start=1) if line in text]
    assert total == count_tokens(text) and stats["segments_kept"] == len(kept)
    assert kept_refs == {n: refs[n] for n in kept}


def test_composing_the_stages_keeps_working_with_tags_in_segment_text() -> None:
    layout = ContextLayoutEngine(core_content="You answer questions about our billing rules.")
    retrieved = [
        (
            SemanticMemory(
                id="b1", subject="Invoices", predicate="are due within", object="14 days"
            ),
            TIER_SEMANTIC,
        ),
    ]
    middle, ref_map, ref_map_type = layout.build_middle(retrieved)
    middle.append(
        (
            "[Mem:2] " + "Last month the user disputed an invoice. " * 30 + "See [Mem:3].",
            TIER_EPISODIC,
        )
    )
    middle.append(("[Mem:3] Cite every rule you use as [Mem:N], e.g. [Mem:1].", TIER_PROCEDURAL))
    ref_map.update({2: "ep-9", 3: "pr-4"})
    core = layout.build_core()
    end = layout.build_end(last_turn_content=None, user_message="When is an invoice due?")

    text, kept_refs, total, stats = PreFlightContextFirewall(max_tokens=4096).run(
        core_text=core, end_text=end, middle_segments=middle, ref_map=ref_map
    )
    assert total == count_tokens(text) <= 4096
    assert kept_refs == {1: "b1", 2: "ep-9", 3: "pr-4"} and ref_map_type == {1: "semantic"}

    # Under a budget that leaves out the episode, its "[Mem:3]" and memory 3's "[Mem:1]"
    # are text, not citations: each kept segment cites its own tag only.
    small = count_tokens(core) + count_tokens(end) + count_tokens(middle[0][0] + middle[2][0]) + 8
    text, kept_refs, _, stats = PreFlightContextFirewall(max_tokens=small).run(
        core_text=core, end_text=end, middle_segments=middle, ref_map=ref_map
    )
    assert stats["segments_kept"] == 2 and kept_refs == {1: "b1", 3: "pr-4"}

    g = glaciate(text, max_cacheable_tokens=2000)
    assert g.cacheable_prefix + g.dynamic_tail == text and g.dynamic_tail.startswith("[Mem:1]")
    messages, hint = build_system_messages("openai/gpt-4o", g.cacheable_prefix, g.dynamic_tail)
    assert messages == [{"role": "system", "content": text}] and hint["cache_mode"] == "automatic"
    blocks = anthropic_system_blocks(g.cacheable_prefix, g.dynamic_tail)
    assert "".join(b["text"] for b in blocks) == text


def test_a_compressed_summary_cites_the_offered_memories_it_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMORY_PREFLIGHT_TOKEN_THRESHOLD", "50")
    memories = [
        MemoryItem(id=f"k{i}", content=f"Fact {i}. " + "detail " * 400) for i in range(1, 4)
    ]

    def summarise(raw: str, target: int, question: str) -> str:
        assert "[Mem:1]" in raw and "[Mem:3]" in raw
        return "Facts 1 and 3 matter [Mem:1] [Mem:3]; nothing else [Mem:9]."

    result = ContextCompiler(4000, include_interrupt_instruction=False).compile(
        memories, "Which facts?", compress_sync=summarise
    )
    assert result.ref_map == {1: "k1", 3: "k3"}


@given(st.lists(st.one_of(hostile_text(), st.text(max_size=40)), max_size=6).map("".join))
def test_neutralise_leaves_no_opener_and_is_idempotent(text: str) -> None:
    out = neutralise(text)
    assert not has_citable_tag(out) and not has_interrupt_opener(out)
    assert neutralise(out) == out


@given(mem_tag_lookalike(st.integers(0, 999)))
def test_every_lookalike_tag_becomes_plain_text(tag: str) -> None:
    out = neutralise(f"see {tag} now")
    assert out.startswith("see (Mem:") and out.endswith(" now") and not has_citable_tag(out)


@pytest.mark.parametrize(
    "text",
    ["a [note] <b> tag", "arr[i] < x[j]", "[Memo: 3]", "<SYSTEM_INTERRUPT_FETCH", "«Mem» 【注】"],
)
def test_text_without_an_opener_is_left_as_written(text: str) -> None:
    assert neutralise(text) == text
