"""LangChain adapter: Membrane in ``create_agent``, LangGraph nodes and LCEL chains.

Needs the ``langchain`` extra (``langchain-core``, ``langchain`` and ``langgraph`` 1.x).

- :class:`MembraneMiddleware` for LangChain v1's ``create_agent(..., middleware=[...])``
  (loaded on first use: only it needs ``langchain`` itself);
- :func:`compile_messages` (and :func:`compile_view` for the ref map) for a LangGraph node or
  a loop of your own: the state keeps every message, only the view sent is compiled;
- the seed's :class:`MembranePromptTemplate` for LCEL chains, and memory hygiene.

>>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
>>> from membrane.adapters.langchain import MembranePromptTemplate, cited_chain
>>> prompt = MembranePromptTemplate(max_tokens=1000, core_content="Cite as [Mem:N].")
>>> chain = cited_chain(prompt, FakeListChatModel(responses=["30 days [Mem:1]."]))
>>> from membrane import MemoryItem
>>> out = chain.invoke({"question": "Refund window?",
...                     "memories": [MemoryItem(id="doc-381", content="Refunds: 30 days.")]})
>>> out["answer"], out["ref_map"]
('30 days [Mem:1].', {1: 'doc-381'})

``MembranePromptTemplate`` is a real ``BasePromptTemplate``: ``prompt | model | parser``
works, and its output is a :class:`MembranePromptValue`, a ``ChatPromptValue`` that also
carries the compile's ``ref_map``, ``ref_map_type`` and ``metadata``. Nothing is kept on the
template, so one template serves concurrent calls (``chain.batch``) and each answer gets the
ref map of its own request. Templates with the same options share one compiler (it is
thread- and task-safe), so what it learns carries over from call to call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from membrane.adapters.langchain._hygiene import detect_memory_collision, disable_langchain_memory
from membrane.adapters.langchain._messages import from_langchain_messages, to_langchain_messages
from membrane.adapters.langchain._template import (
    MembranePromptTemplate,
    MembranePromptValue,
    cited_chain,
    langchain_doc_to_memory,
)
from membrane.adapters.langchain._view import (
    CompiledView,
    acompile_messages,
    acompile_view,
    compile_messages,
    compile_view,
)

if TYPE_CHECKING:
    from membrane.adapters.langchain._middleware import MembraneMiddleware

__all__ = [
    "CompiledView",
    "MembraneMiddleware",
    "MembranePromptTemplate",
    "MembranePromptValue",
    "acompile_messages",
    "acompile_view",
    "cited_chain",
    "compile_messages",
    "compile_view",
    "detect_memory_collision",
    "disable_langchain_memory",
    "from_langchain_messages",
    "langchain_doc_to_memory",
    "to_langchain_messages",
]


def __getattr__(name: str) -> Any:
    # The middleware subclasses langchain's AgentMiddleware, which loads LangGraph: only a
    # caller who uses it pays for that import.
    if name == "MembraneMiddleware":
        from membrane.adapters.langchain._middleware import MembraneMiddleware

        return MembraneMiddleware
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
