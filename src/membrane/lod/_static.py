"""The static embedder: a word-vector table averaged over a text's tokens (WordLlama, 256-d).

A static model has no network to run: a text's vector is the mean of its tokens' rows in one
table, so 512 passages take tens of milliseconds where MiniLM takes seconds. The table and its
tokenizer are the files the PyPI package ``wordllama`` ships inside its wheel; Membrane reads
them itself (``wordllama``'s own loader may try to download a tokenizer) and checks both
against pinned sha256 digests. Their licence is recorded in docs/lod.md.
"""

from __future__ import annotations

import json
import struct
import threading
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

from membrane.errors import EmbedderUnavailable
from membrane.lod._files import missing_packages, package_dir, verified_bytes
from membrane.text.semantic import EMBED_WAIT_SECONDS, check_background

__all__ = [
    "STATIC_EXTRA",
    "WORDLLAMA_256_SHA256",
    "StaticEmbedder",
    "static_embedder",
]

#: sha256 of ``weights/l2_supercat_256.safetensors`` in the PyPI package wordllama 0.4.0.post1.
WORDLLAMA_256_SHA256 = "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5"
# sha256 of ``tokenizers/l2_supercat_tokenizer_config.json`` in the same wheel.
_TOKENIZER_SHA256 = "93248f2a9ec36c7b35f700a033d5f36228aae48db61aee31007fa49062cdeb68"
_PACKAGE = "wordllama"
_WEIGHTS = Path("weights") / "l2_supercat_256.safetensors"
_TOKENIZER = Path("tokenizers") / "l2_supercat_tokenizer_config.json"
_TENSOR = "embedding.weight"
# Tokens read per text: a passage is about 60 words, so this only bounds pasted documents.
_MAX_TOKENS = 1024
#: What to run when the static embedder's packages or files are missing.
STATIC_EXTRA = 'pip install "membrane-aol[static]"'
_PACKAGES = (("numpy", "numpy"), ("tokenizers", "tokenizers"))


class StaticEmbedder:
    """WordLlama's 256-dimension table (``l2_supercat``): texts in, unit vectors out.

    Build one with :func:`static_embedder`. The files are read and checked on the first call
    (or by :meth:`load`). Each text's vector is the mean of its tokens' rows, widened from
    float16 to float32, then scaled to unit length, so it is the same bytes alone or in any
    batch. Texts are cut at 1,024 tokens. Safe to share between threads.
    """

    dimension = 256

    def __init__(
        self,
        weights_path: Path,
        tokenizer_path: Path,
        expected_sha256: str | None,
        tokenizer_sha256: str | None,
        *,
        executor: Executor | None = None,
        wait_seconds: float | None = EMBED_WAIT_SECONDS,
    ) -> None:
        self.weights_path = weights_path
        self.tokenizer_path = tokenizer_path
        self.expected_sha256 = expected_sha256
        self.tokenizer_sha256 = tokenizer_sha256
        #: As for :class:`membrane.lod.LocalEmbedder`; rarely worth it for a model this fast.
        self.executor = executor
        self.wait_seconds = wait_seconds
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any, Any] | None = None

    def __repr__(self) -> str:
        return f"StaticEmbedder(weights_path={str(self.weights_path)!r})"

    def load(self) -> None:
        """Read, verify and load the table and the tokenizer now instead of on the first call."""
        self._parts()

    def __call__(self, texts: list[str]) -> list[list[float]]:
        """One unit-length vector of 256 floats per text, in order (zeros for a blank text)."""
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"texts must be strings, got {type(text).__name__}")
        if not texts:
            return []
        np, table, tokenizer = self._parts()
        out: list[list[float]] = []
        for encoding in tokenizer.encode_batch(list(texts), add_special_tokens=False):
            ids = np.asarray(encoding.ids, dtype=np.intp)
            if not len(ids):
                out.append([0.0] * self.dimension)
                continue
            pooled = table[ids].astype(np.float32).mean(axis=0, dtype=np.float32)
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
        try:
            import numpy as np

            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"the static embedder needs numpy and tokenizers ({exc}); {STATIC_EXTRA}",
                embedder="static",
            ) from exc
        raw = verified_bytes(
            self.weights_path, self.expected_sha256, what="word-vector table", fix=STATIC_EXTRA
        )
        table = _read_table(np, raw, self.weights_path)
        spec = verified_bytes(
            self.tokenizer_path, self.tokenizer_sha256, what="tokenizer", fix=STATIC_EXTRA
        )
        try:
            tokenizer = Tokenizer.from_str(spec.decode("utf-8"))
        except Exception as exc:  # the tokenizers library raises its own, untyped, errors
            raise EmbedderUnavailable(
                f"cannot read the tokenizer {self.tokenizer_path} ({type(exc).__name__}: {exc})",
                embedder=str(self.tokenizer_path),
            ) from exc
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=_MAX_TOKENS)
        return np, table, tokenizer


