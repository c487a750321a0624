"""Chat messages: the one place that reads their shapes.

History is accepted in OpenAI shape (``tool_calls`` on assistant messages, ``role="tool"``
results) or Anthropic shape (``tool_use`` / ``tool_result`` content blocks), with string content
or content-part lists. Messages are never rewritten: the compiler sends them exactly as given.
This package validates them, groups them into *units* that are kept or dropped together (a
tool call and all of its results), gives the text a message carries, and reads messages into
typed parts for the request builders. Tool pairing is checked in one place
(:func:`group_units`) for compile and the builders alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from membrane._lazy import lazy_exports as _lazy_exports
from membrane.messages._checks import check_text, find_lone_surrogate
from membrane.messages._digest import CheckedPrefix, HistoryVersion, check_history, prefix_digest
from membrane.messages._history import HistoryRead, read_history
from membrane.messages._images import (
    MAX_IMAGE_SIDE,
    ImageCost,
    ImageTally,
    image_size,
    image_tokens,
)
from membrane.messages._pairing import (
    HistoryUnit,
    group_units,
    leading_unit,
    tool_call_ids,
    validate_messages,
)
from membrane.messages._responses import ITEMS_KEY, is_responses_item, opaque_text
from membrane.messages._text import (
    IMAGE_PART_TEXT,
    MAX_NAME_CHARS,
    PERSON_ROLES,
    Message,
    history_text,
    is_call_stub,
    message_key,
    message_role,
    message_text,
    speaker_label,
    tool_call_labels,
    writer_name,
)
from membrane.messages._time import TIMESTAMP_KEY, message_time, unstamped
from membrane.messages._tools import (
    ToolSpec,
    normalize_tools,
    tools_fingerprint,
    tools_overhead,
    tools_text,
)
from membrane.messages._turns import (
    ends_in_results,
    is_question,
    is_results,
    stub_results,
    turn_start,
)

if TYPE_CHECKING:
    from membrane.messages._parts import (
        Image,
        NormalMessage,
        Opaque,
        Part,
        Text,
        ToolCall,
        ToolResult,
        normalize_messages,
    )

# The typed parts only the request builders read load on first use: a compile never needs them.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "membrane.messages._parts": (
        "Image",
        "NormalMessage",
        "Opaque",
        "Part",
        "Text",
        "ToolCall",
        "ToolResult",
        "normalize_messages",
    ),
}
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

__all__ = [
    "IMAGE_PART_TEXT",
    "ITEMS_KEY",
    "MAX_IMAGE_SIDE",
    "MAX_NAME_CHARS",
    "PERSON_ROLES",
    "TIMESTAMP_KEY",
    "CheckedPrefix",
    "HistoryRead",
    "HistoryUnit",
    "HistoryVersion",
    "Image",
    "ImageCost",
    "ImageTally",
    "Message",
    "NormalMessage",
    "Opaque",
    "Part",
    "Text",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "check_history",
    "check_text",
    "ends_in_results",
    "find_lone_surrogate",
    "group_units",
    "history_text",
    "image_size",
    "image_tokens",
    "is_call_stub",
    "is_question",
    "is_responses_item",
    "is_results",
    "leading_unit",
    "message_key",
    "message_role",
    "message_text",
    "message_time",
    "normalize_messages",
    "normalize_tools",
    "opaque_text",
    "prefix_digest",
    "read_history",
    "speaker_label",
    "stub_results",
    "tool_call_ids",
    "tool_call_labels",
    "tools_fingerprint",
    "tools_overhead",
    "tools_text",
    "turn_start",
    "unstamped",
    "validate_messages",
    "writer_name",
]
