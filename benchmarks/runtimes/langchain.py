"""LangChain v1 ``create_agent`` on the 12-turn agent scenario, with and without Membrane.

Both strategies run the same agent on ``ScriptedClaude`` (LangChain's ``ChatAnthropic`` with a
scripted client, so the real Anthropic payload is built and judged):

- ``membrane``: ``MembraneMiddleware`` over a ``ContextCompiler(3000)``, the memories given
  to the middleware (its cache markers take Claude's minimum from ``ChatAnthropic.model``);
- ``summarization``: LangChain's documented context management, ``SummarizationMiddleware``
  (a scripted summariser; it triggers at 2,600 counted tokens of messages, the budget less
  the system prompt and the tool, and keeps the last 1,600, which holds the question) paired with
  ``AnthropicPromptCachingMiddleware``; the memories travel in each question, as a user
  without Membrane writes them.

Each row is one model request: the judge's token count and findings
(``benchmarks._agent_scenario.check_request``) and the cache reads of a simulated Anthropic
cache (a write at each ``cache_control`` marker, a read of the longest earlier-written prefix
ending at a marked block within 20 blocks back).

    PYTHONPATH=src python -m benchmarks.runtimes.langchain   # both strategies, table, JSON
"""

from __future__ import annotations

import sys
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_anthropic.middleware import AnthropicPromptCachingMiddleware
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver

from benchmarks._agent_scenario import BUDGET, MEMORIES, RULES, TOOL, TURNS, check_request
from benchmarks._agent_scenario import tool_result as report_of
from benchmarks.runtimes._claude import (
    ScriptedClaude,
    cache_reads,
    for_judge,
    request_turn,
)

__all__ = [
    "STRATEGIES",
    "lookup_tool",
    "memories_in_question",
    "memory_items",
    "rows_of",
    "run",
]

STRATEGIES = ("membrane", "summarization")
SUMMARY = "Earlier turns looked up release dates and sign-offs of other projects."


def lookup_tool() -> BaseTool:
    """The scenario's ``lookup`` tool as a LangChain tool."""

    @tool
    def lookup(project: str) -> str:
        """Read the current status report of one project."""
        return report_of(next(t for t in TURNS if t.project == project))

    return lookup


def memory_items() -> list[Any]:
    """The scenario's memories as Membrane records."""
    from membrane import MemoryItem

    return [MemoryItem(id=ref, content=text) for ref, text in MEMORIES]


def memories_in_question(question: str) -> str:
    """A question with the memories written into it, as a user without Membrane sends it."""
    lines = [f"[Mem:{n}] {text}" for n, (_, text) in enumerate(MEMORIES, start=1)]
    return "Memories:\n" + "\n".join(lines) + "\n\n" + question


def _agent(strategy: str, model: ScriptedClaude) -> Any:
    if strategy == "membrane":
        from membrane import ContextCompiler
        from membrane.adapters.langchain import MembraneMiddleware

        compiler = ContextCompiler(BUDGET)  # markers follow ChatAnthropic's model
        middleware: list[Any] = [MembraneMiddleware(compiler, memories=memory_items())]
    elif strategy == "summarization":
        summariser = FakeListChatModel(responses=[SUMMARY])
        middleware = [
            SummarizationMiddleware(summariser, trigger=("tokens", 2_600), keep=("tokens", 1_600)),
            AnthropicPromptCachingMiddleware(),
        ]
    else:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    return create_agent(
        model,
        [lookup_tool()],
        system_prompt=RULES,
        middleware=middleware,
        checkpointer=InMemorySaver(),
    )


def rows_of(payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per request: the judge's findings and the simulated cache reads."""
    rows = []
    reads = cache_reads(payloads)
    for position, (payload, (read, size)) in enumerate(zip(payloads, reads, strict=True)):
        turn, answered = request_turn(position)
        check = check_request(for_judge(payload), [TOOL], turn)
        rows.append(
            {
                "turn": turn.index,
                "call": 2 if answered else 1,
                "tokens": check.tokens,
                "over_budget": check.over_budget,
                "problems": check.problems,
                "cache_read_tokens": read,
                "input_tokens": size,
            }
        )
    return rows


def run(strategy: str) -> list[dict[str, Any]]:
    """The 12 turns (24 model requests) under ``strategy``, one row per request."""
    model = ScriptedClaude()
    agent = _agent(strategy, model)
    config = {"configurable": {"thread_id": f"bench-{strategy}"}}
    for turn in TURNS:
        text = turn.question if strategy == "membrane" else memories_in_question(turn.question)
        agent.invoke({"messages": [{"role": "user", "content": text}]}, config)
    return rows_of(model.payloads)


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    read = sum(r["cache_read_tokens"] for r in rows)
    size = sum(r["input_tokens"] for r in rows)
    return {
        "requests": len(rows),
        "over_budget": sum(r["over_budget"] for r in rows),
        "invalid": sum(bool(r["problems"]) for r in rows),
        "max_tokens": max(r["tokens"] for r in rows),
        "input_tokens": size,
        "cache_read_share": read / size if size else 0.0,
    }


def main() -> int:
    """Print the table; ``python -m benchmarks.agent_runtimes`` writes the results file."""
    from benchmarks._report import markdown_table

    results = {s: run(s) for s in STRATEGIES}
    summaries = {s: _summary(rows) for s, rows in results.items()}
    header = ["strategy", "requests", "over budget", "invalid", "max tokens", "cache-read share"]
    counts = ("requests", "over_budget", "invalid", "max_tokens")
    body = [
        [s, *(str(v[k]) for k in counts), f"{v['cache_read_share']:.1%}"]
        for s, v in summaries.items()
    ]
    print(markdown_table(header, body))
    return 0


if __name__ == "__main__":
    sys.exit(main())
