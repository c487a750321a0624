"""``membrane_recall`` registered in one line in each agent runtime.

Each function wraps a :class:`~membrane.recall_tool.RecallTool` over a shared compiler in the
runtime's own tool type, and imports that runtime only when called:

- :func:`langchain_recall_tool`: a LangChain ``StructuredTool`` for ``create_agent`` or a
  LangGraph ``ToolNode``; the conversation is the LangGraph thread id.
- :func:`pydantic_ai_recall_tool`: a pydantic-ai ``Tool``; the conversation is the run's
  ``conversation_id``.
- :func:`openai_agents_recall_tool`: an Agents SDK ``FunctionTool``.
- :func:`llamaindex_recall_tool`: a LlamaIndex ``FunctionTool``; the conversation is the
  agent memory's ``session_id``.

``conversation_id=`` overrides where the conversation comes from: a string, or a callable that
receives what the runtime hands a tool (named in each function) and returns the id (None: the
compiler's default conversation). It must name the conversation the way the compile did.

A query the model gets wrong (empty, too long) goes back to it as the runtime's own kind of
tool error, saying what to fix; the recall runs in a worker thread from async code, since it
waits for a compile of the same conversation that is in progress.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from membrane.errors import InvalidInputError
from membrane.recall_tool import DEFAULT_RECALL_TOKENS, QUERY_DESCRIPTION, RecallTool

if TYPE_CHECKING:
    from membrane.compiler import ContextCompiler

__all__ = [
    "langchain_recall_tool",
    "llamaindex_recall_tool",
    "openai_agents_recall_tool",
    "pydantic_ai_recall_tool",
]

#: Where a runtime's tool finds its conversation: a fixed id, or a function of what the
#: runtime hands the tool.
ConversationOption = str | Callable[[Any], str | None] | None


def _conversation(option: ConversationOption, handed: Any, found: str | None) -> str | None:
    """The conversation id: ``option``'s (a string, or called with ``handed``), else ``found``."""
    if option is None:
        return found
    if isinstance(option, str):
        return option
    chosen = option(handed)
    if chosen is not None and not isinstance(chosen, str):
        raise TypeError(f"conversation_id returned {type(chosen).__name__}, expected str or None")
    return chosen


def _check_option(option: object) -> None:
    if option is not None and not isinstance(option, str) and not callable(option):
        raise TypeError(
            "conversation_id must be a str, a callable returning one, or None; "
            f"got {type(option).__name__}"
        )


def _tool(
    compiler: ContextCompiler, option: object, max_tokens: int, description: str | None
) -> RecallTool:
    _check_option(option)
    return RecallTool(compiler, max_tokens=max_tokens, description=description)


def langchain_recall_tool(
    compiler: ContextCompiler,
    *,
    conversation_id: ConversationOption = None,
    max_tokens: int = DEFAULT_RECALL_TOKENS,
    description: str | None = None,
) -> Any:
    """``membrane_recall`` as a LangChain tool: ``create_agent(model, tools=[...])``.

    The conversation is the LangGraph thread id (``config["configurable"]["thread_id"]``);
    a ``conversation_id`` callable receives the ``ToolRuntime``. A bad query comes back to the
    model as the tool's error text (``ToolException``, handled).
    """
    from langchain_core.tools import StructuredTool, ToolException
    from langgraph.prebuilt import ToolRuntime
    from pydantic import Field

    tool = _tool(compiler, conversation_id, max_tokens, description)

    def answer(query: str, runtime: ToolRuntime) -> str:
        configurable = (runtime.config or {}).get("configurable") or {}
        thread = configurable.get("thread_id")
        found = thread if isinstance(thread, str) and thread else None
        try:
            return tool.recall(
                query, conversation_id=_conversation(conversation_id, runtime, found)
            )
        except InvalidInputError as exc:
            raise ToolException(str(exc)) from exc

    async def answer_async(query: str, runtime: ToolRuntime) -> str:
        return await asyncio.to_thread(answer, query, runtime)

    # The runtime is injected by its parameter's type, read at run time: give real types.
    query_type = Annotated[str, Field(description=QUERY_DESCRIPTION)]
    hints = {"query": query_type, "runtime": ToolRuntime, "return": str}
    answer.__annotations__ = answer_async.__annotations__ = hints
    return StructuredTool.from_function(
        func=answer,
        coroutine=answer_async,
        name=tool.name,
        description=tool.description,
        handle_tool_error=True,
    )


