"""Near duplicates by meaning: cosine similarity of the caller's embeddings."""

from __future__ import annotations

from collections.abc import Sequence

from membrane.errors import InvalidInputError
from membrane.profile._dedup import Duplicate, normalized_words
from membrane.text.semantic import Embedder, cosine

__all__ = ["differ_in_detail", "find_meaning_duplicates"]

_NEGATIONS = frozenset(
    [
        "no",
        "not",
        "never",
        "none",
        "nor",
        "without",
        "cannot",
        "can't",
        "don't",
        "doesn't",
        "didn't",
        "isn't",
        "aren't",
        "wasn't",
        "weren't",
        "won't",
        "wouldn't",
        "shouldn't",
        "mustn't",
    ]
)


def differ_in_detail(a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether the words only one of two texts holds include a number or a negation.

    >>> differ_in_detail(("use", "python", "3.11"), ("use", "python", "3.12"))
    True
    >>> differ_in_detail(("the", "user", "prefers", "tea"), ("user", "prefers", "tea"))
    False
    """
    differing = set(a) ^ set(b)
    return any(w in _NEGATIONS or any(c.isdigit() for c in w) for w in differing)


def find_meaning_duplicates(
    memories: Sequence[object], embedder: Embedder, *, threshold: float
) -> list[Duplicate]:
    """Which memories repeat an earlier one: same words, or embeddings at ``threshold`` cosine.

    Like :func:`~membrane.profile.find_duplicates`, the first of each group stays and each
    memory is compared with the kept ones only. Memories without a text ``content`` are never
    duplicates, nor are two whose differing words hold a number or a negation, however close
    their vectors: a sentence model puts "Use Python 3.11" and "Use Python 3.12" at cosine
    0.98, and "Deploy with --force" and "Deploy without --force" at 0.90. The embedder's
    errors propagate; the profile catches them and falls back to word shingles.

    >>> from membrane.records import MemoryItem
    >>> def embed(texts):  # a toy model: "tea" and "chai" mean the same
    ...     return [[1.0, 0.0] if "tea" in t or "chai" in t else [0.0, 1.0] for t in texts]
    >>> rows = [MemoryItem(id="a", content="User drinks tea."),
    ...         MemoryItem(id="b", content="User drinks chai."),
    ...         MemoryItem(id="c", content="User lives in Lagos.")]
    >>> [(d.index, d.kept_index) for d in find_meaning_duplicates(rows, embed, threshold=0.9)]
    [(1, 0)]
    """
    if isinstance(threshold, bool) or not 0.0 < threshold <= 1.0:
        raise InvalidInputError(
            f"semantic_duplicate_threshold must be in (0, 1], got {threshold!r}",
            field="semantic_duplicate_threshold",
        )
    texts: list[tuple[int, str]] = []
    for i, memory in enumerate(memories):
        content = getattr(memory, "content", None)
        if isinstance(content, str):
            texts.append((i, content))
    if not texts:
        return []
    vectors = embedder([text for _, text in texts])
    if len(vectors) != len(texts):
        raise ValueError(f"embedder returned {len(vectors)} vectors for {len(texts)} texts")
    exact: dict[tuple[str, ...], int] = {}
    kept: list[tuple[int, Sequence[float], tuple[str, ...]]] = []
    found: list[Duplicate] = []
    for (index, text), vector in zip(texts, vectors, strict=True):
        words = normalized_words(text)
        first = exact.get(words)
        if first is not None:
            found.append(Duplicate(index, first, 1.0))
            continue
        match = next(
            (
                (k, s)
                for k, v, other in kept
                if (s := cosine(vector, v)) >= threshold and not differ_in_detail(words, other)
            ),
            None,
        )
        if match is not None:
            found.append(Duplicate(index, match[0], match[1]))
            continue
        kept.append((index, vector, words))
        exact[words] = index
    return found
