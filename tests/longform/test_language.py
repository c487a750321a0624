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
    script_counts,
)
from membrane.longform.language import SAMPLE_CHARS, SCRIPTS

ENGLISH = (
    "The ferry left at dawn. Lin watched the harbour lights fade and wondered whether the "
    "letter would reach her brother before the storm did."
)

SAMPLES = {
    "zh": ("第一章 雨夜。林在黎明时分遇见了船夫，他们一起渡过了那条河。", "han"),
    "zh-hant": ("第一章 雨夜。林在黎明時分遇見了船夫，他們一起渡過了那條河。", "han"),
    "ja": ("第一章 雨の夜。林は夜明けに船頭と出会い、一緒に川を渡った。", "kana"),
    "ja-title": ("進撃の巨人", "kana"),
    "ko": ("제1장 비 오는 밤. 린은 새벽에 뱃사공을 만나 함께 강을 건넜다.", "hangul"),
    "ko-hanja": ("大韓民國 헌법 제1조: 대한민국은 민주공화국이다.", "hangul"),
    "th": ("บทที่หนึ่ง คืนฝนตก หลินพบคนพายเรือตอนรุ่งสาง", "thai"),
    "ru": ("Глава первая. Лин встретила перевозчика на рассвете.", "cyrillic"),
    "ar": ("الفصل الأول. التقت لين بالمراكبي عند الفجر.", "arabic"),
    "hi": ("पहला अध्याय। लिन सुबह नाविक से मिली।", "devanagari"),
    "he": ("פרק ראשון. לין פגשה את המעבורתן עם שחר.", "hebrew"),
    "en": (ENGLISH, "latin"),
    "fr": ("Chapitre premier. Lin rencontra le passeur à l'aube.", "latin"),
    "es": ("Capítulo uno. Lin conoció al barquero al amanecer.", "latin"),
    "el": ("Κεφάλαιο πρώτο. Η Λιν συνάντησε τον βαρκάρη την αυγή.", "other"),
}
CHAR_COUNTED = {"zh", "zh-hant", "ja", "ja-title", "ko", "ko-hanja", "th"}


@pytest.mark.parametrize("lang", sorted(SAMPLES))
def test_resolve_language_names_the_script(lang: str) -> None:
    text, script = SAMPLES[lang]
    hint = resolve_language(text)
    assert hint.script == script
    assert hint.char_counted is (lang in CHAR_COUNTED)
    assert hint.unit == ("chars" if lang in CHAR_COUNTED else "words")
    assert is_char_counted_language(text) is hint.char_counted
    # Every directive quotes the user's own words, so the model can match the exact variant.
    assert re.sub(r"\s+", " ", text)[:SAMPLE_CHARS] in hint.directive


@pytest.mark.parametrize(
    ("lang", "name"),
    [
        ("zh", "Chinese"),
        ("ja", "Japanese"),
        ("ja-title", "Japanese"),
        ("ko", "Korean"),
        ("th", "Thai"),
    ],
)
def test_char_counted_languages_are_named(lang: str, name: str) -> None:
    assert resolve_language(SAMPLES[lang][0]).directive.startswith(name)


@pytest.mark.parametrize(
    ("lang", "guess"),
    [("ru", "Cyrillic"), ("ar", "Arabic"), ("he", "Hebrew"), ("hi", "Devanagari")],
)
def test_other_scripts_get_a_guess_but_no_claim(lang: str, guess: str) -> None:
    directive = resolve_language(SAMPLES[lang][0]).directive
    assert directive.startswith("the same language as this sample, probably")
    assert guess in directive


def test_latin_text_is_anchored_to_the_sample_without_a_name() -> None:
    directive = resolve_language(SAMPLES["fr"][0]).directive
    assert directive.startswith("the same language as this sample, without translating")
    assert "English" not in directive


@pytest.mark.parametrize("sample", ["", "   ", "1234 — 5678!"])
def test_no_letters_falls_back_to_english(sample: str) -> None:
    hint = resolve_language(sample)
    assert (hint.directive, hint.unit, hint.char_counted) == ("English", "words", False)


def test_sample_is_collapsed_and_truncated() -> None:
    text = "word\n\n\tword " * 100
    directive = resolve_language(text).directive
    assert '"' + ("word word " * 12)[:SAMPLE_CHARS] + '"' in directive


