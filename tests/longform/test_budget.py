from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.errors import InvalidInputError
from membrane.longform import (
    DEFAULT_MEMORY_BUDGET,
    MAX_SKELETON_ENTRIES,
    MIN_SKELETON_GAP,
    SECTION_SHARE,
    SECTIONS,
    TOP_UP_ORDER,
    BudgetResult,
    Fitted,
    SectionInput,
    allocate,
    estimate_tokens,
    fit_items,
    fit_sections,
    skeleton_chapters,
)
from membrane.tokenizers import TiktokenAdapter


class WordCounter:
    """One token per whitespace-separated word: cheap, deterministic, not the heuristic."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


# Mixed-script text: Latin words, CJK, kana, hangul, digits, punctuation, blank.
mixed_text = st.text(
    alphabet=st.sampled_from(list("abcdefghij XYZ.,!0123") + list("漢字雨夜かなカナ한글가")),
    max_size=80,
)


# ---------------------------------------------------------------- estimate_tokens


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("abcd", 1),
        ("abcde", 2),
        ("The key was under the mat.", 7),
        ("漢字かなカナ한글", 8),
        ("Hello 世界", 2 + 2),
        ("ｱｲｳ", 1),  # half-width katakana: outside the published ranges, 4 per token
        ("ᄀᄁ", 1),  # hangul jamo: likewise
        ("\U00020000\U00020001", 1),  # supplementary-plane Han falls to the 4-character rule
    ],
)
def test_estimate_tokens_examples(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


def test_estimate_tokens_rejects_non_text() -> None:
    with pytest.raises(TypeError, match="expects str"):
        estimate_tokens(b"bytes")  # type: ignore[arg-type]


def test_estimate_tokens_uses_the_counter_when_given() -> None:
    assert estimate_tokens("one two three", counter=WordCounter()) == 3
    text = "The lighthouse keeper counted the ships twice."
    assert estimate_tokens(text, counter=TiktokenAdapter("cl100k_base")) == TiktokenAdapter(
        "cl100k_base"
    ).count(text)


@given(mixed_text, mixed_text)
def test_estimate_is_subadditive_and_monotone(a: str, b: str) -> None:
    # Subadditivity is what lets a block estimated item by item stay within budget when the
    # items are joined; monotonicity means appending text never lowers the estimate.
    joined = estimate_tokens(a + b)
    assert joined <= estimate_tokens(a) + estimate_tokens(b)
    assert joined >= max(estimate_tokens(a), estimate_tokens(b))


ENGLISH_PROSE = [
    "The storm broke over the harbour just after midnight, and by the time Mara reached the "
    "quay the fishing boats were already straining at their ropes.",
    "Chapter twelve ends with the discovery of the second map, hidden in the lining of the "
    "captain's coat, which contradicts everything the first map suggested about the island.",
    "In this section we configure the replication factor, explain why three replicas are the "
    "usual choice, and show how to recover when one of them falls behind the others.",
]


@pytest.mark.parametrize("text", ENGLISH_PROSE)
@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_estimate_errs_high_on_english_prose(text: str, encoding: str) -> None:
    assert estimate_tokens(text) >= TiktokenAdapter(encoding).count(text)


# ---------------------------------------------------------------- allocate


def test_allocate_default_budget() -> None:
    assert allocate() == allocate(DEFAULT_MEMORY_BUDGET)
    assert allocate(6000) == {"entity": 1302, "recent": 2022, "skeleton": 869, "retrieval": 1806}
    assert allocate(0) == dict.fromkeys(SECTIONS, 0)


def test_section_shares_are_the_documented_split() -> None:
    assert dict(SECTION_SHARE) == {
        "entity": 0.217,
        "recent": 0.337,
        "skeleton": 0.145,
        "retrieval": 0.301,
    }
    assert math.isclose(sum(SECTION_SHARE.values()), 1.0)


@given(st.integers(0, 10**9))
def test_allocate_truncates_the_float_product_of_each_share(total: int) -> None:
    parts = allocate(total)
    for name, share in SECTION_SHARE.items():
        assert parts[name] == int(total * share)
        # The float product may land a hair under the exact share and lose that one token.
        assert math.floor(total * Fraction(str(share))) - 1 <= parts[name]
        assert parts[name] <= math.floor(total * Fraction(str(share)))
    assert total - 8 < sum(parts.values()) <= total


@pytest.mark.parametrize("bad", [-1, 1.5, True, "6000", None])
def test_allocate_rejects_bad_totals(bad: Any) -> None:
    with pytest.raises(InvalidInputError) as info:
        allocate(bad)
    assert info.value.field == "total"


# ---------------------------------------------------------------- skeleton_chapters


def test_skeleton_examples() -> None:
    assert skeleton_chapters(1, 1) == []
    assert skeleton_chapters(2, 2) == [1]
    assert skeleton_chapters(40, 30) == [1, 11, 21]
    assert skeleton_chapters(1000, 980) == [1, 83, 165, 247, 329, 411, 493, 575, 657, 739, 821, 903]
    # recent_from beyond the current chapter: the current chapter bounds the sample.
    assert skeleton_chapters(15, 100) == [1, 11]


@given(st.integers(-10, 10**6), st.integers(-10, 10**6))
def test_skeleton_is_capped_spaced_and_outside_the_recent_window(
    chapter: int, recent_from: int
) -> None:
    picks = skeleton_chapters(chapter, recent_from)
    last = min(chapter, recent_from) - 1
    assert len(picks) <= MAX_SKELETON_ENTRIES
    if last < 1:
        assert picks == []
        return
    assert picks[0] == 1
    assert all(1 <= n <= last for n in picks)
    gaps = {b - a for a, b in itertools.pairwise(picks)}
    assert len(gaps) <= 1  # one stride, derived from the cap
    stride = gaps.pop() if gaps else max(MIN_SKELETON_GAP, last)
    assert stride >= MIN_SKELETON_GAP
    # The sample reaches to within one stride of the recent window: the cap is used fully.
    assert last - picks[-1] < stride


def test_skeleton_size_is_flat_for_huge_documents() -> None:
    sizes = {skeleton_chapters(n, n - 20).__len__() for n in (500, 10_000, 10**6, 10**9)}
    assert sizes == {MAX_SKELETON_ENTRIES}


@pytest.mark.parametrize("bad", [1.0, "10", None, True])
def test_skeleton_rejects_non_int_chapters(bad: Any) -> None:
    with pytest.raises(InvalidInputError):
        skeleton_chapters(bad, 5)
    with pytest.raises(InvalidInputError):
        skeleton_chapters(5, bad)


# ---------------------------------------------------------------- fit_items


def reference_prefix(costs: list[int], budget: int) -> int:
    """Longest prefix whose cumulative cost stays within budget (obviously correct)."""
    for size in range(len(costs), -1, -1):
        if sum(costs[:size]) <= budget:
            return size
    return 0


def test_fit_items_keeps_whole_items_and_cuts_the_tail() -> None:
    items = ["aaaa", "bbbbbbbb", "cc", "d"]
    fitted = fit_items(items, lambda s: s, 3)
    assert fitted == Fitted(
        kept=("aaaa", "bbbbbbbb"),
        texts=("aaaa", "bbbbbbbb"),
        token_counts=(1, 2),
        used_tokens=3,
        dropped=2,
        budget=3,
    )
    # "cc" would fit after a miss, but a later item is less important: the section stops.
    assert fit_items(["aaaaaaaaaaaa", "c"], lambda s: s, 2).kept == ()


def test_fit_items_counts_only_what_it_reaches() -> None:
    calls: list[int] = []

    def to_text(n: int) -> str:
        calls.append(n)
        return "x" * 40

    fit_items(list(range(1000)), to_text, 25)
    assert calls == [0, 1, 2]


def test_fit_items_rejects_non_text_and_bad_budget() -> None:
    with pytest.raises(TypeError, match="to_text must return str"):
        fit_items([1], lambda n: n, 10)  # type: ignore[arg-type, return-value]
    with pytest.raises(InvalidInputError):
        fit_items([], str, -1)


@given(st.lists(mixed_text, max_size=12), st.integers(0, 60))
def test_fit_items_matches_the_reference(texts: list[str], budget: int) -> None:
    fitted = fit_items(texts, lambda s: s, budget)
    size = reference_prefix([estimate_tokens(t) for t in texts], budget)
    assert fitted.kept == tuple(texts[:size])
    assert fitted.dropped == len(texts) - size
    assert fitted.used_tokens == sum(fitted.token_counts) <= budget
    assert fitted.token_counts == tuple(estimate_tokens(t) for t in fitted.texts)


# ---------------------------------------------------------------- fit_sections


def reference_fit_sections(
    sections: dict[str, list[str]], total: int, count: Any = estimate_tokens
) -> dict[str, int]:
    """Kept-prefix sizes by the two-pass rule, computed the slow and plain way."""
    shares = {name: int(total * share) for name, share in SHARES.items()}
    costs = {name: [count(t) for t in texts] for name, texts in sections.items()}
    kept = {name: reference_prefix(costs[name], shares[name]) for name in SECTIONS}
    for name in TOP_UP_ORDER:
        spare = sum(shares.values()) - sum(sum(costs[n][: kept[n]]) for n in SECTIONS)
        if spare <= 0:
            break
        if kept[name] == len(costs[name]):
            continue
        kept[name] = reference_prefix(costs[name], sum(costs[name][: kept[name]]) + spare)
    return kept


SHARES = {"entity": 0.217, "recent": 0.337, "skeleton": 0.145, "retrieval": 0.301}

section_lists = st.fixed_dictionaries(
    {name: st.lists(mixed_text, max_size=10) for name in SECTIONS}
)


def run_fit(sections: dict[str, list[str]], total: int, **kwargs: Any) -> BudgetResult:
    return fit_sections(
        **{name: SectionInput(texts, str) for name, texts in sections.items()},
        total=total,
        **kwargs,
    )


@given(section_lists, st.integers(0, 400))
def test_fit_sections_never_exceeds_the_total(sections: dict[str, list[str]], total: int) -> None:
    result = run_fit(sections, total)
    assert result.used_tokens <= total
    assert result.used_tokens == sum(f.used_tokens for f in result.sections.values())
    assert result.unused_tokens == total - result.used_tokens
    for name, fitted in result.sections.items():
        assert fitted.kept == tuple(sections[name][: len(fitted.kept)])
        assert fitted.dropped == len(sections[name]) - len(fitted.kept)


@given(section_lists, st.integers(0, 400))
def test_fit_sections_with_a_counter_never_exceeds_the_total(
    sections: dict[str, list[str]], total: int
) -> None:
    result = run_fit(sections, total, counter=WordCounter())
    assert result.used_tokens <= total
    assert result.counter_name == "words"
    for fitted in result.sections.values():
        assert fitted.token_counts == tuple(len(t.split()) for t in fitted.texts)


@given(section_lists, st.integers(0, 400))
def test_fit_sections_matches_the_reference(sections: dict[str, list[str]], total: int) -> None:
    result = run_fit(sections, total)
    expected = reference_fit_sections(sections, total)
    assert {name: len(f.kept) for name, f in result.sections.items()} == expected


@given(section_lists, st.integers(0, 400))
def test_no_trimmed_section_could_have_taken_one_more_item(
    sections: dict[str, list[str]], total: int
) -> None:
    # The shares left unused after both passes are smaller than the next item of every trimmed
    # section (the rounding remainder of the shares is not pooled).
    result = run_fit(sections, total)
    pool = sum(result.shares.values()) - result.used_tokens
    for name, fitted in result.sections.items():
        if fitted.dropped:
            next_cost = estimate_tokens(sections[name][len(fitted.kept)])
            assert next_cost > pool


def test_spare_budget_flows_to_recent_first() -> None:
    # Early in a book: no entities, no skeleton, no retrieval; recent would be cut at its share.
    recent = [f"Ch.{n}: " + "x" * 392 for n in range(30)]  # 100 tokens each
    result = fit_sections(
        entity=SectionInput([], str),
        recent=SectionInput(recent, str),
        skeleton=SectionInput([], str),
        retrieval=SectionInput([], str),
        total=1000,
    )
    assert result.shares["recent"] == 337
    assert len(result.recent.kept) == 10
    assert result.recent.budget == 1000
    assert result.used_tokens == 1000


def test_top_up_order_prefers_recent_over_entity() -> None:
    hundred = "y" * 400
    result = fit_sections(
        entity=SectionInput([hundred] * 5, str),
        recent=SectionInput([hundred] * 5, str),
        skeleton=SectionInput([], str),
        retrieval=SectionInput([], str),
        total=1000,
    )
    # Shares: entity 217 (2 items), recent 337 (3 items); spare 1000 - 500 = 500.
    # Recent takes its remaining 2 items first, then entity gets 3 more.
    assert (len(result.recent.kept), len(result.entity.kept)) == (5, 5)
    small = fit_sections(
        entity=SectionInput([hundred] * 5, str),
        recent=SectionInput([hundred] * 5, str),
        skeleton=SectionInput([], str),
        retrieval=SectionInput([], str),
        total=700,
    )
    # Shares 151 / 235 / 101 / 210 (697: the remainder of 3 is not pooled); entity keeps 1,
    # recent 2, so the pool is 397: recent takes its 3 remaining items and entity gets none.
    assert (len(small.recent.kept), len(small.entity.kept)) == (5, 1)
    assert small.used_tokens == 600


def test_fit_sections_reports_its_evidence() -> None:
    result = run_fit({"entity": ["a"], "recent": [], "skeleton": [], "retrieval": []}, 100)
    assert result.budget == 100
    assert dict(result.shares) == allocate(100)
    assert result.counter_name == "heuristic"
    assert result.section("entity").kept == ("a",)
    assert list(result.sections) == list(SECTIONS)
    with pytest.raises(InvalidInputError, match="unknown section"):
        result.section("prologue")  # type: ignore[arg-type]


def test_fit_sections_rejects_bad_inputs() -> None:
    empty = SectionInput([], str)
    with pytest.raises(TypeError, match="SectionInput"):
        fit_sections(entity=[], recent=empty, skeleton=empty, retrieval=empty)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        fit_sections(entity=empty, recent=empty, skeleton=empty, retrieval=empty, total=-5)


def test_with_section_recomputes_the_total_and_checks_consistency() -> None:
    result = run_fit(
        {"entity": ["aaaa", "bbbb"], "recent": [], "skeleton": [], "retrieval": []}, 100
    )
    swapped = Fitted(kept=("bbbb",), texts=("bbbb",), token_counts=(1,), used_tokens=1)
    updated = result.with_section("entity", swapped)
    assert updated.entity == swapped
    assert updated.used_tokens == 1
    with pytest.raises(InvalidInputError):
        result.with_section("entity", Fitted(kept=("a",), texts=(), token_counts=()))
    with pytest.raises(InvalidInputError):
        result.with_section("entity", Fitted(kept=("a",), texts=("a",), token_counts=(1,)))
