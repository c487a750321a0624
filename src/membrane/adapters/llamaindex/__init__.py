"""LlamaIndex adapter: agents whose every request fits a budget, and a query-engine postprocessor.

Needs the ``llamaindex`` extra (``llama-index-core`` 0.14).

- :class:`MembraneFunctionAgent` is a ``FunctionAgent`` whose every LLM request (this run's
  tool calls and results included) is compiled by one shared compiler; run it as
  ``await agent.run(question, memory=memory)`` with a LlamaIndex ``Memory`` that keeps the whole
  conversation (docs/frameworks/llamaindex.md).
- :func:`from_llamaindex_messages` / :func:`to_llamaindex_messages` read ``ChatMessage`` objects
  as Membrane's chat dicts and back, giving back the very message for every dict left as read.
- :class:`MembraneNodePostprocessor` makes the prompt a query engine's synthesizer builds fit
  ``max_tokens``; :func:`node_to_memory` and :func:`ref_map_from_nodes` go with it.

LlamaIndex counts with ``Settings.tokenizer``, which by default downloads a tiktoken file;
offline, set it to Membrane's bundled encoding::

    from llama_index.core import Settings
    from membrane.tokenizers import load_encoding
    Settings.tokenizer = load_encoding("cl100k_base").encode
"""

from __future__ import annotations

from membrane.adapters.llamaindex._agent import (
    MembraneCompiled,
    MembraneFunctionAgent,
    MemorySource,
)
from membrane.adapters.llamaindex._convert import (
    SOURCE_KEY,
    from_llamaindex_messages,
    to_llamaindex_messages,
)
from membrane.adapters.llamaindex._postprocessor import (
    REF_KEY,
    MembraneNodePostprocessor,
    node_to_memory,
    ref_map_from_nodes,
)

__all__ = [
    "REF_KEY",
    "SOURCE_KEY",
    "MembraneCompiled",
    "MembraneFunctionAgent",
    "MembraneNodePostprocessor",
    "MemorySource",
    "from_llamaindex_messages",
    "node_to_memory",
    "ref_map_from_nodes",
    "to_llamaindex_messages",
]
