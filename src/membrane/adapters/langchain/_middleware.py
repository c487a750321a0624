"""``MembraneMiddleware``: Membrane inside LangChain v1's ``create_agent``.

Needs ``langchain`` 1.x (the ``langchain`` extra). Per model call the middleware compiles the
agent's whole message list with ``continue_turn=True`` and hands the model the compiled view
through ``request.override``; the graph's state is never touched, so it keeps every message.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from langchain.agents.middleware.types import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import BaseTool

from membrane.adapters.langchain._marks import MARKER
from membrane.adapters.langchain._view import CompiledView, ViewInputs, prepare, view_of
from membrane.compiler import ContextCompiler

__all__ = ["CacheMarkers", "MembraneMiddleware"]

logger = logging.getLogger("membrane.adapters.langchain")

CacheMarkers = Literal["auto", "anthropic", "off"]
Memories = Sequence[object] | Callable[[ModelRequest[Any]], Any] | None


def thread_id(request: ModelRequest[Any]) -> str | None:
    """The LangGraph thread the call belongs to (None outside a checkpointed thread)."""
    runtime = request.runtime
    info = getattr(runtime, "execution_info", None)
    found = getattr(info, "thread_id", None)
    if found:
        return str(found)
    try:
        from langgraph.config import get_config

        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # called outside a graph run
        return None
    value = configurable.get("thread_id")
    return str(value) if value else None


def _is_anthropic(model: object) -> bool:
    return any(cls.__module__.startswith("langchain_anthropic") for cls in type(model).__mro__)


def _without_marker(tool: object) -> object:
    if isinstance(tool, BaseTool) and tool.extras and "cache_control" in tool.extras:
        extras = {k: v for k, v in tool.extras.items() if k != "cache_control"}
        return tool.model_copy(update={"extras": extras or None})
    return tool


def _with_marker(tool: object) -> object:
    if isinstance(tool, BaseTool):
        return tool.model_copy(update={"extras": {**(tool.extras or {}), "cache_control": MARKER}})
    return tool


class MembraneMiddleware(AgentMiddleware):
    """Compiles every model call of a ``create_agent`` agent under the compiler's budget.

    >>> from membrane import ContextCompiler
    >>> from membrane.adapters.langchain import MembraneMiddleware
    >>> middleware = MembraneMiddleware(ContextCompiler(max_tokens=3000))

    Use it as ``create_agent(model, tools, system_prompt=..., middleware=[middleware])``. It
    replaces ``SummarizationMiddleware`` (the history is cut in chunks and indexed, never
    summarised, and the state keeps every message) and ``AnthropicPromptCachingMiddleware``
    (Membrane's own markers go where its stable prefix ends). ``memories`` is a list of
    memory records or a callable that receives the ``ModelRequest`` and returns them (in
    async runs it may return an awaitable). ``conversation_id`` is a callable that receives
    the request and returns the id of Membrane's per-conversation state; by default it is
    the LangGraph thread id. ``cache_markers="auto"`` places Anthropic ``cache_control``
    markers when the model is ``ChatAnthropic``.

    The answer's ``response_metadata["membrane"]`` holds the ref map (``{"2": "team-2"}``),
    ``budget_exceeded`` and the compile's metadata. A request whose reserved content does
    not fit is still sent, with ``budget_exceeded`` set there and a warning logged.
    """

    def __init__(
        self,
        compiler: ContextCompiler,
        *,
        memories: Memories = None,
        conversation_id: Callable[[ModelRequest[Any]], str | None] | None = None,
        cache_markers: CacheMarkers = "auto",
    ) -> None:
        if not isinstance(compiler, ContextCompiler):
            raise TypeError("MembraneMiddleware needs a membrane.ContextCompiler")
        if cache_markers not in ("auto", "anthropic", "off"):
            raise ValueError("cache_markers must be 'auto', 'anthropic' or 'off'")
        if conversation_id is not None and not callable(conversation_id):
            raise TypeError("conversation_id must be a callable taking the ModelRequest")
        super().__init__()
        self.compiler = compiler
        self.memories = memories
        self.conversation_id = conversation_id
        self.cache_markers = cache_markers

    def _anthropic_model(self, request: ModelRequest[Any]) -> str | None:
        if self.cache_markers == "off":
            return None
        if self.cache_markers == "auto" and not _is_anthropic(request.model):
            return None
        model = request.model
        name = getattr(model, "model", None) or getattr(model, "model_id", None)
        return name if isinstance(name, str) else ""

    def _inputs(self, request: ModelRequest[Any], memories: object) -> ViewInputs:
        cid = self.conversation_id(request) if self.conversation_id else thread_id(request)
        if cid is not None and not isinstance(cid, str):
            raise TypeError(f"conversation_id returned {type(cid).__name__}, expected str or None")
        if memories is not None and not isinstance(memories, (list, tuple)):
            raise TypeError(f"memories must be a list of records, got {type(memories).__name__}")
        system = [request.system_message] if request.system_message is not None else []
        return prepare(
            self.compiler,
            request.messages,
            system=system,
            tools=request.tools,
            conversation_id=cid,
            memories=memories,
            anthropic_model=self._anthropic_model(request),
        )

    def _memories(self, request: ModelRequest[Any]) -> object:
        return self.memories(request) if callable(self.memories) else self.memories

    def _sync_memories(self, request: ModelRequest[Any]) -> object:
        memories = self._memories(request)
        if inspect.isawaitable(memories):
            if inspect.iscoroutine(memories):
                memories.close()  # never awaited: close it rather than leak a warning
            raise TypeError(
                "the memories callable returned an awaitable in a sync run: run the agent "
                "with ainvoke/astream, or give a sync callable"
            )
        return memories

    def _request(self, request: ModelRequest[Any], view: CompiledView) -> ModelRequest[Any]:
        """The request the model is sent: the compiled view, and Membrane's markers only."""
        if view.result.report.budget_exceeded:
            logger.warning(
                "Membrane: the reserved content does not fit the %s-token budget; the request "
                "goes out over it (response_metadata['membrane']['budget_exceeded'])",
                self.compiler.settings.max_tokens,
            )
        messages: list[BaseMessage] = view.messages
        overrides: dict[str, Any] = {"messages": messages, "system_message": view.system}
        if self._anthropic_model(request) is not None:
            settings = {k: v for k, v in request.model_settings.items() if k != "cache_control"}
            tools = [_without_marker(t) for t in request.tools]
            if view.marks.tools and tools:
                tools[-1] = _with_marker(tools[-1])
            overrides.update(model_settings=settings, tools=tools)
        return request.override(**overrides)

    @staticmethod
    def _answer(response: ModelResponse[Any], view: CompiledView) -> ModelResponse[Any]:
        summary = view.summary
        result = [
            m.model_copy(update={"response_metadata": {**m.response_metadata, "membrane": summary}})
            if isinstance(m, AIMessage)
            else m
            for m in response.result
        ]
        return ModelResponse(result=result, structured_response=response.structured_response)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Compile the call's messages, send the compiled view, tag the answer."""
        inputs = self._inputs(request, self._sync_memories(request))
        view = view_of(inputs, self.compiler.compile(**inputs.kwargs))
        return self._answer(handler(self._request(request, view)), view)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """:meth:`wrap_model_call` for async runs (``ainvoke``, ``astream``)."""
        memories = self._memories(request)
        if inspect.isawaitable(memories):
            memories = await memories
        inputs = self._inputs(request, memories)
        view = view_of(inputs, await self.compiler.compile_async(**inputs.kwargs))
        return self._answer(await handler(self._request(request, view)), view)
