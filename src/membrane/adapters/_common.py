"""Pieces every adapter shares: one compiler per configuration and the kept text of each memory."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from membrane.caches import LRUCache
from membrane.compiler import CompileResult, ContextCompiler
from membrane.messages import message_text

__all__ = ["json_ref_map", "kept_memory_lines", "shared_compiler"]

_MEM_LINE = re.compile(r"^\[Mem:(\d+)\] ", re.MULTILINE)


_SHARED: LRUCache[tuple[Any, ...], ContextCompiler] = LRUCache(64)


def shared_compiler(max_tokens: int, options: Mapping[str, Any]) -> ContextCompiler:
    """The process's compiler for this configuration, made on first use.

    A compiler is thread- and task-safe, and sharing one keeps what it learns between calls:
    the conversations' windows, the token scale ``observe()`` measured, the checked histories.
    Options that cannot be a key (a state store, an embedder) are keyed by identity.
    """
    key = (max_tokens, *sorted((k, _key_of(v)) for k, v in options.items()))
    compiler = _SHARED.get(key)
    if compiler is None:
        compiler = ContextCompiler(max_tokens, **dict(options))
        _SHARED.put(key, compiler)
    return compiler


def _key_of(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return value


def kept_memory_lines(result: CompileResult) -> dict[int, str]:
    """``{N: line}`` for every ``[Mem:N]`` line the compile emitted, as it was sent.

    The memory block precedes the current turn in the message that carries it, so the first
    line opening with a tag in the ref map is the memory's own line.
    """
    found: dict[int, str] = {}
    for message in reversed(result.messages):
        if message.get("role") not in ("user", "system"):
            continue
        text = message_text(message)
        for match in _MEM_LINE.finditer(text):
            n = int(match.group(1))
            if n in result.ref_map and n not in found:
                end = text.find("\n", match.start())
                found[n] = text[match.start() : end if end >= 0 else len(text)]
        if found:
            break
    return found


def json_ref_map(ref_map: Mapping[int, str]) -> dict[str, str]:
    """The ref map with string keys, as JSON objects need them."""
    return {str(n): ref for n, ref in ref_map.items()}
