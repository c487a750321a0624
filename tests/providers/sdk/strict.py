"""Validators over an SDK's own request types, with unknown keys refused.

The OpenAI and Anthropic SDKs describe request bodies as ``TypedDict`` classes. Pydantic
validates TypedDicts but ignores keys they do not declare, and validates ``Iterable`` fields
lazily. ``strict_adapter`` therefore marks every TypedDict reachable from the root as
``extra="forbid"`` while the adapter is built, and ``validate`` consumes every lazy iterable so
each element is checked. Some SDK unions also accept their own response models (Anthropic's
``TextBlock`` next to ``TextBlockParam``), which take unknown keys; a part that matched only
such a model did not match any request type, so ``validate`` refuses it.
"""

from __future__ import annotations

import collections.abc
from typing import Any

import typing_extensions
from pydantic import BaseModel, ConfigDict, TypeAdapter

__all__ = ["strict_adapter", "validate"]

_FORBID = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


def _typed_dicts(root: Any, seen: set[int]) -> list[type]:
    """Every TypedDict class reachable from ``root`` through type hints."""
    if id(root) in seen:
        return []
    seen.add(id(root))
    found: list[type] = []
    # typing_extensions' helpers know both kinds of TypedDict (the SDKs use the backport).
    if typing_extensions.is_typeddict(root):
        found.append(root)
        for hint in typing_extensions.get_type_hints(root, include_extras=True).values():
            found.extend(_typed_dicts(hint, seen))
        return found
    for arg in typing_extensions.get_args(root):
        found.extend(_typed_dicts(arg, seen))
    origin = typing_extensions.get_origin(root)
    if origin is not None and origin is not root:
        found.extend(_typed_dicts(origin, seen))
    return found


def strict_adapter(root: Any) -> TypeAdapter[Any]:
    """A TypeAdapter over ``root`` in which every TypedDict forbids keys it does not declare."""
    classes = _typed_dicts(root, set())
    saved = {cls: cls.__dict__.get("__pydantic_config__") for cls in classes}
    try:
        for cls in classes:
            cls.__pydantic_config__ = _FORBID  # type: ignore[attr-defined]
        return TypeAdapter(root)
    finally:
        for cls, config in saved.items():
            if config is None:
                del cls.__pydantic_config__  # type: ignore[attr-defined]
            else:
                cls.__pydantic_config__ = config  # type: ignore[attr-defined]


def _consume(value: Any) -> Any:
    if isinstance(value, BaseModel):
        raise ValueError(
            f"{value!r} matches no request type, only the response model "
            f"{type(value).__name__} (keys it does not know: {sorted(value.model_extra or {})})"
        )
    if isinstance(value, dict):
        return {k: _consume(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_consume(v) for v in value]
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, collections.abc.Iterator):
        return [_consume(v) for v in value]  # a lazily validated Iterable field
    return value


def validate(adapter: TypeAdapter[Any], body: Any) -> Any:
    """``body`` validated by ``adapter``, every lazy iterable consumed (and so checked)."""
    return _consume(adapter.validate_python(body))
