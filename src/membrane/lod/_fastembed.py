"""fastembed's own models, loaded from files already on this machine, never downloaded."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from membrane.errors import EmbedderUnavailable, InvalidInputError

__all__ = ["FastembedEmbedder", "fastembed_embedder"]


class FastembedEmbedder:
    """A fastembed ``TextEmbedding`` loaded only from files already on this machine.

    Build one with :func:`fastembed_embedder`. The model is loaded on the first call (or by
    :meth:`load`), always with ``local_files_only=True``, so fastembed never downloads.
    """

    def __init__(
        self,
        model_name: str,
        specific_model_path: str | None,
        cache_dir: str | None,
        threads: int | None,
        batch_size: int,
    ) -> None:
        self.model_name = model_name
        self.specific_model_path = specific_model_path
        self.cache_dir = cache_dir
        self.threads = threads
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._model: Any = None

    def __repr__(self) -> str:
        where = self.specific_model_path or self.cache_dir or "fastembed's cache"
        return f"FastembedEmbedder(model_name={self.model_name!r}, from={where!r})"

    def load(self) -> None:
        """Load the model now instead of on the first call."""
        self._loaded()

    def __call__(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order, as fastembed computes it."""
        if not texts:
            return []
        model = self._loaded()
        vectors = model.embed(list(texts), batch_size=self.batch_size)
        return [[float(x) for x in vector] for vector in vectors]

    def _loaded(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = self._load()
            return self._model

    def _load(self) -> Any:
        try:
            from fastembed import TextEmbedding
        except ImportError as exc:
            raise EmbedderUnavailable(
                f'fastembed is not installed ({exc}); pip install "membrane-aol[lod]"',
                embedder=self.model_name,
            ) from exc
        options: dict[str, Any] = {"local_files_only": True}
        if self.specific_model_path is not None:
            options["specific_model_path"] = self.specific_model_path
        if self.cache_dir is not None:
            options["cache_dir"] = self.cache_dir
        if self.threads is not None:
            options["threads"] = self.threads
        try:
            return TextEmbedding(model_name=self.model_name, **options)
        except Exception as exc:  # fastembed raises ValueError, OSError or its hub's errors
            raise EmbedderUnavailable(
                f"fastembed cannot load {self.model_name} from local files "
                f"({type(exc).__name__}: {exc}). Membrane never downloads models: fetch it once "
                "with fastembed yourself, or pass specific_model_path= a directory holding it",
                embedder=self.model_name,
            ) from exc


def fastembed_embedder(
    model_name: str = "BAAI/bge-small-en-v1.5",
    *,
    specific_model_path: str | Path | None = None,
    cache_dir: str | Path | None = None,
    threads: int | None = None,
    batch_size: int = 1,
) -> FastembedEmbedder:
    """A fastembed model as an ``embedder=``, from local files only (nothing is downloaded).

    ``model_name`` is one of fastembed's supported models; its files must already be in
    fastembed's cache (``cache_dir``) or in ``specific_model_path``, a directory with the ONNX
    file and its tokenizer files. ``batch_size=1`` (the default) runs each text on its own, so
    a text's vector does not depend on what it was batched with; raise it for throughput.
    The model loads on the first call; failures then raise
    :class:`membrane.EmbedderUnavailable`.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidInputError(
            f"batch_size must be a positive int, got {batch_size!r}", field="batch_size"
        )
    return FastembedEmbedder(
        model_name,
        None if specific_model_path is None else str(specific_model_path),
        None if cache_dir is None else str(cache_dir),
        threads,
        batch_size,
    )
