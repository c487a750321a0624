"""A memory block of fixed size: estimate tokens, split the budget, sample the past, fit items.

However many chapters a document has, the block assembled here never grows past ``total``
tokens. Four sections share the budget:

- ``entity``: the cast, places and objects the next chapter may touch;
- ``recent``: summaries of the chapters just before the one being written;
- ``skeleton``: a thin, evenly spaced sample of older summaries (see :func:`skeleton_chapters`);
- ``retrieval``: older passages found by similarity to what comes next.

Counting defaults to a dependency-free heuristic that errs high; pass ``counter=`` (any
:class:`membrane.tokenizers.TokenCounter`) to count with an exact tokenizer instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, TypeVar

from membrane.errors import InvalidInputError

if TYPE_CHECKING:
    from membrane.tokenizers import TokenCounter

__all__ = [
    "DEFAULT_MEMORY_BUDGET",
    "HEURISTIC_COUNTER_NAME",
    "MAX_SKELETON_ENTRIES",
    "MIN_SKELETON_GAP",
    "SECTIONS",
    "SECTION_SHARE",
    "TOP_UP_ORDER",
    "BudgetResult",
    "Fitted",
    "SectionInput",
    "SectionName",
    "allocate",
    "estimate_tokens",
    "fit_items",
    "fit_sections",
    "skeleton_chapters",
]

T = TypeVar("T")

SectionName = Literal["entity", "recent", "skeleton", "retrieval"]

#: The four sections, in the order results list them.
SECTIONS: Final[tuple[SectionName, ...]] = ("entity", "recent", "skeleton", "retrieval")

#: Fraction of the budget each section may fill in the first pass (the published package's
#: shares; each section gets ``int(total * share)`` tokens).
SECTION_SHARE: Final[Mapping[SectionName, float]] = MappingProxyType(
    {"entity": 0.217, "recent": 0.337, "skeleton": 0.145, "retrieval": 0.301}
)

#: Default size of the whole memory block, in tokens.
DEFAULT_MEMORY_BUDGET: Final = 6000

#: Most skeleton entries ever returned, whatever the chapter number.
MAX_SKELETON_ENTRIES: Final = 12

#: Smallest distance between two sampled skeleton chapters.
MIN_SKELETON_GAP: Final = 10

#: Order in which trimmed sections receive the budget other sections left unused.
#: Continuity with the previous chapters is what a reader notices first when it breaks, so the
#: recent summaries come first and the coarse skeleton last.
TOP_UP_ORDER: Final[tuple[SectionName, ...]] = ("recent", "entity", "retrieval", "skeleton")

#: ``BudgetResult.counter_name`` when the built-in heuristic did the counting.
HEURISTIC_COUNTER_NAME: Final = "heuristic"

# Kana, Han (with extension A and the compatibility block) and hangul syllables: the ranges the
# published package counts at one token per character. Everything else, hangul jamo and
# half-width kana included, goes by the four-characters rule; see docs/longform.md.
_DENSE_SCRIPT = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_DENSE_RANGES: Final = (
    (0x3040, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
)
_CHARS_PER_TOKEN: Final = 4


def _estimate(text: Any) -> int:
    """The heuristic count, without argument checks (falsy input counts 0)."""
    if not text:
        return 0
    if isinstance(text, str):
        dense = len(_DENSE_SCRIPT.findall(text))
    else:
        # Any other iterable of characters is counted the same way; ord() rejects the rest.
        dense = sum(
            1 for char in text if any(low <= ord(char) <= high for low, high in _DENSE_RANGES)
        )
    other = len(text) - dense
    return int(dense + -(-other // _CHARS_PER_TOKEN))


def estimate_tokens(text: str, *, counter: TokenCounter | None = None) -> int:
    """Estimate how many tokens ``text`` costs.

    Without ``counter``: one token per kana, Han or hangul-syllable character and one per four
    other characters (rounded up). The estimate is meant to err high for English prose,
    because overshooting wastes a little room while undershooting overflows the model's window.

    >>> estimate_tokens("The key was under the mat.")
    7
    >>> estimate_tokens("鍵はマットの下")
    7
    """
    if not isinstance(text, str):
        raise TypeError(f"estimate_tokens expects str, got {type(text).__name__}")
    if counter is not None:
        return counter.count(text)
    return _estimate(text)


def _check_budget(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(
            f"{field} must be a whole number of tokens, got {value!r}", field=field
        )
    if value < 0:
        raise InvalidInputError(f"{field} must be >= 0, got {value}", field=field)
    return value


def _allocate(total: Any) -> dict[SectionName, int]:
    return {name: int(total * share) for name, share in SECTION_SHARE.items()}


def allocate(total: int = DEFAULT_MEMORY_BUDGET) -> dict[SectionName, int]:
    """Split ``total`` tokens across the four sections by :data:`SECTION_SHARE`.

    Each share is ``int(total * share)``, so the parts never add up to more than ``total``.
    The float product can land just under a whole number (6000 * 0.145 is 869.999...), which
    then loses that token; the published package does the same and the values are kept equal.

    >>> allocate(6000)
    {'entity': 1302, 'recent': 2022, 'skeleton': 869, 'retrieval': 1806}
    """
    _check_budget(total, "total")
    return _allocate(total)


def _check_chapter(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(
            f"{field} must be an int chapter number, got {value!r}", field=field
        )
    return value


def skeleton_chapters(chapter: int, recent_from: int) -> list[int]:
    """Chapter numbers whose existing summaries form the distant-past skeleton.

    ``chapter`` is the chapter about to be written and ``recent_from`` the first chapter the
    recent section already covers; both are excluded. The number of entries is capped at
    :data:`MAX_SKELETON_ENTRIES` first and the stride derived from that cap, never narrower than
    :data:`MIN_SKELETON_GAP`, so the list stays short for any document length and never crowds
    into the recent window. Chapter 1 is always the first entry. No model call is involved: the
    caller loads summaries it already has.

    >>> skeleton_chapters(1000, 980)
    [1, 83, 165, 247, 329, 411, 493, 575, 657, 739, 821, 903]
    >>> skeleton_chapters(40, 30)
    [1, 11, 21]
    """
    _check_chapter(chapter, "chapter")
    _check_chapter(recent_from, "recent_from")
    return _skeleton(chapter, recent_from)


def _skeleton(chapter: Any, recent_from: Any) -> list[int]:
    last = min(chapter - 1, recent_from - 1)
    if last < 1:
        return []
    stride = max(MIN_SKELETON_GAP, -(-last // MAX_SKELETON_ENTRIES))
    return list(range(1, last + 1, stride))


@dataclass(frozen=True, slots=True)
class SectionInput(Generic[T]):
    """Candidates for one section, most important first, and how to turn one into text."""

    items: Sequence[T]
    to_text: Callable[[T], str]


@dataclass(frozen=True, slots=True)
class Fitted(Generic[T]):
    """What one section kept within its budget.

    ``texts`` and ``token_counts`` line up with ``kept``; ``budget`` is the allowance the
    section finally had (its share, plus any top-up it received).
    """

    kept: tuple[T, ...] = ()
    texts: tuple[str, ...] = ()
    token_counts: tuple[int, ...] = ()
    used_tokens: int = 0
    dropped: int = 0
    budget: int = 0


def _checked_measure(counter: TokenCounter | None) -> Callable[[object, int], int]:
    def measure(text: object, index: int) -> int:
        if not isinstance(text, str):
            raise TypeError(f"to_text must return str, got {type(text).__name__} for item {index}")
        return estimate_tokens(text, counter=counter)

    return measure


def _loose_measure(text: object, index: int) -> int:
    return _estimate(text)


class _Candidates(Generic[T]):
    """One section's items, each counted at most once and only when the fit reaches it."""

    def __init__(
        self,
        items: Sequence[T],
        to_text: Callable[[T], str],
        measure: Callable[[object, int], int],
    ) -> None:
        self._items = items
        self._to_text = to_text
        self._measure_text = measure
        self._texts: list[str] = []
        self._counts: list[int] = []

    def _measure(self, index: int) -> int:
        while len(self._counts) <= index:
            position = len(self._counts)
            text = self._to_text(self._items[position])
            count = self._measure_text(text, position)
            self._texts.append(text)
            self._counts.append(count)
        return self._counts[index]

    def fit(self, budget: int) -> Fitted[T]:
        # Whole items, in order, stopping at the first that does not fit: a later, smaller item
        # is less important by contract, and half a summary reads to a model as a complete one.
        used = 0
        kept = 0
        total = len(self._items)
        while kept < total:
            cost = self._measure(kept)
            if used + cost > budget:
                break
            used += cost
            kept += 1
        return Fitted(
            kept=tuple(self._items[:kept]),
            texts=tuple(self._texts[:kept]),
            token_counts=tuple(self._counts[:kept]),
            used_tokens=used,
            dropped=total - kept,
            budget=budget,
        )


