"""The LangChain adapter inside real LangChain chains (fake chat models from langchain-core)."""

from __future__ import annotations

import json
import random
import re
import time
import warnings
from typing import Any

import pytest

pytest.importorskip(
    "langchain_core", reason="langchain-core is not installed: pip install -e '.[langchain]'"
)

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.documents import Document
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import BasePromptTemplate
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

from membrane.adapters.langchain import (
    MembranePromptTemplate,
    MembranePromptValue,
    cited_chain,
    detect_memory_collision,
    disable_langchain_memory,
    from_langchain_messages,
    langchain_doc_to_memory,
)
from membrane.compiler import ContextCompiler
from membrane.errors import InvalidInputError, MemoryCollisionError
from tests.adapters import _budget

CORE = "You are a support agent. Cite memories as [Mem:N]."


class Capture(BaseCallbackHandler):
    """Records every message list a chat model is finally called with."""

    def __init__(self) -> None:
        self.calls: list[list[BaseMessage]] = []

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        self.calls.extend(messages)


def _sent_tokens(messages: list[BaseMessage]) -> int:
    texts = []
    for m in messages:
        text = m.content if isinstance(m.content, str) else json.dumps(m.content)
        for call in getattr(m, "tool_calls", None) or ():
            text += f"\n{call['name']}({json.dumps(call['args'], ensure_ascii=False)})"
        texts.append(text)
    return _budget.count_chat(texts)


def _docs(n: int) -> list[Document]:
    docs = []
    for i in range(n):
        text = f"Policy note {i}: orders from region {i} ship within {i % 9 + 2} days. " * 3
        if i % 2:
            docs.append(Document(id=f"doc-{i}", page_content=text))
        else:
            docs.append(Document(page_content=text, metadata={"id": f"doc-{i}"}))
    return docs


def _history(turns: int) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for t in range(turns):
        out.append(HumanMessage(content=f"Question {t}: where is parcel {t}?"))
        out.append(AIMessage(content=f"Parcel {t} is in depot {t * 7}, leaving tomorrow."))
    out += [
        HumanMessage(content="Check order A-55 please."),
        AIMessage(
            content="",
            tool_calls=[{"name": "find_order", "args": {"order": "A-55"}, "id": "call_1"}],
        ),
        ToolMessage(content='{"status": "shipped", "total": 612}', tool_call_id="call_1"),
        AIMessage(content="Order A-55 has shipped."),
    ]
    return out


def test_template_is_a_prompt_template_composing_in_lcel_within_budget() -> None:
    prompt = MembranePromptTemplate(max_tokens=700, core_content=CORE)
    assert isinstance(prompt, BasePromptTemplate)
    model = FakeListChatModel(responses=["Region 3 ships in 5 days [Mem:4]."])
    chain = prompt | model | StrOutputParser()
    capture = Capture()
    inputs = {
        "question": "How fast does region 3 ship?",
        "memories": _docs(40),
        "history": _history(30),
    }
    answer = chain.invoke(inputs, config={"callbacks": [capture]})
    assert answer == "Region 3 ships in 5 days [Mem:4]."

    value = prompt.invoke(inputs)
    assert isinstance(value, MembranePromptValue)
    [sent] = capture.calls
    assert sent == value.to_messages()
    assert _sent_tokens(sent) <= 700
    assert value.metadata["tokens_budget"] == 700
    assert value.metadata["segments_kept"] < 40
    assert value.metadata["history_messages_dropped"] > 0
    # The ref map maps back to the documents' own ids, each to the line that carries it.
    assert value.ref_map
    last = sent[-1].content
    assert isinstance(last, str)
    for n, ref in value.ref_map.items():
        assert ref == f"doc-{n - 1}"
        line = next(x for x in last.splitlines() if x.startswith(f"[Mem:{n}] "))
        assert f"Policy note {n - 1}:" in line
    assert set(map(int, re.findall(r"^\[Mem:(\d+)\]", last, re.M))) == set(value.ref_map)
    # The same compile outside LangChain gives the same text.
    direct = ContextCompiler(700, core_content=CORE).compile(
        [langchain_doc_to_memory(d) for d in _docs(40)],
        "How fast does region 3 ship?",
        conversation_messages=prompt_history_dicts(_history(30)),
    )
    assert [m.content or "" for m in sent] == [m["content"] or "" for m in direct.messages]
    assert prompt.format(**inputs).endswith("How fast does region 3 ship?")


def prompt_history_dicts(history: list[BaseMessage]) -> list[dict[str, Any]]:
    from membrane.adapters.langchain import from_langchain_messages

    return from_langchain_messages(history)


