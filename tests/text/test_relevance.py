"""Words, rarity, lexical scores and reciprocal rank fusion."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.text.relevance import (
    STOPWORDS,
    TermStats,
    content_word_set,
    content_words,
    lexical_scores,
    rank_fusion,
    stem,
    stem_letters,
)


def test_content_words() -> None:
    assert list(content_words("The Quick brown fox, and the E-mail's 2024 _id_!")) == [
        "quick",
        "brown",
        "fox",
        "e-mail's",
        "2024",
        "id",
    ]
    assert list(content_words("it is what it is")) == []
    assert list(content_words("Über café")) == ["über", "café"]
    assert {"the", "please", "remind"} <= STOPWORDS


# The word pattern as first written; the one in use must find exactly the same words.
_REFERENCE_WORD = re.compile(r"[^\W_](?:[\w'’-]*[^\W_])?")
_TRICKY = [*"ab Z9_'’-.,\n", "é", "İ", "ß", "٣", "²", "Σ", "\u0301", "中"]


@given(
    st.one_of(
        st.text(alphabet=st.sampled_from(_TRICKY), max_size=30),
        st.text(alphabet=st.characters(max_codepoint=127), max_size=30),
    )
)
def test_content_words_match_the_reference_pattern(text: str) -> None:
    words = [m.group(0).lower() for m in _REFERENCE_WORD.finditer(text)]
    assert list(content_words(text)) == [w for w in words if w not in STOPWORDS]
    assert content_word_set(text) == set(content_words(text))


def test_term_stats_idf() -> None:
    stats = TermStats(["red apple", "red pear", "green apple apple"])
    assert stats.documents == 3
    assert (stats.df("red"), stats.df("apple"), stats.df("green"), stats.df("kiwi")) == (2, 2, 1, 0)
    assert stats.idf("kiwi") == math.log(4 / 0.5) + 0.1
    assert stats.idf("green") > stats.idf("red") > 0
    stats.add_words(["kiwi", "kiwi"])
    assert (stats.documents, stats.df("kiwi")) == (4, 1)
    assert TermStats().idf("anything") > 0
    words = ["red", "apple", "kiwi", "plum"]
    assert stats.idfs(words) == [stats.idf(w) for w in words]


def test_lexical_scores() -> None:
    texts = ["Paris is in France", "Lagos is in Nigeria", "Nothing relevant"]
    stats = TermStats(texts)
    scores = lexical_scores("Where is Lagos, Nigeria?", texts, stats)
    assert scores[1] == stats.idf("lagos") + stats.idf("nigeria")
    assert scores[0] == 0.0 and scores[2] == 0.0
    assert lexical_scores("the and of", texts, stats) == [0.0, 0.0, 0.0]
    # Each query word counts once, however often it appears.
    assert lexical_scores("lagos lagos", ["lagos lagos lagos"], stats) == [stats.idf("lagos")]


def test_rank_fusion_examples() -> None:
    assert rank_fusion([]) == []
    assert rank_fusion([[2, 0, 1]]) == [2, 0, 1]
    assert rank_fusion([[0, 1, 2], [2, 1, 0]]) == [0, 2, 1]
    # An item first in one list and fifth in the other lands between them.
    assert rank_fusion([[0, 1, 2, 3, 4], [4, 0, 1, 2, 3]])[:3] == [0, 1, 4]
    # Items ranked only by a later list still appear, after the tie-break order of the first.
    assert rank_fusion([[0], [1, 0]]) == [0, 1]


@given(
    st.integers(1, 12).flatmap(
        lambda n: st.lists(st.permutations(range(n)), min_size=1, max_size=4)
    )
)
def test_rank_fusion_properties(rankings: list[list[int]]) -> None:
    fused = rank_fusion(rankings)
    assert sorted(fused) == sorted(rankings[0])
    assert rank_fusion([rankings[0]] * 3) == rankings[0]
    firsts = {r[0] for r in rankings}
    if len(firsts) == 1:
        assert fused[0] == rankings[0][0]
    # An item that is at least as good in every ranking is never placed after the other.
    pos = [{item: i for i, item in enumerate(r)} for r in rankings]
    where = {item: i for i, item in enumerate(fused)}
    for a in fused:
        for b in fused:
            if a != b and all(p[a] < p[b] for p in pos):
                assert where[a] < where[b]


def test_marked_words_are_the_names_codes_and_numbers_after_the_first_word() -> None:
    from membrane.text.relevance import marked_words

    sentence = "Quarry Health said I should use LF79-3G from 12 May, not the old one."
    assert marked_words(sentence) == ("health", "lf79-3g", "12", "may")
    assert marked_words("all lower case here, nothing marked") == ()
    assert marked_words("Yes, I'm sure I've seen it, as I said.") == ()  # the speaker, not a name


@pytest.mark.parametrize(
    "forms",
    [
        ("listen", "listens", "listening", "listened"),
        ("city", "cities"),
        ("run", "runs", "running"),
        ("move", "moving", "moved", "moves"),
        ("try", "tries", "tried"),
        ("fall", "falling", "falls"),
        ("omar", "omar's", "omar’s"),
    ],
)
def test_stem_gives_the_forms_of_one_word_one_key(forms: tuple[str, ...]) -> None:
    assert len({stem(form) for form in forms}) == 1


@pytest.mark.parametrize("word", ["pt-5531", "kf2848", "bus", "gas", "x", "ox"])
def test_stem_leaves_codes_and_short_words_alone(word: str) -> None:
    assert stem(word) == word


@given(st.from_regex(r"[a-z]{1,12}", fullmatch=True))
def test_stem_is_a_non_empty_prefix_up_to_its_last_letter(word: str) -> None:
    # Stripping only shortens a word; the one letter it may change is y, written as i.
    key = stem(word)
    assert key
    assert word.startswith(key[:-1])
    assert len(key) <= len(word)


@given(st.text(alphabet="abcdefghiklmnoprstuy'’", min_size=1, max_size=14))
def test_every_word_of_a_stem_holds_its_letters(word: str) -> None:
    # Restored recall postings find a stem's passages by this (stages.history._snapshot).
    assert stem(word)[:-1] in word
    assert stem_letters(stem(word)) in word