def fit_items(
    items: Sequence[T],
    to_text: Callable[[T], str],
    budget: int,
    *,
    counter: TokenCounter | None = None,
) -> Fitted[T]:
    """Keep the longest prefix of ``items`` whose texts fit in ``budget`` tokens.

    ``items`` must come most important first: overflow is cut from the tail, and an item that
    does not fit ends the section even if a smaller one follows.

    >>> fit_items(["aaaa", "bbbbbbbb", "cc"], lambda s: s, 2).kept
    ('aaaa',)
    """
    _check_budget(budget, "budget")
    return _Candidates(items, to_text, _checked_measure(counter)).fit(budget)


@dataclass(frozen=True, slots=True)
class BudgetResult:
    """The fitted sections and the numbers that explain them.

    ``shares`` are the first-pass allowances from :func:`allocate`; each section's ``budget``
    is what it finally had after the top-up. ``counter_name`` says what did the counting.
    """

    entity: Fitted[Any]
    recent: Fitted[Any]
    skeleton: Fitted[Any]
    retrieval: Fitted[Any]
    used_tokens: int
    budget: int
    shares: Mapping[SectionName, int]
    counter_name: str = HEURISTIC_COUNTER_NAME

    @property
    def unused_tokens(self) -> int:
        """Budget left over after both passes."""
        return self.budget - self.used_tokens

    @property
    def sections(self) -> dict[SectionName, Fitted[Any]]:
        """The four sections by name, in :data:`SECTIONS` order."""
        return {name: self.section(name) for name in SECTIONS}

    def section(self, name: SectionName) -> Fitted[Any]:
        """One section by name."""
        if name not in SECTIONS:
            raise InvalidInputError(f"unknown section {name!r}; use one of {SECTIONS}")
        fitted: Fitted[Any] = getattr(self, name)
        return fitted

    def with_section(self, name: SectionName, fitted: Fitted[Any]) -> BudgetResult:
        """A copy with one section replaced (for reordering kept items after the fit)."""
        self.section(name)
        if len(fitted.kept) != len(fitted.texts) or len(fitted.kept) != len(fitted.token_counts):
            raise InvalidInputError("kept, texts and token_counts must have the same length")
        if sum(fitted.token_counts) != fitted.used_tokens:
            raise InvalidInputError("used_tokens must equal the sum of token_counts")
        sections = self.sections
        sections[name] = fitted
        used = sum(section.used_tokens for section in sections.values())
        return BudgetResult(
            entity=sections["entity"],
            recent=sections["recent"],
            skeleton=sections["skeleton"],
            retrieval=sections["retrieval"],
            used_tokens=used,
            budget=self.budget,
            shares=self.shares,
            counter_name=self.counter_name,
        )


