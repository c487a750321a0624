"""Memory records the compiler accepts, their tiers and how each is rendered as a ``[Mem:N]`` line.

The compiler takes :class:`MemoryItem` rows, the typed records below, or any object with an
``id`` and a ``memory_kind`` (the :class:`KernelMemoryRecord` protocol).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from membrane import config
from membrane import packaged as resources
from membrane.errors import InvalidInputError
from membrane.memo import memoised
from membrane.prompt_text import memory_body as memory_body_text

__all__ = [
    "DEFAULT_TEXT_CAPS",
    "MEMORY_KINDS",
    "TIER_EPISODIC",
    "TIER_PROCEDURAL",
    "TIER_SEMANTIC",
    "EpisodicMemory",
    "KernelMemoryObject",
    "KernelMemoryRecord",
    "MemoryItem",
    "MemoryKind",
    "ProceduralMemory",
    "SemanticMemory",
    "TextCapSetting",
    "check_text_cap",
    "kind_and_body",
    "load_kernel_memory_json_schema",
    "memory_body",
    "memory_id",
    "memory_kind",
    "memory_text",
    "memory_tier",
    "text_caps",
]

TIER_PROCEDURAL = 1
TIER_SEMANTIC = 2
TIER_EPISODIC = 3

MemoryKind = Literal["semantic", "episodic", "procedural"]
MEMORY_KINDS: tuple[MemoryKind, ...] = ("semantic", "episodic", "procedural")

_TIER_BY_KIND: dict[str, int] = {
    "procedural": TIER_PROCEDURAL,
    "semantic": TIER_SEMANTIC,
    "episodic": TIER_EPISODIC,
}
_LABEL_BY_KIND = {"semantic": "fact", "episodic": "episode", "procedural": "procedure"}

#: Default per-kind character caps for a memory's text (``MEMBRANE_MEMORY_TEXT_MAX_CHARS``
#: replaces them with one cap; ``0`` turns capping off).
DEFAULT_TEXT_CAPS: dict[str, int] = {"semantic": 200, "episodic": 280, "procedural": 500}


@runtime_checkable
class KernelMemoryRecord(Protocol):
    """Any record with a stable ``id`` and a ``memory_kind`` can be compiled."""

    @property
    def id(self) -> str: ...

    @property
    def memory_kind(self) -> str: ...


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One retrieved memory.

    ``priority`` is the tier (1 procedural, 2 semantic, 3 episodic); it defaults to the tier of
    ``memory_type``. ``kind`` is a free label shown to the model (``note``, ``preference`` ...).

    >>> MemoryItem(id="1", content="User prefers concise answers.").priority
    2
    """

    id: str
    content: str
    memory_type: MemoryKind = "semantic"
    priority: int | None = None
    kind: str = "note"
    confidence: float = 1.0
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise InvalidInputError("MemoryItem.id must be a non-empty string", field="id")
        if not isinstance(self.content, str):
            raise InvalidInputError("MemoryItem.content must be a string", field="content")
        config.check_within(
            len(self.content),
            "MAX_TEXT_CHARS",
            "content",
            "characters",
            "split the memory",
            label="MemoryItem.content",
        )
        if self.memory_type not in _TIER_BY_KIND:
            raise InvalidInputError(
                f"MemoryItem.memory_type must be one of {MEMORY_KINDS}, got {self.memory_type!r}",
                field="memory_type",
            )
        if self.priority is None:
            object.__setattr__(self, "priority", _TIER_BY_KIND[self.memory_type])
        elif self.priority not in (TIER_PROCEDURAL, TIER_SEMANTIC, TIER_EPISODIC):
            raise InvalidInputError(
                f"MemoryItem.priority must be 1, 2 or 3, got {self.priority!r}", field="priority"
            )
        confidence = self.confidence
        if (
            isinstance(confidence, bool)
            or not isinstance(confidence, (int, float))
            or not 0.0 <= confidence <= 1.0
        ):
            raise InvalidInputError(
                f"MemoryItem.confidence must be a number from 0 to 1, got {confidence!r}",
                field="confidence",
            )

    @property
    def memory_kind(self) -> str:
        return self.memory_type


@dataclass(frozen=True, slots=True)
class SemanticMemory:
    """A fact as subject / predicate / object."""

    id: str
    subject: str
    predicate: str
    object: str
    confidence: float = 1.0

    @property
    def memory_kind(self) -> str:
        return "semantic"

    @property
    def content(self) -> str:
        return fact_text(self.subject, self.predicate, self.object)


