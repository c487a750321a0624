"""LlamaIndex: a FunctionAgent whose every LLM request Membrane compiles under a token budget.

Run: python examples/frameworks/llamaindex_agent.py   (needs membrane-aol[llamaindex])
The LLM is LlamaIndex's own MockFunctionCallingLLM, scripted to look the project up and then
answer citing the memory it used; nothing leaves the machine. Each tool result is ~1,100
tokens, so six turns (~8,000 tokens of conversation) cannot all be sent under 3,000: Membrane
cuts the earlier turns behind an index, while the Memory keeps every message.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage, MessageRole, MockFunctionCallingLLM
from llama_index.core.memory import Memory

from membrane import ContextCompiler, MemoryItem
from membrane.adapters.llamaindex import MembraneCompiled, MembraneFunctionAgent
from membrane.tokenizers import load_encoding

BUDGET = 3_000
RULES = "You are the release assistant. Look a project up before answering; cite as [Mem:N]."
PROJECTS = ("atlas", "borealis", "cinder", "dynamo", "ember", "fjord")
MEMORIES = [MemoryItem(id="team-2", content="Release managers: Ana signs off every release.")]


def status_report(project: str) -> str:
    """Read the current status report of one project."""
    build = f"Build {{n}} of {project} passed the integration suite on the staging cluster. "
    return f"{project} ships on 4 March 2027. " + "".join(build.format(n=n) for n in range(80))


def scripted(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
    """The fake model: call the tool for the project asked about, then answer."""
    question = [m for m in messages if m.role == MessageRole.USER][-1].content or ""
    # the question closes its message; recalled passages and memories come before it
    project = re.findall(r"When does (\w+) ship", question)[-1]
    if messages[-1].role == MessageRole.TOOL:
        answer = f"{project} ships on 4 March 2027; Ana signs it off [Mem:1]."
        return ChatMessage(role="assistant", content=answer)
    call = ToolCallBlock(
        tool_call_id=f"call-{project}", tool_name="status_report", tool_kwargs={"project": project}
    )
    return ChatMessage(role="assistant", blocks=[call])


async def main() -> None:
    agent = MembraneFunctionAgent(
        compiler=ContextCompiler(BUDGET),
        memories=MEMORIES,
        llm=MockFunctionCallingLLM(response_generator=scripted),
        tools=[status_report],
        system_prompt=RULES,
    )
    memory = Memory.from_defaults(
        session_id="release-desk", tokenizer_fn=load_encoding("cl100k_base").encode
    )
    largest = 0
    for project in PROJECTS:
        handler = agent.run(f"When does {project} ship, and who signs it off?", memory=memory)
        async for event in handler.stream_events():
            if isinstance(event, MembraneCompiled):  # one per LLM request
                assert not event.budget_exceeded
                largest = max(largest, event.metadata["token_count"])
        output = await handler
        cited = output.membrane.ref_map[1]
        print(f"{project:9} {output}  -> [Mem:1] is {cited}")
    stored = await memory.aget_all()
    print(f"largest request: {largest} tokens (budget {BUDGET})")
    print(f"memory keeps {len(stored)} messages")
    assert largest <= BUDGET and len(stored) == 4 * len(PROJECTS)


if __name__ == "__main__":
    asyncio.run(main())
