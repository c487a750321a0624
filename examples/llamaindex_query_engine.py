"""LlamaIndex: a RetrieverQueryEngine whose prompt Membrane keeps within a token budget.

Run: python examples/llamaindex_query_engine.py   (needs membrane-aol[llamaindex])
The LLM is LlamaIndex's own MockLLM; an instrumentation handler records each prompt it gets.
"""

from __future__ import annotations

from typing import Any

from llama_index.core import Settings
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.llm import LLMCompletionStartEvent
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers import get_response_synthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from membrane import count_tokens
from membrane.adapters.llamaindex import MembraneNodePostprocessor, ref_map_from_nodes
from membrane.tokenizers import load_encoding

BUDGET = 600
Settings.tokenizer = load_encoding("cl100k_base").encode  # LlamaIndex's default downloads


class Handbook(BaseRetriever):
    """Returns every handbook section; a real app would search an index."""

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [
            NodeWithScore(
                node=TextNode(
                    id_=f"handbook-{i}",
                    text=f"Zone {i}: the warehouse opens at {6 + i % 4} am. " * 5,
                    metadata={"page": i},
                ),
                score=1.0,
            )
            for i in range(25)
        ]


prompts: list[str] = []


class Recorder(BaseEventHandler):
    @classmethod
    def class_name(cls) -> str:
        return "Recorder"

    def handle(self, event: Any, **kwargs: Any) -> None:
        if isinstance(event, LLMCompletionStartEvent):
            prompts.append(event.prompt)


get_dispatcher().add_event_handler(Recorder())
engine = RetrieverQueryEngine(
    retriever=Handbook(),
    response_synthesizer=get_response_synthesizer(
        llm=MockLLM(max_tokens=8), response_mode="compact"
    ),
    node_postprocessors=[MembraneNodePostprocessor(max_tokens=BUDGET, answer_tokens=8)],
)
response = engine.query("When does the zone 3 warehouse open?")
refs = ref_map_from_nodes(response.source_nodes)

print("nodes kept:", len(response.source_nodes), "of 25")
print("prompt tokens:", [count_tokens(p) + 3 for p in prompts], "budget", BUDGET)
print("ref map:", dict(list(refs.items())[:3]), "...")

assert prompts and all(count_tokens(p) + 3 <= BUDGET for p in prompts)
assert 0 < len(refs) < 25
assert all(node_id == f"handbook-{n - 1}" for n, node_id in refs.items())