def pydantic_ai_recall_tool(
    compiler: ContextCompiler,
    *,
    conversation_id: ConversationOption = None,
    max_tokens: int = DEFAULT_RECALL_TOKENS,
    description: str | None = None,
) -> Any:
    """``membrane_recall`` as a pydantic-ai tool: ``Agent(model, tools=[...])``.

    The conversation is the run's ``ctx.conversation_id``; a ``conversation_id`` callable
    receives the ``RunContext``. A bad query asks the model to retry (``ModelRetry``).
    """
    from pydantic import Field
    from pydantic_ai import ModelRetry, RunContext, Tool

    tool = _tool(compiler, conversation_id, max_tokens, description)

    async def answer(ctx: RunContext[Any], query: str) -> str:
        conversation = _conversation(conversation_id, ctx, ctx.conversation_id)
        try:
            return await asyncio.to_thread(tool.recall, query, conversation_id=conversation)
        except InvalidInputError as exc:
            raise ModelRetry(str(exc)) from exc

    query_type = Annotated[str, Field(description=QUERY_DESCRIPTION)]
    answer.__annotations__ = {"ctx": RunContext[Any], "query": query_type, "return": str}
    return Tool(
        answer,
        takes_ctx=True,
        name=tool.name,
        description=tool.description,
    )


def openai_agents_recall_tool(
    compiler: ContextCompiler,
    *,
    conversation_id: ConversationOption = None,
    max_tokens: int = DEFAULT_RECALL_TOKENS,
    description: str | None = None,
) -> Any:
    """``membrane_recall`` as an OpenAI Agents SDK ``FunctionTool``: ``Agent(tools=[...])``.

    The SDK hands a tool no conversation id, so it is ``conversation_id``: a string, or a
    callable that receives the ``ToolContext`` (its ``.context`` is the run's context object);
    None is the compiler's default conversation. Bad arguments come back as the tool's output.
    """
    from agents import FunctionTool

    tool = _tool(compiler, conversation_id, max_tokens, description)

    async def invoke(ctx: Any, arguments: str) -> str:
        try:
            parsed = json.loads(arguments)
            query = parsed.get("query") if isinstance(parsed, dict) else None
            if not isinstance(query, str):
                return 'membrane_recall needs {"query": "<what to look for>"}'
            conversation = _conversation(conversation_id, ctx, None)
            return await asyncio.to_thread(tool.recall, query, conversation_id=conversation)
        except (ValueError, InvalidInputError) as exc:  # JSONDecodeError is a ValueError
            return f"membrane_recall could not run: {exc}"

    return FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=tool.parameters,
        on_invoke_tool=invoke,
        strict_json_schema=True,
    )


def llamaindex_recall_tool(
    compiler: ContextCompiler,
    *,
    conversation_id: ConversationOption = None,
    max_tokens: int = DEFAULT_RECALL_TOKENS,
    description: str | None = None,
) -> Any:
    """``membrane_recall`` as a LlamaIndex ``FunctionTool``: ``FunctionAgent(tools=[...])``.

    Inside an agent run the conversation is the memory's ``session_id``; a
    ``conversation_id`` callable receives the workflow ``Context``. A bad query raises, and the
    agent hands the error text to the model as the tool's output.
    """
    from llama_index.core.tools import FunctionTool
    from llama_index.core.workflow import Context
    from pydantic import Field

    tool = _tool(compiler, conversation_id, max_tokens, description)

    async def answer_async(ctx: Context, query: str) -> str:
        memory = await ctx.store.get("memory", default=None)
        session = getattr(memory, "session_id", None)
        found = session if isinstance(session, str) and session else None
        conversation = _conversation(conversation_id, ctx, found)
        return await asyncio.to_thread(tool.recall, query, conversation_id=conversation)

    def answer(ctx: Context, query: str) -> str:
        return tool.recall(query, conversation_id=_conversation(conversation_id, ctx, None))

    # The workflow Context is injected by its parameter's type: give real types.
    query_type = Annotated[str, Field(description=QUERY_DESCRIPTION)]
    hints = {"ctx": Context, "query": query_type, "return": str}
    answer.__annotations__ = answer_async.__annotations__ = hints
    return FunctionTool.from_defaults(
        fn=answer, async_fn=answer_async, name=tool.name, description=tool.description
    )
