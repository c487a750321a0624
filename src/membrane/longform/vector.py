"""Embeddings in a TEXT column, and brute-force cosine recall over them.

The wire format is the cross-language contract: the vector is L2-normalised, packed as
little-endian IEEE-754 float32 values and base64-encoded (standard alphabet, with padding).
A store written by the TypeScript ``longform-memory`` package reads here unchanged, and the
reverse. Because rows are normalised when written, cosine similarity is a dot product.

Search is brute force: fine for one document's worth of vectors (thousands), not for a corpus.
With NumPy installed the scoring is vectorised; the rows returned and their order are the same
as without it.
"""

from __future__ import annotations

import base64
import binascii
import math
import operator
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from membrane.errors import InvalidInputError

__all__ = [
    "DEFAULT_K",
    "DEFAULT_MIN_SCORE",
    "NUMPY_MIN_ROWS",
    "RELATIVE_FLOOR",
    "ScoredRow",
    "decode_vector",
    "encode_vector",
    "numpy_available",
    "search_top_k",
]

T = TypeVar("T")

#: Default number of hits returned by :func:`search_top_k`.
DEFAULT_K: Final = 6

#: Default absolute score floor. It depends on the embedding model: unrelated text scores
#: around 0.12-0.19 under text-embedding-3-small but 0.27-0.35 under bge-m3, so a floor tuned
#: for one model lets everything through under the other. Measure it for your model.
DEFAULT_MIN_SCORE: Final = 0.2

#: Default relative floor: a hit must score at least this fraction of the best hit.
RELATIVE_FLOOR: Final = 0.88

#: Below this many rows the automatic choice stays on the pure-Python path, where the cost of
#: building arrays would outweigh the vectorised dot products.
NUMPY_MIN_ROWS: Final = 64


@dataclass(frozen=True, slots=True)
class ScoredRow(Generic[T]):
    """One recall hit: the caller's row and its cosine similarity to the query."""

    row: T
    score: float


def _normalised(vector: Sequence[float]) -> list[float]:
    """The vector scaled to unit length, or zeros when that is undefined."""
    values = [float(x) for x in vector]
    # math.hypot scales internally, so huge components do not overflow to inf.
    norm = math.hypot(*values)
    if norm == 0.0 or not math.isfinite(norm):
        # A NaN would poison every comparison in a sort; zeros score 0 against everything.
        return [0.0] * len(values)
    return [x / norm for x in values]


def encode_vector(vector: Sequence[float]) -> str:
    """Normalise ``vector`` and encode it in the wire format.

    A zero vector, or one with a NaN or infinite component, encodes as zeros of the same
    dimension.

    >>> encode_vector([3.0, 4.0])
    'mpkZP83MTD8='
    """
    if isinstance(vector, (str, bytes)):
        raise TypeError("encode_vector expects a sequence of numbers, not a string")
    if len(vector) == 0:
        raise InvalidInputError("cannot encode an empty vector", field="vector")
    values = _normalised(vector)
    raw = struct.pack(f"<{len(values)}f", *values)
    return base64.b64encode(raw).decode("ascii")


def _raw_bytes(encoded: object) -> bytes | None:
    """The decoded bytes of one stored vector, or None when they cannot be a float32 array."""
    if not isinstance(encoded, str) or not encoded:
        return None
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return None
    if not raw or len(raw) % 4:
        return None
    return raw


def _floats(raw: bytes) -> tuple[float, ...] | None:
    values: tuple[float, ...] = struct.unpack(f"<{len(raw) // 4}f", raw)
    # float32 values cannot overflow a float64 sum, so the sum is finite exactly when every
    # component is: one pass in C instead of a Python-level check per component.
    return values if math.isfinite(sum(values)) else None


def decode_vector(encoded: str) -> list[float] | None:
    """Decode a wire-format vector.

    Returns None, instead of raising, when the text is not valid base64, the byte length is not
    a multiple of four, or a component is NaN or infinite: one bad row must not break a recall.

    >>> decode_vector("mpkZP83MTD8=")
    [0.6000000238418579, 0.800000011920929]
    >>> decode_vector("not base64!") is None
    True
    """
    raw = _raw_bytes(encoded)
    if raw is None:
        return None
    values = _floats(raw)
    return None if values is None else list(values)