def _fit_all(
    inputs: Mapping[str, Any], total: Any, measure: Callable[[object, int], int]
) -> tuple[dict[SectionName, int], dict[SectionName, Fitted[Any]]]:
    """Both passes over the four sections; ``inputs`` maps each name to an object with
    ``items`` and ``to_text``."""
    shares = _allocate(total)
    candidates: dict[SectionName, _Candidates[Any]] = {}
    fitted: dict[SectionName, Fitted[Any]] = {}
    for name in TOP_UP_ORDER:
        candidates[name] = _Candidates(inputs[name].items, inputs[name].to_text, measure)
        fitted[name] = candidates[name].fit(shares[name])

    # The pool is the sum of the shares left unused (the rounding remainder of the shares is
    # not part of it, as in the published package).
    spare = sum(shares[name] - fitted[name].used_tokens for name in TOP_UP_ORDER)
    for name in TOP_UP_ORDER:
        if spare <= 0:
            break
        current = fitted[name]
        if current.dropped == 0:
            continue
        # The allowance is what the section already uses plus the pool; its own unused share
        # is already in the pool, and counting it twice would overshoot the total.
        refit = candidates[name].fit(current.used_tokens + spare)
        spare -= refit.used_tokens - current.used_tokens
        fitted[name] = refit
    return shares, {name: fitted[name] for name in SECTIONS}


def fit_sections(
    entity: SectionInput[Any],
    recent: SectionInput[Any],
    skeleton: SectionInput[Any],
    retrieval: SectionInput[Any],
    total: int = DEFAULT_MEMORY_BUDGET,
    *,
    counter: TokenCounter | None = None,
) -> BudgetResult:
    """Fit the four sections into ``total`` tokens in two passes.

    The first pass fills each section up to its share. The second hands the tokens nobody
    claimed to the sections that had to drop items, in :data:`TOP_UP_ORDER`; early in a
    document the skeleton and entity sections are nearly empty, and without this pass the
    recent summaries would be trimmed while most of the budget sat idle. ``used_tokens`` is
    never more than ``total``.

    >>> block = fit_sections(
    ...     entity=SectionInput(["Mara: captain, wounded"], str),
    ...     recent=SectionInput(["Ch.9: the storm breaks the mast"], str),
    ...     skeleton=SectionInput([], str),
    ...     retrieval=SectionInput([], str),
    ...     total=100,
    ... )
    >>> (block.used_tokens, block.recent.dropped)
    (14, 0)
    """
    _check_budget(total, "total")
    inputs = {"entity": entity, "recent": recent, "skeleton": skeleton, "retrieval": retrieval}
    for name, section in inputs.items():
        if not isinstance(section, SectionInput):
            raise TypeError(
                f"{name} must be a SectionInput(items, to_text), got {type(section).__name__}"
            )
    shares, fitted = _fit_all(inputs, total, _checked_measure(counter))
    return BudgetResult(
        entity=fitted["entity"],
        recent=fitted["recent"],
        skeleton=fitted["skeleton"],
        retrieval=fitted["retrieval"],
        used_tokens=sum(section.used_tokens for section in fitted.values()),
        budget=total,
        shares=MappingProxyType(dict(shares)),
        counter_name=HEURISTIC_COUNTER_NAME if counter is None else counter.name,
    )
