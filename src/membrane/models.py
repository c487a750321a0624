"""Pydantic models of the memory records (the ``pydantic`` extra).

:class:`KernelMemoryModel` accepts exactly the JSON documents that
:func:`membrane.load_kernel_memory_json_schema` accepts (the tests check both directions on
generated documents), so a record validated at your API's edge compiles without surprises.
The typed models narrow it to one kind and require that kind's fields. Every instance is a
:class:`~membrane.KernelMemoryRecord`: pass them to ``compile()`` as they are.

>>> from membrane.models import SemanticMemoryModel
>>> SemanticMemoryModel(id="f1", subject="Ada", predicate="prefers", object="tea").memory_kind
'semantic'
"""

from __future__ import annotations

from typing import Any, Literal

try:
    from pydantic import BaseModel, ConfigDict, Field, model_validator
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError('membrane.models needs pydantic: pip install ".[pydantic]"') from exc

__all__ = [
    "EpisodicMemoryModel",
    "KernelMemoryModel",
    "ProceduralMemoryModel",
    "SemanticMemoryModel",
]

_OPTIONAL_TEXT = ("content", "subject", "predicate", "object", "summary", "occurred_at")
_OPTIONAL = (*_OPTIONAL_TEXT, "instruction", "name", "priority", "confidence", "attributes")


class KernelMemoryModel(BaseModel):
    """A memory record: an ``id``, a ``memory_kind`` and the optional fields of the schema.

    Strict like the schema: no type coercion (``"1"`` is not a priority), optional fields are
    either absent or of their type (never ``null``), and unknown keys are kept.
    """

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    id: str = Field(min_length=1)
    memory_kind: Literal["semantic", "episodic", "procedural"]
    content: str | None = None
    priority: Literal[1, 2, 3] | None = None
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    summary: str | None = None
    occurred_at: str | None = None
    instruction: str | None = None
    name: str | None = None
    confidence: float | None = Field(default=None, ge=0, le=1)
    attributes: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _as_the_schema_reads_it(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        absent_not_null = [k for k in _OPTIONAL if k in data and data[k] is None]
        if absent_not_null:
            raise ValueError(f"{absent_not_null[0]} may be left out but not null")
        priority = data.get("priority")
        if isinstance(priority, bool):
            raise ValueError("priority must be 1, 2 or 3, not a boolean")
        if type(priority) is float and priority.is_integer():
            # JSON has one number type: 2.0 is the schema's 2.
            data = {**data, "priority": int(priority)}
        confidence = data.get("confidence")
        if isinstance(confidence, bool):
            raise ValueError("confidence must be a number, not a boolean")
        return data


class SemanticMemoryModel(KernelMemoryModel):
    """A fact: ``subject`` ``predicate`` ``object`` (or a ``content`` text)."""

    memory_kind: Literal["semantic"] = "semantic"

    @model_validator(mode="after")
    def _has_text(self) -> SemanticMemoryModel:
        if self.content is None and not (self.subject and self.predicate and self.object):
            raise ValueError("a semantic memory needs content or subject, predicate and object")
        return self


class EpisodicMemoryModel(KernelMemoryModel):
    """Something that happened: a ``summary`` (or ``content``), optionally ``occurred_at``."""

    memory_kind: Literal["episodic"] = "episodic"

    @model_validator(mode="after")
    def _has_text(self) -> EpisodicMemoryModel:
        if self.content is None and not self.summary:
            raise ValueError("an episodic memory needs content or a summary")
        return self


class ProceduralMemoryModel(KernelMemoryModel):
    """How to do something: an ``instruction`` (or ``content``), optionally a ``name``."""

    memory_kind: Literal["procedural"] = "procedural"

    @model_validator(mode="after")
    def _has_text(self) -> ProceduralMemoryModel:
        if self.content is None and not self.instruction:
            raise ValueError("a procedural memory needs content or an instruction")
        return self
