"""A restored tracker's postings, found per word on demand, are the postings filed eagerly."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from membrane.stages.history._passages import Passage, Postings, add_postings, passages_of
from membrane.stages.history._snapshot import RestoredPostings
from membrane.text.relevance import content_words, stem

# Forms whose stems are not the start of every word they stand for ("city" -> "citi"), and
# forms that only share a stem's letters ("cod", "code", "coding"), with marks and capitals.
WORDS = [
    "city",
    "cities",
    "City's",
    "try",
    "tried",
    "tries",
    "flying",
    "fly",
    "code",
    "coding",
    "code's",
    "cod",
    "cold",
    "Porto",
    "KX-204",
    "re-code",
    "not",
    "note",
    "moving",
    "move",
    "parks",
    "park",
    "apart",
    "reading",
    "ready",
    "café",
    "naïve",
    "x",
    "(code)",
    "'fly'",
]


def _sentence(words: list[str]) -> str:
    """A statement, or a question (whose words weigh half) for every third length."""
    return " ".join(words).capitalize() + ("?" if len(words) % 3 == 0 else ".")


SENTENCES = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(_sentence)
MESSAGES = st.lists(st.lists(SENTENCES, min_size=1, max_size=4).map(" ".join), max_size=12)


def _passages(messages: list[str]) -> list[Passage]:
    out: list[Passage] = []
    for i, text in enumerate(messages):
        out.extend(passages_of(i, i, "user" if i % 2 == 0 else "assistant", text))
    return out


@given(MESSAGES)
def test_a_word_finds_the_passages_filing_every_word_would_give(messages: list[str]) -> None:
    passages = _passages(messages)
    eager: Postings = {}
    for pid, passage in enumerate(passages):
        add_postings(eager, pid, passage)
    restored = RestoredPostings(passages, len(passages))
    probes = {stem(w) for text in messages for w in content_words(text)}
    probes |= {stem(w.lower().strip("()'")) for w in WORDS}
    for word in sorted(probes | set(eager)):
        assert restored.get(word) == eager.get(word), word
