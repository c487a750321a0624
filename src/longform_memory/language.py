"""The language half of ``longform_memory``: script detection and the write-time guard.

Same names, parameters, result types and values as the published package; the rules are
:mod:`membrane.longform.language`'s, which follows them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from membrane.longform import language as _core

__all__ = [
    "LanguageHint",
    "dominates",
    "is_char_counted_language",
    "language_mismatch",
    "resolve_language",
]

HANGUL = _core.HANGUL
KANA = _core.KANA
HAN = _core.HAN
CYRILLIC = _core.CYRILLIC
ARABIC = _core.ARABIC
DEVANAGARI = _core.DEVANAGARI
THAI = _core.THAI
HEBREW = _core.HEBREW
LATIN = _core.LATIN
SAMPLE_CHARS = _core.SAMPLE_CHARS


def dominates(text: str, script: re.Pattern[str]) -> bool:
    """Whether ``text`` has at least one ``script`` character and no fewer than Latin letters."""
    return _core._dominates(text, script)


@dataclass
class LanguageHint:
    """A prompt-ready language directive, the length unit, and whether length is in chars."""

    directive: str
    unit: str
    char_counted: bool


def resolve_language(sample: str) -> LanguageHint:
    """The output language for a sample of the user's own text."""
    hint = _core._resolve(sample)
    return LanguageHint(hint.directive, hint.unit, hint.char_counted)


def is_char_counted_language(sample: str) -> bool:
    """Whether the sample's language counts length in characters."""
    return _core._resolve(sample).char_counted


def language_mismatch(text: str, document_is_char_counted: bool) -> bool:
    """Whether a record's script disagrees with its document's (write-time guard)."""
    return _core._mismatch(text, document_is_char_counted)
