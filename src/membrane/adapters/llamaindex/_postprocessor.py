"""The query-engine node postprocessor: the kept memories as the nodes the synthesizer formats.

Filtering nodes is not enough to hold a budget: the response synthesizer formats each kept
node's full text (and metadata) into its own template. :class:`MembraneNodePostprocessor`
therefore returns nodes whose text *is* what Membrane kept (each node becomes its ``[Mem:N]``
line, thinned or capped as compiled, with its metadata hidden from the LLM) and reserves the
synthesizer's template, the query and, for refine steps, room for the previous answer. The
prompt the synthesizer finally builds from those nodes, with the ``compact`` or ``refine``
mode and LlamaIndex's default question-answer and refine templates, stays within
``max_tokens``. Calls with the same budget and ``compiler_options`` share one compiler.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import BasePromptTemplate, ChatPromptTemplate
from llama_index.core.prompts.chat_prompts import CHAT_REFINE_PROMPT, CHAT_TEXT_QA_PROMPT
from llama_index.core.prompts.default_prompts import DEFAULT_REFINE_PROMPT, DEFAULT_TEXT_QA_PROMPT
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle, TextNode

from membrane.adapters._common import kept_memory_lines, shared_compiler
from membrane.compiler import CompileResult
from membrane.config import DEFAULT_MESSAGE_OVERHEAD_TOKENS
from membrane.errors import InvalidInputError
from membrane.records import MemoryItem, MemoryKind
from membrane.tokenizers import TiktokenAdapter, TokenCounter

__all__ = [
    "REF_KEY",
    "MembraneNodePostprocessor",
    "node_to_memory",
    "ref_map_from_nodes",
]

#: Node metadata key that holds the node's ``[Mem:N]`` number (hidden from the LLM).
REF_KEY = "membrane_ref"
_MAX_ROUNDS = 8


def node_to_memory(
    node: BaseNode | NodeWithScore,
    *,
    memory_type: MemoryKind = "semantic",
    priority: int | None = None,
    kind: str = "node",
) -> MemoryItem:
    """A LlamaIndex node as a :class:`~membrane.MemoryItem` with the node's id.

    The text is the node's content without metadata; the metadata keys ``memory_type`` and
    ``priority`` override the arguments.
    """
    base = node.node if isinstance(node, NodeWithScore) else node
    return MemoryItem(
        id=base.node_id,
        content=base.get_content(metadata_mode=MetadataMode.NONE),
        memory_type=base.metadata.get("memory_type", memory_type),
        priority=base.metadata.get("priority", priority),
        kind=kind,
        metadata=dict(base.metadata),
    )


def ref_map_from_nodes(nodes: Sequence[NodeWithScore | BaseNode]) -> dict[int, str]:
    """``{N: node_id}`` for nodes returned by :class:`MembraneNodePostprocessor`.

    Works on ``response.source_nodes``, so a citation in the answer resolves to your node.
    """
    out: dict[int, str] = {}
    for item in nodes:
        base = item.node if isinstance(item, NodeWithScore) else item
        if REF_KEY in base.metadata:
            out[int(base.metadata[REF_KEY])] = base.node_id
    return out


def _default_templates() -> list[BasePromptTemplate]:
    return [DEFAULT_TEXT_QA_PROMPT, DEFAULT_REFINE_PROMPT, CHAT_TEXT_QA_PROMPT, CHAT_REFINE_PROMPT]


class MembraneNodePostprocessor(BaseNodePostprocessor):
    """Keeps, thins and orders retrieved nodes so the synthesizer's prompt fits ``max_tokens``.

    ``prompt_templates`` are the templates your synthesizer formats (LlamaIndex's default
    question-answer and refine templates, chat and completion, unless you pass your own);
    the largest of them, filled with every kept node, the query and ``answer_tokens`` of
    previous answer, is what must fit. ``extra_reserved_tokens`` covers text your LLM adds
    on its own (a ``system_prompt``).
    """

    max_tokens: int = Field(gt=0)
    answer_tokens: int = Field(default=256, ge=0)
    extra_reserved_tokens: int = Field(default=0, ge=0)
    prompt_templates: list[BasePromptTemplate] = Field(default_factory=_default_templates)
    compiler_options: dict[str, Any] = Field(default_factory=dict)
    separator: str = "\n\n"

    @classmethod
    def class_name(cls) -> str:
        return "MembraneNodePostprocessor"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if query_bundle is None:
            raise InvalidInputError(
                "MembraneNodePostprocessor needs the query to budget the prompt", field="query"
            )
        query = query_bundle.query_str
        counter: TokenCounter = self.compiler_options.get("token_counter") or TiktokenAdapter()
        memories = [node_to_memory(n) for n in nodes]
        budget = self.max_tokens
        lines: list[tuple[int, str]] = []
        for _ in range(_MAX_ROUNDS):
            result = self._compile(memories, query, budget)
            lines = _ordered_lines(result)
            over = self.prompt_tokens([line for _, line in lines], query, counter) - self.max_tokens
            if over <= 0:
                break
            budget -= over
            if budget <= 0:
                lines = []
                break
        else:
            lines = []
        by_ref = {n: nodes[n - 1] for n, _ in lines}
        return [_rewritten(by_ref[n], n, line) for n, line in lines]

    def prompt_tokens(self, texts: Sequence[str], query: str, counter: TokenCounter) -> int:
        """Tokens of the largest prompt the templates make from ``texts`` and ``query``."""
        context = self.separator.join(texts)
        values = {"context_str": context, "context_msg": context, "query_str": query}
        largest = 0
        for template in self.prompt_templates:
            n = _template_tokens(template, values, counter)
            if "existing_answer" in template.template_vars:
                n += self.answer_tokens
            largest = max(largest, n)
        return largest + self.extra_reserved_tokens

    def _compile(self, memories: list[MemoryItem], query: str, budget: int) -> CompileResult:
        options = {"include_interrupt_instruction": False, **self.compiler_options}
        return shared_compiler(budget, options).compile(memories, query)


def _template_tokens(
    template: BasePromptTemplate, values: dict[str, str], counter: TokenCounter
) -> int:
    framing = DEFAULT_MESSAGE_OVERHEAD_TOKENS
    fill = {**values, "existing_answer": ""}
    if isinstance(template, ChatPromptTemplate):
        messages = template.format_messages(llm=None, **fill)
        return sum(counter.count(m.content or "") + framing for m in messages)
    return counter.count(template.format(llm=None, **fill)) + framing


def _ordered_lines(result: CompileResult) -> list[tuple[int, str]]:
    lines = kept_memory_lines(result)
    text = result.messages[-1].get("content") or ""
    where = {n: str(text).find(line) for n, line in lines.items()}
    return sorted(lines.items(), key=lambda item: (where[item[0]], item[0]))


def _rewritten(original: NodeWithScore, ref: int, line: str) -> NodeWithScore:
    base = original.node
    metadata = {**base.metadata, REF_KEY: ref}
    node = TextNode(
        id_=base.node_id,
        text=line,
        metadata=metadata,
        excluded_llm_metadata_keys=list(metadata),
        excluded_embed_metadata_keys=list(metadata),
        relationships=dict(base.relationships),
    )
    return NodeWithScore(node=node, score=original.score)
