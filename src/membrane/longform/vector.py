"""Embeddings in a TEXT column, and brute-force cosine recall over them.

The wire format is the cross-language contract: the vector is L2-normalised, packed as
little-endian IEEE-754 float32 values and base64-encoded (standard alphabet, with padding).
The arithmetic follows the published ``longform-memory`` 0.1.1 package step for step (the
squares and the products are summed left to right in float64), so the bytes written and the
scores computed here are bit-identical to it. Because rows are normalised when written, cosine
similarity is a dot product. A stored row that is not unit-length (written by another tool that
does not normalise) is scored by its cosine, the dot product divided by its norm, so it cannot
outscore every honest row; the published package scores it by the raw dot product.

Search is brute force: fine for one document's worth of vectors (thousands), not for a corpus.
With NumPy installed the scoring is vectorised; the rows returned, their order and their scores
are the same as without it. :class:`membrane.longform.LongformStore` goes one step further and
keeps the decoded matrix between queries.
"""

from __future__ import annotations

import base64
import math
import numbers
import operator
import struct
import sys
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Final, Generic, TypeVar

from membrane.errors import InvalidInputError

__all__ = [
    "DEFAULT_K",
    "DEFAULT_MIN_SCORE",
    "NUMPY_MIN_ROWS",
    "RELATIVE_FLOOR",
    "UNIT_TOLERANCE",
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

#: A stored row whose norm is further than this from 1 was not normalised by its writer: it is
#: scored by its cosine (dot product over norm). Rows written by :func:`encode_vector`, or by
#: any writer that normalises before rounding to float32, are within 2**-23 of 1.
UNIT_TOLERANCE: Final = 1e-3

_INF: Final = float("inf")


@dataclass(frozen=True, slots=True)
class ScoredRow(Generic[T]):
    """One recall hit: the caller's row and its cosine similarity to the query."""

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
        # A NaN would poison every comparison in a sort; zeros score 0 against everything.
        return [0.0] * len(vector)
    return [x / norm for x in vector]


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    total: float = _left_to_right(map(operator.mul, a, b))
    return total


def _off_unit_norm(values: Sequence[float]) -> float | None:
    """The norm of a stored row that is not unit-length, or None for a unit one.

    The squares of float32 values are exact in float64 and ``fsum`` rounds their sum once, so
    every search path reaches the same decision for the same row. A plain sum, off by far less
    than half the tolerance, settles the common case (a unit row) first.
    """
    if abs(sum(map(operator.mul, values, values)) - 1.0) <= UNIT_TOLERANCE:
        return None
    norm = math.sqrt(math.fsum(map(operator.mul, values, values)))
    return None if abs(norm - 1.0) <= UNIT_TOLERANCE else norm


def _row_score(query: Sequence[float], values: Sequence[float]) -> float:
    """Cosine of a stored row with the (unit) query: the dot product, over the row's norm when
    the row is not unit-length (a zero row scores its dot product, 0)."""
    score = _dot(query, values)
    norm = _off_unit_norm(values)
    return score / norm if norm else score


def _numbers(vector: Any, field: str) -> list[Any]:
    """``vector``'s components, each a real number; an int too large for a float is read as
    the infinity of its sign (so the vector encodes and scores as any infinite one does)."""
    if isinstance(vector, (str, bytes)):
        raise TypeError(f"{field} must be a sequence of numbers, not a string")
    try:
        values = list(vector)
    except TypeError:
        raise TypeError(f"{field} must be a sequence of numbers") from None
    for i, x in enumerate(values):
        if not isinstance(x, numbers.Real):
            raise InvalidInputError(
                f"{field}[{i}] must be a real number, got {type(x).__name__}", field=f"{field}[{i}]"
            )
        if isinstance(x, int) and not -sys.float_info.max <= x <= sys.float_info.max:
            values[i] = _INF if x > 0 else -_INF
    return values


def _encode(vector: Any) -> str:
    values = _unit(vector)
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode("ascii")


def encode_vector(vector: Sequence[float]) -> str:
    """Normalise ``vector`` and encode it in the wire format.

    A zero vector, or one with a NaN or infinite component (an int too large for a float
    counts as infinite) or whose squares overflow, encodes as zeros of the same dimension. A
    component that is not a real number (None, a complex, a string) raises
    :class:`~membrane.errors.InvalidInputError` naming it.

    >>> encode_vector([3.0, 4.0])
    'mpkZP83MTD8='
    """
    return encode_checked(vector, "vector")


def encode_checked(vector: Any, field: str) -> str:
    """:func:`encode_vector` with errors naming ``field``."""
    values = _numbers(vector, field)
    if not values:
        raise InvalidInputError("cannot encode an empty vector", field=field)
    return _encode(values)


def _raw_bytes(encoded: Any) -> bytes | None:
    """The decoded bytes of one stored vector, or None when they cannot be a float32 array."""
    if not encoded:
        return None
    try:
        raw = base64.b64decode(encoded, validate=True)
    except Exception:
        # Whatever the stored value is (bad padding, non-ASCII text, not a string at all), one
        # unreadable row is skipped rather than failing the recall.
        return None
    if len(raw) % 4:
        return None
    return raw


def _unpack(raw: bytes) -> tuple[float, ...]:
    values: tuple[float, ...] = struct.unpack(f"<{len(raw) // 4}f", raw)
    return values


def _finite(values: tuple[float, ...]) -> bool:
    # float32 values cannot overflow a float64 sum, so the sum is finite exactly when every
    # component is: one pass in C instead of a Python-level check per component.
    return math.isfinite(sum(values))


def _decode(encoded: Any) -> list[float] | None:
    raw = _raw_bytes(encoded)
    return None if raw is None else list(_unpack(raw))


def decode_vector(encoded: str) -> list[float] | None:
    """Decode a wire-format vector.

    Returns None, instead of raising, when the value is empty, not valid base64, or its byte
    length is not a multiple of four: one bad row must not break a recall. The components are
    returned as stored, NaN and infinities included (:func:`search_top_k` skips such rows).

    >>> decode_vector("mpkZP83MTD8=")
    [0.6000000238418579, 0.800000011920929]
    >>> decode_vector("not base64!") is None
    True
    """
    return _decode(encoded)


def numpy_available() -> bool:
    """Whether NumPy can be imported (the vectorised search path needs it)."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


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


def _score_rows(
    query: list[float],
    rows: Sequence[Any],
    get_embedding: Callable[[Any], Any],
    min_score: Any,
    *,
    finite_only: bool,
) -> list[tuple[int, float]]:
    """``(position, score)`` of every row of the query's dimension scoring at least
    ``min_score``, in row order. ``finite_only`` (Membrane's rules, not the published ones)
    skips rows holding NaN or infinity and scores a row that is not unit-length by its cosine."""
    width = 4 * len(query)
    scored: list[tuple[int, float]] = []
    for position, row in enumerate(rows):
        raw = _raw_bytes(get_embedding(row))
        if raw is None or len(raw) != width:
            continue
        values = _unpack(raw)
        if finite_only and not _finite(values):
            continue
        score = _row_score(query, values) if finite_only else _dot(query, values)
        if score < min_score:
            continue
        scored.append((position, score))
    return scored


def _select(
    scored: list[tuple[int, float]], k: Any, relative_floor: Any
) -> list[tuple[int, float]]:
    """Best first (a stable sort, so equal scores keep row order), then the relative floor
    against the best score, then the first ``k``."""
    if not scored:
        return []
    ranked = sorted(scored, key=operator.itemgetter(1), reverse=True)
    floor = ranked[0][1] * relative_floor
    return [pair for pair in ranked if pair[1] >= floor][:k]


def _margin_factor(dimension: int) -> float | None:
    """Bound on ``|float32 score - exact score|`` per unit of row norm, or None when the bound
    is too loose to prune anything (millions of dimensions)."""
    # Rounding the query to float32 and summing d float32 products each cost at most about
    # d * 2**-24 relative to |q| |v| (|q| = 1); the float64 reference adds far less. The margin
    # doubles that bound.
    growth = (dimension + 2) * 2.0**-24
    if growth >= 0.25:
        return None
    return 2.0 * growth / (1.0 - growth) * 1.01


def _candidates(
    matrix: Any,
    norms: Any,
    query32: Any,
    k: int,
    min_score: float,
    relative_floor: float,
    usable: Any = None,
) -> Any:
    """Positions of the rows of ``matrix`` (float32, finite rows) that may be among the hits.

    Every float32 score gets a bound on its distance from the exact score; a row is dropped
    only when even its best case fails a floor or stays below the k-th place among rows that
    surely pass, so re-scoring the remaining rows exactly gives the same hits as scoring all.
    """
    import numpy as np

    dimension = matrix.shape[1]
    factor = _margin_factor(dimension)
    count = matrix.shape[0]
    keep = np.ones(count, dtype=bool) if usable is None else usable.copy()
    if factor is None or count == 0:
        return np.flatnonzero(keep)
    with np.errstate(all="ignore"):
        approx = (matrix @ query32).astype(np.float64)
        margin = norms * factor + dimension * 2.0**-120
        # Rows that are not unit-length are scored by their cosine (_row_score): divide their
        # score and its error bound by the norm. Near the tolerance the exact rule may read a
        # row either way, which moves its score by at most |norm - 1|: the margin covers both.
        drift = np.abs(norms - 1.0)
        off = (drift > UNIT_TOLERANCE / 2) & (norms > 0)
        if off.any():
            divisor = np.where(off, norms, 1.0)
            approx = approx / divisor
            margin = margin / divisor + np.where(
                np.abs(drift - UNIT_TOLERANCE) <= UNIT_TOLERANCE / 2, 2 * UNIT_TOLERANCE, 0.0
            )
        wild = ~np.isfinite(approx) | ~np.isfinite(margin)
        approx[wild] = 0.0
        margin[wild] = np.inf
        upper = approx + margin
        lower = approx - margin
    keep &= upper >= min_score
    if not keep.any():
        return np.flatnonzero(keep)
    # The best hit scores at least the largest lower bound among rows that surely pass the
    # absolute floor, so the relative floor is at least that times relative_floor.
    sure_min = keep & (lower >= min_score)
    if sure_min.any():
        keep &= upper >= float(lower[sure_min].max()) * relative_floor
        if not keep.any():
            return np.flatnonzero(keep)
    # And it scores at most the largest upper bound: rows whose lower bound clears both floors
    # with that best case are surely hits; the k-th best of their lower bounds is a score any
    # row in the final top k must reach.
    top_upper = float(upper[keep].max())
    surely = keep & (lower >= min_score) & (lower >= top_upper * relative_floor)
    sure_lower = lower[surely]
    if k and sure_lower.size >= k:
        kth = float(np.partition(sure_lower, sure_lower.size - k)[sure_lower.size - k])
        keep &= upper >= kth
    return np.flatnonzero(keep)


def _decode_matrix(encoded: Sequence[object], dimension: int) -> tuple[list[int], Any, Any]:
    """The finite rows that hold a vector of ``dimension``, as one float32 matrix, their
    positions in ``encoded`` and their float64 norms."""
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
    matrix = matrix.astype(np.float32, copy=False)
    with np.errstate(all="ignore"):
        # Squares of float32 values cannot overflow float64, so a row norm is finite exactly
        # when the row is; NaN and infinite rows drop out here, as the pure path skips them.
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix, dtype=np.float64))
    finite = np.isfinite(norms)
    if not finite.all():
        keep = np.flatnonzero(finite)
        positions = [positions[i] for i in keep.tolist()]
        matrix = matrix[keep]
        norms = norms[keep]
    return positions, matrix, norms


def _exact(query: list[float], matrix: Any, positions: Any) -> list[tuple[int, float]]:
    """``(position, exact score)`` for the given matrix rows, in position order."""
    return [(int(p), _row_score(query, matrix[p].tolist())) for p in sorted(positions.tolist())]


def _search_numpy(
    query: list[float],
    rows: Sequence[T],
    get_embedding: Callable[[T], Any],
    k: int,
    min_score: float,
    relative_floor: float,
) -> list[tuple[int, float]] | None:
    """Scored candidates via one float32 matrix product; None when the pure path must run."""
    import numpy as np

    dimension = len(query)
    if _margin_factor(dimension) is None:
        return None
    positions, matrix, norms = _decode_matrix([get_embedding(row) for row in rows], dimension)
    chosen = _candidates(
        matrix, norms, np.asarray(query, dtype=np.float32), k, min_score, relative_floor
    )
    return [
        (positions[p], score) for p, score in _exact(query, matrix, chosen) if not score < min_score
    ]


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
    not decode, holds NaN or infinity, or has another dimension than the query (a store
    half-migrated to another embedding model) are skipped; a row that is not unit-length is
    scored by its cosine. A hit scores at least ``min_score``
    and at least ``relative_floor`` times the best hit; at most ``k`` are returned, equal
    scores in input order. ``use_numpy``: None picks NumPy when it is installed and there are
    enough rows, True requires it, False never uses it; all three return the same hits.

    >>> rows = [("cellar", encode_vector([1.0, 0.1])), ("roof", encode_vector([0.0, 1.0]))]
    >>> [hit.row[0] for hit in search_top_k([1.0, 0.0], rows, lambda r: r[1])]
    ['cellar']
    """
    _check_search_args(k, min_score, relative_floor)
    normalised = _unit(_numbers(query, "query"))
    if k == 0 or not normalised:
        return []
    if use_numpy is None:
        use_numpy = len(rows) >= NUMPY_MIN_ROWS and numpy_available()
    if use_numpy and not numpy_available():
        raise ModuleNotFoundError(
            "search_top_k(use_numpy=True) needs NumPy: pip install numpy, "
            "or pass use_numpy=None to fall back to pure Python"
        )
    scored = None
    if use_numpy:
        scored = _search_numpy(
            normalised, rows, get_embedding, k, float(min_score), float(relative_floor)
        )
    if scored is None:
        scored = _score_rows(normalised, rows, get_embedding, min_score, finite_only=True)
    chosen = _select(scored, k, relative_floor)
    return [ScoredRow(row=rows[index], score=score) for index, score in chosen]
