"""Which script a text is written in, and which language to ask the model for.

The decisions here are the published ``longform-memory`` 0.1.1 rules, value for value:

- :func:`dominates` is a majority test against Latin letters, never an existence test: a
  Chinese title (two Han characters, no Latin) is Chinese, one Han character quoted in English
  prose is not.
- :func:`resolve_language` names Korean, Japanese, Chinese and Thai outright (hangul and kana
  are tested before Han, since Korean and Japanese text carries Han characters too); for
  Cyrillic, Arabic, Hebrew, Devanagari and Latin text it quotes a sample of the user's own
  words, because glyphs alone do not tell Spanish from English.
- :func:`language_mismatch` is deliberately stricter for non-CJK documents: a single
  ideograph in a record meant for a Latin-script book is a mismatch.

The directive strings are part of the contract (a prompt template receives them verbatim), so
they are the published package's, byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

from membrane.errors import InvalidInputError

__all__ = [
    "ARABIC",
    "CYRILLIC",
    "DEVANAGARI",
    "HAN",
    "HANGUL",
    "HEBREW",
    "KANA",
    "LATIN",
    "SAMPLE_CHARS",
    "SCRIPTS",
    "THAI",
    "LanguageHint",
    "dominates",
    "is_char_counted_language",
    "language_mismatch",
    "resolve_language",
]

#: Hangul syllables and jamo.
HANGUL: Final = re.compile("[\uac00-\ud7a3\u1100-\u11ff]")
#: Hiragana and katakana.
KANA: Final = re.compile("[\u3040-\u309f\u30a0-\u30ff]")
#: Han: CJK unified ideographs, extension A and the compatibility block.
HAN: Final = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
CYRILLIC: Final = re.compile("[\u0400-\u04ff]")
ARABIC: Final = re.compile("[\u0600-\u06ff]")
DEVANAGARI: Final = re.compile("[\u0900-\u097f]")
THAI: Final = re.compile("[\u0e00-\u0e7f]")
HEBREW: Final = re.compile("[\u0590-\u05ff]")
#: ASCII letters and Latin-1 from U+00C0: the majority that other scripts are measured against.
LATIN: Final = re.compile("[A-Za-z\u00c0-\u00ff]")

#: Script names :func:`dominates` accepts besides a compiled pattern.
SCRIPTS: Final[dict[str, re.Pattern[str]]] = {
    "arabic": ARABIC,
    "cyrillic": CYRILLIC,
    "devanagari": DEVANAGARI,
    "han": HAN,
    "hangul": HANGUL,
    "hebrew": HEBREW,
    "kana": KANA,
    "latin": LATIN,
    "thai": THAI,
}

#: Characters of the user's sample quoted in a directive: enough to recognise the language,
#: short enough not to drown the instruction around it.
SAMPLE_CHARS: Final = 120

# What language_mismatch counts as an ideograph: kana, Han and hangul syllables.
_IDEOGRAPH: Final = re.compile(
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]"
)
_ASCII_LETTER: Final = re.compile("[a-zA-Z]")
# In a character-counted document, a record with more ASCII letters than this and no
# ideograph at all was written in the wrong language (fewer is a name or an acronym).
_MAX_LATIN_IN_CHAR_DOCUMENT: Final = 10


def _dominates(text: str, script: re.Pattern[str]) -> bool:
    hits = len(script.findall(text))
    return hits > 0 and hits >= len(LATIN.findall(text))


def dominates(text: str, script: str | re.Pattern[str]) -> bool:
    """Whether ``text`` holds at least one character of ``script`` and no fewer of them than
    Latin letters.

    ``script`` is a compiled pattern matching single characters (such as :data:`HAN`) or a
    name from :data:`SCRIPTS`.

    >>> dominates("The monk wrote 道 on the wall.", "han")
    False
    >>> dominates("道德经", HAN)
    True
    """
    if isinstance(script, str):
        pattern = SCRIPTS.get(script)
        if pattern is None:
            raise InvalidInputError(
                f"unknown script {script!r}; use one of {', '.join(SCRIPTS)} or a compiled pattern",
                field="script",
            )
        script = pattern
    return _dominates(text, script)


@dataclass(frozen=True, slots=True)
class LanguageHint:
    """The language to ask the model for, decided from a sample.

    ``directive`` is a phrase to drop into a prompt ("Write in {directive}."). ``unit`` is how
    lengths are counted in that language, ``"chars"`` for scripts written without spaces and
    ``"words"`` otherwise. ``script`` names the deciding script (``"latin"`` when none did).
    """

    directive: str
    unit: Literal["chars", "words"]
    char_counted: bool
    script: str = "latin"


# Tested in this order; the first script that dominates decides.
_NAMED: Final[tuple[tuple[str, str], ...]] = (
    ("hangul", "한국어 (Korean)"),
    ("kana", "日本語 (Japanese)"),
    ("han", "中文"),
    ("thai", "ไทย (Thai)"),
)
_GUESSED: Final[tuple[tuple[str, str], ...]] = (
    ("cyrillic", "Russian or another Cyrillic-script language"),
    ("arabic", "Arabic"),
    ("hebrew", "Hebrew"),
    ("devanagari", "Hindi or another Devanagari-script language"),
)


def _quoting(text: str, guess: str) -> str:
    """A directive that anchors the language to the user's own words."""
    sample = re.sub(r"\s+", " ", text)[:SAMPLE_CHARS]
    looks = f" (it looks like {guess})" if guess else ""
    return (
        f'EXACTLY the same language as this sample{looks} — "{sample}" — '
        "do NOT translate or switch to another language"
    )


