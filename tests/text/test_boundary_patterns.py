"""The one-set boundary patterns match exactly where the plain two-branch ones do."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from membrane.text.sentences import _BOUNDARY
from membrane.tokenizers._counters import _CUTS

# The readable forms: an end mark with closers, then white space (a space for _CUTS), or a
# run of line breaks.
SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+|\n\n*")
PIECE_CUT = re.compile(r"\n\n*|[.!?][\"')\]]* ")

TEXT = st.text(alphabet="ab .!?\n\"')]\t\r\u00a0\u2029", max_size=40)


def _spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(text)]


@settings(max_examples=2000)
@given(TEXT)
def test_the_fast_patterns_match_the_readable_ones(text: str) -> None:
    assert _spans(_BOUNDARY, text) == _spans(SENTENCE_END, text)
    assert _spans(_CUTS, text) == _spans(PIECE_CUT, text)
