"""Decoded embeddings kept between queries: one float32 matrix per document and dimension.

:class:`VectorCache` holds, for each :class:`~membrane.longform.LongformStore` that uses it,
the stored chapter embeddings decoded into float32 matrices (one per dimension, since a store
half-migrated to another embedding model holds two). A store updates its matrices in place
when it writes, so a new chapter costs one row, not a rebuild. The cache is bounded by bytes;
when a document does not fit, the documents used least recently leave first. NumPy is imported
only when a matrix is built.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from typing import Any, Final

from membrane.errors import InvalidInputError

__all__ = ["DEFAULT_VECTOR_CACHE_BYTES", "VectorCache"]

#: Default byte bound of a store's private cache: about 87,000 vectors of dimension 1,536.
DEFAULT_VECTOR_CACHE_BYTES: Final = 512 * 1024 * 1024

_owners = itertools.count(1)


def new_owner() -> int:
    """A key no other store uses."""
    return next(_owners)


class VectorSet:
    """The finite rows of one dimension: float32 matrix, chapter numbers and float64 norms,
    with spare capacity so that appends are amortised O(1)."""

    def __init__(self, dim: int, numbers: list[int], raw: bytes) -> None:
        import numpy as np

        self.dim = dim
        # A read-only view of the bytes; the one copy is into the writable matrix below.
        matrix = np.frombuffer(raw, dtype="<f4").reshape(len(numbers), dim)
        with np.errstate(all="ignore"):
            norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix, dtype=np.float64))
        finite = np.isfinite(norms)
        self.count = int(finite.sum())
        # Headroom for the chapters still to come, so the first writes after a load append in
        # place instead of copying the whole matrix.
        capacity = self.count + max(16, self.count // 8)
        self.data = np.empty((capacity, dim), dtype=np.float32)
        every_row = self.count == len(numbers)
        self.data[: self.count] = matrix if every_row else matrix[finite]
        self.norms = np.empty(capacity, dtype=np.float64)
        self.norms[: self.count] = norms if every_row else norms[finite]
        self.numbers = np.empty(capacity, dtype=np.int64)
        chapters = np.asarray(numbers, dtype=np.int64)
        self.numbers[: self.count] = chapters if every_row else chapters[finite]
        self.slot: dict[int, int] = {
            int(n): i for i, n in enumerate(self.numbers[: self.count].tolist())
        }

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes + self.norms.nbytes + self.numbers.nbytes)

    def _grow(self) -> None:
        import numpy as np

        capacity = max(16, self.data.shape[0] * 3 // 2)
        data = np.empty((capacity, self.dim), dtype=np.float32)
        data[: self.count] = self.data[: self.count]
        norms = np.empty(capacity, dtype=np.float64)
        norms[: self.count] = self.norms[: self.count]
        numbers = np.empty(capacity, dtype=np.int64)
        numbers[: self.count] = self.numbers[: self.count]
        self.data, self.norms, self.numbers = data, norms, numbers

    def upsert(self, number: int, raw: bytes) -> None:
        """Write one chapter's row in place (or drop it when it holds NaN or infinity)."""
        import numpy as np

        row = np.frombuffer(raw, dtype="<f4")
        with np.errstate(all="ignore"):
            norm = float(np.sqrt(np.dot(row.astype(np.float64), row.astype(np.float64))))
        if norm != norm or norm == float("inf"):
            self.remove(number)
            return
        position = self.slot.get(number)
        if position is None:
            if self.count == self.data.shape[0]:
                self._grow()
            position = self.count
            self.count += 1
            self.slot[number] = position
            self.numbers[position] = number
        self.data[position] = row
        self.norms[position] = norm

    def remove(self, number: int) -> None:
        """Drop one chapter's row; the last row takes its place."""
        position = self.slot.pop(number, None)
        if position is None:
            return
        last = self.count - 1
        if position != last:
            moved = int(self.numbers[last])
            self.data[position] = self.data[last]
            self.norms[position] = self.norms[last]
            self.numbers[position] = moved
            self.slot[moved] = position
        self.count = last

    def view(self) -> tuple[Any, Any, Any]:
        """The live rows: matrix, norms and chapter numbers."""
        return self.data[: self.count], self.norms[: self.count], self.numbers[: self.count]


class Document:
    """One store's vector sets and the database version they reflect."""

    def __init__(self, version: int, sets: dict[int, VectorSet]) -> None:
        self.version = version
        self.sets = sets

    @property
    def nbytes(self) -> int:
        return sum(vectors.nbytes for vectors in self.sets.values())

    def write(self, number: int, raw: bytes | None) -> None:
        """Apply one chapter write: the row leaves every other dimension, joins its own."""
        dim = None if raw is None else len(raw) // 4
        for other, vectors in self.sets.items():
            if other != dim:
                vectors.remove(number)
        if raw is None or dim is None:
            return
        existing = self.sets.get(dim)
        if existing is None:
            self.sets[dim] = VectorSet(dim, [number], raw)
        else:
            existing.upsert(number, raw)


class VectorCache:
    """Decoded embedding matrices of one or more stores, bounded by ``max_bytes``.

    Each :class:`~membrane.longform.LongformStore` gets a private cache unless one is passed
    (``LongformStore(path, vector_cache=cache)``); a server holding many documents passes one
    shared cache, so the bound applies to all of them together and the least recently queried
    document leaves first. A document larger than the bound is used for the query at hand and
    not kept. ``max_bytes=0`` keeps nothing.

    >>> cache = VectorCache(max_bytes=64 * 1024 * 1024)
    >>> (cache.max_bytes, cache.bytes_used, len(cache))
    (67108864, 0, 0)
    """

    def __init__(self, max_bytes: int = DEFAULT_VECTOR_CACHE_BYTES) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise InvalidInputError(
                f"max_bytes must be an int >= 0, got {max_bytes!r}", field="max_bytes"
            )
        self._max_bytes = max_bytes
        self._documents: OrderedDict[int, Document] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def max_bytes(self) -> int:
        """The bound on :attr:`bytes_used`."""
        return self._max_bytes

    @property
    def bytes_used(self) -> int:
        """Bytes held by the cached matrices (allocated capacity included)."""
        with self._lock:
            return sum(document.nbytes for document in self._documents.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._documents)

    def clear(self) -> None:
        """Drop every cached document."""
        with self._lock:
            self._documents.clear()

    def get(self, owner: int) -> Document | None:
        with self._lock:
            document = self._documents.get(owner)
            if document is not None:
                self._documents.move_to_end(owner)
            return document

    def put(self, owner: int, document: Document) -> bool:
        """Keep ``document`` (evicting the least recently used others); False if too large."""
        with self._lock:
            self._documents.pop(owner, None)
            if document.nbytes > self._max_bytes:
                return False
            self._documents[owner] = document
            self._fit(owner)
            return owner in self._documents

    def discard(self, owner: int) -> None:
        with self._lock:
            self._documents.pop(owner, None)

    def refit(self, owner: int) -> None:
        """Re-apply the bound after ``owner``'s document grew in place."""
        with self._lock:
            self._fit(owner)

    def _fit(self, owner: int) -> None:
        used = sum(document.nbytes for document in self._documents.values())
        for key in list(self._documents):
            if used <= self._max_bytes:
                break
            if key == owner and len(self._documents) > 1:
                continue
            used -= self._documents.pop(key).nbytes
        if used > self._max_bytes:
            self._documents.pop(owner, None)
