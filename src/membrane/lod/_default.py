"""The embed extra's model for the seed's entry points that are given no embedder.

``compute_attention_shift(...)``, the profile presets' duplicate check and
``fastembed_embedder()`` without a model on disk use it when the ``embed`` extra is installed.
One copy is shared by the process and keeps the vectors of the texts it embedded most
recently, so a preset that sees the same memories every turn embeds each of them once.
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from typing import Literal

from membrane.errors import EmbedderUnavailable
from membrane.lod._local import LocalEmbedder, local_embedder

__all__ = ["DEFAULT_CACHED_TEXTS", "Default", "SharedEmbedder", "default_embedder"]

#: Spelled as an ``embedder=`` argument: the embed extra's model when it is installed.
Default = Literal["default"]

#: Texts whose vectors the shared model keeps (float32: 1.5 KB each, 3 MB in all).
DEFAULT_CACHED_TEXTS = 2048


class SharedEmbedder:
    """A :class:`LocalEmbedder` with a bounded cache of float32 vectors, safe to share."""

    def __init__(self, model: LocalEmbedder, max_texts: int = DEFAULT_CACHED_TEXTS) -> None:
        self.model = model
        self.attention_shift_threshold = model.attention_shift_threshold
        self._max_texts = max_texts
        self._cache: OrderedDict[str, array[float]] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SharedEmbedder({self.model!r})"

    def __call__(self, texts: list[str]) -> list[Sequence[float]]:
        """One vector per text, from the cache where it has one."""
        found: dict[str, array[float]] = {}
        with self._lock:
            for text in texts:
                vector = self._cache.get(text)
                if vector is not None:
                    self._cache.move_to_end(text)
                    found[text] = vector
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            made = {t: array("f", v) for t, v in zip(missing, self.model(missing), strict=True)}
            found.update(made)
            with self._lock:
                self._cache.update(made)
                while len(self._cache) > self._max_texts:
                    self._cache.popitem(last=False)
        return [found[t] for t in texts]


_SHARED: list[SharedEmbedder] = []
_SHARED_LOCK = threading.Lock()


def default_embedder() -> SharedEmbedder | None:
    """The process's shared copy of :func:`local_embedder`; None when the extra is missing.

    Only the packages and the file are looked for here; the model loads on its first call.
    """
    with _SHARED_LOCK:
        if not _SHARED:
            try:
                _SHARED.append(SharedEmbedder(local_embedder()))
            except EmbedderUnavailable:
                return None
        return _SHARED[0]
