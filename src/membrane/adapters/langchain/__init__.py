"""LangChain adapter: a prompt template that compiles with Membrane, and memory hygiene.

Needs the ``langchain`` extra (``langchain-core`` 1.x).

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
ref map of its own request. Every call builds a compiler of its own.
"""

from __future__ import annotations

from membrane.adapters.langchain._hygiene import detect_memory_collision, disable_langchain_memory
from membrane.adapters.langchain._messages import from_langchain_messages, to_langchain_messages
from membrane.adapters.langchain._template import (
    MembranePromptTemplate,
    MembranePromptValue,
    cited_chain,
    langchain_doc_to_memory,
)

__all__ = [
    "MembranePromptTemplate",
    "MembranePromptValue",
    "cited_chain",
    "detect_memory_collision",
    "disable_langchain_memory",
    "from_langchain_messages",
    "langchain_doc_to_memory",
    "to_langchain_messages",
]
