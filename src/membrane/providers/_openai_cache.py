"""Explicit cache breakpoints for the OpenAI models that take them (GPT-5.6 and later).

OpenAI caches one implicit breakpoint by itself; a request may add explicit ones, a
``prompt_cache_breakpoint`` on a content part, and OpenAI writes the latest three of them (four
with ``prompt_cache_options={"mode": "explicit"}``, which drops the implicit one). Membrane
marks the part that ends each of its cached prefixes (``metadata["cache_breakpoints"]``) that
reaches the model's minimum, the longest prefixes first. A prefix that ends on a message the API
cannot mark moves back to the last message it can: the cached prefix is shorter, never wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from membrane.capabilities import get_model_capabilities
from membrane.errors import InvalidInputError
from membrane.providers._convert import Breakpoint, CompiledPrompt, Message, cache_anchors
from membrane.report import ResultView

__all__ = ["EXPLICIT_BREAKPOINT", "Marks", "explicit_marks", "marked"]

#: The marker on a content part.
EXPLICIT_BREAKPOINT = {"mode": "explicit"}
# How many explicit breakpoints OpenAI writes: with its implicit one, and without it.
_IMPLICIT_MODE_LIMIT, _EXPLICIT_MODE_LIMIT = 3, 4

Marks = dict[int, set[int]]
"""Message index -> the indexes of its parts that end a cached prefix."""


def _wanted(result: CompiledPrompt, model: str | None, on: object, options: object) -> bool:
    if on is not None and not isinstance(on, bool):
        raise InvalidInputError(
            "cache_breakpoints must be True, False or None", field="cache_breakpoints"
        )
    if on is not None:
        return on
    mode = options.get("mode") if isinstance(options, Mapping) else None
    model_id = ResultView.of(result).model_id
    name = model_id if isinstance(model_id, str) else model
    return mode == "explicit" or get_model_capabilities(name).cache_breakpoints


def _moved_back(
    breakpoints: Sequence[Breakpoint],
    messages: Sequence[Message],
    markable: Callable[[Message], bool],
) -> list[Breakpoint]:
    out = []
    for bp in breakpoints:
        at = bp.message_index
        while at >= 0 and not markable(messages[at]):
            at -= 1
        if at == bp.message_index:
            out.append(bp)
        elif at >= 0:
            out.append(Breakpoint(at, bp.tokens, bp.reason))
    return out


def explicit_marks(
    result: CompiledPrompt,
    breakpoints: Sequence[Breakpoint],
    messages: Sequence[Message],
    *,
    model: str | None,
    on: bool | None,
    options: object,
    markable: Callable[[Message], bool],
) -> Marks:
    """Where the breakpoints go among ``messages`` (read with their cuts at ``breakpoints``).

    ``on`` is the caller's choice (None: the capability map's, or on when ``options`` asks for
    the explicit mode); ``options`` is the request's ``prompt_cache_options``.
    """
    if not _wanted(result, model, on, options):
        return {}
    mode = options.get("mode") if isinstance(options, Mapping) else None
    limit = _EXPLICIT_MODE_LIMIT if mode == "explicit" else _IMPLICIT_MODE_LIMIT
    model_id = ResultView.of(result).model_id
    name = model_id if isinstance(model_id, str) else model
    moved = _moved_back(breakpoints, messages, markable)
    marks: Marks = {}
    for index, part in cache_anchors(moved, messages, result, name, limit):
        marks.setdefault(index, set()).add(part)
    return marks


def marked(block: dict[str, Any], mark: bool) -> dict[str, Any]:
    """``block`` with the explicit breakpoint when ``mark``."""
    return {**block, "prompt_cache_breakpoint": dict(EXPLICIT_BREAKPOINT)} if mark else block