def test_tool_calls_survive_the_round_trip() -> None:
    prompt = MembranePromptTemplate(max_tokens=4000, core_content=CORE)
    capture = Capture()
    history = _history(2)
    (prompt | FakeListChatModel(responses=["ok"])).invoke(
        {"question": "And its total?", "history": history}, config={"callbacks": [capture]}
    )
    [sent] = capture.calls
    ai = [m for m in sent if isinstance(m, AIMessage) and m.tool_calls]
    tool = [m for m in sent if isinstance(m, ToolMessage)]
    assert len(ai) == 1 and len(tool) == 1
    assert ai[0].tool_calls == history[-3].tool_calls  # type: ignore[attr-defined]
    assert tool[0].tool_call_id == "call_1"
    assert tool[0].content == '{"status": "shipped", "total": 612}'
    # The whole history is sent in order, with its kinds and text unchanged.
    assert [(type(m), m.content) for m in sent[1:-1]] == [(type(m), m.content) for m in history]


class CitingChatModel(BaseChatModel):
    """Answers with the code of the region asked about, citing the memory line that holds it.

    It sleeps a random few milliseconds so concurrent calls finish out of order.
    """

    @property
    def _llm_type(self) -> str:
        return "citing-test-model"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        time.sleep(random.random() * 0.02)
        text = str(messages[-1].content)
        region = re.search(r"code of region (\d+)\?", text)
        assert region is not None
        line = re.search(rf"^\[Mem:(\d+)\] .*Region {region.group(1)} uses code (\w+)", text, re.M)
        assert line is not None
        answer = f"{line.group(2)} [Mem:{line.group(1)}]"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=answer))])


def test_batch_with_concurrency_pairs_each_answer_with_its_own_ref_map() -> None:
    prompt = MembranePromptTemplate(max_tokens=3000, core_content=CORE)
    chain = cited_chain(prompt, CitingChatModel())
    facts = [
        Document(id=f"doc-{k}", page_content=f"Region {k} uses code Z{k * 13}.") for k in range(16)
    ]
    inputs = []
    for i in range(16):
        # Each request sees the memories in its own order, so [Mem:N] differs per request.
        memories = facts[i:] + facts[:i]
        inputs.append({"question": f"What is the code of region {i}?", "memories": memories})
    outputs = chain.batch(inputs, config={"max_concurrency": 8})
    assert len(outputs) == 16
    for i, out in enumerate(outputs):
        answer = out["answer"]
        assert answer.startswith(f"Z{i * 13} ")
        cited = int(re.findall(r"\[Mem:(\d+)\]", answer)[0])
        assert cited == 1  # region i is first in its own request
        assert out["ref_map"][cited] == f"doc-{i}"
        assert out["ref_map"] == {n + 1: f"doc-{(i + n) % 16}" for n in range(16)}
        assert out["metadata"]["segments_kept"] == 16


async def test_async_invoke_gives_the_same_prompt() -> None:
    prompt = MembranePromptTemplate(max_tokens=500, core_content=CORE)
    inputs = {"question": "Where is parcel 2?", "memories": _docs(10), "history": _history(5)}
    a = await prompt.ainvoke(inputs)
    b = prompt.invoke(inputs)
    assert a.messages == b.messages and a.ref_map == b.ref_map
    # The calls share a compiler: the second resumes the window the first one left.
    same = {k: v for k, v in a.metadata.items() if k != "history_resume"}
    assert same == {k: v for k, v in b.metadata.items() if k != "history_resume"}


def test_documents_become_memories_with_their_ids() -> None:
    m = langchain_doc_to_memory(Document(id="a1", page_content="x", metadata={"id": "other"}))
    assert (m.id, m.content, m.memory_type, m.priority) == ("a1", "x", "semantic", 2)
    m = langchain_doc_to_memory(
        Document(page_content="y", metadata={"source_id": 7, "memory_type": "episodic"}),
        id_key="source_id",
    )
    assert (m.id, m.memory_type, m.priority) == ("7", "episodic", 3)
    with pytest.raises(InvalidInputError, match="Document has no id"):
        langchain_doc_to_memory(Document(page_content="z"))
    with pytest.raises(InvalidInputError, match="question"):
        MembranePromptTemplate(max_tokens=100).compile_result(memories=[])


