"""Choosing a token counter per model id."""

from __future__ import annotations

import fnmatch
import threading
from typing import ClassVar

from membrane.tokenizers._counters import (
    DEFAULT_COUNT_MEMO_BYTES,
    CharacterEstimateCounter,
    MemoizedCounter,
    TiktokenAdapter,
    TokenCounter,
)

__all__ = ["MAX_MEMOS", "CounterChoice", "TokenizerRegistry"]

#: How many counters' memos a compiler keeps (a per-call registry may bring another).
MAX_MEMOS = 4

_DEFAULT_COUNTER = TiktokenAdapter("cl100k_base")


class TokenizerRegistry:
    """Maps model-id patterns (``fnmatch``, on the full id) to token counters.

    A fresh registry falls back to ``cl100k_base``; the shared one from :meth:`get` is
    preloaded with ``gpt-4o*`` and ``claude*`` and falls back to a character estimate.

    >>> reg = TokenizerRegistry()
    >>> reg.register("openai/gpt-4o*", TiktokenAdapter("o200k_base"))
    >>> reg.counter_for("openai/gpt-4o-mini").name
    'o200k_base'
    """

    _shared: ClassVar[TokenizerRegistry | None] = None
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, fallback: TokenCounter | None = None) -> None:
        self._patterns: list[tuple[str, TokenCounter]] = []
        self.fallback: TokenCounter = fallback if fallback is not None else TiktokenAdapter()

    def register(self, pattern: str, counter: TokenCounter) -> None:
        """Use ``counter`` for model ids matching ``pattern``; later patterns win ties."""
        if not isinstance(pattern, str) or not pattern:
            raise TypeError("pattern must be a non-empty string such as 'openai/gpt-4o*'")
        if not isinstance(counter, TokenCounter):
            raise TypeError("counter must have a name and a count(text) -> int method")
        self._patterns.append((pattern, counter))

    def counter_for(self, model_id: str | None) -> TokenCounter:
        """The counter registered for ``model_id``, or the fallback."""
        if model_id:
            for pattern, counter in reversed(self._patterns):
                if fnmatch.fnmatchcase(model_id, pattern):
                    return counter
        return self.fallback

    def count(self, text: str, model_id: str | None = None) -> int:
        """Count ``text`` with the counter for ``model_id``."""
        return self.counter_for(model_id).count(text)

    @property
    def patterns(self) -> tuple[str, ...]:
        """The registered patterns, oldest first."""
        return tuple(p for p, _ in self._patterns)

    @classmethod
    def get(cls) -> TokenizerRegistry:
        """The process-wide shared registry (created on first call)."""
        with cls._shared_lock:
            if cls._shared is None:
                shared = cls(fallback=CharacterEstimateCounter())
                shared.register("gpt-4o*", TiktokenAdapter("o200k_base"))
                shared.register("claude*", TiktokenAdapter("cl100k_base"))
                cls._shared = shared
            return cls._shared


class CounterChoice:
    """Which counter a compiler counts with, memoised: a registry's for the model (the call's,
    else the compiler's), else the compiler's own ``token_counter``, else ``cl100k_base``.

    The memos of the last :data:`MAX_MEMOS` counters used are kept, sharing a quarter of the
    compiler's ``cache_bytes`` (:data:`membrane.config.DEFAULT_CACHE_BYTES`) equally: a compiler
    almost always counts with one; when another comes, the memos kept are emptied into their
    smaller shares.
    """

    def __init__(
        self,
        model_id: str | None,
        registry: TokenizerRegistry | None,
        counter: TokenCounter | None,
        cache_bytes: int = 4 * DEFAULT_COUNT_MEMO_BYTES,
    ) -> None:
        self.model_id = model_id
        self.registry = registry
        self.counter = counter
        self._memo_bytes = cache_bytes // 4
        self._memos: dict[int, MemoizedCounter] = {}

    def for_call(self, registry: TokenizerRegistry | None = None) -> MemoizedCounter:
        """The memoised counter for a compile given ``registry`` (None: the compiler's)."""
        registry = registry if registry is not None else self.registry
        if registry is not None:
            base = registry.counter_for(self.model_id)
        else:
            base = self.counter if self.counter is not None else _DEFAULT_COUNTER
        memo = self._memos.get(id(base))
        if memo is None or memo.inner is not base:
            memos = self._memos
            memos.pop(id(base), None)
            if len(memos) >= MAX_MEMOS:
                del memos[next(iter(memos))]
            share = self._memo_bytes // (len(memos) + 1)
            for kept in memos.values():
                kept.shrink(share)
            memo = memos[id(base)] = MemoizedCounter(base, max_bytes=share)
        return memo

    @property
    def held_bytes(self) -> int:
        """What the memos hold now, by their own count."""
        return sum(memo.held_bytes for memo in list(self._memos.values()))
