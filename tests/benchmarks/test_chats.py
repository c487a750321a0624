"""The conversation benchmark's generator: deterministic, well-formed, evidence where it says."""

from __future__ import annotations

import collections

import pytest

from benchmarks._chat_scoring import content_words
from benchmarks._chats import (
    KINDS,
    Conversation,
    build_conversation,
    conversation_seeds,
    split_of,
)

SEEDS = (1, 2, 7)


@pytest.fixture(scope="module", params=SEEDS)
def conversation(request: pytest.FixtureRequest) -> Conversation:
    return build_conversation(request.param)


def test_same_seed_same_conversation_other_seed_other_one() -> None:
    assert build_conversation(4) == build_conversation(4)
    a, b = build_conversation(4), build_conversation(5)
    assert [m.text for m in a.messages] != [m.text for m in b.messages]
    assert [q.text for q in a.questions] != [q.text for q in b.questions]


def test_shape_sessions_roles_and_times(conversation: Conversation) -> None:
    assert 20 <= len(conversation.sessions) <= 30
    assert conversation.names[0] in conversation.system_prompt
    assert conversation.names[1] in conversation.system_prompt
    expected = 0
    dates = []
    for session in conversation.sessions:
        assert session.first == expected
        expected = session.stop
        turns = conversation.messages[session.first : session.stop]
        assert len(turns) >= 16
        # A opens and B closes each session, and the two alternate in between.
        assert [m.role for m in turns] == ["user", "assistant"] * (len(turns) // 2)
        assert all(m.session == session.index for m in turns)
        assert {m.speaker for m in turns} == set(conversation.names)
        dates.append(session.date)
    assert expected == len(conversation.messages)
    assert dates == sorted(dates)
    assert [m.id for m in conversation.messages] == list(range(len(conversation.messages)))
    times = [m.time for m in conversation.messages]
    assert times == sorted(times)


def test_every_kind_is_asked_with_its_evidence_shape(conversation: Conversation) -> None:
    kinds = collections.Counter(q.kind for q in conversation.questions)
    assert kinds == {"single": 12, "when": 6, "spread": 4, "open": 6}
    assert set(kinds) == set(KINDS)
    for q in conversation.questions:
        sessions = [conversation.messages[e].session for e in q.evidence]
        if q.kind in ("single", "when"):
            assert len(q.evidence) == 1
        elif q.kind == "spread":
            assert 2 <= len(q.evidence) <= 6
            assert len(set(sessions)) == len(sessions), "each item in a session of its own"
        else:
            assert 1 <= len(q.evidence) <= 2
            assert len(set(sessions)) == 1
        assert q.ask_after == min(max(sessions) + 1, len(conversation.sessions) - 1)
        assert q.about in q.text and q.about in conversation.names


def test_evidence_ids_point_at_turns_holding_the_fact(conversation: Conversation) -> None:
    for q in conversation.questions:
        assert len(q.clues) == len(q.evidence)
        for turn_id, clue in zip(q.evidence, q.clues, strict=True):
            turn = conversation.messages[turn_id]
            assert clue in turn.text, (q.text, clue, turn.text)
            assert turn.speaker == q.about, "a fact is told by the person it is about"
            assert turn.text == turn.text.strip()


def test_fact_text_is_lower_case_prose(conversation: Conversation) -> None:
    for q in conversation.questions:
        for clue in q.clues:
            assert clue == clue.lower()
            assert any(ch.isalpha() for ch in clue)


def test_open_questions_share_no_content_word_with_their_statements() -> None:
    from benchmarks import _chats

    for key, (statements, _, paraphrases, _) in _chats._OPEN.items():
        said = {w for text in statements for w in content_words(text)}
        for paraphrase in paraphrases:
            asked = set(content_words(paraphrase.format(o="Ann"))) - {"ann"}
            assert not asked & said, (key, paraphrase, asked & said)


def test_questions_are_worded_from_the_fixed_paraphrases() -> None:
    from benchmarks import _chats

    lists = [v[2] for v in _chats._SINGLE.values()]
    lists += [v[2] for v in _chats._WHEN.values()]
    lists += [v[2] for v in _chats._SPREAD.values()]
    lists += [v[2] for v in _chats._OPEN.values()]
    stems = [p.split("{")[0] for paraphrases in lists for p in paraphrases]
    for seed in SEEDS:
        for q in build_conversation(seed).questions:
            assert any(q.text.startswith(stem) for stem in stems), q.text


def test_held_out_split_is_thirty_percent_and_disjoint() -> None:
    dev, held = conversation_seeds(20, "dev"), conversation_seeds(20, "heldout")
    assert len(held) == 6 and len(dev) == 14
    assert not set(dev) & set(held)
    assert sorted(dev + held) == conversation_seeds(20, "all") == list(range(1, 21))
    assert all(split_of(s) == "heldout" for s in held)
    with pytest.raises(ValueError, match="split"):
        conversation_seeds(10, "train")
