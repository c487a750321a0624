"""The term sketch: never under the exact document frequency, and a faithful round trip."""

from __future__ import annotations

import inspect
import math
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.text.relevance import TermStats
from membrane.text.sketch import TermSketch

WORDS = st.text(alphabet="abcdefghij", min_size=3, max_size=8)
DOCUMENTS = st.lists(st.lists(WORDS, max_size=12), max_size=30)


def _both(documents: list[list[str]]) -> tuple[TermStats, TermSketch]:
    exact, sketch = TermStats(), TermSketch()
    for words in documents:
        exact.add_words(words)
        sketch.add_words(words)
    return exact, sketch


def test_the_sketch_overrides_every_reading_method() -> None:
    # A method left to the base class would read its (empty) exact counts.
    public = {name for name, _ in inspect.getmembers(TermStats, inspect.isfunction)}
    public = {name for name in public if not name.startswith("_")}
    assert public <= set(vars(TermSketch)), public - set(vars(TermSketch))


@given(DOCUMENTS, st.lists(WORDS, max_size=10))
def test_the_sketch_never_reads_below_the_exact_count(
    documents: list[list[str]], probe: list[str]
) -> None:
    exact, sketch = _both(documents)
    assert sketch.documents == exact.documents
    words = sorted({w for doc in documents for w in doc} | set(probe))
    for word in words:
        assert sketch.df(word) >= exact.df(word)
    assert sketch.min_df(words) == min((sketch.df(w) for w in words), default=None)
    assert sketch.idfs(words) == [sketch.idf(w) for w in words]
    for word in words:
        expected = math.log((sketch.documents + 1) / (sketch.df(word) + 0.5)) + 0.1
        assert sketch.idf(word) == pytest.approx(expected)


@given(DOCUMENTS, st.lists(WORDS, min_size=1, max_size=10))
def test_rarities_read_between_documents_follow_every_new_document(
    documents: list[list[str]], probe: list[str]
) -> None:
    # idfs remembers each frequency's rarity for one number of documents: a document added
    # since must never leave an old rarity behind.
    sketch = TermSketch()
    for words in documents:
        assert sketch.idfs(probe) == [sketch.idf(w) for w in probe]
        sketch.add_words(words)
        assert sketch.idfs(probe + words) == [sketch.idf(w) for w in probe + words]


@given(DOCUMENTS)
def test_a_sketch_survives_its_text_form(documents: list[list[str]]) -> None:
    _, sketch = _both(documents)
    again = TermSketch.from_text(sketch.to_text(), sketch.documents)
    words = {w for doc in documents for w in doc}
    assert [again.df(w) for w in sorted(words)] == [sketch.df(w) for w in sorted(words)]
    assert again.to_text() == sketch.to_text()


@given(DOCUMENTS)
def test_a_sketch_saved_by_an_earlier_release_still_reads(documents: list[list[str]]) -> None:
    # Earlier releases deflated the counters with zlib's default strategy; a worker of this
    # release must read the states they saved.
    import base64
    import sys
    import zlib
    from array import array

    _, sketch = _both(documents)
    counts = array("H", sketch._counts)
    if sys.byteorder == "big":
        counts.byteswap()  # stored little-endian, as to_text writes them
    earlier = base64.b64encode(zlib.compress(counts.tobytes(), 6)).decode("ascii")
    again = TermSketch.from_text(earlier, sketch.documents)
    assert again.to_text() == sketch.to_text()
    # With few words (mostly zero counters) run-length deflate is as small, to a few bytes.
    assert len(sketch.to_text()) <= len(earlier) + 8


@pytest.mark.parametrize("text", ["not base64!", "", "AAAA"])
def test_a_damaged_text_form_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="term sketch"):
        TermSketch.from_text(text, 3)


_SKETCH_OF_FIXED_DOCUMENTS = """
import random
from membrane.text.sketch import TermSketch
rng = random.Random(7)
sketch = TermSketch()
for _ in range(300):
    sketch.add_words({f"w{rng.randrange(40_000)}" for _ in range(40)})
print(sketch.to_text())
"""


def test_the_sketch_is_the_same_in_every_process() -> None:
    # Workers of a fleet run with different hash seeds, so a set's order differs between them;
    # with 12,000 words in 16,384 counters many share one, where the update order matters.
    import os
    import subprocess
    import sys

    texts = {
        subprocess.run(
            [sys.executable, "-c", _SKETCH_OF_FIXED_DOCUMENTS],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in (1, 2, 3, 4)
    }
    assert len(texts) == 1


def test_remembered_counters_stay_bounded_and_match_a_fresh_hash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from membrane.text import sketch as module

    # Room for eight entries of these words (each word's bytes and the entry's own).
    room = 8 * (sys.getsizeof("word10") + module._ENTRY_BYTES)
    monkeypatch.setattr(module, "_MAX_REMEMBERED_BYTES", room)
    monkeypatch.setattr(module, "_REMEMBERED", {})
    monkeypatch.setattr(module, "_remembered_bytes", 0)
    words = [f"word{i}" for i in range(50)]
    first = [module._buckets(w) for w in words]
    assert len(module._REMEMBERED) <= 8
    assert module._remembered_bytes <= room
    module._REMEMBERED.clear()
    assert [module._buckets(w) for w in words] == first  # the same counters once forgotten
    sketch = TermSketch()
    sketch.add_words(words)
    assert all(sketch.df(w) >= 1 for w in words)
    assert len(module._REMEMBERED) <= 8
