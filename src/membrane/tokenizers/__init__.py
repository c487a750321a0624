"""Token counting that works offline.

``cl100k_base`` and ``o200k_base`` ship inside the package and are verified against tiktoken's
pinned hashes when first used. Nothing is loaded at import time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from membrane.tokenizers._bundled import BUNDLED_ENCODINGS, load_encoding
from membrane.tokenizers._calibration import (
    SCALE_MAX,
    SCALE_MIN,
    ScaleCalibration,
    counted_budget,
    provider_tokens,
)
from membrane.tokenizers._counters import (
    CharacterEstimateCounter,
    MemoizedCounter,
    TiktokenAdapter,
    TokenCounter,
    count_each,
    count_tokens,
)
from membrane.tokenizers._registry import CounterChoice, TokenizerRegistry

if TYPE_CHECKING:
    from membrane.tokenizers._external import HuggingFaceAdapter, SentencePieceAdapter

__all__ = [
    "BUNDLED_ENCODINGS",
    "SCALE_MAX",
    "SCALE_MIN",
    "CharacterEstimateCounter",
    "CounterChoice",
    "HuggingFaceAdapter",
    "MemoizedCounter",
    "ScaleCalibration",
    "SentencePieceAdapter",
    "TiktokenAdapter",
    "TokenCounter",
    "TokenizerRegistry",
    "count_each",
    "count_tokens",
    "counted_budget",
    "load_encoding",
    "provider_tokens",
]


def __getattr__(name: str) -> Any:
    # The adapters for other tokenizer families live behind the `tokenizers` extra.
    if name in ("HuggingFaceAdapter", "SentencePieceAdapter"):
        from membrane.tokenizers import _external

        return getattr(_external, name)
    raise AttributeError(f"module 'membrane.tokenizers' has no attribute {name!r}")
