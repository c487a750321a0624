"""Pieces every adapter shares: a compiler per call and the kept text of each memory."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from membrane.compiler import CompileResult, ContextCompiler
from membrane.messages import message_text

__all__ = ["json_ref_map", "kept_memory_lines", "new_compiler"]

_MEM_LINE = re.compile(r"^\[Mem:(\d+)\] ", re.MULTILINE)


def new_compiler(max_tokens: int, options: Mapping[str, Any]) -> ContextCompiler:
    """A compiler of its own for one call (a shared one is not yet thread-safe)."""
    return ContextCompiler(max_tokens, **dict(options))


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
