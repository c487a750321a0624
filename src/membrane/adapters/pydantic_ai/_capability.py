"""``MembraneCapability``: Membrane compiles every model request a PydanticAI agent makes.

It works in ``prepare_model_request``, the hook PydanticAI runs before each attempt at a model
request once the serving model is known, and whose changes to the request are that attempt's
only: they never reach the run's message history. (``before_model_request`` and the
``ProcessHistory`` capability write the run's history instead, so the run would keep Membrane's
output as its history.) The hook assigns a new message list and new request parameters;
``result.all_messages()`` stays what the run really said.
"""

from __future__ import annotations

import inspect
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import RunContext

from membrane.adapters.pydantic_ai._request import compile_inputs, model_request
from membrane.compiler import CompileResult, ContextCompiler

__all__ = ["MembraneCapability", "MemorySource", "RunRecord"]

MemorySource = (
    Sequence[object] | Callable[[RunContext[Any]], Sequence[object] | Awaitable[Sequence[object]]]
)
"""Memories for every request, or a callable that fetches them for a run (sync or async)."""

ConversationIdSource = str | Callable[[RunContext[Any]], str | None] | None

#: How many runs' records a capability keeps (the oldest are dropped first).
KEPT_RUNS = 256


class _HasRunId(Protocol):
    @property
    def run_id(self) -> str: ...


@dataclass
class RunRecord:
    """What Membrane did in one agent run: its memories and one compile per model request."""

    memories: list[object]
    compiles: list[CompileResult] = field(default_factory=list)

    @property
    def last(self) -> CompileResult:
        """The compile of the run's last model request (the one its answer replies to)."""
        return self.compiles[-1]

    @property
    def ref_map(self) -> dict[int, str]:
        """``[Mem:N]`` -> record id, as the model saw it when it wrote the run's answer."""
        return dict(self.last.ref_map)


def _run_key(run: str | _HasRunId) -> str:
    return run if isinstance(run, str) else run.run_id


@dataclass
class MembraneCapability(AbstractCapability[Any]):
    """Compile each model request of an agent with ``compiler``, under its budget.

    ``memories``: a list of records sent with every request, or a callable receiving the
    run's ``RunContext`` (its ``deps``, ``prompt``, ``messages``) that returns them; it is
    called once per run, at the run's first model request, so the memories stay the same for
    all the turn's requests. ``conversation_id``: the key of Membrane's per-conversation state;
    by default PydanticAI's own ``conversation_id`` (carried on the message history), or a
    callable of the ``RunContext`` (to add a tenant scope).

    After a run, :meth:`record` gives its memories and compiles (``ref_map``, ``metadata``,
    ``report``). The compiler is shared by every run, so its state (the history cut, the
    index room, the token-scale calibration) carries over from turn to turn.
    """

    compiler: ContextCompiler
    #: An agent compiles with one Membrane: a run-level one replaces the agent's.
    id: str | None = field(default="membrane", kw_only=True)
    memories: MemorySource | None = field(default=None, kw_only=True, repr=False)
    conversation_id: ConversationIdSource = field(default=None, kw_only=True)
    _runs: OrderedDict[str, RunRecord] = field(
        default_factory=OrderedDict, init=False, repr=False, compare=False
    )
    _lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a compiler and callables: not a spec value

    def record(self, run: str | _HasRunId) -> RunRecord:
        """What Membrane did in ``run`` (a run id, or a run result with ``run_id``).

        Raises ``KeyError`` for a run this capability compiled nothing for (or forgot: it
        keeps the last ``KEPT_RUNS`` runs).
        """
        key = _run_key(run)
        with self._lock:
            return self._runs[key]

    async def _run_record(self, ctx: RunContext[Any]) -> RunRecord:
        key = ctx.run_id or ""
        with self._lock:
            found = self._runs.get(key)
        if found is not None:
            return found
        memories = await self._fetch_memories(ctx)
        with self._lock:
            record = self._runs.setdefault(key, RunRecord(memories))
            self._runs.move_to_end(key)
            while len(self._runs) > KEPT_RUNS:
                self._runs.popitem(last=False)
        return record

    async def _fetch_memories(self, ctx: RunContext[Any]) -> list[object]:
        source = self.memories
        if source is None:
            return []
        if not callable(source):
            return list(source)
        found = source(ctx)
        if inspect.isawaitable(found):
            found = await found
        return list(found)

    def _conversation(self, ctx: RunContext[Any]) -> str | None:
        source = self.conversation_id
        if source is None:
            return ctx.conversation_id
        return source(ctx) if callable(source) else source

    async def prepare_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Send the model Membrane's compile of the request (this attempt only)."""
        record = await self._run_record(ctx)
        parameters = request_context.model_request_parameters
        inputs = compile_inputs(request_context.messages, parameters)
        result = await self.compiler.compile_async(
            record.memories, conversation_id=self._conversation(ctx), **inputs.compile_kwargs()
        )
        with self._lock:
            record.compiles.append(result)
        messages, parameters = model_request(inputs, result, parameters)
        request_context.messages = messages
        request_context.model_request_parameters = parameters
        return request_context
