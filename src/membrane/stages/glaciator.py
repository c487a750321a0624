"""Split assembled prompt text into a cache-stable prefix and a per-turn tail."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from membrane import config
from membrane.errors import InvalidInputError
from membrane.tokenizers import TiktokenAdapter

if TYPE_CHECKING:
    from membrane.tokenizers import TokenCounter

__all__ = ["MIN_GLACIATE_CACHE_TOKENS", "GlaciatedPrompt", "glaciate"]

MIN_GLACIATE_CACHE_TOKENS = 256
"""Prefix size from which :func:`glaciate` reports ``use_caching=True``."""

_CURRENT_TURN_LINE = "--- Current user message ---"


@dataclass(frozen=True, slots=True)
class GlaciatedPrompt:
    """A prompt split at a line boundary; ``cacheable_prefix + dynamic_tail`` is the input."""

    cacheable_prefix: str
    dynamic_tail: str
    prefix_tokens: int
    tail_tokens: int
    use_caching: bool


def _is_dynamic(line: str) -> bool:
    # Memories and the current turn change every request; nothing from them on can be cached.
    return line.startswith("[Mem:") or line.rstrip("\r\n") == _CURRENT_TURN_LINE


def glaciate(
    text: str,
    max_cacheable_tokens: int | None = None,
    *,
    counter: TokenCounter | None = None,
) -> GlaciatedPrompt:
    """Split ``text`` into the lines a provider can cache and the lines that change per turn.

    The prefix is every line before the first memory line (``[Mem:...``) or the
    ``--- Current user message ---`` line, cut back by whole lines until it counts at most
    ``max_cacheable_tokens`` (default: ``MAX_CACHEABLE_PREFIX_TOKENS``, 2000). A line is never
    split. ``use_caching`` is True once the prefix reaches ``MIN_GLACIATE_CACHE_TOKENS``; the
    provider's own minimum may be higher (see :func:`membrane.get_cache_pricing`).

    >>> g = glaciate("Rules.\\n[Mem:1] A fact.\\n")
    >>> g.cacheable_prefix, g.dynamic_tail
    ('Rules.\\n', '[Mem:1] A fact.\\n')
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    cap = (
        config.max_cacheable_prefix_tokens()
        if max_cacheable_tokens is None
        else (max_cacheable_tokens)
    )
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
        raise InvalidInputError(
            f"max_cacheable_tokens must be an integer >= 0, got {cap!r}",
            field="max_cacheable_tokens",
        )
    count = (counter or TiktokenAdapter("cl100k_base")).count

    lines = text.splitlines(keepends=True)
    stable = next((i for i, line in enumerate(lines) if _is_dynamic(line)), len(lines))
    # Offsets of line ends, so a candidate prefix is one slice of the text.
    ends = [0]
    for line in lines[:stable]:
        ends.append(ends[-1] + len(line))

    best, best_tokens = stable, count(text[: ends[stable]])
    if best_tokens > cap:
        # Largest number of whole lines that fits. Appending text to a prompt does not lower
        # its token count in practice, so a binary search finds it; each probe is checked
        # directly, so the result respects the cap even where that assumption fails.
        lo, hi = 0, stable - 1
        best, best_tokens = 0, 0
        while lo <= hi:
            mid = (lo + hi) // 2
            tokens = count(text[: ends[mid]])
            if tokens <= cap:
                best, best_tokens = mid, tokens
                lo = mid + 1
            else:
                hi = mid - 1

    prefix, tail = text[: ends[best]], text[ends[best] :]
    return GlaciatedPrompt(
        cacheable_prefix=prefix,
        dynamic_tail=tail,
        prefix_tokens=best_tokens,
        tail_tokens=count(tail),
        use_caching=best_tokens >= MIN_GLACIATE_CACHE_TOKENS,
    )
