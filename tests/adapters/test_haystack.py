"""The Haystack adapter inside a real Pipeline."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("haystack", reason="haystack-ai is not installed: pip install -e '.[haystack]'")

from haystack import Document, Pipeline, component
from haystack.dataclasses import ChatMessage, ChatRole, ToolCall

from membrane.adapters.haystack import (
    MembranePromptBuilder,
    from_haystack_messages,
    haystack_document_to_memory,
)
from membrane.compiler import ContextCompiler
from tests.adapters import _budget

CORE = "You answer from the documents and cite them as [Mem:N]."


@component
class RecordingChatGenerator:
    """A chat generator stand-in that keeps every message list it is run with."""

    def __init__(self) -> None:
        self.sent: list[list[ChatMessage]] = []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
        self.sent.append(list(messages))
        return {"replies": [ChatMessage.from_assistant("Berlin [Mem:2].")]}


def _documents(n: int) -> list[Document]:
    return [
        Document(
            id=f"kb-{i}",
            content=f"Fact {i}: office {i} is located in city number {i * 3}, floor {i % 7}. " * 2,
            meta={"memory_type": "episodic"} if i % 5 == 4 else {},
        )
        for i in range(n)
    ]


def _history() -> list[ChatMessage]:
    call = ToolCall(
        tool_name="lookup_office", arguments={"office": 2, "fields": ["city"]}, id="call_9"
    )
    out = []
    for t in range(12):
        out.append(ChatMessage.from_user(f"Tell me about office {t} and its staff."))
        out.append(ChatMessage.from_assistant(f"Office {t} has {t + 4} people on floor {t}."))
    out += [
        ChatMessage.from_user("Which city is office 2 in?"),
        ChatMessage.from_assistant(None, tool_calls=[call]),
        ChatMessage.from_tool('{"city": "Berlin"}', origin=call),
        ChatMessage.from_assistant("Office 2 is in Berlin."),
    ]
    return out


def _sent_tokens(messages: list[ChatMessage]) -> int:
    texts = []
    for m in from_haystack_messages(messages):
        text = m["content"] or ""
        for call in m.get("tool_calls", ()):
            fn = call["function"]
            text = "\n".join(t for t in (text, f"{fn['name']}({fn['arguments']})") if t)
        texts.append(text)
    return _budget.count_chat(texts)


def _pipeline(max_tokens: int) -> tuple[Pipeline, RecordingChatGenerator]:
    llm = RecordingChatGenerator()
    pipe = Pipeline()
    pipe.add_component("prompt_builder", MembranePromptBuilder(max_tokens, core_content=CORE))
    pipe.add_component("llm", llm)
    pipe.connect("prompt_builder.prompt", "llm.messages")
    return pipe, llm


def test_pipeline_sends_the_budgeted_prompt_with_its_ref_map() -> None:
    pipe, llm = _pipeline(600)
    docs = _documents(30)
    out = pipe.run(
        {
            "prompt_builder": {
                "question": "Where is office 2?",
                "documents": docs,
                "history": _history(),
            }
        },
        include_outputs_from={"prompt_builder"},
    )
    assert out["llm"]["replies"][0].text == "Berlin [Mem:2]."
    built = out["prompt_builder"]
    [sent] = llm.sent
    assert sent == built["prompt"]
    assert _sent_tokens(sent) <= 600
    assert built["metadata"]["tokens_budget"] == 600
    assert 0 < built["metadata"]["segments_kept"] < 30
    assert built["ref_map"]
    last = sent[-1].text
    assert last is not None and last.endswith("Where is office 2?")
    for n, ref in built["ref_map"].items():
        assert ref == f"kb-{n - 1}"
        assert any(
            line.startswith(f"[Mem:{n}] ") and f"Fact {n - 1}:" in line
            for line in last.splitlines()
        )
    # Same bytes as compiling the same inputs directly.
    direct = ContextCompiler(600, core_content=CORE).compile(
        [haystack_document_to_memory(d) for d in docs],
        "Where is office 2?",
        conversation_messages=from_haystack_messages(_history()),
    )
    assert built["ref_map"] == direct.ref_map
    assert from_haystack_messages(sent) == direct.messages


def test_tool_calls_survive_and_the_output_shape_matches_chat_prompt_builder() -> None:
    from haystack.components.builders import ChatPromptBuilder

    theirs_builder = ChatPromptBuilder(template=[ChatMessage.from_user("x")])
    theirs = set(theirs_builder.__haystack_output__._sockets_dict)
    ours = set(MembranePromptBuilder(100).__haystack_output__._sockets_dict)
    assert theirs <= ours and ours - theirs == {"ref_map", "metadata"}

    pipe, llm = _pipeline(5000)
    history = _history()
    pipe.run({"prompt_builder": {"question": "And office 3?", "history": history}})
    [sent] = llm.sent
    assert sent[1:-1] == history
    tool = [m for m in sent if m.role == ChatRole.TOOL]
    assert tool[0].tool_call_result is not None
    assert tool[0].tool_call_result.origin == history[-3].tool_calls[0]
    assert tool[0].tool_call_result.result == '{"city": "Berlin"}'


def test_documents_become_memories() -> None:
    m = haystack_document_to_memory(Document(id="d1", content="abc", meta={"priority": 1}))
    assert (m.id, m.content, m.priority, m.memory_type) == ("d1", "abc", 1, "semantic")
    auto = Document(content="no id given")
    assert haystack_document_to_memory(auto).id == auto.id != ""


def test_the_builder_survives_pipeline_serialization() -> None:
    pipe = Pipeline()
    pipe.add_component("prompt_builder", MembranePromptBuilder(321, core_content=CORE))
    yaml = pipe.dumps()
    # Haystack loads only classes from modules the caller trusts.
    loaded = Pipeline.loads(yaml, allowed_modules=["membrane.adapters.haystack"])
    builder = loaded.get_component("prompt_builder")
    assert isinstance(builder, MembranePromptBuilder)
    assert (builder.max_tokens, builder.core_content) == (321, CORE)
    original = pipe.get_component("prompt_builder").run(question="Q?", documents=_documents(5))
    again = builder.run(question="Q?", documents=_documents(5))
    assert again == original
