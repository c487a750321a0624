"""Vectors kept small: float16 bytes, and cosine similarities of one query against many.

A vector is scaled by a power of two (exact in binary) so its largest component is below 1,
then stored as little-endian float16: 768 bytes for 384 dimensions instead of 3 KB of floats.
Cosine does not depend on the scale, and float16 keeps about three significant digits of each
component, so similarities move by about 1e-4 and only near ties can change order.
"""

from __future__ import annotations

import math
import operator
import struct
from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = ["Packed", "pack", "similarities"]


class Packed(NamedTuple):
    """One vector as float16 bytes, with its dimension and the norm of the stored values."""

    data: bytes
    dimension: int
    norm: float


def pack(vector: Sequence[float]) -> Packed:
    """``vector`` as float16 bytes; a non-finite component raises ValueError."""
    values = [float(x) for x in vector]
    if not all(math.isfinite(x) for x in values):
        raise ValueError("the embedder returned a vector with a non-finite value")
    largest = max(map(abs, values), default=0.0)
    if largest:
        shift = -math.frexp(largest)[1]  # largest * 2**shift lies in [0.5, 1)
        values = [math.ldexp(x, shift) for x in values]
    data = struct.pack(f"<{len(values)}e", *values)
    stored = struct.unpack(f"<{len(values)}e", data)
    return Packed(data, len(values), math.sqrt(sum(map(operator.mul, stored, stored))))


def similarities(query: Packed, texts: Sequence[Packed]) -> list[float]:
    """Cosine of ``query`` with each of ``texts`` (0 for another dimension or a zero vector).

    With NumPy installed (every bundled embedder needs it) the dot products run there, about
    200 times faster than in Python for 512 passages; the values agree to about 1e-12.
    """
    if not texts:
        return []
    if _numpy() is not None:
        return _with_numpy(query, texts)
    q = struct.unpack(f"<{query.dimension}e", query.data)
    out = []
    for text in texts:
        if text.dimension != query.dimension or not (query.norm and text.norm):
            out.append(0.0)
            continue
        t = struct.unpack(f"<{text.dimension}e", text.data)
        out.append(sum(map(operator.mul, q, t)) / (query.norm * text.norm))
    return out


def _with_numpy(query: Packed, texts: Sequence[Packed]) -> list[float]:
    np = _numpy()
    q = np.frombuffer(query.data, dtype="<f2").astype(np.float64)
    same = [i for i, t in enumerate(texts) if t.dimension == query.dimension and t.norm]
    out = [0.0] * len(texts)
    if not same or not query.norm:
        return out
    rows = np.frombuffer(b"".join(texts[i].data for i in same), dtype="<f2")
    dots = rows.reshape(len(same), query.dimension).astype(np.float64) @ q
    for i, dot in zip(same, dots.tolist(), strict=True):
        out[i] = dot / (query.norm * texts[i].norm)
    return out


_NUMPY: list[Any] = []


def _numpy() -> Any:
    """NumPy when it is installed (imported on first use, never at package import), else None."""
    if not _NUMPY:
        try:
            import numpy
        except ImportError:
            _NUMPY.append(None)
        else:
            _NUMPY.append(numpy)
    return _NUMPY[0]
