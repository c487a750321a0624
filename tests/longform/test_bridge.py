from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from membrane.errors import InvalidInputError
from membrane.longform import (
    DEFAULT_SECTION_TIERS,
    BlockLabels,
    ChapterSummary,
    Entity,
    LongformStore,
    ScoredRow,
    SectionInput,
    default_item_key,
    encode_vector,
    fit_sections,
    to_memory_items,
    to_middle_extras,
)
from membrane.records import TIER_EPISODIC, TIER_SEMANTIC, MemoryItem


def chapter_text(c: ChapterSummary) -> str:
    return f"Ch.{c.number}: {c.summary}"


def small_block():  # type: ignore[no-untyped-def]
    return fit_sections(
        entity=SectionInput(
            [Entity("Mara", "captain, wounded"), Entity("Ilse", "navigator")],
            lambda e: f"{e.name}: {e.description}",
        ),
        recent=SectionInput(
            [ChapterSummary(12, "The mast breaks."), ChapterSummary(11, "A storm rises.")],
            chapter_text,
        ),
        skeleton=SectionInput([ChapterSummary(1, "Mara signs on.")], chapter_text),
        retrieval=SectionInput(
            [ScoredRow(ChapterSummary(4, "The map is stolen."), 0.91)],
            lambda hit: chapter_text(hit.row),
        ),
        total=500,
    )


def test_tiers_match_the_compiler_constants() -> None:
    assert DEFAULT_SECTION_TIERS == {
        "entity": TIER_SEMANTIC,
        "recent": TIER_SEMANTIC,
        "skeleton": TIER_EPISODIC,
        "retrieval": TIER_EPISODIC,
    }


def test_memory_items_one_per_kept_item() -> None:
    items = to_memory_items(small_block())
    assert [(m.id, m.content, m.memory_type, m.priority, m.kind) for m in items] == [
        ("longform:entity:Mara", "Mara: captain, wounded", "semantic", 2, "entity"),
        ("longform:entity:Ilse", "Ilse: navigator", "semantic", 2, "entity"),
        ("longform:skeleton:ch1", "Ch.1: Mara signs on.", "episodic", 3, "story so far"),
        ("longform:retrieval:ch4", "Ch.4: The map is stolen.", "episodic", 3, "related chapter"),
        ("longform:recent:ch12", "Ch.12: The mast breaks.", "episodic", 2, "recent chapter"),
        ("longform:recent:ch11", "Ch.11: A storm rises.", "episodic", 2, "recent chapter"),
    ]
    assert all(isinstance(m, MemoryItem) for m in items)
    assert items[0].metadata == {"longform_section": "entity", "fitted_tokens": 6}
    assert items[3].metadata == {"longform_section": "retrieval", "fitted_tokens": 6, "chapter": 4}


def test_ids_are_stable_across_calls_and_unique() -> None:
    first = [m.id for m in to_memory_items(small_block())]
    assert first == [m.id for m in to_memory_items(small_block())]
    doubled = fit_sections(
        entity=SectionInput(["same text", "same text", "other"], str),
        recent=SectionInput([], str),
        skeleton=SectionInput([], str),
        retrieval=SectionInput([], str),
        total=200,
    )
    ids = [m.id for m in to_memory_items(doubled)]
    assert len(set(ids)) == 3
    assert ids[1] == ids[0] + "~2"


def test_default_item_key() -> None:
    assert default_item_key("recent", ChapterSummary(7, "x"), "x") == "ch7"
    assert default_item_key("entity", Entity("Old  Tom", "cook"), "x") == "Old Tom"
    assert default_item_key("retrieval", ScoredRow(ChapterSummary(9, "y"), 0.5), "y") == "ch9"
    hashed = default_item_key("entity", "plain", "plain text")
    assert hashed.startswith("h") and len(hashed) == 17
    assert hashed == default_item_key("skeleton", object(), "plain text")


def test_custom_key_namespace_and_tiers() -> None:
    tiers = {"entity": 1, "recent": 2, "skeleton": 3, "retrieval": 3}
    items = to_memory_items(
        small_block(),
        namespace="book-7",
        key=lambda section, item, text: str(len(text)),
        tiers=tiers,  # type: ignore[arg-type]
    )
    assert items[0].id == "book-7:entity:22"
    assert items[0].priority == 1


