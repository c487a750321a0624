"""The vector half of ``longform_memory``: the TEXT-column wire format and brute-force recall.

Same names, parameters, result types and values as the published package (rows holding NaN or
infinity are scored as it scores them). The arithmetic is the one :mod:`membrane.longform.vector`
follows too, step for step (squares and products summed left to right in float64, so the bytes
and scores are bit-identical); this module carries its own copy so that the package needs
nothing but the standard library.
"""

from __future__ import annotations

import base64
import operator
import struct
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Generic, Optional, TypeVar

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
DEFAULT_MIN_SCORE = 0.2

#: Default relative floor: a hit must reach this fraction of the best hit's score.
RELATIVE_FLOOR = 0.88

_INF = float("inf")


@dataclass
class ScoredRow(Generic[T]):
    """One hit: the caller's row and its cosine similarity to the query."""

    row: T
    score: float


def _left_to_right(terms: Iterable[Any]) -> Any:
    """``0.0 + t0 + t1 + ...`` in exactly that order (``sum()`` compensates from Python 3.12,
    which would change the last bits and with them the ties between rows)."""
    return deque(accumulate(terms, initial=0.0), maxlen=1)[0]


def _unit(vector: Any) -> list[float]:
    """``vector`` divided by its L2 norm; all zeros when the norm is 0, NaN or infinite."""
    norm = _left_to_right(x * x for x in vector) ** 0.5
    if not norm or norm != norm or norm == _INF:
        return [0.0] * len(vector)
    return [x / norm for x in vector]


def encode_vector(vec: Sequence[float]) -> str:
    """L2-normalise, pack as little-endian float32, base64-encode."""
    values = _unit(vec)
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode("ascii")


def _raw_bytes(encoded: Any) -> Optional[bytes]:
    """The decoded bytes of one stored vector, or None when they cannot be a float32 array."""
    if not encoded:
        return None
    try:
        raw = base64.b64decode(encoded, validate=True)
    except Exception:
        # Whatever the stored value is, one unreadable row is skipped, not fatal.
        return None
    if len(raw) % 4:
        return None
    return raw


def decode_vector(b64: str) -> Optional[list[float]]:
    """The stored floats, or None when the value is empty, not base64, or not whole floats."""
    raw = _raw_bytes(b64)
    return None if raw is None else list(struct.unpack(f"<{len(raw) // 4}f", raw))


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
    query = _unit(query_vec)
    if not query:
        return []
    listed: Sequence[Any] = rows if isinstance(rows, Sequence) else list(rows)
    width = 4 * len(query)
    scored: list[tuple[int, float]] = []
    for position, row in enumerate(listed):
        raw = _raw_bytes(get_embedding(row))
        if raw is None or len(raw) != width:
            continue
        values = struct.unpack(f"<{len(raw) // 4}f", raw)
        score: float = _left_to_right(map(operator.mul, query, values))
        if score < min_score:
            continue
        scored.append((position, score))
    if not scored:
        return []
    # Best first; the sort is stable, so equal scores keep row order.
    ranked = sorted(scored, key=operator.itemgetter(1), reverse=True)
    floor = ranked[0][1] * relative_floor
    return [
        ScoredRow(row=listed[position], score=score) for position, score in ranked if score >= floor
    ][:k]
