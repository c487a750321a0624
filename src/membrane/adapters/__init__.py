"""Framework adapters: each submodule imports its framework only when it is itself imported.

``membrane.adapters.langchain``, ``.llamaindex``, ``.crewai``, ``.haystack`` and
``.mcp_server`` need the extra of the same name (``pip install "membrane-aol[langchain]"``).
Importing this package imports none of them.

Every adapter builds a fresh :class:`~membrane.ContextCompiler` for each call: a shared
compiler is not yet safe to use from several threads at once, and a compiler per call keeps
concurrent chains from seeing each other's state. The cost is that a new compiler has no
memory of earlier turns (its token-scale calibration starts from the seed).
"""

from __future__ import annotations

__all__: list[str] = []
