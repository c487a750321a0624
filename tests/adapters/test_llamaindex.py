"""The LlamaIndex adapter inside RetrieverQueryEngine, with MockLLM and instrumentation."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip(
    "llama_index.core",
    reason="llama-index-core is not installed: pip install -e '.[llamaindex]'",
)

from llama_index.core import Settings
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.bridge.pydantic import Field
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.llm import (
    LLMChatStartEvent,
    LLMCompletionStartEvent,
)
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers import ResponseMode, get_response_synthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from membrane.adapters.llamaindex import (
    REF_KEY,
    MembraneNodePostprocessor,
    node_to_memory,
    ref_map_from_nodes,
)
from membrane.errors import InvalidInputError
from membrane.tokenizers import load_encoding
from tests.adapters import _budget


class FixedRetriever(BaseRetriever):
    """Returns the same scored nodes for every query."""

    def __init__(self, nodes: list[NodeWithScore]) -> None:
        super().__init__()
        self._nodes = nodes

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=n.node, score=n.score) for n in self._nodes]


class PromptRecorder(BaseEventHandler):
    """Keeps the token count of every prompt an LLM is called with, counted independently."""

    sent: list[tuple[str, int, str]] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "PromptRecorder"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        if isinstance(event, LLMCompletionStartEvent):
            self.sent.append(("completion", _budget.count_chat([event.prompt]), event.prompt))
        elif isinstance(event, LLMChatStartEvent):
            texts = [m.content or "" for m in event.messages]
            self.sent.append(("chat", _budget.count_chat(texts), "\n".join(texts)))


@pytest.fixture
def recorder() -> Iterator[PromptRecorder]:
    previous = Settings._tokenizer
    Settings.tokenizer = load_encoding("cl100k_base").encode  # offline; default downloads
    handler = PromptRecorder(sent=[])
    dispatcher = get_dispatcher()
    dispatcher.add_event_handler(handler)
    try:
        yield handler
    finally:
        dispatcher.event_handlers.remove(handler)
        Settings._tokenizer = previous


def _nodes(n: int) -> list[NodeWithScore]:
    out = []
    for i in range(n):
        text = (
            f"Section {i}. The warehouse in zone {i} opens at {6 + i % 5} am and holds "
            f"{100 + i} pallets. Deliveries to zone {i} need a gate code. "
        ) * 4
        node = TextNode(
            id_=f"node-{i}",
            text=text,
            metadata={
                "file_name": f"handbook_{i}.pdf",
                "page": i,
                **({"memory_type": "episodic"} if i % 4 == 3 else {}),
            },
        )
        out.append(NodeWithScore(node=node, score=1.0 - i / 100))
    return out


QUERY = "When does the warehouse in zone 7 open?"


@pytest.mark.parametrize("mode", [ResponseMode.COMPACT, ResponseMode.REFINE])
@pytest.mark.parametrize("chat", [False, True], ids=["completion", "chat"])
def test_every_prompt_the_synthesizer_sends_fits(
    recorder: PromptRecorder, mode: ResponseMode, chat: bool
) -> None:
    budget = 700
    llm = MockLLM(max_tokens=12, is_chat_model=chat)
    post = MembraneNodePostprocessor(max_tokens=budget, answer_tokens=16)
    engine = RetrieverQueryEngine(
        retriever=FixedRetriever(_nodes(30)),
        response_synthesizer=get_response_synthesizer(llm=llm, response_mode=mode),
        node_postprocessors=[post],
    )
    response = engine.query(QUERY)
    assert response.response == " ".join(["text"] * 12)
    prompts = [p for p in recorder.sent if p[0] == ("chat" if chat else "completion")]
    assert prompts
    if mode == ResponseMode.COMPACT:
        assert len(prompts) == 1
    else:
        assert len(prompts) == len(response.source_nodes)
    for _kind, tokens, _text in prompts:
        assert tokens <= budget
    # Budgeted tightly: the whole context is close to the budget, not far under it.
    first = prompts[0][2]
    kept = response.source_nodes
    assert 3 <= len(kept) < 30
    ref_map = ref_map_from_nodes(kept)
    assert sorted(ref_map) == sorted(n.node.metadata[REF_KEY] for n in kept)
    for n, node_id in ref_map.items():
        assert node_id == f"node-{n - 1}"
    for item in kept:
        text = item.node.get_content()
        # What LlamaIndex formats is exactly the Membrane line, metadata hidden from the LLM.
        assert text.startswith(f"[Mem:{item.node.metadata[REF_KEY]}] ")
        assert "handbook_" not in text
        if mode == ResponseMode.COMPACT:
            assert text in first
    if mode == ResponseMode.COMPACT:
        largest = post.prompt_tokens([n.node.get_content() for n in kept], QUERY, _counter())
        assert prompts[0][1] <= largest <= budget


def _counter() -> Any:
    from membrane.tokenizers import TiktokenAdapter

    return TiktokenAdapter()


def test_without_the_postprocessor_the_same_engine_goes_over(recorder: PromptRecorder) -> None:
    engine = RetrieverQueryEngine(
        retriever=FixedRetriever(_nodes(30)),
        response_synthesizer=get_response_synthesizer(
            llm=MockLLM(max_tokens=12), response_mode=ResponseMode.COMPACT
        ),
    )
    engine.query(QUERY)
    assert max(tokens for _k, tokens, _t in recorder.sent) > 700


def test_nodes_become_memories_and_the_query_is_required() -> None:
    [scored] = _nodes(1)
    memory = node_to_memory(scored)
    assert memory.id == "node-0"
    assert memory.content == scored.node.get_content(metadata_mode="none")  # type: ignore[arg-type]
    assert "handbook_0" not in memory.content
    assert node_to_memory(_nodes(4)[3].node).memory_type == "episodic"
    post = MembraneNodePostprocessor(max_tokens=500)
    with pytest.raises(InvalidInputError, match="query"):
        post.postprocess_nodes(_nodes(3))
    kept = post.postprocess_nodes(_nodes(3), query_str=QUERY)
    assert [n.node.node_id for n in kept] == ["node-0", "node-1", "node-2"]
    assert all(re.match(r"\[Mem:\d\] ", n.node.get_content()) for n in kept)
