"""One PydanticAI model request compiled by Membrane: what goes in, and what the model is sent.

In: the request's messages (the run's whole history, this turn's steps included), its
instruction parts and its tool definitions. The system prompts that open the history and the
instructions, in the order PydanticAI sends them (system prompts, then instructions), become
Membrane's ``agent_persona_prompt``; the rest is the conversation, compiled with
``continue_turn=True``. Out: a new message list and new request parameters. Membrane's system
message goes where the agent put its own: in the instructions when it has any (one instruction
part replaces them), else in the first request's system prompt part. Nothing the run stores is
changed: messages that come back unchanged are the run's own objects, and a changed one is a copy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic_ai.messages import (
    InstructionPart,
    ModelMessage,
    ModelRequest,
    SystemPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.tools import ToolDefinition

from membrane.adapters.pydantic_ai._inbound import REF_KEY, ConvertedMessages, to_membrane
from membrane.adapters.pydantic_ai._outbound import from_membrane
from membrane.compiler import CompileResult

__all__ = ["CompileInputs", "compile_inputs", "model_request", "tool_definitions"]


def tool_definitions(tools: Sequence[ToolDefinition]) -> list[dict[str, Any]]:
    """PydanticAI tool definitions in OpenAI function shape, as Membrane counts them."""
    out = []
    for tool in tools:
        function: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": tool.parameters_json_schema,
        }
        if tool.strict is not None:
            function["strict"] = tool.strict
        out.append({"type": "function", "function": function})
    return out


@dataclass(frozen=True)
class CompileInputs:
    """What one model request hands Membrane's compile."""

    converted: ConvertedMessages
    history: list[dict[str, Any]]
    persona: str
    tools: list[dict[str, Any]]
    #: The system prompt part that opened the history (its fields are kept for Membrane's).
    system_part: SystemPromptPart | None
    uses_instructions: bool

    def compile_kwargs(self) -> dict[str, Any]:
        return {
            "conversation_messages": self.history,
            "continue_turn": True,
            "agent_persona_prompt": self.persona or None,
            "tools": self.tools or None,
        }


def _leading_system(converted: ConvertedMessages) -> int:
    """How many system messages open the converted history."""
    n = 0
    for message in converted.messages:
        if message["role"] != "system":
            break
        n += 1
    return n


def compile_inputs(
    messages: Sequence[ModelMessage], parameters: ModelRequestParameters
) -> CompileInputs:
    """Read a model request into the compile's inputs (see the module)."""
    converted = to_membrane(messages)
    opening = _leading_system(converted)
    system_texts = [str(m["content"]) for m in converted.messages[:opening]]
    instructions = InstructionPart.join(parameters.instruction_parts or ()) or ""
    persona = "\n\n".join(t for t in (*system_texts, instructions) if t)
    system_part = None
    if opening:
        _, refs = converted.origins[converted.messages[0][REF_KEY]]
        system_part = converted.part(refs[0])
    tools = tool_definitions([*parameters.declared_function_tools, *parameters.output_tools])
    return CompileInputs(
        converted,
        converted.messages[opening:],
        persona,
        tools,
        system_part,
        bool(parameters.instruction_parts),
    )


def _with_system_prompt(messages: list[ModelMessage], part: SystemPromptPart) -> list[ModelMessage]:
    if messages and isinstance(messages[0], ModelRequest):
        first = messages[0]
        return [replace(first, parts=[part, *first.parts]), *messages[1:]]
    return [ModelRequest(parts=[part]), *messages]


def model_request(
    inputs: CompileInputs, result: CompileResult, parameters: ModelRequestParameters
) -> tuple[list[ModelMessage], ModelRequestParameters]:
    """The messages and parameters the model is sent for a compile of ``inputs``."""
    compiled: Sequence[Mapping[str, Any]] = result.messages
    system = ""
    if compiled and compiled[0].get("role") == "system":
        system, compiled = str(compiled[0].get("content") or ""), compiled[1:]
    messages = from_membrane(compiled, inputs.converted)
    if inputs.uses_instructions or not system:
        parts = [InstructionPart(system)] if system else []
        return messages, replace(parameters, instruction_parts=parts)
    if inputs.system_part is not None:
        part = replace(inputs.system_part, content=system)
    else:
        part = SystemPromptPart(system)
    return _with_system_prompt(messages, part), replace(parameters, instruction_parts=[])
