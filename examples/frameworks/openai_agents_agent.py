"""OpenAI Agents SDK: Membrane keeps a tool-calling agent's every model call within its budget.

Run: python examples/frameworks/openai_agents_agent.py   (needs membrane-aol[openai-agents])
The model is the SDK's own ScriptedModel, so nothing leaves the machine: each turn it calls
``order_status`` (a long report comes back), then answers citing a memory.
"""

from __future__ import annotations

import asyncio
import os
import re

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")  # no trace upload from a demo

from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from membrane import ContextCompiler, MemoryItem
from membrane.adapters.openai_agents import membrane_input_filter

BUDGET = 2500
ORDERS = ["A-100", "B-200", "C-300", "D-400", "E-500", "F-600"]


@function_tool
def order_status(order: str) -> str:
    """Read the warehouse report of one order."""
    steps = " ".join(f"Step {n}: the parcel for {order} was scanned at hub {n}." for n in range(40))
    return f"{steps} Verdict: {order} arrives on Friday."


def think(call: ModelCall) -> list[object]:
    """Call the tool for the order the user asked about; once its report is in, answer."""
    last_user = next(i for i in reversed(call.input) if i.get("role") == "user")
    order = re.findall(r"[A-F]-\d00", str(last_user["content"]))[-1]
    if call.input[-1].get("type") == "function_call_output":
        return [assistant_message(f"{order} arrives on Friday; Ana handles it [Mem:1].")]
    return [function_call("order_status", {"order": order}, call_id=f"call_{order}")]


def retrieve(_data: object) -> list[MemoryItem]:
    """Your retriever: it gets the SDK's CallModelData, returns memory records."""
    return [MemoryItem(id="crm-ana", content="Ana is the account manager for this customer.")]


async def main() -> None:
    model = ScriptedModel([ModelStep.respond(think) for _ in range(2 * len(ORDERS))])
    agent = Agent(name="support", instructions="Answer briefly.", tools=[order_status], model=model)
    session = SQLiteSession("customer-42")

    # The integration: a compiler, a filter, the run config.
    compiler = ContextCompiler(max_tokens=BUDGET, model_id="openai/gpt-5.1")
    membrane_filter = membrane_input_filter(compiler, memories=retrieve)
    config = RunConfig(call_model_input_filter=membrane_filter)

    for order in ORDERS:
        result = await Runner.run(
            agent, f"Where is order {order}?", session=session, run_config=config
        )
        compiled = membrane_filter.last_result
        assert compiled is not None
        cited = [
            compiled.ref_map[int(n)] for n in re.findall(r"\[Mem:(\d+)\]", result.final_output)
        ]
        tokens = compiled.metadata["token_count"] + compiled.metadata["message_framing_tokens"]
        print(f"{order}: {result.final_output}  cited {cited}  prompt {tokens} of {BUDGET}")
        assert cited == ["crm-ana"] and not compiled.report.budget_exceeded

    stored = await session.get_items()
    sent = len(model.calls[-1].input)
    print(f"session keeps {len(stored)} items; the last model call was sent {sent} items")
    assert len(stored) == 4 * len(ORDERS)  # question, call, report, answer: nothing lost


asyncio.run(main())
