"""An optional semantic vote: the caller's embedding function, cached, failing soft."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence

from membrane.text.relevance import asked_text

__all__ = ["Embedder", "SemanticCall", "SemanticRanker", "cosine"]

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


class SemanticRanker:
    """Ranks texts by similarity to a query with the caller's embedder.

    The ranker lives as long as its compiler and holds only content-keyed vectors: each text is
    embedded once. What one compile learns (whether a ranking was made, why the embedder
    failed) lives on the :class:`SemanticCall` that :meth:`call` returns.
    """

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._cache: dict[str, tuple[float, ...]] = {}
        self._norms: dict[str, float] = {}

    def call(self) -> SemanticCall:
        """A ranking session for one compile."""
        return SemanticCall(self)

    def vectors(self, texts: list[str]) -> list[tuple[float, ...]]:
        """One vector per text; the embedder's own errors propagate."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            vectors = self._embedder(missing)
            if len(vectors) != len(missing):
                raise ValueError(
                    f"embedder returned {len(vectors)} vectors for {len(missing)} texts"
                )
            for text, vec in zip(missing, vectors, strict=True):
                vector = tuple(float(x) for x in vec)
                self._norms[text] = _norm(vector)
                self._cache[text] = vector
        return [self._cache[t] for t in texts]

    def similarities(self, query: str, texts: Sequence[str]) -> list[float]:
        """Each text's cosine similarity to ``query``; the embedder's own errors propagate."""
        vectors = self.vectors([query, *texts])
        norms = self._norms
        q, nq = vectors[0], norms[query]
        return [_cosine(q, nq, v, norms[t]) for t, v in zip(texts, vectors[1:], strict=True)]


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
