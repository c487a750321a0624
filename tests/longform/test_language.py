"""membrane.longform.language: the published rules, plus the membrane-only conveniences
(script names for ``dominates``, the deciding script on ``LanguageHint``). The values are
compared with the published package call by call in test_differential.py."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.errors import InvalidInputError
from membrane.longform import (
    dominates,
    is_char_counted_language,
    language_mismatch,
    resolve_language,
)
from membrane.longform.language import HAN, KANA, LATIN, SAMPLE_CHARS, SCRIPTS

ENGLISH = (
    "The ferry left at dawn. Lin watched the harbour lights fade and wondered whether the "
    "letter would reach her brother before the storm did."
)

SAMPLES = {
    "zh": ("第一章 雨夜。林在黎明时分遇见了船夫，他们一起渡过了那条河。", "han"),
    "ja": ("第一章 雨の夜。林は夜明けに船頭と出会い、一緒に川を渡った。", "kana"),
    "ko": ("제1장 비 오는 밤. 린은 새벽에 뱃사공을 만나 함께 강을 건넜다.", "hangul"),
    "ko-hanja": ("大韓民國 헌법 제1조: 대한민국은 민주공화국이다.", "hangul"),
    "th": ("บทที่หนึ่ง คืนฝนตก หลินพบคนพายเรือตอนรุ่งสาง", "thai"),
    "ru": ("Глава первая. Лин встретила перевозчика на рассвете.", "cyrillic"),
    "ar": ("الفصل الأول. التقت لين بالمراكبي عند الفجر.", "arabic"),
    "hi": ("पहला अध्याय। लिन सुबह नाविक से मिली।", "devanagari"),
    "he": ("פרק ראשון. לין פגשה את המעבורתן עם שחר.", "hebrew"),
    "en": (ENGLISH, "latin"),
    "fr": ("Chapitre premier. Lin rencontra le passeur à l'aube.", "latin"),
}
NAMED = {"zh": "中文", "ja": "日本語 (Japanese)", "ko": "한국어 (Korean)",
         "ko-hanja": "한국어 (Korean)", "th": "ไทย (Thai)"}  # fmt: skip


@pytest.mark.parametrize("lang", sorted(SAMPLES))
def test_resolve_language_decides_by_script(lang: str) -> None:
    text, script = SAMPLES[lang]
    hint = resolve_language(text)
    assert hint.script == script
    assert hint.char_counted is (lang in NAMED)
    assert hint.unit == ("chars" if lang in NAMED else "words")
    assert is_char_counted_language(text) is hint.char_counted
    if lang in NAMED:
        assert hint.directive == NAMED[lang]
    else:
        # The other scripts are anchored to the user's own words.
        assert '"' + re.sub(r"\s+", " ", text)[:SAMPLE_CHARS] + '"' in hint.directive


@pytest.mark.parametrize(
    ("lang", "guess"),
    [("ru", "Cyrillic"), ("ar", "Arabic"), ("he", "Hebrew"), ("hi", "Devanagari")],
)
def test_other_scripts_carry_a_guess(lang: str, guess: str) -> None:
    directive = resolve_language(SAMPLES[lang][0]).directive
    assert directive.startswith("EXACTLY the same language as this sample (it looks like")
    assert guess in directive


def test_latin_text_is_anchored_to_the_sample_without_a_name() -> None:
    directive = resolve_language(SAMPLES["fr"][0]).directive
    assert directive.startswith('EXACTLY the same language as this sample — "Chapitre')
    assert "English" not in directive


@pytest.mark.parametrize("sample", ["", "   ", "\n\t"])
def test_an_empty_sample_means_english(sample: str) -> None:
    hint = resolve_language(sample)
    assert (hint.directive, hint.unit, hint.char_counted) == ("English", "words", False)


def test_text_without_letters_is_quoted_not_named() -> None:
    hint = resolve_language("1234 — 5678!")
    assert hint.script == "latin"
    assert '"1234 — 5678!"' in hint.directive


def test_sample_is_collapsed_and_truncated() -> None:
    text = "word\n\n\tword " * 100
    directive = resolve_language(text).directive
    assert '"' + ("word word " * 12)[:SAMPLE_CHARS] + '"' in directive


def test_one_han_character_does_not_make_english_chinese() -> None:
    text = ENGLISH + " The monk painted 道 above the door."
    assert not dominates(text, "han")
    assert not dominates(text, HAN)
    assert resolve_language(text).script == "latin"


def test_a_title_without_latin_letters_is_chinese_and_ties_go_to_the_script() -> None:
    assert dominates("道德经", "han")
    assert resolve_language("道德经").directive == "中文"
    assert dominates("AI时代", HAN)  # two Han, two Latin: a tie counts as dominating
    assert resolve_language("AI时代").script == "han"


def test_dominates_accepts_a_pattern_or_a_name() -> None:
    assert dominates("東京に住んでいます", KANA)
    assert dominates("東京に住んでいます", re.compile("[\u3040-\u309f]"))
    assert dominates("東京に住んでいます", "kana")
    assert dominates("Tokyo", LATIN) and dominates("Tokyo", "latin")
    assert not dominates("", "latin")
    assert set(SCRIPTS) == {"arabic", "cyrillic", "devanagari", "han", "hangul", "hebrew",
                            "kana", "latin", "thai"}  # fmt: skip


def test_dominates_rejects_unknown_script_names() -> None:
    with pytest.raises(InvalidInputError, match="unknown script"):
        dominates("text", "klingon")


@given(st.text(alphabet=st.sampled_from(list("abcxyzé中文字かなカ한글")), max_size=60))
def test_dominance_counts_against_latin_letters(text: str) -> None:
    latin = len(LATIN.findall(text))
    han = len(HAN.findall(text))
    assert dominates(text, "han") is (han > 0 and han >= latin)


@given(st.lists(st.sampled_from(["the", "river", "lantern", "quiet", "north"]), min_size=3))
def test_a_stray_ideograph_never_flips_english_but_the_guard_rejects_it(words: list[str]) -> None:
    text = " ".join(words) + " 道"
    assert resolve_language(text).script == "latin"
    # In a Latin-script document a single ideograph is a leak (the published, strict rule).
    assert language_mismatch(text, document_is_char_counted=False)


@pytest.mark.parametrize(
    ("text", "char_counted", "expected"),
    [
        (ENGLISH, False, False),
        ("hello 你", False, True),
        ("林在黎明时分遇见了船夫。", False, True),
        ("林はそこで船頭に会った。", False, True),
        ("Лин встретила перевозчика.", False, False),
        ("", False, False),
        ("林在黎明时分遇见了船夫。", True, False),
        ("李明在MIT读书。", True, False),
        ("Mara Okafor", True, False),  # ten ASCII letters: a name
        ("Harry Potter", True, True),  # eleven, no ideograph: the wrong language
        ("Lin met the ferryman at dawn.", True, True),
        ("林 met the ferryman at dawn and crossed the river.", True, False),
        ("", True, False),
    ],
)
def test_language_mismatch(text: str, char_counted: bool, expected: bool) -> None:
    assert language_mismatch(text, document_is_char_counted=char_counted) is expected
