"""The firewall: ``fit_middle`` against a brute-force reference, and ``PreFlightContextFirewall``.

The documented rule: procedures beyond the third (in priority order) never go; otherwise items
are placed in priority order (tier, then rank) at their smallest size when it still fits —
their keyframe, with thinning — and then get their full text back in priority order while room
lasts. Keeping a higher-priority item always outranks keeping lower-priority ones.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from membrane.stages.firewall import (
    MAX_PROCEDURAL_KEPT,
    FitChoice,
    MiddleItem,
    PreFlightContextFirewall,
    fit_middle,
)
from membrane.tokenizers import count_tokens

SEP = 1


def _cost(item: MiddleItem, choice: FitChoice) -> int:
    if choice == "drop":
        return 0
    size = item.full_tokens if choice == "full" else item.thin_tokens
    assert size is not None
    return size + SEP


def _reference(
    items: Sequence[MiddleItem], room: int, *, thin_before_drop: bool
) -> list[FitChoice]:
    """Try every assignment; keep the best one the documented rule allows."""
    n = len(items)
    order = sorted(range(n), key=lambda i: (items[i].tier, items[i].rank))
    forced: set[int] = set()
    procedures = 0
    for i in order:
        if items[i].tier == 1:
            procedures += 1
            if procedures > MAX_PROCEDURAL_KEPT:
                forced.add(i)
    eligible = [i for i in order if i not in forced]

    def options(i: int) -> list[FitChoice]:
        if i in forced:
            return ["drop"]
        if thin_before_drop and items[i].thin_tokens is not None:
            return ["full", "thin", "drop"]
        return ["full", "drop"]

    best: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    best_choice: list[FitChoice] = ["drop"] * n
    for combo in itertools.product(*(options(i) for i in range(n))):
        if sum(_cost(items[i], combo[i]) for i in range(n)) > room:
            continue
        # Keeping an item outranks keeping any number of lower-priority ones; among the
        # same kept set, a full text outranks any number of lower-priority full texts.
        kept_flags = tuple(int(combo[i] != "drop") for i in eligible)
        full_flags = tuple(int(combo[i] == "full") for i in eligible)
        score = (kept_flags, full_flags)
        if best is None or score > best:
            best, best_choice = score, list(combo)
    return best_choice


@st.composite
def _items(draw: st.DrawFn) -> list[MiddleItem]:
    n = draw(st.integers(0, 6))
    ranks = draw(st.permutations(range(n)))
    out = []
    for i in range(n):
        full = draw(st.integers(1, 40))
        thin = draw(st.one_of(st.none(), st.integers(1, full)))
        out.append(
            MiddleItem(
                tier=draw(st.sampled_from([1, 2, 3])),
                rank=ranks[i],
                full_tokens=full,
                thin_tokens=thin,
            )
        )
    return out


@given(items=_items(), room=st.integers(-5, 200), thin=st.booleans())
def test_fit_middle_matches_the_brute_force_reference(
    items: list[MiddleItem], room: int, thin: bool
) -> None:
    choice = fit_middle(items, room, thin_before_drop=thin)
    assert choice == _reference(items, room, thin_before_drop=thin)


@given(items=_items(), room=st.integers(0, 200), thin=st.booleans())
def test_fit_middle_is_feasible(items: list[MiddleItem], room: int, thin: bool) -> None:
    choice = fit_middle(items, room, thin_before_drop=thin)
    assert len(choice) == len(items)
    assert sum(_cost(it, c) for it, c in zip(items, choice, strict=True)) <= room
    if not thin:
        assert "thin" not in choice
    for it, c in zip(items, choice, strict=True):
        if c == "thin":
            assert it.thin_tokens is not None
    assert sum(1 for it, c in zip(items, choice, strict=True) if it.tier == 1 and c != "drop") <= 3


def test_everything_fits_nothing_changes() -> None:
    items = [
        MiddleItem(tier=t, rank=r, full_tokens=10, thin_tokens=3) for r, t in enumerate([3, 2, 1])
    ]
    assert fit_middle(items, 33) == ["full", "full", "full"]
    assert fit_middle(items, 32) == ["thin", "full", "full"]
    assert fit_middle(items, 32, thin_before_drop=False) == ["drop", "full", "full"]


def test_thin_before_drop_keeps_all_as_keyframes() -> None:
    items = [MiddleItem(tier=2, rank=r, full_tokens=20, thin_tokens=4) for r in range(4)]
    # Four keyframes cost 20; one full text back costs 16 more.
    assert fit_middle(items, 36) == ["full", "thin", "thin", "thin"]
    assert fit_middle(items, 35) == ["thin", "thin", "thin", "thin"]
    assert fit_middle(items, 15) == ["thin", "thin", "thin", "drop"]
    assert fit_middle(items, 14) == ["thin", "thin", "drop", "drop"]


def test_rank_breaks_ties_within_a_tier() -> None:
    items = [MiddleItem(tier=2, rank=r, full_tokens=10) for r in (2, 0, 1)]
    assert fit_middle(items, 22) == ["drop", "full", "full"]


def test_procedure_cap_is_configurable() -> None:
    items = [MiddleItem(tier=1, rank=r, full_tokens=1) for r in range(5)]
    assert fit_middle(items, 100).count("drop") == 2
    assert fit_middle(items, 100, max_procedural=5).count("drop") == 0


def test_separator_tokens_count_per_sent_item() -> None:
    items = [MiddleItem(tier=2, rank=r, full_tokens=10) for r in range(2)]
    assert fit_middle(items, 20, separator_tokens=0) == ["full", "full"]
    assert fit_middle(items, 20, separator_tokens=1) == ["full", "drop"]


# ---------------------------------------------------------------- PreFlightContextFirewall


class _Words:
    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


def test_run_keeps_order_prunes_refs_and_counts_exactly() -> None:
    middle = [
        ("[Mem:1] an old episode with many many many words in it", 3),
        ("[Mem:2] a fact", 2),
        ("[Mem:3] a rule", 1),
        ("[Mem:4] another episode", 3),
    ]
    firewall = PreFlightContextFirewall(max_tokens=17, counter=_Words())
    text, refs, total, stats = firewall.run(
        core_text="Core rules here.",
        end_text="The question?",
        middle_segments=middle,
        ref_map={1: "e1", 2: "f2", 3: "r3", 4: "e4", 9: "ghost"},
    )
    # Within tier 3 the item ranked last goes first, even though the other one is bigger.
    assert text == "Core rules here.\n\n[Mem:2] a fact\n[Mem:3] a rule\n\nThe question?"
    assert refs == {2: "f2", 3: "r3"}
    assert total == len(text.split()) == 11
    assert stats == {
        "segments_offered": 4,
        "segments_kept": 2,
        "tokens_trimmed": 14,
        "tokens_budget": 17,
        "token_count": 11,
        "budget_exceeded": False,
    }


def test_run_with_reserved_content_over_budget() -> None:
    firewall = PreFlightContextFirewall(max_tokens=3, counter=_Words())
    text, refs, total, stats = firewall.run(
        core_text="one two three",
        end_text="four five",
        middle_segments=[("[Mem:1] x", 2)],
        ref_map={1: "a"},
    )
    assert text == "one two three\n\nfour five"
    assert refs == {}
    assert total == 5
    assert stats["budget_exceeded"] is True and stats["segments_kept"] == 0


def test_run_counts_with_cl100k_by_default() -> None:
    middle = [(f"[Mem:{i}] Fact number {i} about tide tables in Brest.", 2) for i in range(1, 30)]
    firewall = PreFlightContextFirewall(max_tokens=150)
    text, refs, total, stats = firewall.run(
        core_text="Rules.", end_text="Tides?", middle_segments=middle
    )
    assert total == count_tokens(text) <= 150
    assert refs == {}
    assert 0 < stats["segments_kept"] < 29
    # Survivors are the first ones (all one tier, ranked by position) in their given order.
    kept_lines = text.split("\n\n")[1].split("\n")
    assert kept_lines == [line for line, _ in middle[: stats["segments_kept"]]]


def test_run_accepts_a_count_function() -> None:
    firewall = PreFlightContextFirewall(max_tokens=8)
    text, _, total, _ = firewall.run(
        core_text="a b",
        end_text="c",
        middle_segments=[("d e", 2), ("f g h", 3)],
        count=lambda t: len(t.split()),
    )
    assert text == "a b\n\nd e\n\nc"
    assert total == 5


@given(
    sizes=st.lists(st.tuples(st.integers(1, 12), st.sampled_from([1, 2, 3])), max_size=8),
    budget=st.integers(5, 80),
)
def test_run_never_exceeds_the_budget_when_core_and_end_fit(
    sizes: list[tuple[int, int]], budget: int
) -> None:
    middle = [(f"[Mem:{i + 1}] " + "w " * n, tier) for i, (n, tier) in enumerate(sizes)]
    ref_map = {i + 1: f"id{i + 1}" for i in range(len(sizes))}
    firewall = PreFlightContextFirewall(max_tokens=budget, counter=_Words())
    text, refs, total, stats = firewall.run(
        core_text="core", end_text="end", middle_segments=middle, ref_map=ref_map
    )
    assert total == len(text.split()) <= budget
    assert not stats["budget_exceeded"]
    kept = [line for line, _ in middle if line.strip() in text]
    assert set(refs) == {int(line.split("]")[0][5:]) for line in kept}


def test_pinned_item_is_placed_before_every_tier() -> None:
    from membrane.stages.firewall import MiddleItem as Item

    items = [Item(1, 0, 30, 10), Item(2, 1, 30, 10), Item(3, 2, 30, 10, pinned=True)]
    # Room for two keyframes only: the pinned episode keeps its keyframe, the fact goes.
    assert fit_middle(items, 22) == ["thin", "drop", "thin"]


def test_rank_offer_pins_what_the_question_names() -> None:
    from membrane.stages.firewall import rank_offer
    from membrane.text.relevance import TermStats

    texts = [
        "The team prefers short status updates.",
        "Kestrel Labs keeps its spare keys in locker 41.",
        "Lunch is usually at noon on Fridays.",
    ]
    ranking = rank_offer(
        texts,
        "We moved offices. Where does Kestrel Labs keep spare keys?",
        TermStats(texts),
        fuse=True,
    )
    assert ranking.pinned == frozenset({1})
    assert sorted(ranking.ranks) == [0, 1, 2]
    unfused = rank_offer(
        texts, "Where does Kestrel Labs keep spare keys?", TermStats(texts), fuse=False
    )
    assert unfused.ranks == [0, 1, 2] and not unfused.pinned