@dataclass(frozen=True, slots=True)
class EpisodicMemory:
    """Something that happened, optionally with when."""

    id: str
    summary: str
    occurred_at: str | None = None

    @property
    def memory_kind(self) -> str:
        return "episodic"

    @property
    def content(self) -> str:
        return episode_text(self.summary, self.occurred_at)


@dataclass(frozen=True, slots=True)
class ProceduralMemory:
    """How to do something: a name and its steps or instruction."""

    id: str
    instruction: str
    name: str = ""

    @property
    def memory_kind(self) -> str:
        return "procedural"

    @property
    def content(self) -> str:
        return procedure_text(self.instruction, self.name)


@dataclass(frozen=True, slots=True)
class KernelMemoryObject:
    """A generic typed record: any kind, text content and free-form attributes."""

    id: str
    memory_kind: str
    content: str
    attributes: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


def memory_id(memory: object) -> str:
    """The caller's id of a memory, as a string."""
    raw = getattr(memory, "id", None)
    if raw is None or raw == "":
        raise InvalidInputError(
            f"memory {memory!r} has no id; pass MemoryItem rows or objects with `id` and "
            "`memory_kind`",
            field="memories",
        )
    return str(raw)


def memory_kind(memory: object) -> MemoryKind:
    """The kind of a memory (``semantic`` when the record names something else)."""
    if type(memory) is MemoryItem:
        return memory.memory_type  # checked when the item was made
    kind = getattr(memory, "memory_kind", None)
    if kind is None:
        kind = getattr(memory, "memory_type", None)
    if kind is None:
        raise InvalidInputError(
            f"memory {memory!r} has no memory_kind; it must be one of {MEMORY_KINDS}",
            field="memories",
        )
    kind = str(kind).lower()
    return kind if kind in _TIER_BY_KIND else "semantic"  # type: ignore[return-value]


def memory_tier(memory: object) -> int:
    """The tier of a memory: its ``priority`` if it has one, else its kind's tier."""
    if type(memory) is MemoryItem and type(memory.priority) is int:
        return memory.priority  # checked when the item was made
    priority = getattr(memory, "priority", None)
    if isinstance(priority, int) and priority in (TIER_PROCEDURAL, TIER_SEMANTIC, TIER_EPISODIC):
        return priority
    return _TIER_BY_KIND[memory_kind(memory)]


#: What :class:`ContextCompiler`'s ``memory_text_max_chars`` accepts: None (the process default,
#: ``MEMBRANE_MEMORY_TEXT_MAX_CHARS`` or the per-kind caps), one cap for every kind (``0`` = none),
#: or caps by kind (kinds left out keep their default).
TextCapSetting = int | Mapping[str, int] | None


def check_text_cap(setting: TextCapSetting) -> TextCapSetting:
    """``setting`` if it is a valid ``memory_text_max_chars``, else InvalidInputError."""
    if setting is None:
        return None
    values = list(setting.values()) if isinstance(setting, Mapping) else [setting]
    if isinstance(setting, Mapping) and not set(setting) <= set(DEFAULT_TEXT_CAPS):
        unknown = sorted(map(str, set(setting) - set(DEFAULT_TEXT_CAPS)))
        raise InvalidInputError(
            f"memory_text_max_chars names unknown kinds {unknown}; the kinds are {MEMORY_KINDS}",
            field="memory_text_max_chars",
        )
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidInputError(
                "memory_text_max_chars must be a number of characters >= 0 (0 = no cap), or a "
                f"dict of them by kind; got {value!r}",
                field="memory_text_max_chars",
            )
    return setting


def text_caps(setting: TextCapSetting = None) -> dict[str, int | None]:
    """Each kind's character cap (None = no cap).

    ``setting`` is a compiler's ``memory_text_max_chars``; None reads the process default from
    ``MEMBRANE_MEMORY_TEXT_MAX_CHARS`` (unset: 200/280/500 characters by kind).
    """
    if isinstance(setting, Mapping):
        merged = {**DEFAULT_TEXT_CAPS, **setting}
        return {kind: cap if cap > 0 else None for kind, cap in merged.items()}
    cap = setting if setting is not None else config.memory_text_max_chars()
    if cap is None:
        return dict(DEFAULT_TEXT_CAPS)
    return dict.fromkeys(DEFAULT_TEXT_CAPS, cap if cap > 0 else None)


def _shorten(text: str, cap: int | None) -> tuple[str, bool]:
    if cap is None or len(text) <= cap:
        return text, False
    cut = text[: cap - 1]  # the ellipsis takes the last character
    space = cut.rfind(" ")
    if space > cap // 2:
        cut = cut[:space]
    return cut.rstrip() + "…", True