def test_bad_tiers_and_inputs_are_refused() -> None:
    with pytest.raises(InvalidInputError):
        to_memory_items(small_block(), tiers={"entity": 4})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="BudgetResult or a MemoryBlock"):
        to_memory_items("not a block")  # type: ignore[arg-type]


def test_middle_extras_one_segment_per_section() -> None:
    assert to_middle_extras(small_block()) == [
        (
            "## Characters, places and things\nMara: captain, wounded\nIlse: navigator",
            TIER_SEMANTIC,
        ),
        ("## The story so far\nCh.1: Mara signs on.", TIER_EPISODIC),
        ("## Earlier chapters related to this one\nCh.4: The map is stolen.", TIER_EPISODIC),
        (
            "## The latest chapters\nCh.12: The mast breaks.\nCh.11: A storm rises.",
            TIER_SEMANTIC,
        ),
    ]
    custom = to_middle_extras(small_block(), labels=BlockLabels(skeleton="## Arc"))
    assert custom[1][0].startswith("## Arc\n")


@pytest.fixture
def book(tmp_path: Path) -> Iterator[LongformStore]:
    with LongformStore(tmp_path / "bridge.db") as store:
        store.put_chapters(
            ChapterSummary(n, f"Event {n} happens at sea.", embedding=encode_vector([1.0, n % 3]))
            for n in range(1, 61)
        )
        store.put_entity("Mara", "captain", importance=3)
        yield store


def test_a_store_block_converts_in_reading_order(book: LongformStore) -> None:
    block = book.memory_block(60, total=1500, query_embedding=[1.0, 0.0])
    items = to_memory_items(block)
    recent = [m.metadata["chapter"] for m in items if m.metadata["longform_section"] == "recent"]
    assert recent == list(range(40, 60))
    assert [m.content for m in items if m.id.startswith("longform:entity:")] == ["Mara: captain"]
    extras = to_middle_extras(block)
    assert extras[-1][0].startswith(block.labels.recent + "\nCh.40: ")
    # Each section's segment carries exactly the lines the block renders.
    assert "\n\n".join(text for text, _ in extras) + "\n" == block.render()


def test_the_compiler_accepts_the_bridge_output(book: LongformStore) -> None:
    from membrane.compiler import ContextCompiler

    block = book.memory_block(60, total=1500, query_embedding=[1.0, 0.0])
    memories = to_memory_items(block)
    compiler = ContextCompiler(max_tokens=8000, core_content="You write the next chapter.")
    result = compiler.compile(memories=memories, user_message="Write chapter 60.")
    assert list(result.ref_map.values()) == [m.id for m in memories]
    prompt = "\n".join(str(message.get("content", "")) for message in result.messages)
    assert "Ch.59: Event 59 happens at sea." in prompt
    assert result.metadata["token_count"] <= result.metadata["tokens_budget"]
    assert result.metadata["budget_exceeded"] is False
    assert result.metadata["tokens_trimmed"] == 0

    as_segments = compiler.compile(
        memories=[], user_message="Write chapter 60.", middle_extras=to_middle_extras(block)
    )
    segment_prompt = "\n".join(str(m.get("content", "")) for m in as_segments.messages)
    assert block.labels.recent in segment_prompt
    assert "Ch.59: Event 59 happens at sea." in segment_prompt


def test_under_pressure_the_compiler_sheds_background_before_continuity(
    book: LongformStore,
) -> None:
    from membrane.compiler import ContextCompiler

    block = book.memory_block(60, total=1500, query_embedding=[1.0, 0.0])
    memories = to_memory_items(block)
    tier_of = {m.id: m.priority for m in memories}
    for max_tokens in (300, 450, 600, 900):
        compiler = ContextCompiler(max_tokens=max_tokens, core_content="Write the next chapter.")
        result = compiler.compile(memories=memories, user_message="Write chapter 60.")
        assert result.metadata["token_count"] <= max_tokens
        kept = set(result.ref_map.values())
        dropped_continuity = any(tier_of[i] == TIER_SEMANTIC and i not in kept for i in tier_of)
        kept_background = any(tier_of[i] == TIER_EPISODIC for i in kept)
        # Skeleton and retrieval (tier 3) go before any entity or recent chapter (tier 2).
        assert not (dropped_continuity and kept_background)
        assert any(tier_of[i] == TIER_SEMANTIC for i in kept)
