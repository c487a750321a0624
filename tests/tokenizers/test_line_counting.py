"""Counting a long text line by line gives exactly tiktoken's count of the whole text."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

import membrane.tokenizers._counters as counters
from membrane.tokenizers import MemoizedCounter, TiktokenAdapter, load_encoding

# Pieces chosen to stress the split: line breaks next to punctuation, slashes (o200k glues
# "/" to a preceding newline), carriage returns, other white space, CJK, special-token text.
_PIECES = [
    *"ab Z9.,[]-/:()?!\"\n\r\t'",
    "\n\n",
    "é",
    "中",
    "  ",
    "\u2028",
    "<|endoftext|>",
    "Mem",
    "1234",
    "I",
    "HelloWorld",
    "ABCdef",
    "'s",
    "\u0301",
]
texts = st.lists(st.sampled_from(_PIECES), max_size=400).map("".join)


@settings(max_examples=400)
@given(text=texts, encoding=st.sampled_from(["cl100k_base", "o200k_base"]))
def test_line_split_count_equals_whole_count(text: str, encoding: str) -> None:
    original = counters._SPLIT_MIN_CHARS
    counters._SPLIT_MIN_CHARS = 0  # split even short texts, to exercise every break
    try:
        memo = MemoizedCounter(TiktokenAdapter(encoding))
        assert memo.count(text) == len(load_encoding(encoding).encode_ordinary(text))
    finally:
        counters._SPLIT_MIN_CHARS = original


# The cut points as a plain (slow) pattern, and the sentence cuts as a plain test per space.
_REFERENCE_CUTS = re.compile(r"(?<=\n)(?=[^\s/])|(?<=[A-Za-z0-9])(?=\n)")


def _reference_split(text: str) -> list[str]:
    pieces = []
    for part in _REFERENCE_CUTS.split(text):
        start = 0
        for i, char in enumerate(part):
            if char == " " and part[:i].rstrip("\"')]").endswith((".", "!", "?")):
                pieces.append(part[start:i])
                start = i
        pieces.append(part[start:])
    return pieces


@settings(max_examples=400)
@given(text=texts)
def test_split_cuts_where_the_reference_does(text: str) -> None:
    assert counters._split_at_piece_starts(text) == _reference_split(text)


class _Spy(TiktokenAdapter):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def count(self, text: str) -> int:
        self.calls.append(text)
        return super().count(text)


def test_long_prompt_reuses_memoised_lines() -> None:
    spy = _Spy()
    memo = MemoizedCounter(spy)
    lines = [
        f"[Mem:{i}] [fact] kind=note | text=Fact {i} about cobalt. | conf=1.00" for i in range(12)
    ]
    memo.count("\n".join(lines))
    spy.calls.clear()
    new_line = "[Mem:99] [fact] kind=note | text=A new one. | conf=1.00"
    grown = "\n".join([*lines, new_line])
    assert memo.count(grown) == len(load_encoding("cl100k_base").encode_ordinary(grown))
    # Only the new line is tokenised again (as its label and its sentence; " | conf=1.00"
    # after a sentence is known): the old last line ends on a digit, so the break now after
    # it is a part of its own.
    assert spy.calls == ["[Mem:99]", " [fact] kind=note | text=A new one."]


def test_line_ending_in_punctuation_reuses_its_count() -> None:
    spy = _Spy()
    memo = MemoizedCounter(spy)
    line = "Fact 1 about cobalt, with a line of text that ends in punctuation."
    assert memo.count(line) == len(load_encoding("cl100k_base").encode_ordinary(line))
    assert memo.count(line + "\n") == len(load_encoding("cl100k_base").encode_ordinary(line + "\n"))
    # The line with its break is the line, less its last piece ".", plus ".\n".
    assert spy.calls == [line, ".", ".\n"]
    spy.calls.clear()
    lines = [f"Fact {i} about cobalt, with a long enough line of text to split." for i in range(6)]
    memo.count("\n".join(lines))
    assert spy.calls == lines
    spy.calls.clear()
    grown = "\n".join([*lines, "A new one."])
    assert memo.count(grown) == len(load_encoding("cl100k_base").encode_ordinary(grown))
    assert spy.calls == ["A new one."]


def test_sentences_of_a_counted_message_are_memoised() -> None:
    spy = _Spy()
    memo = MemoizedCounter(spy)
    sentences = [f"Sentence {i} names the cobalt order KJ-{i}48 for Vale." for i in range(8)]
    message = " ".join(sentences)
    assert memo.count(message) == len(load_encoding("cl100k_base").encode_ordinary(message))
    spy.calls.clear()
    # What the index and recall count of a dropped message: its sentences, and passages of
    # them joined again.
    for text in [*sentences, " ".join(sentences[1:7])]:
        assert memo.count(text) == len(load_encoding("cl100k_base").encode_ordinary(text))
    # No sentence is tokenised again: each comes from its piece in the message (" Sentence 1
    # names ..."), less its first word with the space, plus the word without it.
    assert spy.calls == [" Sentence", "Sentence"]


@settings(max_examples=400)
@given(
    line=texts, breaks=st.integers(1, 3), encoding=st.sampled_from(["cl100k_base", "o200k_base"])
)
def test_line_and_its_breaks_count_equals_whole_count(
    line: str, breaks: int, encoding: str
) -> None:
    memo = MemoizedCounter(TiktokenAdapter(encoding))
    memo.count(line)  # as in a prompt: the line alone was counted first
    text = line + "\n" * breaks
    assert memo.count(text) == len(load_encoding(encoding).encode_ordinary(text))


@settings(max_examples=400)
@given(
    label=st.sampled_from(["[user]", "[Mem:3]", "[tool result (x)]", "a]", "]"]),
    body=texts,
    encoding=st.sampled_from(["cl100k_base", "o200k_base"]),
)
def test_labelled_text_count_equals_whole_count(label: str, body: str, encoding: str) -> None:
    memo = MemoizedCounter(TiktokenAdapter(encoding))
    memo.count(body)  # as with a recalled passage: the text alone was counted first
    for text in (f"{label} {body}", f" {body}"):
        assert memo.count(text) == len(load_encoding(encoding).encode_ordinary(text))


def test_labelled_line_reuses_the_count_of_its_text() -> None:
    spy = _Spy()
    memo = MemoizedCounter(spy)
    text = "Sure thing. The invoice number of Vortex Freight is 88-1203."
    memo.count(f"[Mem:1] [fact] {text}")
    memo.count(text)
    spy.calls.clear()
    for line in (f"[Mem:2] [fact] {text}", f"[user] {text}"):
        assert memo.count(line) == len(load_encoding("cl100k_base").encode_ordinary(line))
    # Only the new labels and the first word with its space are tokenised.
    assert spy.calls == ["[Mem:2]", "[user]", "Sure", " Sure"]


@settings(max_examples=300)
@given(
    label=st.sampled_from(["[Mem:3]", "[user]", "a]", "]"]),
    sentences=st.lists(texts, min_size=2, max_size=6),
    known=st.booleans(),
    encoding=st.sampled_from(["cl100k_base", "o200k_base"]),
)
def test_labelled_sentences_count_equals_whole_count(
    label: str, sentences: list[str], known: bool, encoding: str
) -> None:
    memo = MemoizedCounter(TiktokenAdapter(encoding))
    body = ". ".join(sentences)
    if known:  # as with a message's line in the index: its text was counted first
        memo.count(body)
    line = f"{label} {body}"
    assert memo.count(line) == len(load_encoding(encoding).encode_ordinary(line))


@settings(max_examples=400)
@given(
    lines=st.lists(
        # "" and " \n" are not runs of line breaks: the count falls back to the joined text.
        st.tuples(texts, st.sampled_from(["\n", "\n\n", "\n\n\n", "", " \n"])),
        min_size=1,
        max_size=6,
    ),
    last=texts,
    encoding=st.sampled_from(["cl100k_base", "o200k_base"]),
)
def test_count_lines_equals_the_count_of_the_joined_text(
    lines: list[tuple[str, str]], last: str, encoding: str
) -> None:
    memo = MemoizedCounter(TiktokenAdapter(encoding))
    pairs = [*lines, (last, "")]
    text = "".join(line + breaks for line, breaks in pairs)
    expected = len(load_encoding(encoding).encode_ordinary(text))
    assert memo.count_lines(pairs) == expected
    assert memo.count_lines(pairs) == expected  # again, from the memo


def test_count_lines_tokenises_only_what_the_breaks_add() -> None:
    spy = _Spy()
    memo = MemoizedCounter(spy)
    lines = ["[Mem:1] [fact] kind=note | text=Gate code GX-4471. | conf=1.00", "Recalled.", "Q?"]
    for line in lines:
        memo.count(line)
    spy.calls.clear()
    pairs = [(lines[0], "\n"), (lines[1], "\n\n"), (lines[2], "")]
    text = "".join(line + breaks for line, breaks in pairs)
    assert memo.count_lines(pairs) == len(load_encoding("cl100k_base").encode_ordinary(text))
    assert spy.calls == ["\n", ".\n\n", "."]