def _read_table(np: Any, raw: bytes, path: Path) -> Any:
    """The float16 table in a safetensors file (an 8-byte header size, a JSON header, data)."""
    try:
        (size,) = struct.unpack_from("<Q", raw)
        entry = json.loads(raw[8 : 8 + size])[_TENSOR]
        rows, columns = entry["shape"]
        start, stop = entry["data_offsets"]
        if entry["dtype"] != "F16" or stop - start != rows * columns * 2:
            raise ValueError(f"expected {rows}x{columns} float16, got {entry['dtype']}")
        data = np.frombuffer(raw, dtype="<f2", offset=8 + size + start, count=rows * columns)
    except (struct.error, ValueError, KeyError, TypeError) as exc:
        raise EmbedderUnavailable(
            f"{path} is not a word-vector table this embedder reads ({exc})", embedder=str(path)
        ) from exc
    return data.reshape(rows, columns)


def static_embedder(
    weights_path: str | Path | None = None,
    tokenizer_path: str | Path | None = None,
    *,
    expected_sha256: str | None = WORDLLAMA_256_SHA256,
    tokenizer_sha256: str | None = _TOKENIZER_SHA256,
    executor: Executor | None = None,
    wait_seconds: float | None = EMBED_WAIT_SECONDS,
) -> StaticEmbedder:
    """The static offline embedder (WordLlama 256-d), ready to pass as ``embedder=``.

    The files default to the ones the ``static`` extra installs (PyPI package ``wordllama``);
    files you name must match the digests unless you pass None for them. Raises
    :class:`membrane.EmbedderUnavailable` with the command to run when a package or a file is
    missing; the files are read and verified on the first call. ``executor`` and
    ``wait_seconds`` are as for :func:`membrane.lod.local_embedder`.

    >>> from membrane import ContextCompiler
    >>> compiler = ContextCompiler(max_tokens=8000, embedder=static_embedder())  # doctest: +SKIP
    """
    check_background(executor, wait_seconds)
    missing = missing_packages(_PACKAGES)
    root = package_dir(_PACKAGE)
    if root is None and (weights_path is None or tokenizer_path is None):
        missing.append("wordllama")
    if missing:
        raise EmbedderUnavailable(
            f"the static embedder needs {', '.join(missing)}; {STATIC_EXTRA}", embedder="static"
        )
    base = root if root is not None else Path()  # only used when the package is there
    weights = Path(weights_path) if weights_path is not None else base / _WEIGHTS
    tokens = Path(tokenizer_path) if tokenizer_path is not None else base / _TOKENIZER
    for path in (weights, tokens):
        if not path.is_file():
            raise EmbedderUnavailable(
                f"no model file at {path}; {STATIC_EXTRA}", embedder=str(path)
            )
    return StaticEmbedder(
        weights,
        tokens,
        expected_sha256,
        tokenizer_sha256,
        executor=executor,
        wait_seconds=wait_seconds,
    )
