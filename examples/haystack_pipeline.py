"""Haystack: BM25 retrieval, then MembranePromptBuilder, then a chat generator, in a Pipeline.

Run: python examples/haystack_pipeline.py   (needs membrane-aol[haystack])
Haystack ships no fake chat generator, so a five-line component stands in for the model.
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from haystack import Document, Pipeline, component
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.dataclasses import ChatMessage
from haystack.document_stores.in_memory import InMemoryDocumentStore

from membrane import count_tokens
from membrane.adapters.haystack import MembranePromptBuilder

BUDGET = 500


@component
class EchoFirstCitation:
    """Stands in for a chat generator: answers by citing the first memory it was shown."""

    def __init__(self) -> None:
        self.seen: list[ChatMessage] = []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
        self.seen = list(messages)
        return {"replies": [ChatMessage.from_assistant("See [Mem:1].")]}


store = InMemoryDocumentStore()
store.write_documents(
    [Document(id="faq-returns", content="Returns are free within 30 days of delivery.")]
    + [
        Document(id=f"faq-{i}", content=f"Order {i}: returns of parcel {i} took {i} days. " * 4)
        for i in range(30)
    ]
)
llm = EchoFirstCitation()
pipe = Pipeline()
pipe.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=30))
pipe.add_component("prompt_builder", MembranePromptBuilder(BUDGET, core_content="Cite [Mem:N]."))
pipe.add_component("llm", llm)
pipe.connect("retriever.documents", "prompt_builder.documents")
pipe.connect("prompt_builder.prompt", "llm.messages")

question = "Are returns free within 30 days?"
out = pipe.run(
    {"retriever": {"query": question}, "prompt_builder": {"question": question}},
    include_outputs_from={"prompt_builder"},
)
ref_map = out["prompt_builder"]["ref_map"]
sent = sum(count_tokens(m.text or "") + 3 for m in llm.seen)

print(out["llm"]["replies"][0].text, "->", ref_map[1])
print("prompt tokens:", sent, "of", BUDGET, "| memories kept:", len(ref_map), "of 30")

assert ref_map[1] == "faq-returns"  # BM25 ranked it first, so it is [Mem:1]
assert sent <= BUDGET
assert len(ref_map) < 30
