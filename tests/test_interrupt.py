"""The interrupt protocol: parsing, stripping, and the streaming detector under any chunking."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.interrupt import (
    INTERRUPT_CLOSE,
    INTERRUPT_INSTRUCTION,
    INTERRUPT_OPEN,
    MAX_QUERY_CHARS,
    InterruptEvent,
    InterruptStreamDetector,
    TextEvent,
    contains_interrupt,
    find_interrupts,
    parse_interrupt,
    scan_stream,
    strip_all_interrupts,
)

WRONG_BRACKETS = "<SYSTEM_INTERRUPT_FETCH(wrong brackets)>"
SEED_TEXT = "Let me check. <SYSTEM_INTERRUPT_FETCH[user's timezone preference]> One moment."


def tag(query: str) -> str:
    return f"{INTERRUPT_OPEN}{query}{INTERRUPT_CLOSE}"


def reference_scan(text: str) -> tuple[str, list[str]]:
    """Slow, obviously-correct reading of the grammar: (visible text, queries)."""
    visible: list[str] = []
    queries: list[str] = []
    i = 0
    body_start = len(INTERRUPT_OPEN)
    while i < len(text):
        if text.startswith(INTERRUPT_OPEN, i):
            j = i + body_start
            closed = False
            while j + len(INTERRUPT_CLOSE) <= len(text) and j - (i + body_start) <= MAX_QUERY_CHARS:
                if text.startswith(INTERRUPT_CLOSE, j):
                    closed = True
                    break
                if text[j] in "\r\n" or text.startswith(INTERRUPT_OPEN, j):
                    break
                j += 1
            if closed:
                queries.append(text[i + body_start : j].strip())
                i = j + len(INTERRUPT_CLOSE)
                while i < len(text) and text[i] in " \t":
                    i += 1
                continue
        visible.append(text[i])
        i += 1
    return "".join(visible), queries


_PIECES = [
    INTERRUPT_OPEN,
    INTERRUPT_OPEN,
    INTERRUPT_CLOSE,
    INTERRUPT_CLOSE,
    "<SYSTEM_INTER",
    "RUPT_FETCH[",
    "<",
    "[",
    "]",
    ">",
    " ",
    "  ",
    "\t",
    "\n",
    "\r",
    "query",
    "user's timezone",
    "é",
    "q" * 260,
]
stream_text = st.one_of(
    st.lists(st.sampled_from(_PIECES), max_size=30).map("".join),
    st.text(max_size=60),
)


@st.composite
def chunked(draw: st.DrawFn) -> tuple[str, list[str]]:
    text = draw(stream_text)
    cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=12)))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in itertools.pairwise(bounds)]


def run(chunks: list[str]) -> tuple[str, list[str], list[str]]:
    detector = InterruptStreamDetector()
    events = []
    for chunk in chunks:
        events.extend(detector.feed(chunk))
        held = detector.pending
        # Only something that could still become a tag is held back, and only a bounded amount.
        assert len(held) <= len(INTERRUPT_OPEN) + MAX_QUERY_CHARS + 1
        assert held.startswith(INTERRUPT_OPEN) or INTERRUPT_OPEN.startswith(held)
    events.extend(detector.flush())
    assert detector.pending == ""
    assert all(e.text for e in events if isinstance(e, TextEvent))
    text = "".join(e.text for e in events if isinstance(e, TextEvent))
    queries = [e.query for e in events if isinstance(e, InterruptEvent)]
    raws = [e.raw for e in events if isinstance(e, InterruptEvent)]
    return text, queries, raws


# --- whole-text functions ------------------------------------------------------------------


def test_seed_example() -> None:
    assert contains_interrupt(SEED_TEXT)
    assert parse_interrupt(SEED_TEXT) == (
        "Let me check. ",
        "user's timezone preference",
        " One moment.",
    )
    assert strip_all_interrupts(SEED_TEXT) == "Let me check. One moment."
    assert find_interrupts(SEED_TEXT) == ["user's timezone preference"]


@given(text=stream_text)
def test_functions_match_the_reference_reading(text: str) -> None:
    visible, queries = reference_scan(text)
    assert strip_all_interrupts(text) == visible
    assert find_interrupts(text) == queries
    assert contains_interrupt(text) == bool(queries)


@given(text=stream_text)
def test_parse_returns_the_first_tag_and_loses_nothing(text: str) -> None:
    parsed = parse_interrupt(text)
    queries = find_interrupts(text)
    if parsed is None:
        assert queries == []
        return
    before, query, after = parsed
    assert query == queries[0]
    assert not contains_interrupt(before)
    assert text.startswith(before)
    assert text.endswith(after)
    middle = text[len(before) : len(text) - len(after)]
    assert middle.startswith(INTERRUPT_OPEN)
    assert middle.endswith(INTERRUPT_CLOSE)
    assert middle[len(INTERRUPT_OPEN) : -len(INTERRUPT_CLOSE)].strip() == query
    # Parsing the rest again walks the remaining tags in order.
    rest_queries = []
    rest = after
    while (again := parse_interrupt(rest)) is not None:
        rest_queries.append(again[1])
        rest = again[2]
    assert [query, *rest_queries] == queries


@pytest.mark.parametrize(
    ("text", "expected_visible", "expected_queries"),
    [
        ("no tags here", "no tags here", []),
        (tag("a") + tag("b"), "", ["a", "b"]),
        (f"x {tag('  padded  ')}\ty", "x y", ["padded"]),
        (f"{tag('')} empty", "empty", [""]),
        (f"{tag('items[0]')}", "", ["items[0]"]),
        (f"{INTERRUPT_OPEN}a]>]>", "]>", ["a"]),
        (f"end {tag('q')}", "end ", ["q"]),
        (f"keep {tag('q')}\nnext", "keep \nnext", ["q"]),
        (f"{INTERRUPT_OPEN}no close", f"{INTERRUPT_OPEN}no close", []),
        (f"{INTERRUPT_OPEN}two\nlines]>", f"{INTERRUPT_OPEN}two\nlines]>", []),
        (f"{INTERRUPT_OPEN}old {tag('new')}", f"{INTERRUPT_OPEN}old ", ["new"]),
        (
            "<SYSTEM_INTERRUPT_FETCH(wrong brackets)>",
            "<SYSTEM_INTERRUPT_FETCH(wrong brackets)>",
            [],
        ),
        ("<system_interrupt_fetch[lower case]>", "<system_interrupt_fetch[lower case]>", []),
    ],
)
def test_examples(text: str, expected_visible: str, expected_queries: list[str]) -> None:
    assert strip_all_interrupts(text) == expected_visible
    assert find_interrupts(text) == expected_queries
    streamed, queries, _ = run(list(text))
    assert (streamed, queries) == (expected_visible, expected_queries)


def test_query_length_limit() -> None:
    longest = tag("q" * MAX_QUERY_CHARS)
    too_long = tag("q" * (MAX_QUERY_CHARS + 1))
    assert find_interrupts(longest) == ["q" * MAX_QUERY_CHARS]
    assert not contains_interrupt(too_long)
    assert strip_all_interrupts(too_long) == too_long
    assert run([too_long])[0] == too_long
    assert run(list(longest))[1] == ["q" * MAX_QUERY_CHARS]


def test_non_strings_are_rejected() -> None:
    for fn in (contains_interrupt, parse_interrupt, find_interrupts, strip_all_interrupts):
        with pytest.raises(TypeError, match="text must be a str"):
            fn(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="chunk must be a str"):
        InterruptStreamDetector().feed(b"bytes")  # type: ignore[arg-type]


def test_instruction_shows_the_tag_form() -> None:
    assert "<SYSTEM_INTERRUPT_FETCH[...]>" in INTERRUPT_INSTRUCTION
    assert find_interrupts(INTERRUPT_INSTRUCTION) == ["..."]
    assert "\n" not in INTERRUPT_INSTRUCTION


# --- streaming -----------------------------------------------------------------------------


@given(case=chunked())
def test_any_chunking_yields_the_stripped_text_and_every_query(
    case: tuple[str, list[str]],
) -> None:
    text, chunks = case
    streamed, queries, raws = run(chunks)
    assert streamed == strip_all_interrupts(text)
    assert queries == find_interrupts(text)
    assert all(r.startswith(INTERRUPT_OPEN) and r.endswith(INTERRUPT_CLOSE) for r in raws)


@given(text=stream_text)
def test_one_character_chunks(text: str) -> None:
    streamed, queries, _ = run(list(text))
    assert streamed == strip_all_interrupts(text)
    assert queries == find_interrupts(text)


@given(text=st.text(alphabet=st.characters(blacklist_characters="<"), max_size=80))
def test_text_without_a_tag_start_is_released_at_once(text: str) -> None:
    detector = InterruptStreamDetector()
    for ch in text:
        assert detector.feed(ch) == [TextEvent(ch)]
    assert detector.flush() == []


def test_a_tag_split_one_character_at_a_time_is_reported_once() -> None:
    detector = InterruptStreamDetector()
    events: list[TextEvent | InterruptEvent] = []
    fired_at = []
    for i, ch in enumerate(SEED_TEXT):
        new = detector.feed(ch)
        # Nothing of the tag is released as text while it streams in.
        assert not any(isinstance(e, TextEvent) and set(e.text) & set("<[]_>") for e in new)
        if any(isinstance(e, InterruptEvent) for e in new):
            fired_at.append(i)
        events.extend(new)
    events.extend(detector.flush())
    interrupts = [e for e in events if isinstance(e, InterruptEvent)]
    assert interrupts == [
        InterruptEvent(
            query="user's timezone preference",
            raw="<SYSTEM_INTERRUPT_FETCH[user's timezone preference]>",
        )
    ]
    # Reported on the very character that closes the tag.
    assert fired_at == [SEED_TEXT.index("]>") + 1]
    assert "".join(e.text for e in events if isinstance(e, TextEvent)) == (
        "Let me check. One moment."
    )


def test_event_order_and_merging_within_a_chunk() -> None:
    detector = InterruptStreamDetector()
    assert detector.feed(f"a {tag('x')} b {tag('y')} c") == [
        TextEvent("a "),
        InterruptEvent("x", tag("x")),
        TextEvent("b "),
        InterruptEvent("y", tag("y")),
        TextEvent("c"),
    ]


def test_unterminated_tag_is_released_at_flush_and_detector_is_reusable() -> None:
    detector = InterruptStreamDetector()
    assert detector.feed("Wait <SYSTEM_INTERRUPT_FETCH[half") == [TextEvent("Wait ")]
    assert detector.pending == "<SYSTEM_INTERRUPT_FETCH[half"
    assert detector.flush() == [TextEvent("<SYSTEM_INTERRUPT_FETCH[half")]
    assert detector.feed(tag("again")) == [InterruptEvent("again", tag("again"))]
    assert detector.flush() == []


def test_a_line_break_releases_a_false_start_immediately() -> None:
    detector = InterruptStreamDetector()
    assert detector.feed("<SYSTEM_INTERRUPT_FETCH[not a") == []
    assert detector.feed(" query\nmore") == [TextEvent("<SYSTEM_INTERRUPT_FETCH[not a query\nmore")]


def test_spaces_after_a_tag_are_dropped_across_chunks() -> None:
    detector = InterruptStreamDetector()
    assert detector.feed(tag("q")) == [InterruptEvent("q", tag("q"))]
    assert detector.feed("  ") == []
    assert detector.feed(" \tthen") == [TextEvent("then")]
    assert detector.feed(" more") == [TextEvent(" more")]


def test_scan_stream() -> None:
    chunks = ["Let me check. <SYSTEM_INT", "ERRUPT_FETCH[user's timezone preference]", "> One", ""]
    assert list(scan_stream(chunks)) == [
        TextEvent("Let me check. "),
        InterruptEvent(
            "user's timezone preference",
            "<SYSTEM_INTERRUPT_FETCH[user's timezone preference]>",
        ),
        TextEvent("One"),
    ]


def test_long_stream_is_linear_enough() -> None:
    # 200k characters one at a time, with many false starts: must finish quickly and correctly.
    text = ("<SYSTEM_INTERRUPT_FETCH[no close\n" + "plain words " * 20) * 400 + tag("end")
    streamed, queries, _ = run(list(text))
    assert queries == ["end"]
    assert streamed == text[: -len(tag("end"))]
