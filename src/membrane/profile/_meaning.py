"""Near duplicates by meaning: cosine similarity of the caller's embeddings."""

from __future__ import annotations

from collections.abc import Sequence

from membrane.errors import InvalidInputError
from membrane.profile._dedup import Duplicate, normalized_words
from membrane.text.semantic import Embedder, cosine

__all__ = ["find_meaning_duplicates"]


def find_meaning_duplicates(
    memories: Sequence[object], embedder: Embedder, *, threshold: float
) -> list[Duplicate]:
    """Which memories repeat an earlier one: same words, or embeddings at ``threshold`` cosine.

    Like :func:`~membrane.profile.find_duplicates`, the first of each group stays and each
    memory is compared with the kept ones only. Memories without a text ``content`` are never
    duplicates. The embedder's errors propagate; the profile catches them and falls back to
    word shingles.

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
    kept: list[tuple[int, Sequence[float]]] = []
    found: list[Duplicate] = []
    for (index, text), vector in zip(texts, vectors, strict=True):
        words = normalized_words(text)
        first = exact.get(words)
        if first is not None:
            found.append(Duplicate(index, first, 1.0))
            continue
        match = next(((k, s) for k, v in kept if (s := cosine(vector, v)) >= threshold), None)
        if match is not None:
            found.append(Duplicate(index, match[0], match[1]))
            continue
        kept.append((index, vector))
        exact[words] = index
    return found
