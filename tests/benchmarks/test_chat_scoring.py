"""Scoring of the conversation benchmark: a slow reference for the LCS, and the exact rules."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from benchmarks._chat_scoring import (
    content_words,
    covers,
    judge,
    lcs_length,
    scored_texts,
)


def _reference_lcs(a: list[str], b: list[str]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = (
                table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
            )
    return table[-1][-1]


_words = st.lists(st.sampled_from(["a1", "b2", "c3", "d4", "e5"]), max_size=40)


@given(_words, _words)
def test_bit_parallel_lcs_matches_the_table(a: list[str], b: list[str]) -> None:
    assert lcs_length(a, b) == _reference_lcs(a, b)


def test_content_words_drop_stopwords_and_case() -> None:
    assert content_words("Yeah I went Camping by the LAKE, it's 2 days") == [
        "went",
        "camping",
        "lake",
        "2",
        "days",
    ]


EVIDENCE = "took the kids camping by the lake on saturday, completely exhausted after"
# content words: took kids camping lake saturday completely exhausted  (7; 80% needs 6)


def test_verbatim_counts_both_ways() -> None:
    assert covers(EVIDENCE, ["noise", "x " + EVIDENCE + " y"]) == (True, True)


def test_eighty_percent_in_order_in_one_message() -> None:
    six = "[user] … took kids camping at the lake saturday, exhausted …"
    assert covers(EVIDENCE, [six]) == (True, False)
    five = "took kids camping lake saturday"
    assert covers(EVIDENCE, [five]) == (False, False)


def test_order_matters() -> None:
    shuffled = "exhausted completely saturday lake camping kids took"
    assert covers(EVIDENCE, [shuffled]) == (False, False)


def test_words_split_over_two_messages_do_not_count() -> None:
    assert covers(EVIDENCE, ["took kids camping lake", "saturday completely exhausted"]) == (
        False,
        False,
    )


def test_system_prompt_and_question_are_cut_out() -> None:
    system = "Chat between Ann and Bo. The lake camping trip is what matters."
    question = "Did Ann go camping by the lake on saturday, exhausted after?"
    messages = [
        {"role": "system", "content": system + "\n\nindex line"},
        {"role": "assistant", "content": "hi"},
        {"role": "user", "content": "recalled: nothing\n\n" + question},
    ]
    texts = scored_texts(messages, system, question)
    assert texts == ["\n\nindex line", "hi", "recalled: nothing\n\n"]
    assert judge(texts, ["camping by the lake"]).hit is False


def test_judge_needs_every_turn_and_reports_verbatim_apart() -> None:
    texts = ["took kids camping lake saturday completely", "my brother theo called"]
    result = judge(texts, [EVIDENCE, "my brother theo called"])
    assert (result.hit, result.verbatim, result.turns_found) == (True, False, 2)
    result = judge(texts, [EVIDENCE, "my cousin rosa is getting married in june"])
    assert (result.hit, result.verbatim, result.turns_found) == (False, False, 1)
    result = judge(["my brother theo called"], ["my brother theo called"])
    assert (result.hit, result.verbatim) == (True, True)
