"""Turns: which messages a person wrote, where the current turn starts, and tool-result stubs.

An agent answers one question in several model calls: the person's message, then the model's
tool calls and their results, until it answers. A call made in the middle of such a turn
continues it; :func:`turn_start` finds the question it continues, and everything after that
message is the turn's *steps*. Tool results are messages of their own in OpenAI shape
(``role="tool"``), ``tool_result`` blocks inside a ``user`` message in Anthropic shape, and
output items in Responses form; only a ``user`` message carrying something besides results is
a question.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from membrane.messages._responses import ITEMS_KEY

__all__ = ["ends_in_results", "is_question", "is_results", "stub_results", "turn_start"]

_OUTPUT_TYPES = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "computer_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
    }
)


def _is_result(block: object) -> bool:
    return isinstance(block, Mapping) and block.get("type") == "tool_result"


def _only_results(content: object) -> bool:
    return isinstance(content, list) and bool(content) and all(map(_is_result, content))


def is_question(message: Mapping[str, Any]) -> bool:
    """A message a person wrote: role ``user`` and not only tool results."""
    return message.get("role") == "user" and not _only_results(message.get("content"))


def is_results(message: Mapping[str, Any]) -> bool:
    """A message that carries tool results and nothing else."""
    role = message.get("role")
    return role == "tool" or (role == "user" and _only_results(message.get("content")))


def ends_in_results(messages: Sequence[Mapping[str, Any]]) -> bool:
    """The history's last message returns tool results: the model is continuing a turn."""
    return bool(messages) and is_results(messages[-1])


def turn_start(messages: Sequence[Mapping[str, Any]]) -> int | None:
    """The index of the last question in ``messages`` (None: there is none)."""
    for i in range(len(messages) - 1, -1, -1):
        if is_question(messages[i]):
            return i
    return None


def stub_results(message: Mapping[str, Any], note: str) -> dict[str, Any]:
    """``message`` with each tool result it carries replaced by ``note`` (calls keep their ids).

    The Responses items a message was read from are rewritten too, since they are what the
    Responses request builder sends.
    """
    out = dict(message)
    if message.get("role") == "tool":
        out["content"] = note
    else:
        blocks: list[Any] = list(message.get("content") or ())
        out["content"] = [{**b, "content": note} if _is_result(b) else b for b in blocks]
    items = message.get(ITEMS_KEY)
    if isinstance(items, list):
        out[ITEMS_KEY] = [
            {**item, "output": note}
            if isinstance(item, Mapping) and item.get("type") in _OUTPUT_TYPES
            else item
            for item in items
        ]
    return out
