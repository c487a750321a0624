"""MembraneProfile: which optional memory modules run before layout, and how."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar, Literal, TypeVar, cast

from membrane.errors import InvalidInputError
from membrane.messages import Message, message_text
from membrane.profile._classify import (
    Classifier,
    LabelEffect,
    check_effects,
    classify_query,
    run_classifier,
)
from membrane.profile._dedup import Duplicate, check_size, check_threshold, find_duplicates
from membrane.profile._explain import explain_profile, profile_dict
from membrane.profile._freshness import order_by_freshness
from membrane.profile._meaning import find_meaning_duplicates
from membrane.profile._order import Reranker, apply_reranker, order_by_kind
from membrane.profile._policies import Policy, check_must_include, check_policies
from membrane.records import MEMORY_KINDS, MemoryKind, memory_id
from membrane.text.semantic import Embedder

__all__ = ["MembraneProfile", "ProfileOutcome", "QueryLabel"]

M = TypeVar("M")

#: A preset's ``embedder="default"``: the ``embed`` extra's model when it is installed.
Default = Literal["default"]


def _resolve(embedder: Embedder | Default | None) -> Embedder | None:
    """The model a preset's ``embedder`` argument names (None: words alone)."""
    if not isinstance(embedder, str):
        return embedder
    if embedder != "default":
        raise TypeError(f'embedder must be callable, "default" or None, got {embedder!r}')
    from membrane.lod import default_embedder  # the extra is optional: imported where used

    return default_embedder()


@dataclass(frozen=True, slots=True)
class ProfileOutcome:
    """What a profile did to one list of memories (evidence for metadata and debugging).

    ``duplicates`` pairs each dropped memory's id with the id of the copy that was kept.
    ``steps`` names the modules that ran, in order. ``embedder_error`` says why the
    meaning-based duplicate check fell back to word shingles.
    """

    memories: tuple[Any, ...]
    duplicates: tuple[tuple[str, str], ...] = ()
    steps: tuple[str, ...] = ()
    embedder_error: str | None = None


@dataclass(frozen=True, slots=True)
class QueryLabel:
    """The classifier's label for one turn and the effect the profile maps it to (None: none)."""

    label: str
    effect: LabelEffect | None


