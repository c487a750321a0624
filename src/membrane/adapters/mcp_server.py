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

Errors reach the client. A Membrane error (a bad memory, message or budget) ends the call with
``isError`` and a text naming the error, the field and what to do, as
``InvalidInputError (field conversation_messages[1].content): ...``. A line that is not a
JSON-RPC message (no method, ``params`` that is not an object, invalid JSON or a lone
surrogate escape) gets a JSON-RPC error response instead of silence: ``-32600`` (invalid
request) with the request's id when the line is JSON, ``-32700`` (parse error) otherwise.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

import anyio
from pydantic import BaseModel, Field, ValidationError

from membrane.adapters._common import json_ref_map, shared_compiler
from membrane.compiler import CompileResult
from membrane.errors import MembraneError
from membrane.estimate import quote_for
from membrane.records import MemoryItem

T = TypeVar("T")

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
    def run() -> CompileResult:
        compiler = shared_compiler(
            max_tokens,
            {
                "model_id": model_id,
                "core_content": core_content,
                "memory_placement": memory_placement,
            },
        )
        items = [MemoryItem(**m.model_dump()) for m in memories or ()]
        history = [m.model_dump(exclude_unset=True) for m in conversation_messages or ()]
        return compiler.compile(
            items,
            user_message,
            conversation_messages=history,
            dynamic_directives=dynamic_directives,
        )

    return _reported(run)


def _reported(call: Callable[[], T]) -> T:
    """``call()``, with a Membrane error raised as the SDK's ``ToolError``, whose text the
    client receives (any other exception reaches it as a bare "Error executing tool")."""
    try:
        return call()
    except MembraneError as exc:
        field = getattr(exc, "field", None)
        where = f" (field {field})" if field else ""
        raise _tool_error_class()(f"{type(exc).__name__}{where}: {exc}") from exc


def _tool_error_class() -> Any:
    # mcp 2.x: mcp.server.mcpserver; 1.x: mcp.server.fastmcp.
    try:
        return importlib.import_module("mcp.server.mcpserver.exceptions").ToolError
    except ModuleNotFoundError:
        return importlib.import_module("mcp.server.fastmcp.exceptions").ToolError


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
    quote = _reported(lambda: quote_for(result, price_per_1k_input_tokens))
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


# JSON-RPC 2.0 error codes.
_PARSE_ERROR, _INVALID_REQUEST = -32700, -32600


def _request_id(value: object) -> str | int | None:
    if isinstance(value, dict):
        found = value.get("id")
        if isinstance(found, (str, int)) and not isinstance(found, bool):
            return found
    return None


def _malformed_reply(exc: Exception) -> tuple[str | int | None, int, str]:
    """``(id, code, message)`` of the JSON-RPC error answering a line the SDK could not read.

    ``exc`` is what the SDK's stdio reader raised on the line: a pydantic ``ValidationError``
    whose errors carry the line (invalid JSON) or the decoded message (a wrong shape).
    """
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    for error in errors:
        raw = error.get("input")
        if error.get("type") == "json_invalid" and isinstance(raw, (str, bytes)):
            try:
                decoded = json.loads(raw)
            except ValueError:
                return None, _PARSE_ERROR, "Parse error: the line is not valid JSON"
            # Python's reader accepts what the SDK's refuses: a lone surrogate escape.
            return (
                _request_id(decoded),
                _INVALID_REQUEST,
                "Invalid request: the message is not valid Unicode text (a lone surrogate "
                "escape such as \\ud800); send each character as a full UTF-16 pair",
            )
    ids = (_request_id(error.get("input")) for error in errors)
    request_id = next((found for found in ids if found is not None), None)
    if errors:
        return (
            request_id,
            _INVALID_REQUEST,
            "Invalid request: not a JSON-RPC 2.0 message (a request needs a 'method' string, "
            "and 'params', when present, must be an object)",
        )
    return None, _PARSE_ERROR, f"Parse error: {type(exc).__name__}"


def _error_message(request_id: str | int | None, code: int, text: str) -> Any:
    """The SDK's JSON-RPC error message (mcp 2.x types, or 1.x's root model)."""
    try:
        types = importlib.import_module("mcp_types")
    except ModuleNotFoundError:
        types = importlib.import_module("mcp.types")
        error = types.ErrorData(code=code, message=text)
        # 1.x requires an id; an unknown one is left out of the response.
        make = types.JSONRPCError if request_id is not None else types.JSONRPCError.model_construct
        return types.JSONRPCMessage(make(jsonrpc="2.0", id=request_id, error=error))
    error = types.ErrorData(code=code, message=text)
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)


async def _answer_malformed(read_stream: Any, forward: Any, write_stream: Any) -> None:
    """Pass every message on to the server; answer each line the SDK could not read."""
    session_message = importlib.import_module("mcp.shared.message").SessionMessage
    async with forward:
        async for item in read_stream:
            if isinstance(item, Exception):
                await write_stream.send(session_message(_error_message(*_malformed_reply(item))))
            else:
                await forward.send(item)


async def _serve_stdio(server: Any) -> None:
    """Serve ``server`` (from :func:`build_server`) over stdio until the client closes the
    pipe, answering malformed lines with JSON-RPC errors."""
    stdio_server = importlib.import_module("mcp.server.stdio").stdio_server
    # The low-level server behind the decorator API: MCPServer (2.x) or FastMCP (1.x).
    lowlevel = getattr(server, "_lowlevel_server", None) or server._mcp_server
    async with stdio_server() as (read_stream, write_stream):
        forward, received = anyio.create_memory_object_stream[Any](0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_answer_malformed, read_stream, forward, write_stream)
            await lowlevel.run(received, write_stream, lowlevel.create_initialization_options())
            tasks.cancel_scope.cancel()


def main() -> None:
    """Serve over stdio until the client closes the pipe."""
    anyio.run(_serve_stdio, build_server())


if __name__ == "__main__":
    main()
