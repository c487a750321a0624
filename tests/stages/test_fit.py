"""The fit under a profile's rules: default rules change nothing, no rule lifts the room."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from membrane.stages.fit import FitRules, ItemCap, MiddleItem, fit_middle, rules_outcome


@st.composite
def middle_items(draw: st.DrawFn) -> list[MiddleItem]:
    n = draw(st.integers(0, 14))
    out = []
    for rank in draw(st.permutations(range(n))):
        full = draw(st.integers(1, 60))
        thin = draw(st.one_of(st.none(), st.integers(1, full)))
        out.append(
            MiddleItem(draw(st.sampled_from([1, 2, 3])), rank, full, thin, draw(st.booleans()))
        )
    return out


@st.composite
def rules_for(draw: st.DrawFn, n: int) -> FitRules:
    positions = (
        st.frozensets(st.integers(0, max(n - 1, 0)), max_size=n) if n else st.just(frozenset())
    )
    caps = draw(
        st.lists(st.tuples(positions, st.integers(0, 4)), max_size=2).map(
            lambda rows: tuple(ItemCap(f"cap{i}", m, k) for i, (m, k) in enumerate(rows))
        )
    )
    return FitRules(
        must=draw(positions),
        never_thin=draw(positions),
        caps=caps,
        tier_order=draw(st.permutations([1, 2, 3]).map(tuple)),
        share_room=draw(st.one_of(st.none(), st.integers(0, 400))),
    )


def _size(item: MiddleItem, choice: str) -> int:
    if choice == "drop":
        return 0
    return (item.full_tokens if choice == "full" else item.thin_tokens or 0) + 1


@given(items=middle_items(), room=st.integers(0, 500), thin=st.booleans())
def test_default_rules_fit_exactly_like_no_rules(
    items: list[MiddleItem], room: int, thin: bool
) -> None:
    plain = fit_middle(items, room, thin_before_drop=thin)
    assert fit_middle(items, room, thin_before_drop=thin, rules=FitRules()) == plain


@given(data=st.data(), items=middle_items(), room=st.integers(0, 500))
def test_rules_are_obeyed_and_never_lift_the_room(
    data: st.DataObject, items: list[MiddleItem], room: int
) -> None:
    rules = data.draw(rules_for(len(items)))
    choice = fit_middle(items, room, rules=rules)
    assert sum(_size(item, c) for item, c in zip(items, choice, strict=True)) <= room
    if rules.share_room is not None:
        plain = sum(
            _size(item, c)
            for i, (item, c) in enumerate(zip(items, choice, strict=True))
            if i not in rules.must
        )
        assert plain <= rules.share_room
    for i in rules.never_thin:
        assert choice[i] != "thin"
    for cap in rules.caps:
        sent_plain = sum(1 for i in cap.members if choice[i] != "drop" and i not in rules.must)
        sent_must = sum(1 for i in cap.members if choice[i] != "drop" and i in rules.must)
        assert sent_plain <= max(cap.limit - sent_must, 0)
    procedures = [i for i, item in enumerate(items) if item.tier == 1 and i not in rules.must]
    assert sum(1 for i in procedures if choice[i] != "drop") <= 3


def test_must_items_go_first_and_past_caps() -> None:
    # Four facts, room for two at full size; the cap allows one. The last-ranked one is a must.
    items = [MiddleItem(2, rank, 10) for rank in range(4)]
    rules = FitRules(must=frozenset({3}), caps=(ItemCap("semantic", frozenset(range(4)), 1),))
    choice = fit_middle(items, 22, rules=rules)
    assert choice == ["drop", "drop", "drop", "full"]
    without_must = fit_middle(items, 22, rules=FitRules(caps=rules.caps))
    assert without_must == ["full", "drop", "drop", "drop"]


def test_tier_order_decides_which_tier_keeps_its_room() -> None:
    items = [MiddleItem(1, 0, 30), MiddleItem(3, 1, 30)]
    assert fit_middle(items, 40) == ["full", "drop"]
    episodes_first = FitRules(tier_order=(3, 2, 1))
    assert fit_middle(items, 40, rules=episodes_first) == ["drop", "full"]


def test_outcome_names_what_the_rules_did() -> None:
    rules = FitRules(
        must=frozenset({0, 2}),
        never_thin=frozenset({2}),
        caps=(ItemCap("episodic", frozenset({0, 1}), 0),),
    )
    report = rules_outcome(rules, ["a", "b", "c", None], sent=[0, 3], thinned=[3])
    assert report.must_include_sent == ("a",)
    assert report.max_items == (("episodic", 0, 2, 1),)
    assert report.conflicts == (
        ("must_include", "c", "never_thin"),
        ("max_items (episodic)", None, "must_include"),
    )
    assert report.thinned == 1