def _resolve(sample: str | None) -> LanguageHint:
    text = (sample or "").strip()
    for script, name in _NAMED:
        if _dominates(text, SCRIPTS[script]):
            return LanguageHint(name, "chars", True, script)
    for script, guess in _GUESSED:
        if _dominates(text, SCRIPTS[script]):
            return LanguageHint(_quoting(text, guess), "words", False, script)
    if not text:
        return LanguageHint("English", "words", False, "latin")
    return LanguageHint(_quoting(text, ""), "words", False, "latin")


def resolve_language(sample: str) -> LanguageHint:
    """Decide which language to ask the model to write in, from a sample of the user's text.

    Pass the user's own words (a title and an outline, a chapter), not prompt text you wrote.
    Korean, Japanese, Chinese and Thai are named; other scripts get a directive quoting the
    first :data:`SAMPLE_CHARS` characters of the sample. An empty sample means English.

    >>> resolve_language("第一章 雨夜").directive
    '中文'
    >>> resolve_language("Il pleuvait sur la ville.").unit
    'words'
    """
    return _resolve(sample)


def is_char_counted_language(sample: str) -> bool:
    """Whether the language of ``sample`` counts length in characters (CJK, Thai)."""
    return _resolve(sample).char_counted


def _mismatch(text: str, document_is_char_counted: object) -> bool:
    if not text:
        return False
    ideographs = len(_IDEOGRAPH.findall(text))
    if document_is_char_counted:
        return ideographs == 0 and len(_ASCII_LETTER.findall(text)) > _MAX_LATIN_IN_CHAR_DOCUMENT
    return ideographs > 0


def language_mismatch(text: str, document_is_char_counted: bool) -> bool:
    """Write-time guard: whether ``text`` is in the wrong kind of script for its document.

    Run it on every record a model produces before storing it; a record that slipped into the
    wrong language is injected into every later prompt and pulls the document along with it.
    In a character-counted document (CJK) the text is a mismatch when it has no ideograph and
    more than ten ASCII letters; in any other document, when it has a single ideograph.

    >>> language_mismatch("hello 你", document_is_char_counted=False)
    True
    >>> language_mismatch("林在黎明时分遇见了船夫。", document_is_char_counted=True)
    False
    """
    return _mismatch(text, document_is_char_counted)
