"""Every string Membrane writes into a prompt, with the parsers that read it back.

One module owns the prompt's text format: section headers, the memory line
(``[Mem:N] [LABEL] kind=... | text=... | conf=...``), the ``[Mem:N]`` tag and its pattern, the
eviction-index and recall headers. Stages, the CLI and the providers import these names; none
of them spells a header or parses a line on its own, so a wording change happens here once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "CURRENT_MESSAGE_HEADER",
    "DIRECTIVES_CLOSE",
    "DIRECTIVES_OPEN",
    "INDEX_HEADER",
    "LAST_REPLY_HEADER",
    "MEM_TAG_PATTERN",
    "MEM_TAG_PREFIX",
    "PREFLIGHT_INSTRUCTION",
    "RECALL_HEADER",
    "THIN_MARK",
    "format_directives",
    "index_block",
    "is_dynamic_line",
    "mem_numbers",
    "mem_tag",
    "memory_body",
    "memory_line_head",
    "thin_memory_line",
]

CURRENT_MESSAGE_HEADER = "--- Current user message ---"
#: What a bundled pre-flight compressor asks its model (``{target}`` is filled in).
PREFLIGHT_INSTRUCTION = (
    "Shorten the retrieved memory below to at most {target} tokens for answering the user's "
    "question. Keep every fact the question may need, word for word where you can, and keep "
    "the [Mem:N] tag in front of each fact you keep. Drop the rest. Reply with the shortened "
    "memory only."
)
LAST_REPLY_HEADER = "--- Your previous reply ---"
INDEX_HEADER = (
    "Older messages of this conversation are no longer shown in full. "
    "One line per message, oldest first:"
)
RECALL_HEADER = (
    "--- Recalled from earlier in this conversation ---\n"
    "(passages of older messages that match the current question, quoted as written)"
)
DIRECTIVES_OPEN = "<ACTIVE_SYSTEM_DIRECTIVES>"
DIRECTIVES_CLOSE = "</ACTIVE_SYSTEM_DIRECTIVES>"
MEM_TAG_PREFIX = "[Mem:"
MEM_TAG_PATTERN = re.compile(r"\[Mem:(\d+)\]")
#: Closes a memory or extra cut down to its keyframe.
THIN_MARK = "…"
_TEXT_FIELD = " | text="


def mem_tag(number: int) -> str:
    """The citation tag of memory ``number``."""
    return f"{MEM_TAG_PREFIX}{number}]"


def mem_numbers(text: str) -> set[int]:
    """The ``[Mem:N]`` numbers written in ``text``."""
    return {int(n) for n in MEM_TAG_PATTERN.findall(text)}


def memory_body(label: str, note_kind: object, text: str, confidence: float) -> str:
    """A memory line without its tag: label, kind, text and confidence."""
    return f"[{label}] kind={note_kind}{_TEXT_FIELD}{text} | conf={confidence:.2f}"


def memory_line_head(line: str) -> str:
    """A memory line up to its text field: ``[Mem:N] [LABEL] kind=...``."""
    return line.split(_TEXT_FIELD, 1)[0]


def thin_memory_line(line: str, keyframe: str) -> str:
    """``line`` with its text replaced by ``keyframe`` and the thin mark."""
    return f"{memory_line_head(line)}{_TEXT_FIELD}{keyframe}{THIN_MARK}"


def format_directives(directives: str | Sequence[str] | None) -> str:
    """The ``<ACTIVE_SYSTEM_DIRECTIVES>`` block, or "" when there are none."""
    if directives is None:
        return ""
    items = [directives] if isinstance(directives, str) else list(directives)
    items = [d.strip() for d in items if d and d.strip()]
    if not items:
        return ""
    body = "\n".join(f"- {d}" for d in items)
    return f"{DIRECTIVES_OPEN}\n{body}\n{DIRECTIVES_CLOSE}"


def index_block(lines: Sequence[str]) -> str:
    """The eviction-index block: its header and one line per dropped message."""
    return INDEX_HEADER + "\n" + "\n".join(lines)


def is_dynamic_line(line: str) -> bool:
    """Whether a line starts the part of a prompt that changes every turn."""
    return line.startswith(MEM_TAG_PREFIX) or line.rstrip("\r\n") == CURRENT_MESSAGE_HEADER
