"""The seed's LCEL pieces: a prompt template that compiles with Membrane, and documents."""

from __future__ import annotations

from operator import itemgetter
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.messages import get_buffer_string
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompt_values import ChatPromptValue
from langchain_core.prompts import BasePromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough
from pydantic import Field

from membrane.adapters._common import shared_compiler
from membrane.adapters.langchain._messages import from_langchain_messages, to_langchain_messages
from membrane.compiler import CompileResult
from membrane.errors import InvalidInputError
from membrane.records import MemoryItem, MemoryKind

__all__ = [
    "MembranePromptTemplate",
    "MembranePromptValue",
    "cited_chain",
    "langchain_doc_to_memory",
]


class MembranePromptValue(ChatPromptValue):
    """The compiled messages, plus the evidence of the compile that made them."""

    ref_map: dict[int, str] = Field(default_factory=dict)
    ref_map_type: dict[int, str] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    type: Literal["MembranePromptValue"] = "MembranePromptValue"

    @classmethod
    def from_result(cls, result: CompileResult) -> MembranePromptValue:
        """Wrap a :class:`~membrane.CompileResult` (messages converted to LangChain's)."""
        return cls(
            messages=to_langchain_messages(result.messages),
            ref_map=dict(result.ref_map),
            ref_map_type=dict(result.ref_map_type),
            metadata=dict(result.metadata),
        )


class MembranePromptTemplate(BasePromptTemplate[str]):
    """A chat prompt compiled by Membrane under ``max_tokens``.

    Input keys (names configurable): ``question`` (required, the current user turn),
    ``memories`` (``MemoryItem`` rows, typed records or LangChain ``Document`` objects) and
    ``history`` (LangChain messages or OpenAI-style dicts; tool calls are kept).
    ``compiler_options`` go to :class:`~membrane.ContextCompiler` unchanged.
    """

    max_tokens: int
    model_id: str | None = None
    core_content: str = ""
    compiler_options: dict[str, Any] = Field(default_factory=dict)
    compile_options: dict[str, Any] = Field(default_factory=dict)
    question_key: str = "question"
    memories_key: str = "memories"
    history_key: str = "history"
    input_variables: list[str] = Field(default_factory=lambda: ["question"])
    optional_variables: list[str] = Field(default_factory=lambda: ["memories", "history"])

    @property
    def _prompt_type(self) -> str:
        return "membrane"

    def compile_result(self, **kwargs: Any) -> CompileResult:
        """Compile the inputs and return Membrane's own result."""
        values = self._merge_partial_and_user_variables(**kwargs)
        if self.question_key not in values:
            raise InvalidInputError(
                f"MembranePromptTemplate needs the current user turn under {self.question_key!r}",
                field=self.question_key,
            )
        options = {
            "model_id": self.model_id,
            "core_content": self.core_content,
            **self.compiler_options,
        }
        memories = [_as_memory(m) for m in values.get(self.memories_key) or ()]
        history = from_langchain_messages(values.get(self.history_key) or ())
        return shared_compiler(self.max_tokens, options).compile(
            memories,
            str(values[self.question_key]),
            conversation_messages=history,
            **self.compile_options,
        )

    def format_prompt(self, **kwargs: Any) -> MembranePromptValue:
        """Compile the inputs into a :class:`MembranePromptValue`."""
        return MembranePromptValue.from_result(self.compile_result(**kwargs))

    def format(self, **kwargs: Any) -> str:
        """The compiled messages as one transcript string."""
        return get_buffer_string(self.format_prompt(**kwargs).messages)


def cited_chain(
    prompt: MembranePromptTemplate,
    model: Runnable[Any, Any],
    parser: Runnable[Any, Any] | None = None,
) -> Runnable[dict[str, Any], dict[str, Any]]:
    """``prompt | model | parser`` returning ``{"answer", "ref_map", "metadata"}`` per input.

    The compiled prompt value travels beside the answer (``RunnablePassthrough.assign``), so
    the ref map returned is the one of the very request that produced the answer, also under
    ``batch`` with concurrency.
    """
    answer = itemgetter("prompt") | model | (parser if parser is not None else StrOutputParser())
    return (
        RunnablePassthrough.assign(prompt=prompt)
        | RunnablePassthrough.assign(answer=answer)
        | RunnableLambda(_answer_and_refs)
    )


def _answer_and_refs(values: dict[str, Any]) -> dict[str, Any]:
    value: MembranePromptValue = values["prompt"]
    return {"answer": values["answer"], "ref_map": value.ref_map, "metadata": value.metadata}


# ---------------------------------------------------------------------------- documents


def langchain_doc_to_memory(
    doc: Document,
    *,
    id_key: str = "id",
    memory_type: MemoryKind = "semantic",
    priority: int | None = None,
    kind: str = "document",
) -> MemoryItem:
    """A LangChain ``Document`` as a :class:`~membrane.MemoryItem`.

    The id is ``doc.id`` when set, else ``doc.metadata[id_key]``; a document with neither
    raises :class:`~membrane.errors.InvalidInputError` (citations need a stable id). The
    metadata keys ``memory_type`` and ``priority`` override the arguments.
    """
    raw_id = doc.id if doc.id else doc.metadata.get(id_key)
    if raw_id is None or raw_id == "":
        raise InvalidInputError(
            f"Document has no id: set Document(id=...) or metadata[{id_key!r}] so [Mem:N] "
            "citations can be mapped back to it",
            field="id",
        )
    return MemoryItem(
        id=str(raw_id),
        content=doc.page_content,
        memory_type=doc.metadata.get("memory_type", memory_type),
        priority=doc.metadata.get("priority", priority),
        kind=kind,
        metadata=dict(doc.metadata),
    )


def _as_memory(item: object) -> object:
    return langchain_doc_to_memory(item) if isinstance(item, Document) else item