@dataclass(frozen=True, slots=True)
class MembraneProfile:
    """Optional modules applied to retrieved memories before the compiler lays them out.

    They run in this order: duplicate removal, the caller's ``reranker``, freshness decay of
    dated episodes, then ``kinds_first``. Every module only drops or reorders; the memories
    that remain are the caller's own objects and keep their ``[Mem:N]`` numbers. The
    ``classifier`` labels the turn and ``label_effects`` say what a label changes in the fit;
    ``policies`` and ``must_include`` are rules the fit obeys; ``profiler`` times the compile's
    stages. The default (``minimal``) changes nothing.

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
    embedder: Embedder | None = field(default=None, compare=False)
    semantic_duplicate_threshold: float | None = None
    classifier: Classifier | None = field(default=None, compare=False)
    label_effects: Mapping[str, LabelEffect] | tuple[tuple[str, LabelEffect], ...] = ()
    classifier_history: int = 3
    policies: Sequence[Policy] = ()
    must_include: Sequence[str] = ()
    profiler: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidInputError("profile name must be a non-empty string", field="name")
        self._check_dedup()
        self._check_classifier()
        object.__setattr__(self, "policies", check_policies(self.policies))
        object.__setattr__(self, "must_include", check_must_include(self.must_include))
        if not isinstance(self.profiler, bool):
            raise InvalidInputError(
                f"profiler must be True or False, got {self.profiler!r}", field="profiler"
            )

    def _check_dedup(self) -> None:
        if self.near_duplicate_threshold is not None and not self.dedup:
            raise InvalidInputError(
                "near_duplicate_threshold is set but dedup is off; pass dedup=True as well",
                field="near_duplicate_threshold",
            )
        check_threshold(self.near_duplicate_threshold, "near_duplicate_threshold")
        check_size(self.shingle_size)
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
        if self.semantic_duplicate_threshold is not None:
            if not self.dedup:
                raise InvalidInputError(
                    "semantic_duplicate_threshold is set but dedup is off; pass dedup=True",
                    field="semantic_duplicate_threshold",
                )
            check_threshold(self.semantic_duplicate_threshold, "semantic_duplicate_threshold")
        if self.embedder is not None:
            if not callable(self.embedder):
                raise TypeError("embedder must be callable as embedder(list_of_texts) -> vectors")
            if self.semantic_duplicate_threshold is None:
                raise InvalidInputError(
                    "an embedder needs semantic_duplicate_threshold (the cosine that makes a "
                    "copy), and dedup=True",
                    field="semantic_duplicate_threshold",
                )

    def _check_classifier(self) -> None:
        if self.classifier is not None and not callable(self.classifier):
            raise TypeError("classifier must be callable as classifier(user_message, recent)")
        effects = check_effects(self.label_effects)
        if effects and self.classifier is None:
            raise InvalidInputError(
                "label_effects are set but there is no classifier to give a label; pass "
                "classifier=classify_query or your own",
                field="label_effects",
            )
        object.__setattr__(self, "label_effects", effects)
        history = self.classifier_history
        if isinstance(history, bool) or not isinstance(history, int) or history < 0:
            raise InvalidInputError(
                f"classifier_history must be a non-negative integer, got {history!r}",
                field="classifier_history",
            )

    # --- presets -------------------------------------------------------------------------

    @classmethod
    def minimal(cls) -> MembraneProfile:
        """The default: memories are offered exactly as given."""
        return cls(name="minimal")

    @classmethod
    def coding(
        cls,
        *,
        reranker: Reranker | None = None,
        embedder: Embedder | Default | None = "default",
        classifier: Classifier | None = None,
    ) -> MembraneProfile:
        """For coding assistants: strict duplicate removal, procedures first and whole.

        A copy must match closely (3-word shingles, Jaccard >= 0.9; with an embedder, cosine
        >= 0.95) because in code one changed word (a version, a flag) usually matters.
        ``embedder="default"`` is the ``embed`` extra's model when it is installed (else word
        shingles alone); None is words alone.
        Procedures are never thinned: half a procedure reads as a complete one. The turn is
        classified (``classifier`` or :func:`classify_query`): small talk gets at most 10% of
        the budget for memories, and a lookup keeps facts ahead of procedures under pressure.
        """
        return cls(
            name="coding",
            dedup=True,
            near_duplicate_threshold=0.9,
            shingle_size=3,
            kinds_first=("procedural",),
            reranker=reranker,
            embedder=_resolve(embedder),
            semantic_duplicate_threshold=0.95,
            classifier=classifier or classify_query,
            label_effects={
                "chit-chat": LabelEffect(memory_share=0.1),
                "lookup": LabelEffect(tier_order=(2, 1, 3)),
            },
            policies=(Policy("procedural", never_thin=True),),
        )

    @classmethod
    def conversational(
        cls,
        *,
        reranker: Reranker | None = None,
        clock: Callable[[], datetime] | None = None,
        embedder: Embedder | Default | None = "default",
        classifier: Classifier | None = None,
    ) -> MembraneProfile:
        """For chat assistants: looser duplicate removal, a 7-day freshness half-life.

        Restated facts ("The user prefers X" / "User prefers X") count as copies (2-word
        shingles, Jaccard >= 0.75; with an embedder, cosine >= 0.9; ``embedder`` as for
        :meth:`coding`); a week-old episode
        competes as if it ranked twice as low. At most 8 episodes go, so old events cannot
        crowd out facts. The turn is classified: small talk keeps episodes first and gives
        memories at most 25% of the budget (leaving room for recalled history); a lookup
        keeps facts, then episodes, then procedures.
        """
        return cls(
            name="conversational",
            dedup=True,
            near_duplicate_threshold=0.75,
            shingle_size=2,
            freshness_half_life=timedelta(days=7),
            reranker=reranker,
            clock=clock,
            embedder=_resolve(embedder),
            semantic_duplicate_threshold=0.9,
            classifier=classifier or classify_query,
            label_effects={
                "chit-chat": LabelEffect(tier_order=(3, 2, 1), memory_share=0.25),
                "lookup": LabelEffect(tier_order=(2, 3, 1)),
            },
            policies=(Policy("episodic", max_items=8),),
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
        error = None
        if self.dedup and items:
            found, step, error = self._duplicates(items)
            duplicates = tuple(
                (memory_id(items[d.index]), memory_id(items[d.kept_index])) for d in found
            )
            dropped = {d.index for d in found}
            items = [m for i, m in enumerate(items) if i not in dropped]
            steps.append(step)
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
        return ProfileOutcome(tuple(items), duplicates, tuple(steps), error)

    def _duplicates(self, items: list[Any]) -> tuple[list[Duplicate], str, str | None]:
        """The copies, the step's name, and why meaning fell back to words (if it did)."""
        error = None
        if self.embedder is not None and self.semantic_duplicate_threshold is not None:
            try:
                found = find_meaning_duplicates(
                    items, self.embedder, threshold=self.semantic_duplicate_threshold
                )
                return found, "dedup_meaning", None
            except Exception as exc:  # the caller's model: any failure falls back to words
                error = f"{type(exc).__name__}: {exc}"
        found = find_duplicates(
            items, near_threshold=self.near_duplicate_threshold, shingle_size=self.shingle_size
        )
        return found, "dedup", error

    def classify(self, user_message: str, history: Sequence[Message] = ()) -> QueryLabel | None:
        """This turn's label and its effect, or None without a classifier.

        The classifier sees the texts of the last ``classifier_history`` user messages.
        """
        if self.classifier is None:
            return None
        recent: list[str] = []
        if self.classifier_history:
            for message in reversed(history):
                if message.get("role") == "user":
                    recent.append(message_text(message))
                    if len(recent) == self.classifier_history:
                        break
        label = run_classifier(self.classifier, user_message, recent[::-1])
        return QueryLabel(label, self.effect_for(label))

    @property
    def effects(self) -> tuple[tuple[str, LabelEffect], ...]:
        """``label_effects`` as checked ``(label, effect)`` pairs, sorted by label."""
        return cast("tuple[tuple[str, LabelEffect], ...]", self.label_effects)

    def effect_for(self, label: str) -> LabelEffect | None:
        """What ``label`` changes in the fit (None: nothing)."""
        for name, effect in self.effects:
            if name == label:
                return effect
        return None

    def _now(self) -> datetime:
        if self.clock is not None:
            return self.clock()
        return datetime.now(timezone.utc)

    # --- describing ----------------------------------------------------------------------

    @property
    def changes_nothing(self) -> bool:
        """True when compiling with this profile is the same as compiling without one."""
        return (
            not self.dedup
            and self.reranker is None
            and self.freshness_half_life is None
            and not self.kinds_first
            and self.classifier is None
            and not self.policies
            and not self.must_include
            and not self.profiler
        )

    @property
    def shapes_the_fit(self) -> bool:
        """True when the fit has rules to obey: a classifier, policies or must-include ids."""
        return self.classifier is not None or bool(self.policies) or bool(self.must_include)

    def explain(self) -> str:
        """A plain-text account of what this profile does, one module per line."""
        return explain_profile(self)

    def to_dict(self) -> dict[str, Any]:
        """Every module and setting as JSON-friendly values (callables as their names)."""
        return profile_dict(self)
