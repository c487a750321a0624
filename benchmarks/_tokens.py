"""The one token count every strategy is judged by: offline cl100k_base plus chat framing."""

from __future__ import annotations

from typing import Any

from membrane.tokenizers import TiktokenAdapter

__all__ = [
    "ENCODING",
    "FRAMING_TOKENS",
    "count_message",
    "count_messages",
    "count_text",
    "encode_fresh",
    "encode_text",
    "message_text",
    "prompt_text",
]

ENCODING = "cl100k_base"
# OpenAI's chat format spends three tokens per message on the role header; every strategy is
# charged the same so that no one gains by packing text into fewer messages.
FRAMING_TOKENS = 3

_ADAPTER = TiktokenAdapter(ENCODING)
_COUNT_MEMO: dict[str, int] = {}
_ENCODE_MEMO: dict[str, tuple[int, ...]] = {}
_MEMO_LIMIT = 200_000


def encode_text(text: str) -> tuple[int, ...]:
    """Token ids of ``text`` (memoised: the same history is encoded once per process)."""
    ids = _ENCODE_MEMO.get(text)
    if ids is None:
        ids = tuple(_ADAPTER.encode(text))
        if len(_ENCODE_MEMO) >= _MEMO_LIMIT:
            _ENCODE_MEMO.clear()
        _ENCODE_MEMO[text] = ids
        _COUNT_MEMO[text] = len(ids)
    return ids


def encode_fresh(text: str) -> list[int]:
    """Token ids of ``text`` without the memo (for peers that tokenize ever-new joined strings)."""
    return _ADAPTER.encode(text)


def count_text(text: str) -> int:
    """Number of cl100k_base tokens in ``text``."""
    n = _COUNT_MEMO.get(text)
    if n is None:
        n = _ADAPTER.count(text)
        if len(_COUNT_MEMO) >= _MEMO_LIMIT:
            _COUNT_MEMO.clear()
        _COUNT_MEMO[text] = n
    return n


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                for key in ("text", "content"):
                    value = part.get(key)
                    if isinstance(value, str):
                        parts.append(value)
                    elif isinstance(value, list):
                        parts.append(_content_text(value))
                if part.get("type") == "tool_use":
                    parts.append(str(part.get("name", "")))
                    parts.append(str(part.get("input", "")))
        return "\n".join(parts)
    return str(content)


def message_text(message: dict[str, Any]) -> list[str]:
    """Every text a message sends: its content, then each tool call's name and arguments."""
    texts = [_content_text(message.get("content"))]
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        texts.append(str(function.get("name", "")))
        texts.append(str(function.get("arguments", "")))
    return texts


def count_message(message: dict[str, Any]) -> int:
    """Tokens of one OpenAI-shape message: framing plus all of its text."""
    return FRAMING_TOKENS + sum(count_text(t) for t in message_text(message) if t)


def count_messages(messages: list[dict[str, Any]]) -> int:
    """Tokens of a whole request, framing included."""
    return sum(count_message(m) for m in messages)


def prompt_text(messages: list[dict[str, Any]]) -> str:
    """All text of a request joined, for judging whether a fact reached the prompt."""
    return "\n".join(t for m in messages for t in message_text(m))
