"""An optional semantic vote: the caller's embedding function, cached, failing soft.

An embedder that carries an ``executor`` (a :class:`concurrent.futures.Executor`, for instance
``local_embedder(executor=pool)``) is run there, off the request path: texts are handed to it
as they arrive (:meth:`SemanticRanker.prefetch`), and a ranking that needs a vector not made
yet waits at most the embedder's ``wait_seconds`` for it, then leaves the choice to words and
says so (:attr:`SemanticCall.pending`). Without an executor every vector is made when a ranking
first needs it, on the compiling thread.
"""

from __future__ import annotations

import math
import operator
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from membrane.errors import InvalidInputError
from membrane.text._vectors import Packed, pack, similarities
from membrane.text.relevance import asked_text

if TYPE_CHECKING:
    from concurrent.futures import Executor, Future

__all__ = [
    "BACKGROUND_BATCH",
    "EMBED_WAIT_SECONDS",
    "MAX_CACHED_TEXTS",
    "QUESTION_WORDS",
    "Embedder",
    "SemanticCall",
    "SemanticRanker",
    "check_background",
    "cosine",
]

Embedder = Callable[[list[str]], Sequence[Sequence[float]]]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0 for vectors of different length or zero norm."""
    if len(a) != len(b):
        return 0.0
    na, nb = _norm(a), _norm(b)
    # Summed left to right like a plain loop, so the value is the same to the last bit.
    return sum(map(operator.mul, a, b)) / (na * nb) if na and nb else 0.0


def _norm(a: Sequence[float]) -> float:
    return math.sqrt(sum(map(operator.mul, a, a)))


#: The most texts a compiler keeps vectors for (least recently used go first). A compiler
#: shared by many conversations would otherwise keep every passage it ever compared. Vectors
#: are kept as float16: at 384 dimensions this is about 6.6 MB, and a text evicted is only
#: embedded again.
MAX_CACHED_TEXTS = 8192

#: How long one compile waits, in all, for vectors an embedder's executor has not made yet,
#: unless the embedder sets its own ``wait_seconds`` (None: as long as it takes).
EMBED_WAIT_SECONDS = 0.01

#: Texts per call of the embedder in the background: a batch's vectors are usable when it ends.
BACKGROUND_BATCH = 32

#: The most words of what a turn asks that are embedded (its last ones). The question's vector
#: is the one made on the compiling thread even with an executor; a question of 32 words is
#: about 45 word pieces, 15 ms for all-MiniLM-L6-v2 here, where a long message's questions
#: could take 80 ms.
QUESTION_WORDS = 32


def check_background(executor: object, wait_seconds: object) -> None:
    """Raise :class:`membrane.InvalidInputError` unless the two background settings are usable.

    ``executor``: None or a :class:`concurrent.futures.Executor`; ``wait_seconds``: None (wait
    as long as it takes) or a number of seconds, 0 or more.
    """
    from concurrent.futures import Executor  # here: a compiler without meaning never needs it

    if executor is not None and not isinstance(executor, Executor):
        raise InvalidInputError(
            f"executor must be a concurrent.futures.Executor or None, got {executor!r}",
            field="executor",
        )
    if wait_seconds is not None and (
        isinstance(wait_seconds, bool)
        or not isinstance(wait_seconds, (int, float))
        or not 0 <= wait_seconds < math.inf
    ):
        raise InvalidInputError(
            f"wait_seconds must be None or a finite number of seconds >= 0, got {wait_seconds!r}",
            field="wait_seconds",
        )


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
        self._cache: OrderedDict[str, Packed] = OrderedDict()
        self._pending: dict[str, Future[None]] = {}
        self._lock = threading.Lock()
        from concurrent.futures import Executor

        executor = getattr(embedder, "executor", None)
        self.executor: Executor | None = executor if isinstance(executor, Executor) else None
        wait_seconds = getattr(embedder, "wait_seconds", EMBED_WAIT_SECONDS)
        self.wait_seconds: float | None = (
            None if wait_seconds is None else max(0.0, float(wait_seconds))
        )

    def call(self) -> SemanticCall:
        """A ranking session for one compile."""
        return SemanticCall(self)

    def cached_texts(self) -> int:
        """How many texts have a vector kept."""
        return len(self._cache)

    def similarities(self, query: str, texts: Sequence[str]) -> list[float]:
        """Each text's cosine similarity to ``query``; the embedder's own errors propagate."""
        entries = self._entries([query, *texts])
        return similarities(entries[query], [entries[t] for t in texts])

    def prefetch(self, texts: Iterable[str]) -> int:
        """Start embedding ``texts`` that have no vector yet, on the executor (if there is one).

        Returns how many were handed over; each text is handed over once while it is pending.
        """
        if self.executor is None:
            return 0
        with self._lock:
            cache, pending = self._cache, self._pending
            new = [t for t in dict.fromkeys(texts) if t not in cache and t not in pending]
            for start in range(0, len(new), BACKGROUND_BATCH):
                batch = new[start : start + BACKGROUND_BATCH]
                future = self.executor.submit(self._embed_batch, batch)
                for text in batch:
                    self._pending[text] = future
        return len(new)

    def missing_after_wait(self, texts: Sequence[str], timeout: float | None) -> int:
        """How many of ``texts`` still have no vector after waiting up to ``timeout`` seconds.

        Texts neither known nor pending are handed to the executor first. A background batch
        that failed raises the embedder's error here.
        """
        self.prefetch(texts)
        with self._lock:
            futures = {self._pending[t] for t in texts if t in self._pending}
        if futures:
            from concurrent.futures import wait

            wait(futures, timeout=timeout)
        for future in futures:
            if future.done():
                future.result()  # the embedder's error, if the batch failed
        with self._lock:
            return sum(1 for t in dict.fromkeys(texts) if t not in self._cache)

    def _embed_batch(self, texts: list[str]) -> None:
        try:
            self._store(texts, self._embedder(texts))
        finally:
            with self._lock:
                for text in texts:
                    self._pending.pop(text, None)

    def _store(self, texts: list[str], vectors: Sequence[Sequence[float]]) -> dict[str, Packed]:
        if len(vectors) != len(texts):
            raise ValueError(f"embedder returned {len(vectors)} vectors for {len(texts)} texts")
        new = {text: pack(vec) for text, vec in zip(texts, vectors, strict=True)}
        with self._lock:
            self._cache.update(new)
            while len(self._cache) > self._max_texts:
                self._cache.popitem(last=False)
        return new

    def _entries(self, texts: list[str]) -> dict[str, Packed]:
        wanted = list(dict.fromkeys(texts))
        found: dict[str, Packed] = {}
        with self._lock:
            for text in wanted:
                entry = self._cache.get(text)
                if entry is not None:
                    self._cache.move_to_end(text)
                    found[text] = entry
        missing = [t for t in wanted if t not in found]
        if missing:
            found.update(self._store(missing, self._embedder(missing)))
        return found


class SemanticCall:
    """One compile's use of a :class:`SemanticRanker`.

    If the embedder raises (or returns the wrong number of vectors), :attr:`error` records why
    and later rankings in the same compile return None, so that compile falls back to words.
    With an executor, :attr:`pending` is the most texts one ranking found without a vector
    after the compile's wait ran out: that ranking was left to words.
    """

    def __init__(self, ranker: SemanticRanker) -> None:
        self._ranker = ranker
        self.error: str | None = None
        self.used = False
        self.pending = 0
        self._deadline: float | None = None

    @property
    def background(self) -> bool:
        """True when the embedder runs on an executor, off the request path."""
        return self._ranker.executor is not None

    def prefetch(self, texts: Iterable[str]) -> int:
        """Hand ``texts`` to the embedder's executor now (nothing without one).

        An executor that refuses work (shut down) is recorded as this compile's error.
        """
        if self.error is not None:
            return 0
        try:
            return self._ranker.prefetch(texts)
        except Exception as exc:  # the caller's executor
            self.error = f"{type(exc).__name__}: {exc}"
            return 0

    def order(self, query: str, texts: Sequence[str]) -> list[int] | None:
        """Indices of ``texts``, most similar to what ``query`` asks first.

        Only the question sentences of ``query`` are embedded
        (:func:`membrane.text.relevance.asked_text`), at most their last
        :data:`QUESTION_WORDS` words: the part word matching weighs most, and a fraction of the
        turn's length, which is what the model's time grows with. None when
        ``query`` asks nothing (word matching alone decides), the embedder failed, or (with an
        executor) some text has no vector by the end of the compile's wait.
        """
        asked = asked_text(query)
        if self.error is not None or asked is None:
            return None
        words = asked.split()
        if len(words) > QUESTION_WORDS:
            asked = " ".join(words[-QUESTION_WORDS:])
        try:
            if self._ranker.executor is not None and not self._ready(texts):
                return None
            sims = self._ranker.similarities(asked, texts)
        except Exception as exc:  # the caller's model: any failure falls back to words
            self.error = f"{type(exc).__name__}: {exc}"
            return None
        self.used = True
        return sorted(range(len(texts)), key=lambda i: (-sims[i], i))

    def _ready(self, texts: Sequence[str]) -> bool:
        """Whether every text has its vector, waiting for them within the compile's bound."""
        bound = self._ranker.wait_seconds
        if bound is not None and self._deadline is None:
            self._deadline = time.monotonic() + bound
        left = None if self._deadline is None else max(0.0, self._deadline - time.monotonic())
        missing = self._ranker.missing_after_wait(texts, left)
        self.pending = max(self.pending, missing)
        return missing == 0