def test_one_han_character_does_not_make_english_chinese() -> None:
    text = ENGLISH + " The monk painted 道 above the door."
    assert not dominates(text, "han")
    assert not dominates(text, "cjk")
    assert resolve_language(text).script == "latin"


def test_title_without_latin_letters_is_chinese() -> None:
    assert dominates("道德经", "han")
    assert resolve_language("道德经").script == "han"


def test_even_split_dominates_both_ways_and_resolves_to_the_non_latin_script() -> None:
    assert dominates("AI时代", "han")
    assert dominates("AI时代", "latin")
    assert resolve_language("AI时代").script == "han"


def test_only_letters_vote() -> None:
    # Digits and punctuation from a script's block do not count for it.
    assert script_counts("١٢٣ abc") == {"latin": 3}
    assert script_counts("๑๒๓ ก") == {"thai": 1}
    assert script_counts("ไทย") == {"thai": 3}
    assert script_counts("क़िताब")["devanagari"] == 6  # vowel signs are marks and do vote


def test_dominates_accepts_a_pattern_and_group_names() -> None:
    assert dominates("東京に住んでいます", re.compile("[\u3040-\u309f]"))
    assert dominates("東京に住んでいます", "cjk")
    assert dominates("東京に住んでいます", "char_counted")
    assert not dominates("東京に住んでいます", "latin")
    assert not dominates("", "latin")


def test_dominates_rejects_unknown_script_names() -> None:
    with pytest.raises(InvalidInputError, match="unknown script"):
        dominates("text", "klingon")
    assert "latin" in SCRIPTS


letters = st.text(
    alphabet=st.sampled_from(list("abcxyzАБВ中文字かなカ한글ไทยअआ")),
    min_size=1,
    max_size=60,
)


@given(letters)
def test_dominance_is_a_majority(text: str) -> None:
    counts = script_counts(text)
    total = sum(counts.values())
    winners = [
        name
        for name in ("latin", "cyrillic", "han", "kana", "hangul", "thai", "devanagari")
        if dominates(text, name)
    ]
    assert len(winners) <= 2
    for name in winners:
        assert 2 * counts[name] >= total
    if winners and 2 * counts[winners[0]] > total:
        assert len(winners) == 1


@given(st.lists(st.sampled_from(["the", "river", "lantern", "quiet", "north"]), min_size=3))
def test_a_stray_ideograph_never_flips_english(words: list[str]) -> None:
    text = " ".join(words) + " 道"
    assert resolve_language(text).script == "latin"
    assert not language_mismatch(text, document_is_char_counted=False)


# ---------------------------------------------------------------- the write-time guard


@pytest.mark.parametrize(
    ("text", "char_counted", "expected"),
    [
        # English document.
        (ENGLISH, False, False),
        ("Lin met the ferryman 林 at dawn.", False, False),
        ("林在黎明时分遇见了船夫。", False, True),  # a record that slid into Chinese
        ("林はそこで船頭に会った。", False, True),
        ("Лин встретила перевозчика.", False, False),  # not a CJK/Thai leak: not this guard's job
        ("", False, False),
        ("12345", False, False),
        # Chinese document.
        ("林在黎明时分遇见了船夫。", True, False),
        ("李明在MIT读书。", True, False),  # a Latin acronym inside Chinese prose is fine
        ("Harry Potter", True, False),  # a name alone is fine
        ("Lin met the ferryman at dawn and crossed the river.", True, True),
        ("林 met the ferryman at dawn and crossed the river.", True, True),
        ("", True, False),
    ],
)
def test_language_mismatch(text: str, char_counted: bool, expected: bool) -> None:
    assert language_mismatch(text, document_is_char_counted=char_counted) is expected


def test_guard_and_classifier_use_the_same_counting() -> None:
    # The failure this guards against: a document classified from a sample with one stray Han
    # character. Classification stays English, and a Chinese record is then rejected.
    sample = ENGLISH + " 道"
    document_is_char_counted = is_char_counted_language(sample)
    assert document_is_char_counted is False
    leaked = "林在黎明时分遇见了船夫，他们一起渡过了那条河。"
    assert language_mismatch(leaked, document_is_char_counted)
