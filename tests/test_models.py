"""The pydantic models accept exactly what the JSON schema accepts, and compile as records."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from membrane import ContextCompiler, load_kernel_memory_json_schema
from membrane.models import (
    EpisodicMemoryModel,
    KernelMemoryModel,
    ProceduralMemoryModel,
    SemanticMemoryModel,
)

VALIDATOR = jsonschema.Draft202012Validator(load_kernel_memory_json_schema())

_json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=5),
    st.floats(min_value=-1, max_value=4, allow_nan=False),
    st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]),
    st.text(max_size=6),
    st.sampled_from(["semantic", "episodic", "procedural", "Semantic", "fact", ""]),
)
_json = st.recursive(
    _json_scalars,
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=4,
)
_KEYS = (
    "id",
    "memory_kind",
    "content",
    "priority",
    "subject",
    "predicate",
    "object",
    "summary",
    "occurred_at",
    "instruction",
    "name",
    "confidence",
    "attributes",
    "x_extra",
)


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly-plausible records: each key present or not, each value of the right type or not."""
    doc: dict[str, Any] = {}
    for key in _KEYS:
        if draw(st.booleans()) or (key in ("id", "memory_kind") and draw(st.booleans())):
            doc[key] = draw(_json)
    return doc


def _model_accepts(doc: dict[str, Any]) -> bool:
    try:
        KernelMemoryModel.model_validate(doc)
    except ValidationError:
        return False
    return True


@given(documents())
def test_the_model_and_the_schema_accept_the_same_documents(doc: dict[str, Any]) -> None:
    assert _model_accepts(doc) == VALIDATOR.is_valid(doc), doc


_valid = st.fixed_dictionaries(
    {
        "id": st.text(min_size=1, max_size=8),
        "memory_kind": st.sampled_from(["semantic", "episodic", "procedural"]),
    },
    optional={
        "content": st.text(max_size=20),
        "priority": st.sampled_from([1, 2, 3]),
        "confidence": st.floats(min_value=0, max_value=1) | st.sampled_from([0, 1]),
        "summary": st.text(max_size=8),
        "attributes": st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
        "x_extra": st.integers(),
    },
)


@given(_valid)
def test_every_schema_valid_record_is_a_model_and_round_trips(doc: dict[str, Any]) -> None:
    assert VALIDATOR.is_valid(doc)
    model = KernelMemoryModel.model_validate(doc)
    dumped = model.model_dump(exclude_none=True)
    assert dumped == doc
    assert VALIDATOR.is_valid(dumped)


@pytest.mark.parametrize(
    ("doc", "why"),
    [
        ({"id": "a", "memory_kind": "semantic", "content": None}, "not null"),
        ({"id": "a", "memory_kind": "semantic", "priority": "1"}, "priority"),
        ({"id": "a", "memory_kind": "semantic", "priority": True}, "priority"),
        ({"id": "a", "memory_kind": "semantic", "confidence": True}, "boolean"),
        ({"id": "", "memory_kind": "semantic"}, "id"),
        ({"id": "a", "memory_kind": "fact"}, "memory_kind"),
    ],
)
def test_documents_the_schema_refuses_are_refused_with_the_field(
    doc: dict[str, Any], why: str
) -> None:
    assert not VALIDATOR.is_valid(doc)
    with pytest.raises(ValidationError, match=why):
        KernelMemoryModel.model_validate(doc)


def test_models_compile_as_records() -> None:
    records = [
        SemanticMemoryModel(id="f", subject="Ada", predicate="prefers", object="tea"),
        EpisodicMemoryModel(id="e", summary="Met Bo.", occurred_at="2026-05-01"),
        ProceduralMemoryModel(id="p", instruction="Restart the pod.", name="fix"),
        KernelMemoryModel.model_validate({"id": "k", "memory_kind": "semantic", "content": "Hi."}),
    ]
    result = ContextCompiler(4096).compile(records, "What now?")
    assert result.ref_map == {1: "f", 2: "e", 3: "p", 4: "k"}
    assert result.ref_map_type == {1: "semantic", 2: "episodic", 3: "procedural", 4: "semantic"}
    tail = str(result.messages[-1]["content"])
    for text in ("Ada prefers: tea", "(2026-05-01) Met Bo.", "fix: Restart the pod.", "Hi."):
        assert f"text={text} |" in tail


def test_a_typed_model_needs_its_kinds_text() -> None:
    with pytest.raises(ValidationError, match="subject, predicate and object"):
        SemanticMemoryModel(id="f", subject="Ada")
    with pytest.raises(ValidationError, match="memory_kind"):
        EpisodicMemoryModel(id="e", summary="x", memory_kind="semantic")  # type: ignore[arg-type]
