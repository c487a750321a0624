"""The language half of ``longform_memory``: script detection and the write-time guard.

Same names, parameters, result types and values as the published package. The rules are the
ones :mod:`membrane.longform.language` follows too; this module carries its own copy so that
the package needs nothing but the standard library.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

__all__ = [
    "LanguageHint",
    "dominates",
    "is_char_counted_language",
    "language_mismatch",
    "resolve_language",
]

# Hangul syllables and jamo.
HANGUL = re.compile("[\uac00-\ud7a3\u1100-\u11ff]")
# Hiragana and katakana.
KANA = re.compile("[\u3040-\u309f\u30a0-\u30ff]")
# Han: CJK unified ideographs, extension A and the compatibility block.
HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
CYRILLIC = re.compile("[\u0400-\u04ff]")
ARABIC = re.compile("[\u0600-\u06ff]")
DEVANAGARI = re.compile("[\u0900-\u097f]")
THAI = re.compile("[\u0e00-\u0e7f]")
HEBREW = re.compile("[\u0590-\u05ff]")
# ASCII letters and Latin-1 from U+00C0: the majority other scripts are measured against.
LATIN = re.compile("[A-Za-z\u00c0-\u00ff]")

# Characters of the user's sample quoted in a directive.
SAMPLE_CHARS = 120

# What language_mismatch counts as an ideograph: kana, Han and hangul syllables.
_IDEOGRAPH = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_ASCII_LETTER = re.compile("[a-zA-Z]")
# In a character-counted document, a record with more ASCII letters than this and no
# ideograph at all was written in the wrong language (fewer is a name or an acronym).
_MAX_LATIN_IN_CHAR_DOCUMENT = 10

# Tested in this order; the first script that dominates decides. Korean and Japanese text
# carries Han characters too, so hangul and kana come before Han.
_NAMED = (
    (HANGUL, "한국어 (Korean)"),
    (KANA, "日本語 (Japanese)"),
    (HAN, "中文"),
    (THAI, "ไทย (Thai)"),
)
_GUESSED = (
    (CYRILLIC, "Russian or another Cyrillic-script language"),
    (ARABIC, "Arabic"),
    (HEBREW, "Hebrew"),
    (DEVANAGARI, "Hindi or another Devanagari-script language"),
)


def dominates(text: str, script: re.Pattern[str]) -> bool:
    """Whether ``text`` has at least one ``script`` character and no fewer than Latin letters."""
    hits = len(script.findall(text))
    return hits > 0 and hits >= len(LATIN.findall(text))


@dataclass
class LanguageHint:
    """A prompt-ready language directive, the length unit, and whether length is in chars."""

    directive: str
    unit: str
    char_counted: bool


def _quoting(text: str, guess: str) -> str:
    """A directive that anchors the language to the user's own words."""
    sample = re.sub(r"\s+", " ", text)[:SAMPLE_CHARS]
    looks = f" (it looks like {guess})" if guess else ""
    return (
        f'EXACTLY the same language as this sample{looks} — "{sample}" — '
        "do NOT translate or switch to another language"
    )


def resolve_language(sample: Optional[str]) -> LanguageHint:
    """The output language for a sample of the user's own text."""
    text = (sample or "").strip()
    for script, name in _NAMED:
        if dominates(text, script):
            return LanguageHint(name, "chars", True)
    for script, guess in _GUESSED:
        if dominates(text, script):
            return LanguageHint(_quoting(text, guess), "words", False)
    if not text:
        return LanguageHint("English", "words", False)
    return LanguageHint(_quoting(text, ""), "words", False)


def is_char_counted_language(sample: str) -> bool:
    """Whether the sample's language counts length in characters."""
    return resolve_language(sample).char_counted


def language_mismatch(text: str, document_is_char_counted: bool) -> bool:
    """Whether a record's script disagrees with its document's (write-time guard)."""
    if not text:
        return False
    ideographs = len(_IDEOGRAPH.findall(text))
    if document_is_char_counted:
        return ideographs == 0 and len(_ASCII_LETTER.findall(text)) > _MAX_LATIN_IN_CHAR_DOCUMENT
    return ideographs > 0
