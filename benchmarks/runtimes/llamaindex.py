"""The 12-turn agent scenario inside a LlamaIndex ``FunctionAgent``: Membrane against ``Memory``.

Both strategies run the same ``FunctionAgent`` loop, with one LlamaIndex ``Memory`` across the
12 runs and a scripted ``MockFunctionCallingLLM`` (LlamaIndex's own fake model) that calls
``lookup`` once a turn and then answers citing ``[Mem:2]``. Every request the LLM receives is
converted to OpenAI chat shape here and judged by ``benchmarks._agent_scenario.check_request``.

- ``membrane``: :class:`~membrane.adapters.llamaindex.MembraneFunctionAgent` with one
  ``ContextCompiler(3000)``; the memories come from a callable, the ``Memory`` keeps everything.
- ``memory``: the plain ``FunctionAgent`` with LlamaIndex's documented token-limited ``Memory``
  (``Memory.from_defaults(token_limit=3000)``) and the memories in a ``StaticMemoryBlock``
  inserted into the question (``insert_method=InsertMethod.USER``).

``python -m benchmarks.runtimes.llamaindex [--token-limit N]`` prints both (the ``Memory``'s
limit for the peer); ``benchmarks/agent_runtimes.py`` collects the rows.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage, MessageRole, MockFunctionCallingLLM
from llama_index.core.memory import InsertMethod, Memory, StaticMemoryBlock
from llama_index.core.tools import FunctionTool
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from benchmarks._agent_scenario import (
    BUDGET,
    MEMORIES,
    RULES,
    TOOL,
    TURNS,
    Turn,
    check_request,
    count_request,
    prefix_cache_reads,
    scripted_answer,
    tool_result,
)
from membrane import ContextCompiler, MemoryItem
from membrane.adapters.llamaindex import MembraneFunctionAgent
from membrane.tokenizers import load_encoding

__all__ = [
    "STRATEGIES",
    "Recorder",
    "in_memory_engine",
    "lookup_tool",
    "membrane_agent",
    "openai_chat",
    "run",
    "scripted_llm",
]

STRATEGIES = ("membrane", "memory")


@dataclass
class Sent:
    """One request the LLM received, in OpenAI chat shape."""

    turn: Turn
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]


@dataclass
class Recorder:
    """The turn being played, and every request the scripted LLM was sent."""

    turn: Turn = TURNS[0]
    sent: list[Sent] = field(default_factory=list)


def openai_chat(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """What an OpenAI-style integration sends for these messages (text, calls, results)."""
    out = []
    for message in messages:
        entry: dict[str, Any] = {"role": message.role.value, "content": message.content or ""}
        calls = [b for b in message.blocks if isinstance(b, ToolCallBlock)]
        if calls:
            entry["tool_calls"] = [
                {
                    "id": c.tool_call_id,
                    "type": "function",
                    "function": {"name": c.tool_name, "arguments": json.dumps(c.tool_kwargs)},
                }
                for c in calls
            ]
        if message.role == MessageRole.TOOL:
            entry["tool_call_id"] = message.additional_kwargs.get("tool_call_id")
        out.append(entry)
    return out


def scripted_llm(recorder: Recorder) -> MockFunctionCallingLLM:
    """Calls ``lookup`` for the turn's project, then answers once the result is in."""

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        turn = recorder.turn
        tools = [t.metadata.to_openai_tool()["function"] for t in kwargs.get("tools") or ()]
        recorder.sent.append(Sent(turn, openai_chat(messages), tools))
        if messages[-1].role == MessageRole.TOOL:
            return ChatMessage(role="assistant", content=scripted_answer(turn))
        call = ToolCallBlock(
            tool_call_id=turn.call_id, tool_name="lookup", tool_kwargs={"project": turn.project}
        )
        return ChatMessage(role="assistant", blocks=[call])

    return MockFunctionCallingLLM(response_generator=respond)


def lookup_tool() -> FunctionTool:
    """The scenario's ``lookup`` tool: a ~1,050-token report per project."""
    by_project = {t.project: t for t in TURNS}

    def lookup(project: str) -> str:
        return tool_result(by_project[project])

    return FunctionTool.from_defaults(fn=lookup, name="lookup", description=TOOL["description"])


