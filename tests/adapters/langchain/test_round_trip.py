"""When nothing is cut, the model gets what LangChain would have sent, framing aside.

What differs, exactly: the system message is the agent's prompt followed by Membrane's
interrupt instruction (nothing else with ``include_interrupt_instruction=False``), and the
turn's question message reads ``[memory lines]\\n\\n--- Current user message ---\\n<question>``
(``--- Current user message ---\\n<question>`` with no memories). Every other message is the
graph's own object, unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("langchain.agents", reason="needs the extra: pip install -e '.[langchain]'")

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from benchmarks._agent_scenario import MEMORIES, RULES, TURNS
from benchmarks.runtimes._claude import ScriptedClaude, cache_form, for_judge
from benchmarks.runtimes.langchain import memory_items
from membrane.adapters.langchain import MembraneMiddleware
from tests.adapters.langchain._agent import (
    ScriptedChat,
    agent_with,
    new_compiler,
    run_turns,
    scripted_responses,
)

FRAME = "--- Current user message ---\n"


class Spy(AgentMiddleware):  # type: ignore[type-arg]
    """Listed first (outermost): records what LangChain would send without Membrane."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[list[BaseMessage]] = []

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any]:
        assert request.system_message is not None
        self.requests.append([request.system_message, *request.messages])
        return handler(request)


def _question_index(messages: list[BaseMessage]) -> int:
    return max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))


@pytest.mark.parametrize("with_memories", [False, True])
def test_nothing_cut_means_langchains_own_request(with_memories: bool) -> None:
    spy, model = Spy(), ScriptedChat(responses=scripted_responses())
    compiler = new_compiler(100_000, include_interrupt_instruction=False)
    memories = memory_items() if with_memories else None
    run_turns(
        agent_with(model, [spy, MembraneMiddleware(compiler, memories=memories)]), "invoke", turns=3
    )
    assert len(spy.requests) == len(model.requests) == 6
    for expected, sent in zip(spy.requests, model.requests, strict=True):
        assert len(sent) == len(expected)
        assert isinstance(sent[0], SystemMessage) and sent[0].content == RULES == expected[0].text
        q = _question_index(expected)
        question = str(expected[q].content)
        lines = [
            f"[Mem:{n}] [fact] kind=note | text={t} | conf=1.00"
            for n, (_, t) in enumerate(MEMORIES, 1)
        ]
        framed = "\n".join(lines) + "\n\n" + FRAME + question if with_memories else FRAME + question
        assert sent[q].content == framed
        assert sent[q].id == expected[q].id
        others = [i for i in range(1, len(sent)) if i != q]
        assert all(sent[i] is expected[i] for i in others)


def _unmarked(payload: dict[str, Any]) -> dict[str, Any]:
    form = cache_form(payload)
    for message in form["messages"]:
        message["content"] = [
            {k: v for k, v in b.items() if k != "cache_control"} for b in message["content"]
        ]
    return form


def test_nothing_cut_on_claude_sends_the_same_turns() -> None:
    # ChatAnthropic renders both lists; the payloads differ only in the system text, the
    # question message and Membrane's cache markers (removed here, with string content read
    # as the one text block it stands for).
    plain, membrane = ScriptedClaude(), ScriptedClaude()
    run_turns(agent_with(plain, []), "invoke", turns=2)
    compiler = new_compiler(100_000, include_interrupt_instruction=False)
    run_turns(agent_with(membrane, [MembraneMiddleware(compiler)]), "invoke", turns=2)
    for position, (ours, theirs) in enumerate(zip(membrane.payloads, plain.payloads, strict=True)):
        assert for_judge(ours)[0] == for_judge(theirs)[0] == {"role": "system", "content": RULES}
        a, b = _unmarked(ours)["messages"], _unmarked(theirs)["messages"]
        question = TURNS[position // 2].question
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            if y["content"] == [{"type": "text", "text": question}]:
                assert x["content"] == [{"type": "text", "text": FRAME + question}]
            else:
                assert x == y
