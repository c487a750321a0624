"""A restored tracker's postings, found per word on demand, are the postings filed eagerly."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from membrane.stages.history._passages import PassageList, passages_of, stated_words
from membrane.stages.history._postings import LazyPostings, PostingIndex
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


def _passages(messages: list[str]) -> PassageList:
    out = PassageList()
    for i, text in enumerate(messages):
        for passage in passages_of(i, i, "user" if i % 2 == 0 else "assistant", text):
            out.append(passage)
    return out


def _postings(passages: PassageList) -> PostingIndex:
    eager = PostingIndex(passages)
    for pid, passage in enumerate(passages):
        eager.add(pid, passage)
    return eager


@given(MESSAGES, st.integers(min_value=0, max_value=40))
def test_a_word_finds_the_passages_filing_every_word_would_give(
    messages: list[str], lazy: int
) -> None:
    """The first ``lazy`` passages are found per word, the rest filed as they come."""
    passages = _passages(messages)
    eager = _postings(passages)
    lazy = min(lazy, len(passages))
    found = LazyPostings(passages, lazy)
    for pid in range(lazy, len(passages)):
        found.add(pid, passages[pid])
    found.seal()
    probes = {stem(w) for text in messages for w in content_words(text)}
    probes |= {stem(w.lower().strip("()'")) for w in WORDS} | set(_reference(passages))
    for word in sorted(probes):
        assert found.get(word) == eager.get(word), word


def _reference(passages: PassageList) -> dict[str, list[tuple[int, int, float]]]:
    """What every word's posting must hold: each passage stating it, in pid order."""
    out: dict[str, list[tuple[int, int, float]]] = {}
    for pid, passage in enumerate(passages):
        for word, weight in stated_words(passage.sentences).items():
            out.setdefault(word, []).append((pid, passage.message, weight))
    return out


@given(st.lists(MESSAGES, min_size=1, max_size=6))
def test_postings_filed_over_many_cuts_are_every_passage_stating_each_word(
    cuts: list[list[str]],
) -> None:
    """Passages filed over several cuts (sealed and merged segments) read back as one list."""
    passages = PassageList()
    index = PostingIndex(passages)
    for batch in cuts:
        for text in batch:
            for passage in passages_of(len(passages), len(passages), "user", text):
                index.add(len(passages), passage)
                passages.append(passage)
        index.seal()
    expected = _reference(passages)
    for word, entries in expected.items():
        posting = index.get(word)
        assert posting is not None and len(posting) == len(entries)
        assert list(posting) == entries
    assert index.get("no-such-word") is None


@given(MESSAGES)
def test_a_passage_reads_back_as_it_was_kept(messages: list[str]) -> None:
    kept = [p for i, t in enumerate(messages) for p in passages_of(i, i, "tool (x)", t, "Ann")]
    passages = PassageList()
    for passage in kept:
        passages.append(passage)
    assert list(passages) == kept
    assert passages[1:] == kept[1:]
    assert all(" ".join(p.sentences) == p.text for p in passages)


@given(st.lists(MESSAGES, min_size=1, max_size=6), st.integers(min_value=0, max_value=40))
def test_a_words_weight_in_chosen_passages_is_what_they_state(
    cuts: list[list[str]], lazy: int
) -> None:
    """``weights_in`` gives, for the passages asked about, the weight each one states the word
    with (absent when it does not), from sealed segments and from a lazy index's early ones."""
    passages = PassageList()
    for batch in cuts:
        for text in batch:
            for passage in passages_of(len(passages), len(passages), "user", text):
                passages.append(passage)
    lazy = min(lazy, len(passages))
    index = LazyPostings(passages, lazy)
    for start in range(lazy, len(passages), 3):  # several seals: several segments
        for pid in range(start, min(start + 3, len(passages))):
            index.add(pid, passages[pid])
        index.seal()
    eager = _postings(passages)
    asked = list(range(len(passages)))[::-2]  # every other passage, newest first
    for word in sorted(set(_reference(passages)) | {"no-such-word"}):
        expected = {
            pid: w
            for pid in asked
            if (w := stated_words(passages[pid].sentences).get(word)) is not None
        }
        assert index.weights_in(word, asked) == expected, word
        assert eager.weights_in(word, asked) == expected, word
