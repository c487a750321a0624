"""OpenAI Responses API input items read as chat messages, each keeping its items verbatim.

A history may hold Responses items (``response.output`` appended turn by turn): messages,
``function_call`` / ``function_call_output`` pairs, ``reasoning`` items with
``encrypted_content``, hosted-tool items and ``compaction`` items. :func:`read_items` turns
them into the chat form every stage reads, and keeps the item(s) each message came from under
:data:`ITEMS_KEY`, so ``openai_responses_request`` writes them back unchanged:

- a message item becomes a chat message (``input_text`` / ``output_text`` parts become text
  parts, ``input_image`` an ``image_url`` part);
- a call item (``function_call``, ``custom_tool_call``, and the client-run tools: computer,
  local shell, shell, apply patch) becomes an assistant tool call; calls in a row share one
  message, as parallel calls do; the output item becomes a ``tool`` message, so a call and its
  output are kept or cut together, like any tool pair;
- every other item (reasoning, server-run tools, compaction, an item reference, written with
  or without its type...) has no chat form: it is *opaque*, and joins the message of the next
  item, the call or answer it leads to. Opaque items followed by a user's message, or by
  nothing, lead to nothing the model wrote: they form an assistant message of their own with
  empty text (so a compaction item just before a question is never folded into it).

A local shell output names its call by ``call_id`` (as the Agents SDK writes it) or by ``id``
(as the API documents it). Opaque items are counted as their JSON text (:func:`opaque_text`),
except pictures: a generated image (``image_generation_call.result``) and a computer call's
screenshot become image parts of the chat form and are counted by the image formula, not as
base64 text. A reasoning item's
``encrypted_content`` cannot be counted exactly; as base64 it tokenizes at about 1.45
characters a token (``o200k_base`` and ``cl100k_base``), while the reasoning it carries took
about 4 characters a token before encryption added its third, so the count runs well over
the tokens it hides unless the hidden text was compressed more than threefold.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from membrane.errors import InvalidInputError

__all__ = [
    "ITEMS_KEY",
    "RESPONSES_PARTS",
    "ItemsRead",
    "is_responses_item",
    "opaque_text",
    "read_items",
    "unportable_item",
]

#: Where a chat message read from Responses items keeps those items.
ITEMS_KEY = "responses_items"

# A call item's type -> its output item's type (both carry ``call_id``).
_CALLS = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
}
_OUTPUTS = frozenset(_CALLS.values())
_REFERENCE = "item_reference"
#: The content part types only the Responses API writes.
RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file", "refusal"})
# Item keys that are not a call's arguments.
_CALL_FIELDS = frozenset({"type", "id", "call_id", "status", "name"})

ItemsRead = tuple[list[dict[str, Any]], list[tuple[int, int]]]
"""The chat messages, and for each the span of caller items it came from."""


def _kind(item: Mapping[str, Any]) -> str:
    kind = item.get("type")
    if kind is None:
        return _REFERENCE if _is_reference(item) else "message"
    return str(kind)


def _is_reference(item: Mapping[str, Any]) -> bool:
    """An ``item_reference`` written without its (optional) type: an id and no role."""
    return item.get("type") is None and "role" not in item and isinstance(item.get("id"), str)


def is_responses_item(item: object) -> bool:
    """An item only the Responses API writes: typed, an item reference, or a message with
    Responses parts."""
    if not isinstance(item, Mapping):
        return False
    if "type" in item or _is_reference(item):
        return True
    content = item.get("content")
    return isinstance(content, list) and any(
        isinstance(p, Mapping) and p.get("type") in RESPONSES_PARTS for p in content
    )


def opaque_text(message: Mapping[str, Any]) -> str:
    """The JSON text of the opaque items a message carries (what counts them)."""
    items = message.get(ITEMS_KEY)
    if not isinstance(items, list):
        return ""
    return "\n".join(
        json.dumps(_countable(item), ensure_ascii=False, sort_keys=True)
        for item in items
        if isinstance(item, Mapping) and _kind(item) != "message" and not _paired(item)
    )


def _countable(item: Mapping[str, Any]) -> Mapping[str, Any]:
    """The item as its text is counted: a generated image's base64 is left out (the image is
    counted as an image, see :func:`_image_parts`)."""
    if _generated_image(item) is None:
        return item
    return {k: v for k, v in item.items() if k != "result"}


def _generated_image(item: Mapping[str, Any]) -> str | None:
    """The data URL of the image an ``image_generation_call`` item carries, if any."""
    result = item.get("result")
    if _kind(item) != "image_generation_call" or not isinstance(result, str) or not result:
        return None
    kind = item.get("output_format")
    media = kind if kind in ("jpeg", "webp", "gif") else "png"
    return f"data:image/{media};base64,{result}"


def _image_parts(message: dict[str, Any], items: Sequence[Any]) -> None:
    """Add the images generated by ``items`` to ``message``'s chat content as image parts,
    so they are counted by the image formula rather than as base64 text."""
    urls = [url for i in items if isinstance(i, Mapping) and (url := _generated_image(i))]
    if not urls:
        return
    content = message.get("content")
    parts = [{"type": "text", "text": content}] if isinstance(content, str) and content else []
    if isinstance(content, list):
        parts = list(content)
    message["content"] = parts + [{"type": "image_url", "image_url": {"url": u}} for u in urls]


# What other APIs can be sent in chat form: reasoning is left out (OpenAI alone can read it).
_PORTABLE = frozenset({"message", "function_call", "function_call_output", "reasoning"})


def unportable_item(message: Mapping[str, Any]) -> str | None:
    """The first item or part of ``message``'s Responses items with no chat form, if any: a
    hosted tool, a compaction, a file, an image given by file id."""
    for item in message.get(ITEMS_KEY) or ():
        kind = _kind(item) if isinstance(item, Mapping) else type(item).__name__
        if kind not in _PORTABLE:
            return kind
        content = item.get("content") if kind == "message" else None
        for part in content if isinstance(content, list) else ():
            part_kind = part.get("type") if isinstance(part, Mapping) else None
            if part_kind in ("input_image", "input_file") and _part(part)["type"] == "text":
                return str(part_kind)
    return None


def _paired(item: Mapping[str, Any]) -> bool:
    kind = _kind(item)
    return kind in _CALLS or kind in _OUTPUTS


def _part(part: object) -> dict[str, Any]:
    if not isinstance(part, Mapping):
        return {"type": "text", "text": str(part)}
    kind = part.get("type")
    if kind in ("input_text", "output_text") and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    if kind == "refusal" and isinstance(part.get("refusal"), str):
        return {"type": "text", "text": part["refusal"]}
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        return {"type": "image_url", "image_url": {"url": part["image_url"]}}
    # A file, or an image by file id: counted as its JSON text.
    return {"type": "text", "text": json.dumps(part, ensure_ascii=False, sort_keys=True)}


def _content(content: object) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return [_part(p) for p in content]
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


def _call(item: Mapping[str, Any]) -> dict[str, Any]:
    kind = _kind(item)
    if kind == "function_call":
        name, arguments = item.get("name"), item.get("arguments")
    else:
        name = item.get("name") if kind == "custom_tool_call" else kind
        rest = {k: v for k, v in item.items() if k not in _CALL_FIELDS}
        arguments = json.dumps(rest, ensure_ascii=False, sort_keys=True)
    return {
        "id": item.get("call_id"),
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def _output(item: Mapping[str, Any]) -> dict[str, Any]:
    output = item.get("output")
    kind = _kind(item)
    content: str | list[dict[str, Any]]
    if kind in ("function_call_output", "custom_tool_call_output"):
        content = _content(output)
    elif kind == "computer_call_output" and _screenshot_url(output) is not None:
        content = [{"type": "image_url", "image_url": {"url": _screenshot_url(output)}}]
    elif isinstance(output, str):
        content = output
    else:
        content = json.dumps(output, ensure_ascii=False, sort_keys=True)
    call_id = item.get("call_id")
    if call_id is None and kind == "local_shell_call_output":
        call_id = item.get("id")  # the API names the call by ``id`` here (the SDK: call_id)
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def _screenshot_url(output: object) -> str | None:
    """The image URL of a computer call's screenshot (a file id has no URL: None)."""
    if isinstance(output, Mapping) and output.get("type") == "computer_screenshot":
        url = output.get("image_url")
        return url if isinstance(url, str) else None
    return None


