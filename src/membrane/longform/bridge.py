"""Hand a fitted memory block to :class:`membrane.compiler.ContextCompiler`.

The block decides *what* the model should remember within its own budget; the compiler then
places it in the prompt with the rest (rules, conversation, the user's turn), enforces the
whole prompt's budget and keeps the prefix cache-stable. Two shapes are offered:

- :func:`to_memory_items`: one :class:`~membrane.records.MemoryItem` per kept item, with a
  stable id such as ``longform:recent:ch12``, so the model can cite ``[Mem:N]``;
- :func:`to_middle_extras`: one ``(text, tier)`` segment per section, for ``middle_extras``.

Tier mapping (the compiler sheds tier 3 before tier 2): the entity list and the recent chapters
are what keeps the next chapter consistent, so they get the semantic tier (2); the skeleton and
the retrieved chapters are background and get the episodic tier (3). The memory type says what
a row is (an entity is a fact, a chapter summary an episode) and is independent of the tier.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from membrane.errors import InvalidInputError
from membrane.longform.budget import SECTIONS, BudgetResult, SectionName
from membrane.longform.vector import ScoredRow

if TYPE_CHECKING:
    from membrane.longform.store import BlockLabels, MemoryBlock
    from membrane.records import MemoryItem, MemoryKind

__all__ = [
    "BLOCK_ORDER",
    "DEFAULT_MEMORY_KINDS",
    "DEFAULT_SECTION_TIERS",
    "default_item_key",
    "to_memory_items",
    "to_middle_extras",
]

#: Section order of the memories and segments produced here (the rendering order of a block).
BLOCK_ORDER: Final[tuple[SectionName, ...]] = ("entity", "skeleton", "retrieval", "recent")

#: Compiler tier per section (same numbers as ``membrane.records.TIER_*``).
DEFAULT_SECTION_TIERS: Final[Mapping[SectionName, int]] = {
    "entity": 2,
    "recent": 2,
    "skeleton": 3,
    "retrieval": 3,
}

#: Memory type per section.
DEFAULT_MEMORY_KINDS: Final[Mapping[SectionName, MemoryKind]] = {
    "entity": "semantic",
    "recent": "episodic",
    "skeleton": "episodic",
    "retrieval": "episodic",
}

_KIND_LABELS: Final[Mapping[SectionName, str]] = {
    "entity": "entity",
    "recent": "recent chapter",
    "skeleton": "story so far",
    "retrieval": "related chapter",
}


def default_item_key(section: SectionName, item: object, text: str) -> str:
    """A stable key for one kept item: ``ch12`` for a chapter, the name for an entity.

    Objects with a ``number`` (chapter summaries) give ``ch<number>``; with a ``name``, the
    name; with an ``id``, the id; a :class:`~membrane.longform.vector.ScoredRow` is keyed by its
    row; anything else by a hash of its text, which is stable as long as the text is.
    """
    if isinstance(item, ScoredRow):
        return default_item_key(section, item.row, text)
    number = getattr(item, "number", None)
    if isinstance(number, int) and not isinstance(number, bool):
        return f"ch{number}"
    for attribute in ("name", "id"):
        value = getattr(item, attribute, None)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
            return " ".join(str(value).split())
    return "h" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _result_of(block: BudgetResult | MemoryBlock) -> BudgetResult:
    if isinstance(block, BudgetResult):
        return block
    result = getattr(block, "result", None)
    if isinstance(result, BudgetResult):
        return result
    raise TypeError(
        f"expected a BudgetResult or a MemoryBlock, got {type(block).__name__}; "
        "pass the value fit_sections() or LongformStore.memory_block() returned"
    )


def _check_tiers(tiers: Mapping[SectionName, int]) -> None:
    for name in SECTIONS:
        if tiers.get(name) not in (1, 2, 3):
            raise InvalidInputError(
                f"tiers[{name!r}] must be 1, 2 or 3, got {tiers.get(name)!r}", field="tiers"
            )


def to_memory_items(
    block: BudgetResult | MemoryBlock,
    *,
    namespace: str = "longform",
    key: Callable[[SectionName, Any, str], str] = default_item_key,
    tiers: Mapping[SectionName, int] = DEFAULT_SECTION_TIERS,
    memory_kinds: Mapping[SectionName, MemoryKind] = DEFAULT_MEMORY_KINDS,
) -> list[MemoryItem]:
    """One compiler memory per kept item, sections in :data:`BLOCK_ORDER`.

    Ids are ``<namespace>:<section>:<key>``; a key repeated within a section gets ``~2``,
    ``~3`` ... appended so ids stay unique. ``metadata`` records the section, the item's tokens
    as fitted and, for chapters, the chapter number.

    >>> from membrane.longform import ChapterSummary, SectionInput, fit_sections
    >>> none = SectionInput([], str)
    >>> fitted = fit_sections(
    ...     entity=none, skeleton=none, retrieval=none, total=200,
    ...     recent=SectionInput([ChapterSummary(12, "The mast breaks.")], lambda c: c.summary))
    >>> [(m.id, m.content, m.memory_type, m.priority) for m in to_memory_items(fitted)]
    [('longform:recent:ch12', 'The mast breaks.', 'episodic', 2)]
    """
    from membrane.records import MemoryItem

    result = _result_of(block)
    _check_tiers(tiers)
    items: list[MemoryItem] = []
    for section in BLOCK_ORDER:
        fitted = result.section(section)
        seen: dict[str, int] = {}
        for item, text, tokens in zip(fitted.kept, fitted.texts, fitted.token_counts, strict=True):
            base = key(section, item, text)
            seen[base] = seen.get(base, 0) + 1
            suffix = "" if seen[base] == 1 else f"~{seen[base]}"
            metadata: dict[str, Any] = {"longform_section": section, "fitted_tokens": tokens}
            number = getattr(item.row if isinstance(item, ScoredRow) else item, "number", None)
            if isinstance(number, int):
                metadata["chapter"] = number
            items.append(
                MemoryItem(
                    id=f"{namespace}:{section}:{base}{suffix}",
                    content=text.strip(),
                    memory_type=memory_kinds[section],
                    priority=tiers[section],
                    kind=_KIND_LABELS[section],
                    metadata=metadata,
                )
            )
    return items


def to_middle_extras(
    block: BudgetResult | MemoryBlock,
    *,
    labels: BlockLabels | None = None,
    tiers: Mapping[SectionName, int] = DEFAULT_SECTION_TIERS,
) -> list[tuple[str, int]]:
    """One ``(text, tier)`` segment per non-empty section, for ``compile(middle_extras=...)``.

    Each segment is the section's heading (from ``labels``, or the block's own labels) followed
    by its kept items, one per line.
    """
    from membrane.longform.store import DEFAULT_BLOCK_LABELS

    result = _result_of(block)
    _check_tiers(tiers)
    if labels is None:
        labels = getattr(block, "labels", DEFAULT_BLOCK_LABELS)
    assert labels is not None
    segments: list[tuple[str, int]] = []
    for section in BLOCK_ORDER:
        fitted = result.section(section)
        if not fitted.kept:
            continue
        body = "\n".join(text.rstrip("\n") for text in fitted.texts)
        segments.append((f"{labels.heading(section)}\n{body}", tiers[section]))
    return segments
