"""Which script a text is written in, and which language to ask the model for.

Every decision here is a vote over the letters of a sample, never an existence test: a single
Han character quoted in English prose must not turn the document Chinese, and the write-time
guard (:func:`language_mismatch`) uses the same counting so it cannot share a looser rule.

Glyphs identify a script, not always a language: Han, kana, hangul and Thai are named outright,
while for Latin, Cyrillic, Arabic, Hebrew and Devanagari text the directive quotes a sample of
the user's own words and asks the model to stay in that language.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Final, Literal

from membrane.errors import InvalidInputError

__all__ = [
    "CHAR_COUNTED_SCRIPTS",
    "SAMPLE_CHARS",
    "SCRIPTS",
    "LanguageHint",
    "dominates",
    "is_char_counted_language",
    "language_mismatch",
    "resolve_language",
    "script_counts",
]

#: Characters of the user's sample quoted in a directive: enough to recognise the language,
#: short enough not to drown the instruction around it.
SAMPLE_CHARS: Final = 120

# (first code point, last code point, script), sorted; looked up with bisect.
_RANGES: Final[tuple[tuple[int, int, str], ...]] = (
    (0x0041, 0x005A, "latin"),
    (0x0061, 0x007A, "latin"),
    (0x00C0, 0x024F, "latin"),
    (0x0250, 0x02AF, "latin"),
    (0x0300, 0x036F, "latin"),
    (0x0400, 0x052F, "cyrillic"),
    (0x0590, 0x05FF, "hebrew"),
    (0x0600, 0x06FF, "arabic"),
    (0x0750, 0x077F, "arabic"),
    (0x08A0, 0x08FF, "arabic"),
    (0x0900, 0x097F, "devanagari"),
    (0x0E00, 0x0E7F, "thai"),
    (0x1100, 0x11FF, "hangul"),
    (0x1C80, 0x1C8F, "cyrillic"),
    (0x1E00, 0x1EFF, "latin"),
    (0x2C60, 0x2C7F, "latin"),
    (0x2DE0, 0x2DFF, "cyrillic"),
    (0x3005, 0x3007, "han"),
    (0x3040, 0x30FF, "kana"),
    (0x3130, 0x318F, "hangul"),
    (0x31F0, 0x31FF, "kana"),
    (0x3400, 0x4DBF, "han"),
    (0x4E00, 0x9FFF, "han"),
    (0xA640, 0xA69F, "cyrillic"),
    (0xA720, 0xA7FF, "latin"),
    (0xA8E0, 0xA8FF, "devanagari"),
    (0xA960, 0xA97F, "hangul"),
    (0xAB30, 0xAB6F, "latin"),
    (0xAC00, 0xD7FF, "hangul"),
    (0xF900, 0xFAFF, "han"),
    (0xFB1D, 0xFB4F, "hebrew"),
    (0xFB50, 0xFDFF, "arabic"),
    (0xFE70, 0xFEFF, "arabic"),
    (0xFF21, 0xFF3A, "latin"),
    (0xFF41, 0xFF5A, "latin"),
    (0xFF66, 0xFF9F, "kana"),
    (0x20000, 0x3134F, "han"),
)
_STARTS: Final = [first for first, _, _ in _RANGES]

#: Script names :func:`dominates` accepts. ``cjk`` groups han, kana and hangul; ``other`` is
#: any letter outside the listed scripts (Greek, Armenian, Georgian ...).
SCRIPTS: Final[tuple[str, ...]] = (
    "arabic",
    "cjk",
    "cyrillic",
    "devanagari",
    "han",
    "hangul",
    "hebrew",
    "kana",
    "latin",
    "other",
    "thai",
)

#: Scripts written without spaces between words, whose length is counted in characters.
CHAR_COUNTED_SCRIPTS: Final = frozenset({"han", "kana", "hangul", "thai"})

_GROUPS: Final[dict[str, frozenset[str]]] = {
    "cjk": frozenset({"han", "kana", "hangul"}),
    "char_counted": CHAR_COUNTED_SCRIPTS,
}

# A character-counted document often names people and places in Latin letters; fewer Latin
# letters than this in a record is a name, not a record written in the wrong language.
_MIN_FOREIGN_LETTERS: Final = 12
# Share of kana among CJK letters from which text reads as Japanese: Japanese prose is mostly
# kana, but a kanji-heavy title ("進撃の巨人") may hold only one in five.
_KANA_SHARE_FOR_JAPANESE: Final = 0.1


def _script_of(char: str) -> str | None:
    """The script of one letter, or None when ``char`` is not a letter or combining mark."""
    code = ord(char)
    slot = bisect.bisect_right(_STARTS, code) - 1
    if slot >= 0:
        first, last, script = _RANGES[slot]
        if first <= code <= last:
            # Ranges include digits and punctuation of their block; only letters and marks vote.
            if char.isalpha() or unicodedata.category(char).startswith("M"):
                return script
            return None
    if char.isalpha():
        return "other"
    return None


def script_counts(text: str) -> Counter[str]:
    """How many letters of ``text`` belong to each script (digits, spaces and symbols do not
    count)."""
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    counts: Counter[str] = Counter()
    for char in text:
        script = _script_of(char)
        if script is not None:
            counts[script] += 1
    return counts


def _members(script: str) -> frozenset[str]:
    group = _GROUPS.get(script)
    if group is not None:
        return group
    if script not in SCRIPTS:
        raise InvalidInputError(
            f"unknown script {script!r}; use one of {', '.join(SCRIPTS)} or a compiled pattern",
            field="script",
        )
    return frozenset({script})


def dominates(text: str, script: str | re.Pattern[str]) -> bool:
    """Whether at least half of the letters of ``text`` are written in ``script``.

    ``script`` is a name from :data:`SCRIPTS` (or ``"char_counted"``), or a compiled pattern
    matching single characters. Only letters vote, so a Chinese title with no Latin letters is
    Chinese, while one Han character among thousands of English letters is not. With an exact
    even split both scripts dominate; :func:`resolve_language` breaks that tie.

    >>> dominates("The monk wrote 道 on the wall.", "han")
    False
    >>> dominates("道德经", "han")
    True
    """
    counts = script_counts(text)
    letters = sum(counts.values())
    if isinstance(script, re.Pattern):
        hits = sum(1 for char in text if _script_of(char) is not None and script.fullmatch(char))
    else:
        hits = sum(counts[name] for name in _members(script))
    return hits > 0 and 2 * hits >= letters


@dataclass(frozen=True, slots=True)
class LanguageHint:
    """The language to ask the model for, decided from a sample.

    ``directive`` is a phrase to drop into a prompt ("Write in {directive}."). ``unit`` is how
    lengths are counted in that language, ``"chars"`` for scripts written without spaces and
    ``"words"`` otherwise. ``script`` is the winning script name.
    """

    directive: str
    unit: Literal["chars", "words"]
    char_counted: bool
    script: str


_NAMED: Final[dict[str, str]] = {
    "hangul": "Korean (한국어)",
    "kana": "Japanese (日本語)",
    "han": "Chinese (中文)",
    "thai": "Thai (ภาษาไทย)",
}
_GUESSES: Final[dict[str, str]] = {
    "cyrillic": "Russian or another language written in Cyrillic",
    "arabic": "Arabic or another language written in Arabic script",
    "hebrew": "Hebrew",
    "devanagari": "Hindi or another language written in Devanagari",
}
# Tie-break among families with the same letter count: a non-Latin script that appears as
# often as Latin letters is the stronger signal ("AI时代" is Chinese), and Latin comes last.
_FAMILY_ORDER: Final = ("cjk", "thai", "cyrillic", "arabic", "hebrew", "devanagari", "other")


def _sample(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()[:SAMPLE_CHARS]


def _cjk_language(counts: Counter[str]) -> str:
    hangul, kana, han = counts["hangul"], counts["kana"], counts["han"]
    # Korean prose may include Han; Japanese never includes hangul.
    if hangul and hangul >= kana:
        return "hangul"
    if kana and kana >= _KANA_SHARE_FOR_JAPANESE * (hangul + kana + han):
        return "kana"
    return "han"


def resolve_language(sample: str) -> LanguageHint:
    """Decide which language to ask the model to write in, from a sample of the user's text.

    Pass the user's own words (a title and an outline, a chapter), not prompt text you wrote.
    The script with the most letters wins; Korean and Japanese are told apart from Chinese by
    their hangul and kana. An empty sample falls back to English.

    >>> resolve_language("第一章 雨夜").directive.startswith("Chinese")
    True
    >>> resolve_language("Il pleuvait sur la ville.").unit
    'words'
    """
    text = sample.strip()
    counts = script_counts(text)
    if not counts:
        return LanguageHint(directive="English", unit="words", char_counted=False, script="latin")
    families: dict[str, int] = {
        "cjk": counts["han"] + counts["kana"] + counts["hangul"],
        **{name: counts[name] for name in _FAMILY_ORDER[1:]},
        "latin": counts["latin"],
    }
    winner = max(families, key=lambda name: families[name])
    quoted = _sample(text)
    if winner in ("cjk", "thai"):
        script = _cjk_language(counts) if winner == "cjk" else "thai"
        directive = (
            f"{_NAMED[script]}, in the same language and script as this sample, without "
            f'translating: "{quoted}"'
        )
        return LanguageHint(directive=directive, unit="chars", char_counted=True, script=script)
    guess = _GUESSES.get(winner)
    probably = f", probably {guess}" if guess else ""
    directive = f'the same language as this sample{probably}, without translating: "{quoted}"'
    return LanguageHint(directive=directive, unit="words", char_counted=False, script=winner)


def is_char_counted_language(sample: str) -> bool:
    """Whether the language of ``sample`` counts length in characters (CJK, Thai)."""
    return resolve_language(sample).char_counted


def language_mismatch(text: str, document_is_char_counted: bool) -> bool:
    """Write-time guard: whether ``text`` is in the wrong kind of script for its document.

    Run it on every record a model produces before storing it; a record that slipped into the
    wrong language is injected into every later prompt and pulls the document along with it.

    In a character-counted document (CJK, Thai) the text is a mismatch when most of its letters
    are in other scripts, unless those are only a few letters (a name). In any other document
    it is a mismatch when at least half of its letters are CJK or Thai.

    >>> language_mismatch("林 met the ferryman at dawn.", document_is_char_counted=False)
    False
    >>> language_mismatch("林在黎明时分遇见了船夫。", document_is_char_counted=False)
    True
    """
    if not text:
        return False
    counts = script_counts(text)
    letters = sum(counts.values())
    dense = sum(counts[name] for name in CHAR_COUNTED_SCRIPTS)
    if document_is_char_counted:
        foreign = letters - dense
        return 2 * dense < letters and foreign >= _MIN_FOREIGN_LETTERS
    return dense > 0 and 2 * dense >= letters