def memory_body(memory: object, caps: Mapping[str, int | None] | None = None) -> tuple[str, bool]:
    """The line body of a memory (without ``[Mem:N]``) and whether its text was shortened.

    ``caps`` are the per-kind caps of :func:`text_caps` (read from the environment when None).
    """
    return kind_and_body(memory, caps)[1:]


def kind_and_body(
    memory: object, caps: Mapping[str, int | None] | None = None
) -> tuple[MemoryKind, str, bool]:
    """:func:`memory_kind` and :func:`memory_body` of ``memory`` in one pass."""
    kind = memory_kind(memory)
    content = memory_text(memory)
    cap = (caps if caps is not None else text_caps())[kind]
    note_kind = getattr(memory, "kind", "note")
    confidence = getattr(memory, "confidence", 1.0)
    if type(note_kind) is str and type(confidence) is float and confidence > 0.0:
        # MemoryItem's own field types: safe as a memo key (0.0 and -0.0, equal keys that
        # print differently, are left out).
        return (kind, *_memoised_body((kind, content, note_kind, confidence, cap)))
    return (kind, *_body(kind, content, note_kind, confidence, cap))


def _body(
    kind: str, content: str, note_kind: object, confidence: Any, cap: int | None
) -> tuple[str, bool]:
    text, shortened = _shorten(" ".join(content.split()), cap)
    try:
        conf = float(confidence)
    except (TypeError, ValueError):
        conf = 1.0
    return memory_body_text(_LABEL_BY_KIND[kind], note_kind, text, conf), shortened


# A _memoised_body entry besides its two texts and the body: the key's tuple, a kind, a float
# and a cap (an int or None), the value's tuple and bool (generously: about 280 bytes).
_BODY_ENTRY_BYTES = 400


def _body_entry_bytes(key: tuple[str, str, str, float, int | None], body: tuple[str, bool]) -> int:
    return (
        _BODY_ENTRY_BYTES + sys.getsizeof(key[1]) + sys.getsizeof(key[2]) + sys.getsizeof(body[0])
    )


@memoised(0.04, _body_entry_bytes)
def _memoised_body(key: tuple[str, str, str, float, int | None]) -> tuple[str, bool]:
    """:func:`_body` of ``key``'s fields: the same memories are offered again on many turns."""
    return _body(*key)


def memory_text(memory: object) -> str:
    """The text a record shows the model.

    ``content`` when the record has it; otherwise the kind's own fields from the schema
    (``subject``/``predicate``/``object``, ``summary`` with ``occurred_at``, ``instruction`` with
    ``name``), so a record that carries only ``id``, ``memory_kind`` and those fields compiles.
    Raises InvalidInputError naming what is missing when there is no text at all.
    """
    content = getattr(memory, "content", None)
    if isinstance(content, str):
        return content
    if content is not None:
        raise InvalidInputError(
            f"memory {memory_id(memory)!r}: its `content` must be a string, got "
            f"{type(content).__name__}",
            field="memories",
        )
    text = _text_from_fields(memory)
    if text is None:
        raise InvalidInputError(
            f"memory {memory_id(memory)!r} ({memory_kind(memory)}) has no text to show the "
            "model: give it a `content` string, or `subject` + `predicate` + `object`, or "
            "`summary`, or `instruction` (see load_kernel_memory_json_schema())",
            field="memories",
        )
    return text


def _text_from_fields(memory: object) -> str | None:
    def field_text(name: str) -> str:
        value = getattr(memory, name, None)
        return value if isinstance(value, str) else ""

    subject, predicate, obj = field_text("subject"), field_text("predicate"), field_text("object")
    if subject and predicate and obj:
        return fact_text(subject, predicate, obj)
    if field_text("summary"):
        return episode_text(field_text("summary"), field_text("occurred_at") or None)
    if field_text("instruction"):
        return procedure_text(field_text("instruction"), field_text("name"))
    return None


def fact_text(subject: str, predicate: str, obj: str) -> str:
    """How a subject / predicate / object fact reads."""
    return f"{subject} {predicate}: {obj}"


def episode_text(summary: str, occurred_at: str | None) -> str:
    """How an episode reads, with when it happened if known."""
    return f"({occurred_at}) {summary}" if occurred_at else summary


def procedure_text(instruction: str, name: str) -> str:
    """How a procedure reads, with its name if it has one."""
    return f"{name}: {instruction}" if name else instruction


def load_kernel_memory_json_schema() -> dict[str, Any]:
    """The JSON schema of a kernel memory record (a fresh copy each call)."""
    path = resources.files("membrane") / "kernel_memory.schema.json"
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded
