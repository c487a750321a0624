"""Split assembled prompt text into a cache-stable prefix and a per-turn tail."""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from membrane import capabilities as capability_map
from membrane import config
from membrane.capabilities import ModelCapabilities
from membrane.errors import InvalidInputError
from membrane.prompt_text import is_dynamic_line
from membrane.report import CacheReport, render_cache
from membrane.tokenizers import TiktokenAdapter

if TYPE_CHECKING:
    from membrane.tokenizers import TokenCounter

__all__ = [
    "DEFAULT_MIN_CACHEABLE_TOKENS",
    "MIN_GLACIATE_CACHE_TOKENS",
    "GlaciatedPrompt",
    "cache_metadata",
    "cache_report",
    "glaciate",
]

MIN_GLACIATE_CACHE_TOKENS = 256
"""Prefix size from which :func:`glaciate` reports ``use_caching=True``."""

DEFAULT_MIN_CACHEABLE_TOKENS = 1024
"""Minimum cacheable prefix assumed for a caching model whose map entry names none."""


@dataclass(frozen=True, slots=True)
class GlaciatedPrompt:
    """A prompt split at a line boundary; ``cacheable_prefix + dynamic_tail`` is the input."""

    cacheable_prefix: str
    dynamic_tail: str
    prefix_tokens: int
    tail_tokens: int
    use_caching: bool


def _longest_fit(
    count: Callable[[str], int], text: str, ends: list[int], cap: int, total: int
) -> tuple[int, int]:
    """Most whole lines (and their count) whose text fits ``cap``; all of them do not fit.

    Appending text to a prompt does not lower its token count in practice, so the answer is
    bracketed and bisected. Every probe is counted for real, so the answer respects the cap
    even where that assumption fails. The first probe is placed by character share, which
    for even text lands within a line or two and saves most of a plain bisection's counts.
    """
    results = {0: 0}

    def fits(k: int) -> bool:
        results[k] = count(text[: ends[k]])
        return results[k] <= cap

    lo, hi = 0, len(ends) - 1  # lo fits, hi does not
    guess = min(hi - 1, max(0, bisect.bisect_right(ends, ends[hi] * cap // total) - 1))
    step = 1
    if fits(guess):
        lo = guess
        while lo + step < hi and fits(lo + step):
            lo, step = lo + step, step * 2
        hi = min(hi, lo + step)
    else:
        hi = guess
        while hi - step > lo and not fits(hi - step):
            hi, step = hi - step, step * 2
        lo = max(lo, hi - step)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo, results[lo]


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
    stable = next((i for i, line in enumerate(lines) if is_dynamic_line(line)), len(lines))
    # Offsets of line ends, so a candidate prefix is one slice of the text.
    ends = [0]
    for line in lines[:stable]:
        ends.append(ends[-1] + len(line))

    best, best_tokens = stable, count(text[: ends[stable]])
    if best_tokens > cap:
        best, best_tokens = _longest_fit(count, text, ends, cap, best_tokens)

    prefix, tail = text[: ends[best]], text[ends[best] :]
    return GlaciatedPrompt(
        cacheable_prefix=prefix,
        dynamic_tail=tail,
        prefix_tokens=best_tokens,
        tail_tokens=count(tail),
        use_caching=best_tokens >= MIN_GLACIATE_CACHE_TOKENS,
    )


def cache_report(
    model_id: str | None,
    *,
    enabled: bool,
    core_tokens: int,
    core_chars: int | None,
    system_tokens: int,
    history_messages: int,
    prefix_tokens: int,
    tail_tokens: int,
    token_scale: float,
    capabilities: ModelCapabilities | None = None,
    turn: tuple[tuple[int, int], tuple[int, int] | None] | None = None,
) -> CacheReport:
    """Where a compiled end-placement prompt's cached prefixes end, and whether it caches.

    Breakpoints mark where a cached prefix ends: after the core (inside the system message when
    an eviction index follows it, hence ``chars``), after the index, after the history, and in
    a continued turn after its question message and after its last step (``turn``: each
    message's index and the tokens up to it), which the turn's next call sends again. Token
    figures count from the start of the prompt, framing included. ``enabled=False`` switches
    caching off (``use_prompt_caching_split=False``). ``capabilities`` are the model's (looked
    up from ``model_id`` when None).
    """
    if not enabled:
        return CacheReport()
    breakpoints: list[dict[str, Any]] = []
    if core_chars is not None:
        breakpoints.append(
            {"message_index": 0, "tokens": core_tokens, "reason": "core", "chars": core_chars}
        )
        breakpoints.append({"message_index": 0, "tokens": system_tokens, "reason": "index"})
    else:
        breakpoints.append({"message_index": 0, "tokens": system_tokens, "reason": "core"})
    if history_messages:
        breakpoints.append(
            {"message_index": history_messages, "tokens": prefix_tokens, "reason": "history"}
        )
    if turn is not None:
        question, last = turn
        breakpoints.append(
            {"message_index": question[0], "tokens": question[1], "reason": "question"}
        )
        if last is not None:
            breakpoints.append({"message_index": last[0], "tokens": last[1], "reason": "turn"})
    if capabilities is None and model_id is not None:
        capabilities = capability_map.get_model_capabilities(model_id)
    caching = model_id is not None and capabilities is not None and capabilities.prompt_caching
    pricing = capabilities.cache_pricing if caching and capabilities is not None else None
    min_tokens = pricing.min_tokens if pricing else DEFAULT_MIN_CACHEABLE_TOKENS
    used = caching and prefix_tokens * token_scale >= min_tokens
    return CacheReport(
        mode=pricing.mode if pricing else None,
        breakpoints=tuple(breakpoints),
        used=used,
        prefix_tokens=prefix_tokens if used else None,
        tail_tokens=tail_tokens if used else None,
    )


def cache_metadata(model_id: str | None, **figures: Any) -> dict[str, Any]:
    """The caching keys of ``metadata`` for these figures (see :func:`cache_report`)."""
    return render_cache(cache_report(model_id, **figures))
