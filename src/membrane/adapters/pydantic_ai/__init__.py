"""PydanticAI adapter: Membrane compiles every model request an agent makes.

Needs the ``pydantic-ai`` extra (``pydantic-ai-slim`` 2.78 or newer)::

    from membrane import ContextCompiler
    from membrane.adapters.pydantic_ai import MembraneCapability

    membrane = MembraneCapability(ContextCompiler(3000), memories=retrieve)
    agent = Agent(model, instructions=RULES, capabilities=[membrane])
    result = agent.run_sync(question, message_history=history)
    membrane.record(result).ref_map          # [Mem:N] -> record id

The run keeps its whole history (``result.all_messages()``); only the request each model call
sends is compiled. :func:`to_membrane` and :func:`from_membrane` are the converters between
PydanticAI's ``ModelMessage`` lists and Membrane's chat messages (docs/frameworks/pydantic_ai.md).
"""

from __future__ import annotations

from membrane.adapters.pydantic_ai._capability import (
    KEPT_RUNS,
    MembraneCapability,
    MemorySource,
    RunRecord,
)
from membrane.adapters.pydantic_ai._inbound import REF_KEY, ConvertedMessages, to_membrane
from membrane.adapters.pydantic_ai._outbound import from_membrane
from membrane.adapters.pydantic_ai._request import tool_definitions

__all__ = [
    "KEPT_RUNS",
    "REF_KEY",
    "ConvertedMessages",
    "MembraneCapability",
    "MemorySource",
    "RunRecord",
    "from_membrane",
    "to_membrane",
    "tool_definitions",
]