def numpy_available() -> bool:
    """Whether NumPy can be imported (the vectorised search path needs it)."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    total: float = sum(map(operator.mul, a, b))
    return total


def _check_search_args(k: object, min_score: object, relative_floor: object) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise InvalidInputError(f"k must be an int >= 0, got {k!r}", field="k")
    if not isinstance(min_score, (int, float)) or not math.isfinite(min_score):
        raise InvalidInputError(
            f"min_score must be a finite number, got {min_score!r}", field="min_score"
        )
    if not isinstance(relative_floor, (int, float)) or not 0.0 <= relative_floor <= 1.0:
        raise InvalidInputError(
            f"relative_floor must be between 0 and 1, got {relative_floor!r}",
            field="relative_floor",
        )


def _select(
    scored: list[tuple[int, float]], k: int, min_score: float, relative_floor: float
) -> list[tuple[int, float]]:
    """Apply both floors and the cut to ``(row index, score)`` pairs; ties keep input order."""
    passing = [pair for pair in scored if pair[1] >= min_score]
    if not passing:
        return []
    passing.sort(key=lambda pair: (-pair[1], pair[0]))
    best = passing[0][1]
    # A relative floor only means something against a positive best score; with a negative
    # best (possible when min_score is negative) it would reject the best hit itself.
    floor = best * relative_floor if best > 0.0 else -math.inf
    return [pair for pair in passing if pair[1] >= floor][:k]


def _search_pure(
    query: list[float],
    rows: Sequence[T],
    get_embedding: Callable[[T], str],
) -> list[tuple[int, float]]:
    width = 4 * len(query)
    scored: list[tuple[int, float]] = []
    for index, row in enumerate(rows):
        raw = _raw_bytes(get_embedding(row))
        if raw is None or len(raw) != width:
            continue
        vector = _floats(raw)
        if vector is not None:
            scored.append((index, _dot(query, vector)))
    return scored


def _decode_matrix(encoded: Sequence[object], dimension: int) -> tuple[list[int], Any]:
    """The rows that hold a vector of ``dimension``, decoded into one float32 matrix.

    Returns their positions in ``encoded`` and the matrix. Decoding goes row by row through
    the same check as the pure path: CPython's base64 decoder runs at a few hundred MB/s, as
    fast as an array-based decoder measured here, and sharing it means both paths accept
    exactly the same rows. (Rows with NaN or infinite components are still in the matrix.)
    """
    import numpy as np

    width = 4 * dimension
    positions: list[int] = []
    chunks: list[bytes] = []
    for position, text in enumerate(encoded):
        raw = _raw_bytes(text)
        if raw is not None and len(raw) == width:
            positions.append(position)
            chunks.append(raw)
    matrix = np.frombuffer(b"".join(chunks), dtype="<f4").reshape(len(chunks), dimension)
    return positions, matrix.astype(np.float32, copy=False)


def _search_numpy(
    query: list[float],
    rows: Sequence[T],
    get_embedding: Callable[[T], str],
    k: int,
    min_score: float,
    relative_floor: float,
) -> list[tuple[int, float]]:
    """Score every row with one float32 matrix product, then re-score exactly the few that can
    still win.

    The product rounds differently from the pure path. Each approximate score gets a bound on
    that difference; every row whose bound overlaps a decision (a floor or the k-th place) is
    re-scored with the pure path's own arithmetic, so the hits and their scores are identical.
    """
    import numpy as np

    dimension = len(query)
    # Rounding the query to float32 and summing d float32 products each cost at most about
    # d * 2**-24 relative to |q| |v| (|q| = 1); the pure float64 sum adds far less. The margin
    # doubles that bound; past a few million dimensions it is useless and the pure path runs.
    growth = (dimension + 2) * 2.0**-24
    if growth >= 0.25:
        return _search_pure(query, rows, get_embedding)
    factor = 2.0 * growth / (1.0 - growth) * 1.01
    positions, matrix = _decode_matrix([get_embedding(row) for row in rows], dimension)
    if not positions:
        return []
    # Non-finite and overflowing rows are handled explicitly below, so the floating-point
    # warnings NumPy would raise for them are noise.
    with np.errstate(all="ignore"):
        # Squares of float32 values cannot overflow float64, so a row norm is finite exactly
        # when the row is; NaN and infinite rows drop out here, as decode_vector drops them.
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix, dtype=np.float64))
        finite = np.isfinite(norms)
        approx = (matrix @ np.asarray(query, dtype=np.float32)).astype(np.float64)
        margin = norms * factor + dimension * 2.0**-120
        wild = ~np.isfinite(approx) | ~np.isfinite(margin)
        approx[wild] = 0.0
        margin[wild] = np.inf
        upper = np.where(finite, approx + margin, -np.inf)
        lower = np.where(finite, approx - margin, -np.inf)

    candidate = finite & (upper >= min_score)
    top_lower = float(lower.max())
    if top_lower > 0.0:
        candidate &= upper >= top_lower * relative_floor
    # Rows that certainly pass both floors; the k-th best of their lower bounds is a score any
    # row in the final top k must reach.
    top_upper = float(upper.max())
    surely = finite & (lower >= min_score)
    if top_upper > 0.0:
        surely &= lower >= top_upper * relative_floor
    sure_lower = lower[surely]
    if k and sure_lower.size >= k:
        kth = float(np.partition(sure_lower, sure_lower.size - k)[sure_lower.size - k])
        candidate &= upper >= kth

    exact: list[tuple[int, float]] = []
    for position in np.flatnonzero(candidate).tolist():
        vector = matrix[position].tolist()
        exact.append((positions[position], _dot(query, vector)))
    return exact


def search_top_k(
    query: Sequence[float],
    rows: Sequence[T],
    get_embedding: Callable[[T], str],
    k: int = DEFAULT_K,
    min_score: float = DEFAULT_MIN_SCORE,
    relative_floor: float = RELATIVE_FLOOR,
    *,
    use_numpy: bool | None = None,
) -> list[ScoredRow[T]]:
    """The rows most similar to ``query``, best first.

    ``get_embedding`` returns a row's stored vector in the wire format. Rows whose vector does
    not decode, or whose dimension differs from the query's (a store half-migrated to another
    embedding model), are skipped. A hit must score at least ``min_score`` and at least
    ``relative_floor`` times the best hit; at most ``k`` are returned, equal scores in input
    order. ``use_numpy``: None picks NumPy when it is installed and there are enough rows,
    True requires it, False never uses it; all three return the same hits.

    >>> rows = [("cellar", encode_vector([1.0, 0.1])), ("roof", encode_vector([0.0, 1.0]))]
    >>> [hit.row[0] for hit in search_top_k([1.0, 0.0], rows, lambda r: r[1])]
    ['cellar']
    """
    _check_search_args(k, min_score, relative_floor)
    if isinstance(query, (str, bytes)):
        raise TypeError("search_top_k expects the query as a sequence of numbers")
    normalised = _normalised(query)
    if k == 0 or not normalised or not any(normalised):
        return []
    if use_numpy is None:
        use_numpy = len(rows) >= NUMPY_MIN_ROWS and numpy_available()
    if use_numpy:
        if not numpy_available():
            raise ModuleNotFoundError(
                "search_top_k(use_numpy=True) needs NumPy: pip install numpy, "
                "or pass use_numpy=None to fall back to pure Python"
            )
        scored = _search_numpy(
            normalised, rows, get_embedding, k, float(min_score), float(relative_floor)
        )
    else:
        scored = _search_pure(normalised, rows, get_embedding)
    chosen = _select(scored, k, float(min_score), float(relative_floor))
    return [ScoredRow(row=rows[index], score=score) for index, score in chosen]
