"""The words of an ASCII text, read without a pattern (the common case, and a hot one).

In ASCII text a word is a run of letters, digits and _ ' - with its outer _ ' - stripped:
lower-case the letters, blank every other character and split, which is faster than the
pattern :mod:`membrane.text.relevance` reads other text with.
"""

from __future__ import annotations

__all__ = ["MARKS", "ascii_spaced", "ascii_words", "has_edge_marks"]

# The table is for bytes.translate, a plain lookup per byte (str.translate looks each character
# up in a dict).
_ASCII_WORD_BYTES = bytes(
    ord(chr(c).lower()) if c < 128 and (chr(c).isalnum() or chr(c) in "_'-") else ord(" ")
    for c in range(256)
)
#: The marks that join word pieces ("stop-it", "don't", "__init__").
MARKS = "_'-"


def ascii_spaced(text: str) -> str:
    """An ASCII text lower-cased, with every character that is not part of a word blanked."""
    return text.encode("ascii").translate(_ASCII_WORD_BYTES).decode("ascii")


def has_edge_marks(spaced: str) -> bool:
    """Whether some piece of ``spaced`` (see :func:`ascii_spaced`) starts or ends with a mark:
    one with a blank, or the text's edge, on one side. Tested in turn, which beats a pattern."""
    return (
        " '" in spaced
        or "' " in spaced
        or " -" in spaced
        or "- " in spaced
        or " _" in spaced
        or "_ " in spaced
        or spaced[:1] in MARKS
        or spaced[-1:] in MARKS
    )


def ascii_words(text: str) -> list[str]:
    """An ASCII text's words, lower-cased, with their outer _ ' - stripped ("" may remain)."""
    spaced = ascii_spaced(text)
    pieces = spaced.split()
    if has_edge_marks(spaced):
        return [w.strip(MARKS) for w in pieces]
    return pieces  # no piece starts or ends with a mark: nothing to strip
