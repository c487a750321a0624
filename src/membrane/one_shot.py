"""A compile with a throw-away compiler, for scripts and one-off calls."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from membrane.compiler import ContextCompiler
from membrane.result import CompileResult

__all__ = ["compile_anonymous"]


def compile_anonymous(
    *,
    max_tokens: int,
    memories: Sequence[object] = (),
    user_message: str = "",
    model_id: str | None = None,
    core_content: str = "",
    **options: Any,
) -> CompileResult:
    """Compile once with a throw-away compiler: no state survives the call.

    Constructor options and ``compile()`` arguments may both be passed as keywords.
    """
    ctor = set(inspect.signature(ContextCompiler.__init__).parameters) - {"self"}
    ctor_kwargs = {k: v for k, v in options.items() if k in ctor}
    call_kwargs = {k: v for k, v in options.items() if k not in ctor}
    compiler = ContextCompiler(max_tokens, model_id, core_content, **ctor_kwargs)
    return compiler.compile(memories, user_message, **call_kwargs)
