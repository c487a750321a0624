"""fastembed's own models, loaded from files already on this machine, never downloaded."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from membrane.errors import EmbedderUnavailable, InvalidInputError
from membrane.lod._default import SharedEmbedder, default_embedder
from membrane.lod._local import EMBED_EXTRA

__all__ = ["DEFAULT_FASTEMBED_MODEL", "FastembedEmbedder", "fastembed_embedder"]

#: The model ``fastembed_embedder()`` asks fastembed for when none is named.
DEFAULT_FASTEMBED_MODEL = "BAAI/bge-small-en-v1.5"
_LOD_EXTRA = 'pip install "membrane-aol[lod]"'


class FastembedEmbedder:
    """A fastembed ``TextEmbedding`` loaded only from files already on this machine.

    Build one with :func:`fastembed_embedder`, which loads it at once. The model is loaded
    always with ``local_files_only=True``, so fastembed never downloads. ``fallback`` is the
    ``embed`` extra's model, used instead when no model was named and fastembed's default is
    not on this machine.
    """

    def __init__(
        self,
        model_name: str,
        specific_model_path: str | None,
        cache_dir: str | None,
        threads: int | None,
        batch_size: int,
        fallback: SharedEmbedder | None = None,
    ) -> None:
        self.model_name = model_name
        self.specific_model_path = specific_model_path
        self.cache_dir = cache_dir
        self.threads = threads
        self.batch_size = batch_size
        self.fallback = fallback
        self._lock = threading.Lock()
        self._model: Any = None

    def __repr__(self) -> str:
        if self.fallback is not None:
            return (
                f"FastembedEmbedder(model_name={self.model_name!r} is not on this machine: "
                "running the embed extra's all-MiniLM-L6-v2)"
            )
        where = self.specific_model_path or self.cache_dir or "fastembed's cache"
        return f"FastembedEmbedder(model_name={self.model_name!r}, from={where!r})"

    @property
    def attention_shift_threshold(self) -> float | None:
        """The fallback model's measured topic-shift threshold (None for fastembed's models)."""
        return self.fallback.attention_shift_threshold if self.fallback is not None else None

    def load(self) -> None:
        """Load the model now instead of on the first call."""
        if self.fallback is None:
            self._loaded()

    def __call__(self, texts: list[str]) -> list[Any]:
        """One vector per text, in order, as fastembed (or the fallback) computes it."""
        if not texts:
            return []
        if self.fallback is not None:
            return self.fallback(texts)
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
                f"fastembed is not installed ({exc}); {_LOD_EXTRA}", embedder=self.model_name
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
                "with fastembed yourself, pass specific_model_path= a directory holding it, or "
                f"use the bundled model ({EMBED_EXTRA}; membrane.lod.local_embedder())",
                embedder=self.model_name,
            ) from exc


def fastembed_embedder(
    model_name: str | None = None,
    *,
    specific_model_path: str | Path | None = None,
    cache_dir: str | Path | None = None,
    threads: int | None = None,
    batch_size: int = 1,
) -> FastembedEmbedder:
    """A fastembed model as an ``embedder=``, from local files only, loaded now.

    ``model_name`` is one of fastembed's supported models; its files must already be in
    fastembed's cache (``cache_dir``) or in ``specific_model_path``, a directory with the ONNX
    file and its tokenizer files: a model that is not there raises
    :class:`membrane.EmbedderUnavailable` here, with what to do, never on a compile. With no
    ``model_name``, fastembed's ``BAAI/bge-small-en-v1.5`` is used when it is on disk, else
    the ``embed`` extra's model (the error names the extras when neither is there).
    ``batch_size=1`` (the default) runs each text on its own, so a text's vector does not
    depend on what it was batched with; raise it for throughput.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidInputError(
            f"batch_size must be a positive int, got {batch_size!r}", field="batch_size"
        )
    embedder = FastembedEmbedder(
        model_name or DEFAULT_FASTEMBED_MODEL,
        None if specific_model_path is None else str(specific_model_path),
        None if cache_dir is None else str(cache_dir),
        threads,
        batch_size,
    )
    try:
        embedder.load()
    except EmbedderUnavailable as exc:
        fallback = default_embedder() if model_name is None else None
        if fallback is None:
            if model_name is None:
                raise EmbedderUnavailable(
                    f"{exc} Without a model named, the embed extra's model would be used: "
                    f"{EMBED_EXTRA}",
                    embedder=exc.embedder,
                ) from exc
            raise
        embedder.fallback = fallback
    return embedder
