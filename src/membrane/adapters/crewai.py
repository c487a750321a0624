"""CrewAI adapter: memories compiled into a task so the prompt CrewAI sends fits a budget.

Needs the ``crewai`` extra. CrewAI wraps every task in scaffolding of its own: the agent's
role, goal and backstory, tool descriptions, the expected output and its answer-format
instructions. :func:`compile_for_agent` measures that scaffolding by letting CrewAI build the
real prompt for a copy of the agent whose LLM only records what it is sent (a ``BaseLLM``
subclass, CrewAI's own extension point; nothing leaves the process), reserves it, and
returns a copy of the task whose description carries the memories Membrane kept. The prompt
CrewAI then builds from that task is measured the same way and stays within ``max_tokens``.

CrewAI's own memory would add recalled text outside the budget, so an agent or crew with
``memory`` switched on raises :class:`~membrane.errors.MemoryCollisionError`.
Each call builds a compiler of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crewai import Agent, Task
from crewai.llms.base_llm import BaseLLM
from pydantic import Field

from membrane.adapters._common import kept_memory_lines, shared_compiler
from membrane.config import DEFAULT_MESSAGE_OVERHEAD_TOKENS
from membrane.errors import InvalidInputError, MemoryCollisionError
from membrane.records import MemoryItem, MemoryKind
from membrane.result import CompileResult
from membrane.tokenizers import TiktokenAdapter, TokenCounter

__all__ = [
    "AgentPrompt",
    "compile_for_agent",
    "detect_memory_collision",
    "document_to_memory",
    "measure_prompt",
]

DEFAULT_HEADER = "Relevant memories (cite them as [Mem:N]):"
_MAX_ROUNDS = 8


@dataclass(frozen=True)
class AgentPrompt:
    """What :func:`compile_for_agent` made: the task to run and the evidence behind it."""

    task: Task
    context: str
    ref_map: dict[int, str]
    ref_map_type: dict[int, str]
    metadata: dict[str, Any] = field(default_factory=dict)
    scaffolding_tokens: int = 0
    prompt_tokens: int = 0


class _RecordingLLM(BaseLLM):  # type: ignore[misc,unused-ignore]  # Any without crewai
    """Records the messages CrewAI sends and answers with a final answer at once."""

    sent: list[list[dict[str, Any]]] = Field(default_factory=list)
    function_calling: bool = False
    stop_words: bool = True
    window: int = 8192

    def call(
        self,
        messages: str | list[Any],
        tools: list[dict[str, Any]] | None = None,
        callbacks: list[Any] | None = None,
        available_functions: dict[str, Any] | None = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> str:
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        self.sent.append([dict(m) for m in messages])
        return "Thought: the prompt has been measured.\nFinal Answer: measured"

    def supports_function_calling(self) -> bool:
        return self.function_calling

    def supports_stop_words(self) -> bool:
        return self.stop_words

    def get_context_window_size(self) -> int:
        return self.window


def measure_prompt(
    agent: Agent, task: Task, counter: TokenCounter | None = None
) -> tuple[int, list[dict[str, Any]]]:
    """Tokens (framing included) and messages of the first request CrewAI makes for ``task``.

    CrewAI builds the prompt itself, for a copy of ``agent`` whose LLM records it.
    """
    counter = counter or TiktokenAdapter()
    real = agent.llm
    probe = _RecordingLLM(
        model=str(getattr(real, "model", "membrane-probe")),
        sent=[],
        function_calling=_asks(real, "supports_function_calling", False),
        stop_words=_asks(real, "supports_stop_words", True),
        window=int(_asks(real, "get_context_window_size", 8192)),
    )
    clone = agent.copy()
    clone.llm = probe
    try:
        clone.execute_task(task)
    except Exception:
        # The first request is all that is measured; what CrewAI does with the stand-in
        # answer afterwards (output conversion, guardrails) does not matter here.
        if not probe.sent:
            raise
    if not probe.sent:
        raise InvalidInputError("CrewAI sent no request for this task", field="task")
    messages = probe.sent[0]
    return _chat_tokens(messages, counter), messages


def _asks(llm: object, method: str, default: Any) -> Any:
    # CrewAI reads these capabilities only when the LLM defines them; mirror that.
    fn = getattr(llm, method, None)
    return fn() if callable(fn) else default


def _chat_tokens(messages: Sequence[Mapping[str, Any]], counter: TokenCounter) -> int:
    framing = DEFAULT_MESSAGE_OVERHEAD_TOKENS
    return sum(counter.count(str(m.get("content") or "")) + framing for m in messages)


def _with_description(task: Task, description: str) -> Task:
    copy = task.model_copy(update={"description": description})
    # CrewAI re-interpolates from the original description at kickoff; start the copy fresh.
    if getattr(copy, "_original_description", None) is not None:
        copy._original_description = description
    return copy


def _fit_task(
    agent: Agent,
    task: Task,
    items: list[Any],
    scaffolding: int,
    max_tokens: int,
    options: dict[str, Any],
    counter: TokenCounter,
    header: str,
) -> tuple[Task, str, CompileResult, int]:
    """The task with the memories that fit, its context, the compile and the prompt's tokens.

    Each round compiles for what CrewAI's scaffolding leaves, measures the prompt CrewAI would
    send, and shrinks the budget by the overshoot.
    """
    empty = shared_compiler(max_tokens, options).compile([], task.description)
    own = empty.report.sent_tokens
    budget = max_tokens - scaffolding + own
    chosen = (task, "", empty, scaffolding)
    for _ in range(_MAX_ROUNDS):
        if budget <= own or scaffolding >= max_tokens:
            break
        result = shared_compiler(budget, options).compile(items, task.description)
        lines = kept_memory_lines(result)
        if not lines:
            chosen = (task, "", result, scaffolding)
            break
        text = str(result.messages[-1].get("content") or "")
        ordered = sorted(lines.items(), key=lambda kv: text.find(kv[1]))
        context = "\n".join([header, *(line for _, line in ordered)])
        candidate = _with_description(task, f"{task.description}\n\n{context}")
        sent, _ = measure_prompt(agent, candidate, counter)
        if sent <= max_tokens:
            chosen = (candidate, context, result, sent)
            break
        budget -= sent - max_tokens
    return chosen


def _check_collisions(agent: Agent) -> None:
    """The agent's and its crew's own memory must be off (see :func:`detect_memory_collision`)."""
    detect_memory_collision(agent)
    crew = getattr(agent, "crew", None)
    if crew is not None and not isinstance(crew, str):
        detect_memory_collision(crew)


def compile_for_agent(
    agent: Agent,
    task: Task,
    memories: Sequence[object],
    *,
    max_tokens: int,
    model_id: str | None = None,
    compiler_options: Mapping[str, Any] | None = None,
    header: str = DEFAULT_HEADER,
    check_collision: bool = True,
) -> AgentPrompt:
    """Fit ``memories`` into ``task`` for ``agent`` so CrewAI's prompt stays within ``max_tokens``.

    ``memories``: ``MemoryItem`` rows, typed records, or CrewAI search results / documents
    (see :func:`document_to_memory`). The task description is the question memories are
    ranked by. Returns a copy of the task to run; the original is not changed.
    """
    if check_collision:
        _check_collisions(agent)
    options: dict[str, Any] = {"include_interrupt_instruction": False, **(compiler_options or {})}
    options.update({} if model_id is None else {"model_id": model_id})
    counter: TokenCounter = options.get("token_counter") or TiktokenAdapter()
    items = [
        m if isinstance(m, MemoryItem) or hasattr(m, "memory_kind") else document_to_memory(m)
        for m in memories
    ]

    scaffolding, _ = measure_prompt(agent, task, counter)
    final_task, context, result, sent = _fit_task(
        agent, task, items, scaffolding, max_tokens, options, counter, header
    )
    ref_map = dict(result.ref_map) if context else {}
    ref_types = {n: t for n, t in result.ref_map_type.items() if n in ref_map}
    metadata = {
        **result.metadata,
        "crewai_scaffolding_tokens": scaffolding,
        "crewai_prompt_tokens": sent,
        "crewai_budget_exceeded": sent > max_tokens,
    }
    return AgentPrompt(
        task=final_task,
        context=context,
        ref_map=ref_map,
        ref_map_type=ref_types,
        metadata=metadata,
        scaffolding_tokens=scaffolding,
        prompt_tokens=sent,
    )


def document_to_memory(
    doc: object,
    *,
    memory_type: MemoryKind = "semantic",
    priority: int | None = None,
    kind: str = "document",
) -> MemoryItem:
    """A CrewAI knowledge search result (``{"id", "content", "metadata"}``) as a memory.

    Objects with ``id`` and ``content`` attributes work too. ``metadata["memory_type"]``
    and ``metadata["priority"]`` override the arguments.
    """
    if isinstance(doc, Mapping):
        raw_id, content, meta = doc.get("id"), doc.get("content"), doc.get("metadata") or {}
    else:
        raw_id = getattr(doc, "id", None)
        content = getattr(doc, "content", None)
        meta = getattr(doc, "metadata", None) or {}
    if raw_id is None or raw_id == "" or not isinstance(content, str):
        raise InvalidInputError(
            "a CrewAI document needs an 'id' and a text 'content' to become a memory",
            field="id",
        )
    return MemoryItem(
        id=str(raw_id),
        content=content,
        memory_type=meta.get("memory_type", memory_type),
        priority=meta.get("priority", priority),
        kind=kind,
        metadata=dict(meta),
    )


def detect_memory_collision(target: object, membrane_active: bool = True) -> list[str]:
    """Find CrewAI memory switched on in a crew or agent; raise if Membrane is active too.

    Checks ``crew.memory``, ``agent.memory`` and the memory of each agent of a crew.
    """
    found: list[str] = []
    agents = list(getattr(target, "agents", None) or ())
    for name, obj in [(type(target).__name__, target)] + [
        (f"agents[{i}]", a) for i, a in enumerate(agents)
    ]:
        memory = getattr(obj, "memory", None)
        if memory:
            found.append(f"{name}.memory={'True' if memory is True else type(memory).__name__}")
    if found and membrane_active:
        raise MemoryCollisionError(
            "CrewAI memory is switched on next to Membrane, so recalled text would be added "
            f"outside the budget ({'; '.join(found)}). Create the crew and agents with "
            "memory=False and pass memories to compile_for_agent instead.",
            framework="crewai",
            locations=tuple(found),
        )
    return found