class _Reader:
    def __init__(self) -> None:
        self.out: list[dict[str, Any]] = []
        self.spans: list[tuple[int, int]] = []
        self.pending: list[Any] = []  # opaque items waiting for the item they lead to
        self.start = 0  # the first caller index of the pending items
        self.open_call = False  # the last message is a call message nothing answered yet

    def emit(self, message: dict[str, Any], i: int) -> None:
        message[ITEMS_KEY] = [*self.pending, message.pop(ITEMS_KEY)]
        _image_parts(message, message[ITEMS_KEY])
        self.out.append(message)
        self.spans.append((self.start if self.pending else i, i + 1))
        self.pending = []

    def item(self, i: int, item: Mapping[str, Any]) -> None:
        kind = _kind(item)
        if kind in _CALLS and self.open_call:
            last = self.out[-1]
            last["tool_calls"].append(_call(item))
            _image_parts(last, self.pending)
            last[ITEMS_KEY].extend([*self.pending, item])
            self.spans[-1] = (self.spans[-1][0], i + 1)
            self.pending = []
            return
        if kind in _CALLS:
            message: dict[str, Any] = {"role": "assistant", "content": None}
            message["tool_calls"] = [_call(item)]
        elif kind in _OUTPUTS:
            message = _output(item)
        elif kind == "message":
            self.before_person(item)
            message = {"role": item.get("role"), "content": _content(item.get("content"))}
        else:
            if not self.pending:
                self.start = i
            self.pending.append(item)
            return
        message[ITEMS_KEY] = item
        self.emit(message, i)
        self.open_call = kind in _CALLS

    def before_person(self, item: Mapping[str, Any]) -> None:
        """Opaque items before a user's message lead to nothing of the model's: they stand
        alone (a compaction item stays in the history when that message is the question)."""
        if item.get("role") == "user":
            self.finish(self.start + len(self.pending))

    def finish(self, n: int) -> None:
        if self.pending:
            self.emit({"role": "assistant", "content": "", ITEMS_KEY: self.pending.pop()}, n - 1)


def read_items(items: Sequence[Any], field: str = "conversation_messages") -> ItemsRead:
    """Chat messages for a history that holds Responses items (see the module).

    A plain chat message among them is read as given (opaque items before it join it: it is
    then written back as given too).
    """
    reader = _Reader()
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InvalidInputError(
                f"{field}[{i}] must be a dict (a chat message or a Responses item), got "
                f"{type(item).__name__}",
                field=f"{field}[{i}]",
            )
        if is_responses_item(item):
            reader.item(i, item)
            continue
        reader.open_call = False
        reader.before_person(item)
        if not reader.pending:
            reader.out.append(item)  # type: ignore[arg-type]
            reader.spans.append((i, i + 1))
            continue
        message = dict(item)
        message[ITEMS_KEY] = item
        reader.emit(message, i)
    reader.finish(len(items))
    return reader.out, reader.spans
