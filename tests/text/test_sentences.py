"""Sentence splitting keeps every character of the text except the white space between."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from membrane.text.sentences import is_question, split_sentences


def test_basic_split() -> None:
    assert split_sentences("Tea first. Coffee later! Why? Because.\nNew line here") == [
        "Tea first.",
        "Coffee later!",
        "Why?",
        "Because.",
        "New line here",
    ]


def test_closing_quotes_and_brackets_stay_with_their_sentence() -> None:
    assert split_sentences('She said "stop." Then (quietly.) left.') == [
        'She said "stop."',
        "Then (quietly.)",
        "left.",
    ]


def test_no_split_without_white_space_after_the_stop() -> None:
    assert split_sentences("Version 3.5 weighs 2.1 kg.Really") == [
        "Version 3.5 weighs 2.1 kg.Really"
    ]


def test_empty_and_blank() -> None:
    assert split_sentences("") == []
    assert split_sentences("   \n\n  ") == []
    assert split_sentences("\n\nOnly one\n\n") == ["Only one"]


_chunks = st.lists(
    st.sampled_from(["alpha", "beta", "3.5", "kg", ".", "!", "?", '"', ")", " ", "  ", "\n", "é"]),
    max_size=40,
).map("".join)


@given(_chunks)
def test_only_white_space_is_lost_and_order_is_kept(text: str) -> None:
    sentences = split_sentences(text)
    assert all(s and s == s.strip() for s in sentences)
    assert re.sub(r"\s+", "", "".join(sentences)) == re.sub(r"\s+", "", text)
    pos = 0
    for s in sentences:
        found = text.find(s, pos)
        assert found >= 0
        pos = found + len(s)


# The boundary as first written, with a lookbehind; the pattern in use must split the same.
_REFERENCE_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")


def _reference_split(text: str) -> list[str]:
    out, start = [], 0
    for match in _REFERENCE_BOUNDARY.finditer(text):
        piece = text[start : match.start() + len(match.group(0).rstrip())].strip()
        if piece:
            out.append(piece)
        start = match.end()
    tail = text[start:].strip()
    return [*out, tail] if tail else out


@given(st.text(alphabet=st.sampled_from([*"a .!?\"')]\n\t", "\u2028", "\u3000"]), max_size=30))
def test_split_matches_the_reference_boundary(text: str) -> None:
    assert split_sentences(text) == _reference_split(text)


def test_a_question_may_close_with_quotes_or_brackets() -> None:
    assert is_question("Which code was it?")
    assert is_question('She asked, "which code was it?"')
    assert is_question("(Which code was it?) ")
    assert is_question("Was it the “blue” one?”")
    assert not is_question("The code was FX-2210.")
    assert not is_question('He said "why?" and left.')
