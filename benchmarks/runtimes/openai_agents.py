"""The 12-turn agent scenario inside the OpenAI Agents SDK, with and without Membrane.

Strategies (``STRATEGIES``):

- ``membrane``: ``RunConfig(call_model_input_filter=membrane_input_filter(compiler, memories=...))``
  with a 3,000-token compiler; the retriever's memories go to Membrane, which puts them in the
  turn's question message.
- ``session_trimmer``: the SDK's own context management in its documented setup, a session and
  ``ToolOutputTrimmer()`` (defaults: the last 2 user turns untouched, older tool outputs over
  500 characters cut to a 200-character preview) as the ``call_model_input_filter``. With no
  place of its own for retrieved memories, they are written into the user's input each turn.

Both run the same scripted model (the SDK's own ``agents.testing.ScriptedModel``): each turn it
thinks (a ``reasoning`` item with ``encrypted_content``), calls ``lookup``, reads the ~1,050-token
report and answers citing ``[Mem:2]``. Every request the model receives is turned into OpenAI
chat shape (instructions as the system message; reasoning items are opaque and left out) and
judged by ``check_request``; the cache reads are ``prefix_cache_reads`` over the requests in
order. A row per model request::

    {"turn": 1..12, "call": 1 or 2 (within the turn), "tokens": judged prompt tokens,
     "over_budget": bool, "problems": [...], "cache_read_tokens": int,
     "input_tokens": the prompt tokens billed (the judged count, cached ones included)}

Run: ``python -m benchmarks.runtimes.openai_agents`` (prints a summary per strategy).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

from agents import Agent, FunctionTool, RunConfig, Runner, SQLiteSession
from agents.extensions import ToolOutputTrimmer
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from openai.types.responses import ResponseReasoningItem

from benchmarks._agent_scenario import (
    BUDGET,
    MEMORIES,
    RULES,
    TOOL,
    TURNS,
    Turn,
    check_request,
    prefix_cache_reads,
    scripted_answer,
    tool_result,
)
from membrane import ContextCompiler, MemoryItem
from membrane.adapters.openai_agents import MembraneInputFilter, membrane_input_filter

__all__ = [
    "STRATEGIES",
    "build_agent",
    "chat_request",
    "memory_records",
    "reasoning_item",
    "run",
    "scripted_model",
    "turn_of",
]

STRATEGIES = ("membrane", "session_trimmer")


def memory_records() -> list[MemoryItem]:
    return [MemoryItem(id=ref, content=text) for ref, text in MEMORIES]


def reasoning_item(turn: Turn) -> ResponseReasoningItem:
    """The opaque reasoning the model emits before its call (about 180 base64 characters)."""
    digest = hashlib.sha256(turn.question.encode()).digest() * 4
    return ResponseReasoningItem(
        id=f"rs_{turn.index}",
        type="reasoning",
        summary=[],
        encrypted_content="gAAAAAB" + base64.b64encode(digest).decode(),
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, Mapping))


def turn_of(items: Sequence[Mapping[str, Any]]) -> Turn:
    """The turn a request belongs to: the question in its last user message."""
    for item in reversed(items):
        if item.get("role") == "user":
            text = _text(item.get("content"))
            for turn in reversed(TURNS):
                if turn.question in text:
                    return turn
    raise AssertionError("the request holds no question of the scenario")


def _respond(call: ModelCall) -> list[Any]:
    """Call ``lookup`` first; once its report is in, answer."""
    items = list(call.input)
    turn = turn_of(items)
    if items[-1].get("type") == "function_call_output":
        return [assistant_message(scripted_answer(turn), item_id=f"msg_{turn.index}")]
    arguments = {"project": turn.project}
    call_item = function_call("lookup", arguments, call_id=turn.call_id, item_id=f"fc_{turn.index}")
    return [reasoning_item(turn), call_item]


def scripted_model(turns: int = len(TURNS)) -> ScriptedModel:
    """The SDK's scripted model, two calls a turn (call ``lookup``, then answer)."""
    return ScriptedModel([ModelStep.respond(_respond) for _ in range(2 * turns)])


async def _lookup(_context: Any, arguments: str) -> str:
    project = json.loads(arguments)["project"]
    turn = next(t for t in TURNS if t.project == project)
    return tool_result(turn)


