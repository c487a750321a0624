"""Keyframes: the densest sentence under a token cap, with a leaning neighbour joined."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from membrane.text.keyframes import keyframe, sentence_density
from membrane.text.relevance import TermStats
from membrane.text.sentences import split_sentences


def words(text: str) -> int:
    return len(text.split())


COMMON = "The shop opens early every single morning of the week."
RARE = "Zeppelin mooring fees rose sharply after the harbour authority vote."


def _stats(*extra: str) -> TermStats:
    # "shop", "opens", "morning" are common across documents; the zeppelin words are not.
    return TermStats([COMMON, COMMON, "shop morning opens week early", *extra])


def test_density_prefers_rare_words() -> None:
    stats = _stats(RARE)
    assert sentence_density(RARE, stats) > sentence_density(COMMON, stats)
    assert sentence_density("the and of", stats) == 0.0


def test_picks_the_densest_sentence() -> None:
    text = f"{COMMON} {RARE} The shop closes every single evening at nine o'clock."
    assert keyframe(text, _stats(text), words, 40) == RARE


def test_none_when_no_sentence_fits() -> None:
    assert keyframe(RARE, _stats(), words, 5) is None
    assert keyframe("", _stats(), words, 40) is None


def test_a_sentence_over_the_cap_is_skipped() -> None:
    long_rare = "Zeppelin mooring quarantine fees " * 5 + "."
    text = f"{long_rare} {COMMON}"
    assert keyframe(text, _stats(text), words, 12) == COMMON


def test_a_sentence_opening_with_a_pronoun_brings_the_one_before() -> None:
    text = (
        "The council met on a wet Tuesday afternoon downtown. "
        "It approved zeppelin mooring quarantine tariffs unanimously yesterday."
    )
    sentences = split_sentences(text)
    assert keyframe(text, _stats(text), words, 40) == f"{sentences[0]} {sentences[1]}"
    # Without room for both, the dense sentence stands alone.
    assert keyframe(text, _stats(text), words, 10) == sentences[1]


def test_a_following_sentence_that_leans_back_is_joined() -> None:
    text = (
        "Zeppelin mooring quarantine tariffs doubled in the harbour district. "
        "This surprised the local shop owners every single morning."
    )
    sentences = split_sentences(text)
    assert keyframe(text, _stats(text), words, 40) == f"{sentences[0]} {sentences[1]}"


def test_a_very_short_sentence_counts_as_leaning() -> None:
    text = (
        "The shop opens early every single morning of the week. "
        "Zeppelin mooring quarantine tariffs doubled overnight downtown. Truly shocking."
    )
    sentences = split_sentences(text)
    assert keyframe(text, _stats(text), words, 40) == f"{sentences[1]} {sentences[2]}"


def test_an_independent_neighbour_is_not_joined() -> None:
    text = (
        "Zeppelin mooring quarantine tariffs doubled in the harbour district. "
        "Bakeries nearby reported ordinary sales throughout the long weekend."
    )
    frame = keyframe(text, _stats(text), words, 40)
    assert frame in split_sentences(text)
    # However the rarity falls, the other sentence is not attached.
    common_bakery = "bakeries nearby reported ordinary sales throughout long weekend"
    stats = _stats(text, common_bakery, common_bakery)
    assert keyframe(text, stats, words, 40) == split_sentences(text)[0]


_sentence = st.lists(
    st.sampled_from(["zeppelin", "shop", "it", "this", "harbour", "morning", "tariff", "quiet"]),
    min_size=1,
    max_size=9,
).map(lambda ws: " ".join(ws).capitalize() + ".")


@given(st.lists(_sentence, min_size=1, max_size=6), st.integers(1, 20))
def test_keyframe_is_a_run_of_the_text_within_the_cap(sentences: list[str], cap: int) -> None:
    text = " ".join(sentences)
    frame = keyframe(text, TermStats([text, "shop morning"]), words, cap)
    fitting = [s for s in split_sentences(text) if words(s) <= cap]
    if not fitting:
        assert frame is None
        return
    assert frame is not None
    assert words(frame) <= cap
    assert frame in " ".join(split_sentences(text))
    assert any(s in frame for s in fitting)
