"""Layout: the three regions of a prompt (core, middle, end) and ``[Mem:N]`` numbering.

The core (rules) opens the prompt and the end (current turn, directives) closes it, where
models attend most; retrieved memories sit between them and are the first thing trimmed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from membrane.interrupt import INTERRUPT_INSTRUCTION
from membrane.prompt_text import (
    CURRENT_MESSAGE_HEADER,
    LAST_REPLY_HEADER,
    format_directives,
    mem_tag,
)
from membrane.records import kind_and_body, memory_id, memory_text, text_caps

__all__ = [
    "CURRENT_MESSAGE_HEADER",
    "LAST_REPLY_HEADER",
    "ContextLayoutEngine",
    "MemorySegment",
    "format_directives",
    "mem_tag",
    "render_memories",
]


@dataclass(frozen=True, slots=True)
class MemorySegment:
    """One memory as laid out: its number, the caller's id, tier and rendered line."""

    number: int
    ref_id: str
    kind: str
    tier: int
    line: str
    content: str
    truncated: bool
    position: int


def render_memories(
    memories: Sequence[tuple[object, int]],
    *,
    start_number: int = 1,
    caps: Mapping[str, int | None] | None = None,
) -> list[MemorySegment]:
    """Render ``(memory, tier)`` pairs as numbered segments, numbering in input order.

    ``caps`` are the per-kind text caps (:func:`~membrane.records.text_caps` when None).
    """
    if caps is None:
        caps = text_caps()
    out = []
    for position, (memory, tier) in enumerate(memories):
        number = start_number + position
        kind, body, truncated = kind_and_body(memory, caps)
        line = f"{mem_tag(number)} {body}"
        content = memory_text(memory)
        ref_id = memory_id(memory)
        out.append(MemorySegment(number, ref_id, kind, tier, line, content, truncated, position))
    return out


class ContextLayoutEngine:
    """Builds the core, middle and end regions of a prompt.

    >>> layout = ContextLayoutEngine(core_content="Be brief.", include_interrupt_instruction=False)
    >>> layout.build_core()
    'Be brief.'
    """

    def __init__(
        self,
        core_content: str = "",
        *,
        agent_persona_prompt: str | None = None,
        include_interrupt_instruction: bool = True,
    ) -> None:
        self.core_content = core_content
        self.agent_persona_prompt = agent_persona_prompt
        self.include_interrupt_instruction = include_interrupt_instruction

    def build_core(self) -> str:
        """Rules, then the persona, then the interrupt instruction, as paragraphs."""
        parts = [self.core_content.strip(), (self.agent_persona_prompt or "").strip()]
        if self.include_interrupt_instruction:
            parts.append(INTERRUPT_INSTRUCTION)
        return "\n\n".join(p for p in parts if p)

    def build_middle(
        self, retrieved: Sequence[tuple[object, int]], *, start_number: int = 1
    ) -> tuple[list[tuple[str, int]], dict[int, str], dict[int, str]]:
        """``(segments, ref_map, ref_map_type)`` for ``(memory, tier)`` pairs.

        Segments are ``(line, tier)`` in input order; ``ref_map`` maps each ``[Mem:N]`` to the
        caller's id and ``ref_map_type`` to its kind.
        """
        rendered = render_memories(retrieved, start_number=start_number)
        segments = [(s.line, s.tier) for s in rendered]
        ref_map = {s.number: s.ref_id for s in rendered}
        ref_map_type = {s.number: s.kind for s in rendered}
        return segments, ref_map, ref_map_type

    def build_end(
        self,
        last_turn_content: str | None = None,
        user_message: str = "",
        dynamic_directives: str | Sequence[str] | None = None,
    ) -> str:
        """The closing region: the previous reply, the current turn, then directives."""
        parts = []
        if last_turn_content:
            parts.append(f"{LAST_REPLY_HEADER}\n{last_turn_content}")
        parts.append(f"{CURRENT_MESSAGE_HEADER}\n{user_message}")
        directives = format_directives(dynamic_directives)
        if directives:
            parts.append(directives)
        return "\n\n".join(parts)
