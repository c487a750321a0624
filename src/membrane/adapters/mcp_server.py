"""A stdio MCP server exposing Membrane's compile and cost quote as tools.

Run it with ``python -m membrane.adapters.mcp_server`` (needs the ``mcp`` extra). It works
with both lines of the official SDK: ``mcp`` 2.x (``MCPServer``) and 1.x (``FastMCP``).

Tools:

``compile``
    Compile one turn; returns ``messages``, ``ref_map`` (``{"N": your_id}``),
    ``ref_map_type`` and ``metadata``.
``quote``
    The same compile plus an input-cost quote at the price you pass.

Each call builds its own compiler, so calls share no state (no calibration across calls).
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from membrane.adapters._common import json_ref_map, new_compiler
from membrane.compiler import CompileResult
from membrane.estimate import quote_for
from membrane.records import MemoryItem

__all__ = [
    "ChatMessageInput",
    "CompileOutput",
    "MemoryInput",
    "QuoteOutput",
    "build_server",
    "compile_tool",
    "main",
    "quote_tool",
]

SERVER_NAME = "membrane"


class MemoryInput(BaseModel):
    """One retrieved memory; ``id`` is what ``ref_map`` gives back."""

    id: str = Field(min_length=1)
    content: str
    memory_type: Literal["semantic", "episodic", "procedural"] = "semantic"
    priority: int | None = Field(default=None, ge=1, le=3)
    kind: str = "note"
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)


class ToolFunctionInput(BaseModel):
    """The function a tool call names, with its JSON-encoded arguments."""

    name: str
    arguments: str


class ToolCallInput(BaseModel):
    """A tool call on an assistant message (OpenAI shape)."""

    id: str
    type: Literal["function"] = "function"
    function: ToolFunctionInput


class ChatMessageInput(BaseModel):
    """A history message in OpenAI chat shape; tool calls and results are kept as given."""

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[ToolCallInput] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class CompileOutput(BaseModel):
    """A compiled prompt: messages to send, the citation map and the compile's numbers."""

    messages: list[dict[str, Any]]
    ref_map: dict[str, str]
    ref_map_type: dict[str, str]
    metadata: dict[str, Any]


class QuoteOutput(BaseModel):
    """An input-cost quote for one compiled prompt."""

    total_tokens: int
    estimated_cost_usd: float
    price_per_1k_input_tokens: float
    trimming_strategies: list[str]
    ref_map: dict[str, str]
    metadata: dict[str, Any]


def _compile(
    user_message: str,
    max_tokens: int,
    memories: list[MemoryInput] | None,
    conversation_messages: list[ChatMessageInput] | None,
    core_content: str,
    model_id: str | None,
    memory_placement: Literal["end", "system"],
    dynamic_directives: list[str] | None,
) -> CompileResult:
    compiler = new_compiler(
        max_tokens,
        {"model_id": model_id, "core_content": core_content, "memory_placement": memory_placement},
    )
    items = [MemoryItem(**m.model_dump()) for m in memories or ()]
    history = [m.model_dump(exclude_unset=True) for m in conversation_messages or ()]
    return compiler.compile(
        items,
        user_message,
        conversation_messages=history,
        dynamic_directives=dynamic_directives,
    )


def compile_tool(
    user_message: str,
    max_tokens: Annotated[int, Field(gt=0)],
    memories: list[MemoryInput] | None = None,
    conversation_messages: list[ChatMessageInput] | None = None,
    core_content: str = "",
    model_id: str | None = None,
    memory_placement: Literal["end", "system"] = "end",
    dynamic_directives: list[str] | None = None,
) -> CompileOutput:
    """Compile one turn under max_tokens; cite memories as [Mem:N] and resolve N with ref_map."""
    result = _compile(
        user_message,
        max_tokens,
        memories,
        conversation_messages,
        core_content,
        model_id,
        memory_placement,
        dynamic_directives,
    )
    return CompileOutput(
        messages=result.messages,
        ref_map=json_ref_map(result.ref_map),
        ref_map_type=json_ref_map(result.ref_map_type),
        metadata=result.metadata,
    )


def quote_tool(
    user_message: str,
    price_per_1k_input_tokens: Annotated[float, Field(ge=0)],
    max_tokens: Annotated[int, Field(gt=0)],
    memories: list[MemoryInput] | None = None,
    conversation_messages: list[ChatMessageInput] | None = None,
    core_content: str = "",
    model_id: str | None = None,
    memory_placement: Literal["end", "system"] = "end",
    dynamic_directives: list[str] | None = None,
) -> QuoteOutput:
    """Compile one turn and quote its input cost at the given price per 1,000 tokens."""
    result = _compile(
        user_message,
        max_tokens,
        memories,
        conversation_messages,
        core_content,
        model_id,
        memory_placement,
        dynamic_directives,
    )
    quote = quote_for(result, price_per_1k_input_tokens)
    return QuoteOutput(
        total_tokens=quote.total_tokens,
        estimated_cost_usd=quote.estimated_cost_usd,
        price_per_1k_input_tokens=quote.price_per_1k_input_tokens,
        trimming_strategies=list(quote.trimming_strategies),
        ref_map=json_ref_map(result.ref_map),
        metadata=result.metadata,
    )


def _server_class() -> Any:
    # mcp 2.x renamed FastMCP to MCPServer (and its old module now raises on import).
    try:
        return importlib.import_module("mcp.server.mcpserver").MCPServer
    except ModuleNotFoundError:
        return importlib.import_module("mcp.server.fastmcp").FastMCP


def build_server() -> Any:
    """The MCP server with the ``compile`` and ``quote`` tools registered (not yet running)."""
    server = _server_class()(SERVER_NAME)
    server.tool(name="compile")(compile_tool)
    server.tool(name="quote")(quote_tool)
    return server


def main() -> None:
    """Serve over stdio until the client closes the pipe."""
    build_server().run("stdio")


if __name__ == "__main__":
    main()
