"""The vector half of ``longform_memory``: the TEXT-column wire format and brute-force recall.

Same names, parameters, result types and values as the published package (rows holding NaN or
infinity are scored as it scores them); the arithmetic is :mod:`membrane.longform.vector`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from membrane.longform import vector as _core

__all__ = [
    "DEFAULT_MIN_SCORE",
    "RELATIVE_FLOOR",
    "ScoredRow",
    "decode_vector",
    "encode_vector",
    "search_top_k",
]

T = TypeVar("T")

#: Default absolute score floor (calibrate it for your embedding model).
DEFAULT_MIN_SCORE = _core.DEFAULT_MIN_SCORE

#: Default relative floor: a hit must reach this fraction of the best hit's score.
RELATIVE_FLOOR = _core.RELATIVE_FLOOR


@dataclass
class ScoredRow(Generic[T]):
    """One hit: the caller's row and its cosine similarity to the query."""

    row: T
    score: float


def encode_vector(vec: Sequence[float]) -> str:
    """L2-normalise, pack as little-endian float32, base64-encode."""
    return _core._encode(vec)


def decode_vector(b64: str) -> list[float] | None:
    """The stored floats, or None when the value is empty, not base64, or not whole floats."""
    return _core._decode(b64)


def search_top_k(
    query_vec: Sequence[float],
    rows: Sequence[T],
    get_embedding: Callable[[T], str],
    k: int = 6,
    min_score: float = DEFAULT_MIN_SCORE,
    relative_floor: float = RELATIVE_FLOOR,
) -> list[ScoredRow[T]]:
    """Up to ``k`` rows of the query's dimension, best first, scoring at least ``min_score``
    and at least ``relative_floor`` times the best score."""
    query = _core._unit(query_vec)
    if not query:
        return []
    listed: Sequence[Any] = rows if isinstance(rows, Sequence) else list(rows)
    scored = _core._score_rows(query, listed, get_embedding, min_score, finite_only=False)
    return [
        ScoredRow(row=listed[position], score=score)
        for position, score in _core._select(scored, k, relative_floor)
    ]
