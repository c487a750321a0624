"""MembraneProfile: which optional memory modules run before layout, and how."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar, TypeVar

from membrane.errors import InvalidInputError
from membrane.profile._dedup import _check_size, _check_threshold, find_duplicates
from membrane.profile._freshness import order_by_freshness
from membrane.profile._order import Reranker, apply_reranker, order_by_kind
from membrane.records import MEMORY_KINDS, MemoryKind, memory_id

__all__ = ["MembraneProfile", "ProfileOutcome"]

M = TypeVar("M")


@dataclass(frozen=True, slots=True)
class ProfileOutcome:
    """What a profile did to one list of memories (evidence for metadata and debugging).

    ``duplicates`` pairs each dropped memory's id with the id of the copy that was kept.
    ``steps`` names the modules that ran, in order.
    """

    memories: tuple[Any, ...]
    duplicates: tuple[tuple[str, str], ...] = ()
    steps: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MembraneProfile:
    """Optional modules applied to retrieved memories before the compiler lays them out.

    They run in this order: duplicate removal, the caller's ``reranker``, freshness decay of
    dated episodes, then ``kinds_first``. Every module only drops or reorders; the memories
    that remain are the caller's own objects and keep their ``[Mem:N]`` numbers. The default
    (``minimal``) changes nothing.

    >>> from membrane.records import MemoryItem
    >>> rows = [MemoryItem(id="a", content="Use pytest."),
    ...         MemoryItem(id="b", content="use pytest"),
    ...         MemoryItem(id="c", content="Run ruff first.", memory_type="procedural")]
    >>> [m.id for m in MembraneProfile.coding().prepare(rows, "Write a test")]
    ['c', 'a']
    """

    PRESETS: ClassVar[tuple[str, ...]] = ("minimal", "coding", "conversational")

    name: str = "minimal"
    dedup: bool = False
    near_duplicate_threshold: float | None = None
    shingle_size: int = 3
    kinds_first: tuple[MemoryKind, ...] = ()
    freshness_half_life: timedelta | None = None
    reranker: Reranker | None = field(default=None, compare=False)
    clock: Callable[[], datetime] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidInputError("profile name must be a non-empty string", field="name")
        if self.near_duplicate_threshold is not None and not self.dedup:
            raise InvalidInputError(
                "near_duplicate_threshold is set but dedup is off; pass dedup=True as well",
                field="near_duplicate_threshold",
            )
        _check_threshold(self.near_duplicate_threshold, "near_duplicate_threshold")
        _check_size(self.shingle_size)
        kinds = tuple(self.kinds_first)
        unknown = [k for k in kinds if k not in MEMORY_KINDS]
        if unknown or len(set(kinds)) != len(kinds):
            raise InvalidInputError(
                f"kinds_first must list distinct kinds from {MEMORY_KINDS}, got {kinds!r}",
                field="kinds_first",
            )
        object.__setattr__(self, "kinds_first", kinds)
        half_life = self.freshness_half_life
        if half_life is not None and (
            not isinstance(half_life, timedelta) or half_life <= timedelta(0)
        ):
            raise InvalidInputError(
                f"freshness_half_life must be a positive timedelta, got {half_life!r}",
                field="freshness_half_life",
            )
        if self.reranker is not None and not callable(self.reranker):
            raise TypeError("reranker must be callable as reranker(user_message, memories)")
        if self.clock is not None and not callable(self.clock):
            raise TypeError("clock must be a callable returning the current datetime")

    # --- presets -------------------------------------------------------------------------

    @classmethod
    def minimal(cls) -> MembraneProfile:
        """The default: memories are offered exactly as given."""
        return cls(name="minimal")

    @classmethod
    def coding(cls, *, reranker: Reranker | None = None) -> MembraneProfile:
        """For coding assistants: strict duplicate removal, procedures first.

        A copy must match closely (3-word shingles, Jaccard >= 0.9) because in code one changed
        word (a version, a flag) usually matters.
        """
        return cls(
            name="coding",
            dedup=True,
            near_duplicate_threshold=0.9,
            shingle_size=3,
            kinds_first=("procedural",),
            reranker=reranker,
        )

    @classmethod
    def conversational(
        cls,
        *,
        reranker: Reranker | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> MembraneProfile:
        """For chat assistants: looser duplicate removal and a 7-day freshness half-life.

        Restated facts ("The user prefers X" / "User prefers X") count as copies (2-word
        shingles, Jaccard >= 0.75); a week-old episode competes as if it ranked twice as low.
        """
        return cls(
            name="conversational",
            dedup=True,
            near_duplicate_threshold=0.75,
            shingle_size=2,
            freshness_half_life=timedelta(days=7),
            reranker=reranker,
            clock=clock,
        )

    @classmethod
    def preset(cls, name: str) -> MembraneProfile:
        """The built-in profile called ``name`` (``minimal``, ``coding`` or ``conversational``)."""
        presets: dict[str, Callable[[], MembraneProfile]] = {
            "minimal": cls.minimal,
            "coding": cls.coding,
            "conversational": cls.conversational,
        }
        factory = presets.get(name.strip().lower()) if isinstance(name, str) else None
        if factory is None:
            raise InvalidInputError(
                f"unknown profile {name!r}; choose one of: {', '.join(cls.PRESETS)}",
                field="profile",
            )
        return factory()

    # --- running -------------------------------------------------------------------------

    def prepare(
        self, memories: Sequence[M], user_message: str, *, now: datetime | None = None
    ) -> list[M]:
        """The memories to offer, in the order to offer them (the caller's own objects).

        ``now`` overrides the profile's ``clock`` for freshness decay.
        """
        return list(self.apply(memories, user_message, now=now).memories)

    def apply(
        self, memories: Sequence[Any], user_message: str, *, now: datetime | None = None
    ) -> ProfileOutcome:
        """Like :meth:`prepare`, also reporting what was dropped and which modules ran."""
        if isinstance(memories, (str, bytes)) or not isinstance(memories, Sequence):
            raise InvalidInputError(
                "memories must be a list of MemoryItem rows or records with id and memory_kind",
                field="memories",
            )
        if not isinstance(user_message, str):
            raise TypeError(f"user_message must be a str, got {type(user_message).__name__}")
        items = list(memories)
        steps: list[str] = []
        duplicates: tuple[tuple[str, str], ...] = ()
        if self.dedup and items:
            found = find_duplicates(
                items,
                near_threshold=self.near_duplicate_threshold,
                shingle_size=self.shingle_size,
            )
            duplicates = tuple(
                (memory_id(items[d.index]), memory_id(items[d.kept_index])) for d in found
            )
            dropped = {d.index for d in found}
            items = [m for i, m in enumerate(items) if i not in dropped]
            steps.append("dedup")
        if self.reranker is not None and items:
            items = apply_reranker(self.reranker, user_message, items)
            steps.append("rerank")
        if self.freshness_half_life is not None and items:
            moment = now if now is not None else self._now()
            items = order_by_freshness(items, now=moment, half_life=self.freshness_half_life)
            steps.append("freshness")
        if self.kinds_first and items:
            items = order_by_kind(items, self.kinds_first)
            steps.append("kinds_first")
        return ProfileOutcome(memories=tuple(items), duplicates=duplicates, steps=tuple(steps))

    def _now(self) -> datetime:
        if self.clock is not None:
            return self.clock()
        return datetime.now(timezone.utc)

    # --- describing ----------------------------------------------------------------------

    @property
    def changes_nothing(self) -> bool:
        """True when :meth:`prepare` returns its input unchanged."""
        return (
            not self.dedup
            and self.reranker is None
            and self.freshness_half_life is None
            and not self.kinds_first
        )

    def explain(self) -> str:
        """A plain-text account of what this profile does, one module per line."""
        lines = [f"Profile {self.name!r}"]
        if self.changes_nothing:
            lines.append("  Memories are offered exactly as given: nothing is dropped or moved.")
            return "\n".join(lines)
        if self.dedup:
            rule = "exact copies (same words, ignoring case and punctuation at word edges)"
            if self.near_duplicate_threshold is not None:
                rule += (
                    f" and near copies ({self.shingle_size}-word shingle Jaccard >= "
                    f"{self.near_duplicate_threshold:.2f})"
                )
            lines.append(f"  1. Duplicates: {rule} are dropped; the first one offered stays.")
        else:
            lines.append("  1. Duplicates: kept (off).")
        if self.reranker is not None:
            name = getattr(self.reranker, "__name__", type(self.reranker).__name__)
            lines.append(f"  2. Reranker: {name}(user_message, memories) sets the order.")
        else:
            lines.append("  2. Reranker: none; your order is kept.")
        if self.freshness_half_life is not None:
            span = _duration(self.freshness_half_life)
            lines.append(
                f"  3. Freshness: dated episodic memories move back as they age; one {span} old "
                "is offered as if it ranked twice as far down, twice that age four times."
            )
        else:
            lines.append("  3. Freshness: off.")
        if self.kinds_first:
            lines.append(
                f"  4. Kind order: {', then '.join(self.kinds_first)} memories are offered "
                "first; the rest keep their order."
            )
        else:
            lines.append("  4. Kind order: unchanged.")
        lines.append("  Kept memories keep their [Mem:N] numbers from your input order.")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The settings as JSON-friendly values (the reranker and clock only as present/absent)."""
        half_life = self.freshness_half_life
        return {
            "name": self.name,
            "dedup": self.dedup,
            "near_duplicate_threshold": self.near_duplicate_threshold,
            "shingle_size": self.shingle_size,
            "kinds_first": list(self.kinds_first),
            "freshness_half_life_seconds": half_life.total_seconds() if half_life else None,
            "reranker": self.reranker is not None,
            "clock": self.clock is not None,
        }


def _duration(span: timedelta) -> str:
    seconds = span.total_seconds()
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds:g} seconds"
