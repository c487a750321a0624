"""Query weighting: a turn's question counts more than its statements."""

from __future__ import annotations

from membrane.text.relevance import STATEMENT_WEIGHT, TermStats, lexical_scores, query_weights


def test_question_words_weigh_one_and_statement_words_less() -> None:
    weights = query_weights("Orchid Works moved to Lyon. What is the gate code for Quill Labs?")
    assert weights["quill"] == 1.0 and weights["gate"] == 1.0
    assert weights["orchid"] == STATEMENT_WEIGHT and weights["lyon"] == STATEMENT_WEIGHT


def test_text_without_a_question_weighs_every_word_one() -> None:
    weights = query_weights("Summarise the Quill Labs incident for the postmortem.")
    assert set(weights.values()) == {1.0}


def test_lexical_scores_prefer_what_the_question_asks() -> None:
    texts = ["Orchid Works is in Lyon.", "Quill Labs has gate code 7781."]
    scores = lexical_scores(
        "Orchid Works moved to Lyon. What is the gate code for Quill Labs?", texts, TermStats(texts)
    )
    assert scores[1] > scores[0] > 0


def test_a_short_question_carries_the_sentence_it_leans_on() -> None:
    weights = query_weights(
        "Lunch was late again. The records tool listed the approval code for Canyon Freight. "
        "Which value was it?"
    )
    assert weights["canyon"] == 1.0 and weights["approval"] == 1.0
    assert weights["lunch"] == STATEMENT_WEIGHT
