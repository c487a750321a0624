"""Duplicate removal: normalisation, shingle Jaccard, keep-the-first, and its invariants."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.errors import InvalidInputError
from membrane.profile import (
    Duplicate,
    deduplicate,
    find_duplicates,
    normalized_words,
    shingle_jaccard,
)
from membrane.records import EpisodicMemory, KernelMemoryObject, MemoryItem


def rows(*texts: str) -> list[MemoryItem]:
    return [MemoryItem(id=f"m{i}", content=t) for i, t in enumerate(texts)]


def test_normalized_words() -> None:
    assert normalized_words("  The USER\tprefers\n“concise” answers…") == (
        "the",
        "user",
        "prefers",
        "concise",
        "answers",
    )
    assert normalized_words("ﬁle x[0] a<b f() ...") == ("file", "x[0]", "a<b", "f()", "...")
    assert normalized_words("") == ()


def test_shingle_jaccard_values() -> None:
    assert shingle_jaccard("a b c d", "a b c d") == 1.0
    assert shingle_jaccard("a b c d", "e f g h") == 0.0
    assert shingle_jaccard("", "") == 1.0
    assert shingle_jaccard("", "a") == 0.0
    # 2-shingles {user prefers, prefers concise, concise answers} vs the same plus {the user}.
    assert shingle_jaccard(
        "User prefers concise answers.", "The user prefers concise answers.", 2
    ) == pytest.approx(0.75)
    # 3-shingles: 4 each, 2 shared -> 2 / 6.
    assert shingle_jaccard("a b c d e f", "a b c d x f", 3) == pytest.approx(1 / 3)
    assert shingle_jaccard("a b c d e", "a b c d e f", 3) == pytest.approx(3 / 4)
    # Texts shorter than a shingle are one shingle each.
    assert shingle_jaccard("hello there", "Hello, there!", 3) == 1.0


def test_exact_copies_keep_the_first() -> None:
    memories = rows("Likes tea.", "likes TEA", "Likes coffee.", "  likes   tea!  ")
    assert find_duplicates(memories) == [Duplicate(1, 0, 1.0), Duplicate(3, 0, 1.0)]
    assert [m.id for m in deduplicate(memories)] == ["m0", "m2"]


def test_near_copies_follow_the_threshold() -> None:
    memories = rows("User prefers concise answers.", "The user prefers concise answers.")
    assert deduplicate(memories) == memories  # exact only
    assert [m.id for m in deduplicate(memories, near_threshold=0.75, shingle_size=2)] == ["m0"]
    [found] = find_duplicates(memories, near_threshold=0.75, shingle_size=2)
    assert (found.index, found.kept_index) == (1, 0)
    assert found.similarity == pytest.approx(0.75)
    assert deduplicate(memories, near_threshold=0.76, shingle_size=2) == memories


def test_each_memory_is_compared_with_kept_ones_only() -> None:
    # b is a near copy of a and is dropped; c is near b but not near a, so c stays.
    a = "one two three four five six seven eight"
    b = "one two three four five six seven nine"
    c = "uno dos three four five six seven nine"
    assert shingle_jaccard(a, b, 2) >= 0.75
    assert shingle_jaccard(b, c, 2) >= 0.5 > shingle_jaccard(a, c, 2)
    kept = deduplicate(rows(a, b, c), near_threshold=0.5, shingle_size=2)
    assert [m.id for m in kept] == ["m0", "m2"]


def test_memories_without_text_are_never_duplicates() -> None:
    class NoText:
        def __init__(self, ident: str) -> None:
            self.id = ident
            self.memory_kind = "semantic"

    items: list[object] = [NoText("x"), NoText("y"), *rows("same", "same")]
    assert find_duplicates(items) == [Duplicate(3, 2, 1.0)]


def test_typed_records_are_compared_by_their_content() -> None:
    items = [
        EpisodicMemory(id="e1", summary="Deployed v2", occurred_at="2026-01-02"),
        EpisodicMemory(id="e2", summary="Deployed v2", occurred_at="2026-03-04"),
        KernelMemoryObject(id="k", memory_kind="episodic", content="(2026-01-02) deployed v2"),
    ]
    # Different dates are different events; the generic record repeats the first one.
    assert find_duplicates(items) == [Duplicate(2, 0, 1.0)]


@pytest.mark.parametrize("threshold", [0.0, -0.1, 1.5, True])
def test_bad_threshold(threshold: float) -> None:
    with pytest.raises(InvalidInputError, match=r"near_threshold must be in \(0, 1\]"):
        find_duplicates(rows("a"), near_threshold=threshold)


@pytest.mark.parametrize("size", [0, -1, 2.5, True])
def test_bad_shingle_size(size: int) -> None:
    with pytest.raises(InvalidInputError, match="shingle_size must be a positive integer"):
        deduplicate(rows("a"), shingle_size=size)
    with pytest.raises(InvalidInputError, match="shingle_size"):
        shingle_jaccard("a", "b", size)


_WORDS = ["user", "prefers", "tea", "coffee", "lives", "in", "Lagos", "lagos.", "the", "a"]
texts = st.lists(st.lists(st.sampled_from(_WORDS), max_size=8).map(" ".join), max_size=12)


@given(
    items=texts,
    threshold=st.one_of(st.none(), st.floats(0.3, 1.0)),
    size=st.integers(1, 4),
)
def test_dedup_invariants(items: list[str], threshold: float | None, size: int) -> None:
    memories = rows(*items)
    kept = deduplicate(memories, near_threshold=threshold, shingle_size=size)
    found = find_duplicates(memories, near_threshold=threshold, shingle_size=size)
    kept_ids = {id(m) for m in kept}
    # A subsequence of the input, first item always kept.
    positions = [memories.index(m) for m in kept]
    assert positions == sorted(positions)
    if memories:
        assert positions[0] == 0
    assert len(kept) + len(found) == len(memories)
    # No two survivors are copies of each other.
    for x, y in itertools.combinations(kept, 2):
        assert normalized_words(x.content) != normalized_words(y.content)
        if threshold is not None:
            assert shingle_jaccard(x.content, y.content, size) < threshold
    # Each dropped memory points at an earlier survivor it really copies.
    for d in found:
        assert d.kept_index < d.index
        assert id(memories[d.kept_index]) in kept_ids
        a, b = memories[d.index].content, memories[d.kept_index].content
        if d.similarity == 1.0 and normalized_words(a) == normalized_words(b):
            continue
        assert threshold is not None
        assert d.similarity == pytest.approx(shingle_jaccard(a, b, size))
        assert d.similarity >= threshold
    # Idempotent.
    assert deduplicate(kept, near_threshold=threshold, shingle_size=size) == kept
