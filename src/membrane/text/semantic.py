"""An optional semantic vote: the caller's embedding function, cached, failing soft."""

from __future__ import annotations

import math
import operator
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence

from membrane.text.relevance import asked_text

__all__ = ["MAX_CACHED_TEXTS", "Embedder", "SemanticCall", "SemanticRanker", "cosine"]

Embedder = Callable[[list[str]], Sequence[Sequence[float]]]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0 for vectors of different length or zero norm."""
    return _cosine(a, _norm(a), b, _norm(b))


def _norm(a: Sequence[float]) -> float:
    return math.sqrt(sum(map(operator.mul, a, a)))


def _cosine(a: Sequence[float], na: float, b: Sequence[float], nb: float) -> float:
    # Summed left to right like a plain loop, so the value is the same to the last bit.
    if len(a) != len(b):
        return 0.0
    dot = sum(map(operator.mul, a, b))
    return dot / (na * nb) if na and nb else 0.0


#: The most texts a compiler keeps vectors for (least recently used go first). A compiler
#: shared by many conversations would otherwise keep every passage it ever compared; at 384
#: dimensions this is about 25 MB, and a text evicted is only embedded again.
MAX_CACHED_TEXTS = 8192

_Entry = tuple["array[float]", float]  # a vector and its norm


class SemanticRanker:
    """Ranks texts by similarity to a query with the caller's embedder.

    The ranker lives as long as its compiler and holds only content-keyed vectors: each text is
    embedded once while it stays among the :data:`MAX_CACHED_TEXTS` most recently used. It is
    shared by the compiler's threads (a lock guards the cache; the model runs outside it). What
    one compile learns (whether a ranking was made, why the embedder failed) lives on the
    :class:`SemanticCall` that :meth:`call` returns.
    """

    def __init__(self, embedder: Embedder, max_texts: int = MAX_CACHED_TEXTS) -> None:
        self._embedder = embedder
        self._max_texts = max_texts
        self._cache: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def call(self) -> SemanticCall:
        """A ranking session for one compile."""
        return SemanticCall(self)

    def cached_texts(self) -> int:
        """How many texts have a vector kept."""
        return len(self._cache)

    def similarities(self, query: str, texts: Sequence[str]) -> list[float]:
        """Each text's cosine similarity to ``query``; the embedder's own errors propagate."""
        entries = self._entries([query, *texts])
        q, nq = entries[query]
        return [_cosine(q, nq, *entries[t]) for t in texts]

    def _entries(self, texts: list[str]) -> dict[str, _Entry]:
        wanted = list(dict.fromkeys(texts))
        found: dict[str, _Entry] = {}
        with self._lock:
            for text in wanted:
                entry = self._cache.get(text)
                if entry is not None:
                    self._cache.move_to_end(text)
                    found[text] = entry
        missing = [t for t in wanted if t not in found]
        if missing:
            vectors = self._embedder(missing)
            if len(vectors) != len(missing):
                raise ValueError(
                    f"embedder returned {len(vectors)} vectors for {len(missing)} texts"
                )
            new = {}
            for text, vec in zip(missing, vectors, strict=True):
                vector = array("d", map(float, vec))
                new[text] = (vector, _norm(vector))
            found.update(new)
            with self._lock:
                self._cache.update(new)
                while len(self._cache) > self._max_texts:
                    self._cache.popitem(last=False)
        return found


class SemanticCall:
    """One compile's use of a :class:`SemanticRanker`.

    If the embedder raises (or returns the wrong number of vectors), :attr:`error` records why
    and later rankings in the same compile return None, so that compile falls back to words.
    """

    def __init__(self, ranker: SemanticRanker) -> None:
        self._ranker = ranker
        self.error: str | None = None
        self.used = False

    def order(self, query: str, texts: Sequence[str]) -> list[int] | None:
        """Indices of ``texts``, most similar to what ``query`` asks first.

        Only the question sentences of ``query`` are embedded
        (:func:`membrane.text.relevance.asked_text`): the part word matching weighs most, and
        a fraction of the turn's length, which is what the model's time grows with. None when
        ``query`` asks nothing (word matching alone decides) or the embedder failed.
        """
        asked = asked_text(query)
        if self.error is not None or asked is None:
            return None
        try:
            sims = self._ranker.similarities(asked, texts)
        except Exception as exc:  # the caller's model: any failure falls back to words
            self.error = f"{type(exc).__name__}: {exc}"
            return None
        self.used = True
        return sorted(range(len(texts)), key=lambda i: (-sims[i], i))
