"""Framework adapters: each submodule imports its framework only when it is itself imported.

``membrane.adapters.langchain``, ``.llamaindex``, ``.crewai``, ``.haystack`` and
``.mcp_server`` need the extra of the same name (``pip install "membrane-aol[langchain]"``).
Importing this package imports none of them.

The seed's adapters build a fresh :class:`~membrane.ContextCompiler` for each call, so
concurrent chains never see each other's state; the cost is that a new compiler has no memory
of earlier turns. The agent-runtime entry points (``langchain.MembraneMiddleware``,
``langchain.compile_messages``) take your compiler instead, shared by every call and thread,
so the history cut, the index room and ``observe()``'s calibration carry over.
"""

from __future__ import annotations

__all__: list[str] = []