def lookup_tool() -> FunctionTool:
    """``lookup`` with the scenario's own schema, so the judge counts what the model is given."""
    return FunctionTool(
        name=TOOL["name"],
        description=TOOL["description"],
        params_json_schema=TOOL["parameters"],
        on_invoke_tool=_lookup,
        strict_json_schema=False,
    )


def build_agent(model: ScriptedModel) -> Agent[Any]:
    return Agent(name="release assistant", instructions=RULES, tools=[lookup_tool()], model=model)


def _chat_items(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type")
        if kind == "function_call":
            call = {"id": item["call_id"], "type": "function"}
            call["function"] = {"name": item["name"], "arguments": item["arguments"]}
            if out and out[-1].get("tool_calls") and out[-1]["role"] == "assistant":
                out[-1]["tool_calls"].append(call)
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            content = item["output"]
            out.append({"role": "tool", "tool_call_id": item["call_id"], "content": content})
        elif kind in (None, "message"):
            out.append({"role": item["role"], "content": _text(item.get("content"))})
        elif kind != "reasoning":
            raise AssertionError(f"the scenario sends no {kind!r} item")
    return out


def chat_request(call: ModelCall) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A model call as OpenAI chat messages and tool definitions, for the judge."""
    system = [{"role": "system", "content": call.system_instructions or ""}]
    messages = system + _chat_items(call.input)
    tools = [
        {"name": t.name, "description": t.description, "parameters": t.params_json_schema}
        for t in call.tools
        if isinstance(t, FunctionTool)
    ]
    return messages, tools


def _membrane_filter() -> MembraneInputFilter:
    compiler = ContextCompiler(max_tokens=BUDGET, model_id="openai/gpt-5.1")
    return membrane_input_filter(compiler, memories=memory_records(), conversation_id="bench")


def _with_memories(question: str) -> str:
    lines = "\n".join(f"[Mem:{n}] {text}" for n, (_, text) in enumerate(MEMORIES, start=1))
    return f"Memories:\n{lines}\n\n{question}"


async def _conversation(strategy: str) -> ScriptedModel:
    model = scripted_model()
    agent = build_agent(model)
    session = SQLiteSession(f"bench-{strategy}")
    if strategy == "membrane":
        config = RunConfig(call_model_input_filter=_membrane_filter())
    elif strategy == "session_trimmer":
        config = RunConfig(call_model_input_filter=ToolOutputTrimmer())
    else:
        raise ValueError(f"unknown strategy {strategy!r}; one of {STRATEGIES}")
    for turn in TURNS:
        text = turn.question if strategy == "membrane" else _with_memories(turn.question)
        await Runner.run(agent, text, session=session, run_config=config)
    model.assert_complete()
    return model


def run(strategy: str) -> list[dict[str, Any]]:
    """One row per model request of the 12-turn scenario under ``strategy``."""
    model = asyncio.run(_conversation(strategy))
    requests = [chat_request(call) for call in model.calls]
    reads = prefix_cache_reads([messages for messages, _ in requests])
    rows = []
    for k, ((messages, tools), read) in enumerate(zip(requests, reads, strict=True)):
        turn = TURNS[k // 2]
        check = check_request(messages, tools, turn)
        rows.append(
            {
                "turn": turn.index,
                "call": k % 2 + 1,
                "tokens": check.tokens,
                "over_budget": check.over_budget,
                "problems": check.problems,
                "cache_read_tokens": read,
                "input_tokens": check.tokens,
            }
        )
    return rows


def _summary(strategy: str, rows: Sequence[Mapping[str, Any]]) -> str:
    over = sum(r["over_budget"] for r in rows)
    bad = sum(bool(r["problems"]) for r in rows)
    billed = sum(r["input_tokens"] for r in rows)
    cached = sum(r["cache_read_tokens"] for r in rows)
    return (
        f"{strategy:16} requests {len(rows):3}  over budget {over:2}  with problems {bad:2}  "
        f"max {max(r['tokens'] for r in rows):6}  input {billed:7}  cache reads "
        f"{cached / billed:.0%}"
    )


if __name__ == "__main__":
    for name in STRATEGIES:
        print(_summary(name, run(name)))
