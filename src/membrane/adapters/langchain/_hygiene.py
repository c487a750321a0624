"""Memory hygiene: find LangChain's own conversation memory beside Membrane, or remove it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from langchain_core.runnables import Runnable
from langchain_core.runnables.history import RunnableWithMessageHistory

from membrane.errors import MemoryCollisionError

__all__ = ["detect_memory_collision", "disable_langchain_memory"]


def _children(node: object) -> Iterator[object]:
    if isinstance(node, RunnableWithMessageHistory):
        yield from _unwrapped(node)
        return
    fields = getattr(type(node), "model_fields", None)
    if isinstance(fields, Mapping):
        for name in fields:
            yield getattr(node, name, None)
    for attr in ("steps", "first", "middle", "last", "bound", "mapper", "runnable", "fallbacks"):
        if not (isinstance(fields, Mapping) and attr in fields) and hasattr(node, attr):
            yield getattr(node, attr, None)


def _unwrapped(wrapper: RunnableWithMessageHistory) -> Iterator[Runnable[Any, Any]]:
    # The wrapped runnable sits behind a RunnableLambda whose closure holds it; ``deps`` is
    # LangChain's own public view of the runnables a lambda closes over.
    bound = wrapper.bound
    steps = getattr(bound, "steps", ())
    for step in steps[1:]:
        for dep in getattr(step, "deps", ()):
            yield getattr(dep, "bound", dep)


def _walk(root: object) -> Iterator[tuple[str, object]]:
    seen: set[int] = set()
    stack: list[tuple[str, object]] = [("chain", root)]
    while stack:
        path, node = stack.pop()
        if node is None or id(node) in seen or isinstance(node, (str, bytes, int, float)):
            continue
        seen.add(id(node))
        if isinstance(node, Mapping):
            stack.extend((f"{path}[{k!r}]", v) for k, v in node.items())
            continue
        if isinstance(node, (list, tuple)):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(node))
            continue
        if not isinstance(node, Runnable) and not hasattr(node, "memory"):
            continue
        yield path, node
        for child in _children(node):
            stack.append((f"{path}.{type(child).__name__}", child))


def _legacy_memory(node: object) -> object | None:
    memory: object | None = getattr(node, "memory", None)
    if memory is not None and hasattr(memory, "load_memory_variables"):
        return memory
    return None


def detect_memory_collision(chain: object, membrane_active: bool = True) -> list[str]:
    """Find LangChain conversation memory in ``chain``; raise if Membrane is also managing it.

    Looks through the whole runnable graph for ``RunnableWithMessageHistory`` wrappers and
    legacy (``langchain-classic``) chains with a ``.memory``. Returns where each was found;
    with ``membrane_active`` (the default) any finding raises
    :class:`~membrane.errors.MemoryCollisionError`.
    """
    found: list[str] = []
    for path, node in _walk(chain):
        if isinstance(node, RunnableWithMessageHistory):
            found.append(f"{path}: RunnableWithMessageHistory")
        elif _legacy_memory(node) is not None:
            found.append(f"{path}: {type(node).__name__}.memory={type(node.memory).__name__}")  # type: ignore[attr-defined]
    if found and membrane_active:
        raise MemoryCollisionError(
            "LangChain memory is active next to Membrane, so history would be sent twice and "
            f"outside the budget ({'; '.join(found)}). Pass the history to the Membrane prompt "
            "instead: call disable_langchain_memory(chain) or build the chain without "
            "RunnableWithMessageHistory / memory=...",
            framework="langchain",
            locations=tuple(found),
        )
    return found


def disable_langchain_memory(chain: Runnable[Any, Any]) -> Runnable[Any, Any]:
    """``chain`` without LangChain's conversation memory.

    A ``RunnableWithMessageHistory`` is replaced by the runnable it wraps (also inside a
    ``RunnableSequence``); a legacy chain's ``.memory`` is set to ``None`` in place. Give the
    history to :class:`MembranePromptTemplate` instead.
    """
    if isinstance(chain, RunnableWithMessageHistory):
        inner = list(_unwrapped(chain))
        if len(inner) != 1:
            raise MemoryCollisionError(
                "cannot find the runnable inside this RunnableWithMessageHistory; rebuild the "
                "chain without the wrapper and pass history to MembranePromptTemplate",
                framework="langchain",
                locations=("chain",),
            )
        return disable_langchain_memory(inner[0])
    steps = getattr(chain, "steps", None)
    if isinstance(steps, list) and type(chain).__name__ == "RunnableSequence" and len(steps) > 1:
        from langchain_core.runnables import RunnableSequence

        new_steps = [disable_langchain_memory(step) for step in steps]
        if any(a is not b for a, b in zip(new_steps, steps, strict=True)):
            return RunnableSequence(*new_steps)
    for _path, node in _walk(chain):
        if _legacy_memory(node) is not None:
            node.memory = None  # type: ignore[attr-defined]
    return chain
