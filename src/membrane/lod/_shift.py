"""Topic shifts: whether a message leaves the subject of the recent user messages."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import TYPE_CHECKING

from membrane import config
from membrane.errors import InvalidInputError
from membrane.lod._default import Default, default_embedder
from membrane.lod._local import EMBED_EXTRA

if TYPE_CHECKING:
    from membrane.text.semantic import Embedder

__all__ = [
    "LOD_ATTENTION_SHIFT_COSINE_THRESHOLD",
    "compute_attention_shift",
    "compute_attention_shift_with_embeddings",
    "explain_attention_shift",
]

#: Cosine distance between a message and the centroid of recent user messages at or above which
#: the message counts as a topic shift. Read from ``LOD_ATTENTION_SHIFT_COSINE_THRESHOLD`` when
#: this module is imported; the functions below read the variable again on each call.
LOD_ATTENTION_SHIFT_COSINE_THRESHOLD: float = config.lod_attention_shift_cosine_threshold()


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
    embedder: Embedder | Default | None = "default",
) -> bool:
    """Whether ``current_message`` leaves the topic of ``recent_user_messages``.

    Embeds the recent messages and the current one in one call to ``embedder`` and compares
    them with :func:`compute_attention_shift_with_embeddings`. The threshold is, in order:
    ``threshold``, the ``LOD_ATTENTION_SHIFT_COSINE_THRESHOLD`` variable, the embedder's own
    ``attention_shift_threshold`` attribute (0.89 for :func:`local_embedder`), 0.35.
    ``embedder="default"`` (the default) is the ``embed`` extra's model, shared by the process
    and loaded on first use; ``embedder=None`` embeds nothing. The answer is False without a
    model (None, or the default without the extra), without NumPy, with no recent messages, or
    when the embedder raises or returns the wrong number of vectors;
    :func:`explain_attention_shift` says which.
    """
    return bool(
        explain_attention_shift(recent_user_messages, current_message, threshold, embedder)[0]
    )


def explain_attention_shift(
    recent_user_messages: Sequence[str],
    current_message: str,
    threshold: float | None = None,
    embedder: Embedder | Default | None = "default",
) -> tuple[bool | None, str | None]:
    """:func:`compute_attention_shift`'s verdict, or None and the reason none was computed."""
    recent = [m for m in recent_user_messages if m.strip()]
    model = default_embedder() if embedder == "default" else embedder
    if model is None:
        if embedder is None:
            return None, "no embedder was passed (embedder=, e.g. membrane.lod.local_embedder())"
        return None, f"the embed extra is not installed for the default model: {EMBED_EXTRA}"
    if not callable(model):
        raise TypeError(f'embedder must be callable, "default" or None, got {embedder!r}')
    if not recent:
        return None, "no earlier user message to compare with"
    if not current_message.strip():
        return None, "the current message is empty"
    if importlib.util.find_spec("numpy") is None:
        return None, "numpy is not installed"
    try:
        vectors = model([*recent, current_message])
    except Exception as exc:  # the caller's model: a failure means no answer, as in compile
        return None, f"the embedder failed: {type(exc).__name__}: {exc}"
    if len(vectors) != len(recent) + 1:
        return None, f"the embedder returned {len(vectors)} vectors for {len(recent) + 1} texts"
    if threshold is None:
        own = getattr(model, "attention_shift_threshold", None)
        default = float(own) if isinstance(own, (int, float)) else 0.35
        threshold = config.lod_attention_shift_cosine_threshold(default)
    return compute_attention_shift_with_embeddings(vectors[:-1], vectors[-1], threshold), None