def _history_store() -> Any:
    stores: dict[str, InMemoryChatMessageHistory] = {}

    def get(session_id: str) -> InMemoryChatMessageHistory:
        return stores.setdefault(session_id, InMemoryChatMessageHistory())

    return get


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_runnable_with_message_history_collides_until_disabled() -> None:
    prompt = MembranePromptTemplate(max_tokens=500, core_content=CORE)
    inner = prompt | FakeListChatModel(responses=["fine"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrapped = RunnableWithMessageHistory(
            inner, _history_store(), input_messages_key="question", history_messages_key="history"
        )
    with pytest.raises(MemoryCollisionError, match="disable_langchain_memory") as err:
        detect_memory_collision(wrapped)
    assert err.value.framework == "langchain"
    assert "RunnableWithMessageHistory" in err.value.locations[0]
    assert detect_memory_collision(wrapped, membrane_active=False) == list(err.value.locations)
    # Nested inside a sequence it is still found, and disabling works there too.
    nested = RunnableLambda(lambda x: x) | wrapped | StrOutputParser()
    with pytest.raises(MemoryCollisionError):
        detect_memory_collision(nested)
    for chain in (wrapped, nested):
        clean = disable_langchain_memory(chain)
        assert detect_memory_collision(clean) == []
    assert disable_langchain_memory(wrapped) is inner
    result = disable_langchain_memory(nested).invoke({"question": "hi"})
    assert result == "fine"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_legacy_chain_with_memory_collides_until_disabled() -> None:
    from langchain_classic.chains import ConversationChain
    from langchain_classic.memory import ConversationBufferMemory

    # The legacy classes warn that they are deprecated; that is the shape users still have.
    with pytest.warns(DeprecationWarning):
        chain = ConversationChain(
            llm=FakeListChatModel(responses=["ok"]), memory=ConversationBufferMemory()
        )
    with pytest.raises(MemoryCollisionError, match="ConversationBufferMemory"):
        detect_memory_collision(chain)
    assert disable_langchain_memory(chain) is chain
    assert chain.memory is None
    assert detect_memory_collision(chain) == []
    # A chain with no memory at all passes quietly.
    plain = MembranePromptTemplate(max_tokens=100) | FakeListChatModel(responses=["x"])
    assert detect_memory_collision(plain) == []


# ------------------------------------------- issue 35, point 18: Claude's tool loop, bad arguments

_THINKING = {
    "type": "thinking",
    "thinking": "The user wants the order status; call get_order.",
    "signature": "EqQBCkYIBRgCIkB3c2lnbmF0dXJl",
}


def _claude_turn(tagged: bool) -> list[BaseMessage]:
    """A tool-loop history as ChatAnthropic stores it: the reply's content holds the thinking,
    the text and a native ``tool_use`` block, and ``tool_calls`` names the same call."""
    metadata = {"model_provider": "anthropic", "stop_reason": "tool_use"} if tagged else {}
    reply = AIMessage(
        content=[
            _THINKING,
            {"type": "text", "text": "Let me look that up."},
            {"type": "tool_use", "id": "toolu_01A", "name": "get_order", "input": {"id": "A-55"}},
        ],
        tool_calls=[
            {"name": "get_order", "args": {"id": "A-55"}, "id": "toolu_01A", "type": "tool_call"}
        ],
        response_metadata=metadata,
    )
    return [
        HumanMessage(content="Where is order A-55?"),
        reply,
        ToolMessage(content='{"status": "shipped"}', tool_call_id="toolu_01A"),
    ]


@pytest.mark.parametrize("tagged", [True, False], ids=["anthropic", "untagged"])
def test_claude_tool_use_blocks_are_sent_once_and_thinking_survives(tagged: bool) -> None:
    history = _claude_turn(tagged)
    prompt = MembranePromptTemplate(max_tokens=4000, core_content=CORE)
    value = prompt.format_prompt(question="And when does it arrive?", history=history)
    sent = value.messages
    reply, result = sent[2], sent[3]
    assert isinstance(reply, AIMessage) and isinstance(result, ToolMessage)
    assert reply.tool_calls == history[1].tool_calls  # type: ignore[attr-defined]
    assert reply.content == [_THINKING, {"type": "text", "text": "Let me look that up."}]
    assert result.tool_call_id == "toolu_01A" and result.content == '{"status": "shipped"}'
    compiled = from_langchain_messages(history)
    assert compiled[1]["tool_calls"][0]["id"] == "toolu_01A"
    assert [b["type"] for b in compiled[1]["content"]] == ["thinking", "text"]
    # The framework's own message is not touched.
    assert history[1].content[2]["type"] == "tool_use"  # type: ignore[index]


@pytest.mark.parametrize(
    "arguments",
    ['{"id": "A-5', "[1, 2]", '"A-55"', "not json at all"],
    ids=["cut-off", "array", "string", "text"],
)
def test_tool_arguments_that_are_not_a_json_object_are_sent_as_given(arguments: str) -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Where is order A-55?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_order", "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "error: bad arguments"},
    ]
    prompt = MembranePromptTemplate(max_tokens=4000, core_content=CORE)
    sent = prompt.format_prompt(question="Try again.", history=history).messages
    reply = sent[2]
    assert isinstance(reply, AIMessage) and reply.tool_calls == []
    [invalid] = reply.invalid_tool_calls
    assert (invalid["id"], invalid["name"], invalid["args"]) == ("call_1", "get_order", arguments)
    back = from_langchain_messages(sent[1:4])
    assert back[1]["tool_calls"] == history[1]["tool_calls"] and back[2] == history[2]
    # The next turn reads LangChain's messages back: the call and its result still pair.
    again = prompt.format_prompt(question="Once more.", history=sent[1:-1]).messages
    assert again[2].invalid_tool_calls == reply.invalid_tool_calls  # type: ignore[attr-defined]


def test_tool_arguments_that_cannot_be_json_are_refused_with_the_field() -> None:
    reply = AIMessage(
        content="",
        tool_calls=[{"name": "t", "args": {"ids": {1, 2}}, "id": "c1", "type": "tool_call"}],
    )
    with pytest.raises(InvalidInputError) as raised:
        from_langchain_messages([HumanMessage(content="hi"), reply])
    assert raised.value.field == "history[1].tool_calls[0].args"
