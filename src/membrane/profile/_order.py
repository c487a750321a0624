"""Reordering by memory kind and through a caller's reranker."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from membrane.errors import InvalidInputError
from membrane.records import memory_kind

__all__ = ["Reranker", "apply_reranker", "order_by_kind"]

M = TypeVar("M")

#: ``reranker(user_message, memories)`` returns the memories to offer, best first: the same
#: objects it was given (any subset, each at most once).
Reranker = Callable[[str, Sequence[Any]], Iterable[Any]]


def order_by_kind(memories: Sequence[M], kinds_first: Sequence[str]) -> list[M]:
    """Memories of ``kinds_first`` kinds first, in that kind order, then the rest; stable.

    >>> from membrane.records import MemoryItem
    >>> rows = [MemoryItem(id="f", content="x"), MemoryItem(id="p", content="y",
    ...         memory_type="procedural")]
    >>> [m.id for m in order_by_kind(rows, ["procedural"])]
    ['p', 'f']
    """
    rank = {kind: i for i, kind in enumerate(kinds_first)}
    last = len(rank)
    keyed = [(rank.get(memory_kind(m), last), i, m) for i, m in enumerate(memories)]
    keyed.sort(key=lambda item: (item[0], item[1]))
    return [m for _, _, m in keyed]


def apply_reranker(reranker: Reranker, user_message: str, memories: Sequence[M]) -> list[M]:
    """Call ``reranker`` and check it returned memories it was given, each at most once."""
    by_identity = {id(m): m for m in memories}
    returned = reranker(user_message, list(memories))
    if isinstance(returned, (str, bytes)) or not isinstance(returned, Iterable):
        raise InvalidInputError(
            f"the reranker returned {type(returned).__name__}; it must return a list of the "
            "memories it was given, best first",
            field="reranker",
        )
    out: list[M] = []
    seen: set[int] = set()
    for item in returned:
        original = by_identity.get(id(item))
        if original is None:
            raise InvalidInputError(
                f"the reranker returned {item!r}, which is not one of the memories it was given; "
                "return the same objects (reordered or filtered), not copies",
                field="reranker",
            )
        if id(item) in seen:
            raise InvalidInputError(
                f"the reranker returned {item!r} twice; return each memory at most once",
                field="reranker",
            )
        seen.add(id(item))
        out.append(original)
    return out
