"""An optional semantic vote: the caller's embedding function, cached, failing soft."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

__all__ = ["Embedder", "SemanticRanker", "cosine"]

Embedder = Callable[[list[str]], Sequence[Sequence[float]]]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0 for vectors of different length or zero norm."""
    if len(a) != len(b):
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


class SemanticRanker:
    """Ranks texts by similarity to a query with the caller's embedder.

    Each text is embedded once per ranker. If the embedder raises (or returns the wrong number
    of vectors), :attr:`error` records why and rankings return None until :meth:`reset`, so
    that compile falls back to word matching.
    """

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._cache: dict[str, tuple[float, ...]] = {}
        self.error: str | None = None
        self.used = False

    def reset(self) -> None:
        """Start a new compile: forget the last error and whether a ranking was made."""
        self.error = None
        self.used = False

    def order(self, query: str, texts: Sequence[str]) -> list[int] | None:
        """Indices of ``texts``, most similar to ``query`` first (None when unavailable)."""
        vectors = self._vectors([query, *texts])
        if vectors is None:
            return None
        sims = [cosine(vectors[0], v) for v in vectors[1:]]
        self.used = True
        return sorted(range(len(texts)), key=lambda i: (-sims[i], i))

    def _vectors(self, texts: list[str]) -> list[tuple[float, ...]] | None:
        if self.error is not None:
            return None
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            try:
                vectors = self._embedder(missing)
                if len(vectors) != len(missing):
                    raise ValueError(
                        f"embedder returned {len(vectors)} vectors for {len(missing)} texts"
                    )
                for text, vec in zip(missing, vectors, strict=True):
                    self._cache[text] = tuple(float(x) for x in vec)
            except Exception as exc:  # the caller's model: any failure falls back to words
                self.error = f"{type(exc).__name__}: {exc}"
                return None
        return [self._cache[t] for t in texts]