def _records(_conversation: list[ChatMessage]) -> list[MemoryItem]:
    return [MemoryItem(id=ref, content=text) for ref, text in MEMORIES]


def membrane_agent(recorder: Recorder, **fields: Any) -> MembraneFunctionAgent:
    """The Membrane strategy's agent (one compiler for all its requests)."""
    return MembraneFunctionAgent(
        compiler=ContextCompiler(BUDGET),
        memories=_records,
        llm=scripted_llm(recorder),
        tools=[lookup_tool()],
        system_prompt=RULES,
        **fields,
    )


def in_memory_engine() -> AsyncEngine:
    """The SQLite store a ``Memory`` uses by default, made here so it can be closed."""
    return create_async_engine("sqlite+aiosqlite:///:memory:")


def _peer(
    recorder: Recorder, engine: AsyncEngine, token_limit: int
) -> tuple[FunctionAgent, Memory]:
    block = StaticMemoryBlock(
        name="memories", static_content="\n".join(text for _, text in MEMORIES)
    )
    memory = Memory.from_defaults(
        session_id="llamaindex-memory",
        token_limit=token_limit,
        tokenizer_fn=load_encoding("cl100k_base").encode,
        memory_blocks=[block],
        insert_method=InsertMethod.USER,
        async_engine=engine,
    )
    agent = FunctionAgent(llm=scripted_llm(recorder), tools=[lookup_tool()], system_prompt=RULES)
    return agent, memory


def _membrane(recorder: Recorder, engine: AsyncEngine) -> tuple[FunctionAgent, Memory]:
    memory = Memory.from_defaults(
        session_id="llamaindex-membrane",
        tokenizer_fn=load_encoding("cl100k_base").encode,
        async_engine=engine,
    )
    return membrane_agent(recorder), memory


async def _play(strategy: str, token_limit: int) -> Recorder:
    recorder, engine = Recorder(), in_memory_engine()
    if strategy == "membrane":
        agent, memory = _membrane(recorder, engine)
    else:
        agent, memory = _peer(recorder, engine, token_limit)
    try:
        for turn in TURNS:
            recorder.turn = turn
            await agent.run(turn.question, memory=memory)
    finally:
        await engine.dispose()
    return recorder


def run(strategy: str, *, token_limit: int = BUDGET) -> list[dict[str, Any]]:
    """One row per LLM request of the 12 turns, judged independently of Membrane.

    ``token_limit`` is the ``Memory``'s for the ``memory`` strategy (the budget by default).
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    recorder = asyncio.run(_play(strategy, token_limit))
    reads = prefix_cache_reads([s.messages for s in recorder.sent])
    rows, calls = [], dict.fromkeys((t.index for t in TURNS), 0)
    for sent, read in zip(recorder.sent, reads, strict=True):
        calls[sent.turn.index] += 1
        check = check_request(sent.messages, sent.tools, sent.turn)
        rows.append(
            {
                "turn": sent.turn.index,
                "call": calls[sent.turn.index],
                "tokens": check.tokens,
                "over_budget": check.over_budget,
                "problems": check.problems,
                "cache_read_tokens": read,
                "input_tokens": count_request(sent.messages, sent.tools),
            }
        )
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--token-limit", type=int, default=BUDGET, help="the Memory's limit")
    args = parser.parse_args(argv)
    for strategy in STRATEGIES:
        rows = run(strategy, token_limit=args.token_limit)
        over = sum(r["over_budget"] for r in rows)
        bad = sum(bool(r["problems"]) for r in rows)
        read = sum(r["cache_read_tokens"] for r in rows)
        total = sum(r["input_tokens"] for r in rows)
        print(
            f"{strategy:9} requests {len(rows)}  over budget {over}  with problems {bad}  "
            f"max tokens {max(r['tokens'] for r in rows)}  cache reads {read / total:.0%}"
        )


if __name__ == "__main__":
    main()
