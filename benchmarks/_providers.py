"""Simulated provider caches: OpenAI's automatic prefix cache and Anthropic's marked cache.

Both see one conversation's requests in order and report what a provider would bill. Tokens are
the harness's cl100k count with three framing tokens per message, the same count the budget is
judged by.

OpenAI-style: the longest prefix this request shares with any earlier request is served from
cache, if it is at least 1,024 tokens, rounded down to whole 128-token blocks.

Anthropic-style: only prefixes that end at a ``cache_control`` marker are written (at most four
markers, each at least the model's minimum size). A marker reads the longest earlier-written
prefix ending at one of the 20 block boundaries at or before it. Tokens after the read prefix up
to the last marker are written (billed 1.25x), reads are billed 0.1x, the rest 1x.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from benchmarks._tokens import FRAMING_TOKENS, count_text, encode_text, message_text

__all__ = [
    "ANTHROPIC_LOOKBACK_BLOCKS",
    "ANTHROPIC_MAX_MARKERS",
    "ANTHROPIC_MIN_TOKENS",
    "ANTHROPIC_READ",
    "ANTHROPIC_WRITE",
    "OPENAI_BLOCK",
    "OPENAI_MIN_TOKENS",
    "AnthropicBill",
    "AnthropicMarkedCache",
    "OpenAIBill",
    "OpenAIPrefixCache",
    "openai_to_anthropic",
]

OPENAI_MIN_TOKENS = 1024
OPENAI_BLOCK = 128
ANTHROPIC_MIN_TOKENS = 1024  # Claude Sonnet's minimum cacheable prompt
ANTHROPIC_MAX_MARKERS = 4
ANTHROPIC_LOOKBACK_BLOCKS = 20
ANTHROPIC_WRITE = 1.25
ANTHROPIC_READ = 0.1

_ROLE_IDS = {"system": -11, "user": -12, "assistant": -13, "tool": -14, "developer": -15}


@dataclass(frozen=True, slots=True)
class OpenAIBill:
    """Input tokens of one request and how many were served from cache."""

    input_tokens: int
    cached_tokens: int


@dataclass(frozen=True, slots=True)
class AnthropicBill:
    """One request's tokens split into plain input, cache writes and cache reads."""

    input_tokens: int
    uncached_tokens: int
    write_tokens: int
    read_tokens: int
    markers: int

    def cost(self) -> float:
        return (
            self.uncached_tokens
            + ANTHROPIC_WRITE * self.write_tokens
            + ANTHROPIC_READ * self.read_tokens
        )


def _message_ids(message: dict[str, Any]) -> list[int]:
    # Framing is three tokens, like the count: a start marker, the role, a separator.
    ids = [-1, _ROLE_IDS.get(str(message.get("role")), -19), -2]
    for text in message_text(message):
        if text:
            ids.extend(encode_text(text))
    # Tool-call ids are part of the bytes a provider hashes, though not of the token count.
    for call in message.get("tool_calls") or ():
        ids.append(-(1000 + (hash(str(call.get("id"))) & 0xFFFFFF)))
    if message.get("role") == "tool":
        ids.append(-(1000 + (hash(str(message.get("tool_call_id"))) & 0xFFFFFF)))
    return ids


class OpenAIPrefixCache:
    """Automatic prefix caching over one conversation."""

    def __init__(self) -> None:
        self._seen: set[int] = set()

    def bill(self, messages: list[dict[str, Any]]) -> OpenAIBill:
        ids: list[int] = []
        for m in messages:
            ids.extend(_message_ids(m))
        # The tool-call id markers are not tokens; drop them from the size.
        size = sum(1 for i in ids if i > -1000)
        h = 0
        matched = 0
        still_matching = True
        hashes: list[int] = []
        for start in range(0, len(ids) - OPENAI_BLOCK + 1, OPENAI_BLOCK):
            h = hash((h, tuple(ids[start : start + OPENAI_BLOCK])))
            hashes.append(h)
            if still_matching and h in self._seen:
                matched += 1
            else:
                still_matching = False
        self._seen.update(hashes)
        cached = matched * OPENAI_BLOCK
        if cached < OPENAI_MIN_TOKENS:
            cached = 0
        return OpenAIBill(input_tokens=size, cached_tokens=min(cached, size))


def _blocks_of(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or () if isinstance(b, dict)]


def _block_tokens(block: dict[str, Any]) -> int:
    kind = block.get("type")
    if kind == "text":
        return count_text(str(block.get("text", "")))
    if kind == "tool_use":
        return count_text(str(block.get("name", ""))) + count_text(
            json.dumps(block.get("input", {}), sort_keys=True)
        )
    if kind == "tool_result":
        inner = block.get("content", "")
        if isinstance(inner, str):
            return count_text(inner)
        return sum(_block_tokens(b) for b in _blocks_of(inner))
    return count_text(json.dumps(block, sort_keys=True))


def _block_key(block: dict[str, Any]) -> str:
    clean = {k: v for k, v in block.items() if k != "cache_control"}
    return json.dumps(clean, sort_keys=True)


class AnthropicMarkedCache:
    """Marked (``cache_control``) caching over one conversation."""

    def __init__(self, min_tokens: int = ANTHROPIC_MIN_TOKENS) -> None:
        self.min_tokens = min_tokens
        self._written: set[int] = set()

    def bill(self, request: dict[str, Any]) -> AnthropicBill:
        # Flatten the request into blocks: (prefix hash, tokens up to the block's end, marked).
        boundaries: list[tuple[int, int, bool]] = []
        h = 0
        total = 0
        for block in _blocks_of(request.get("system")):
            total += _block_tokens(block)
            h = hash((h, "system", _block_key(block)))
            boundaries.append((h, total, "cache_control" in block))
        for message in request.get("messages", []):
            total += FRAMING_TOKENS
            h = hash((h, "role", message.get("role")))
            for block in _blocks_of(message.get("content")):
                total += _block_tokens(block)
                h = hash((h, _block_key(block)))
                boundaries.append((h, total, "cache_control" in block))

        marked = [i for i, (_, _, m) in enumerate(boundaries) if m][:ANTHROPIC_MAX_MARKERS]
        read = 0
        for i in marked:
            for j in range(i, max(-1, i - ANTHROPIC_LOOKBACK_BLOCKS), -1):
                prefix_hash, tokens, _ = boundaries[j]
                if tokens >= self.min_tokens and prefix_hash in self._written:
                    read = max(read, tokens)
                    break
        write = 0
        for i in marked:
            prefix_hash, tokens, _ = boundaries[i]
            if tokens >= self.min_tokens:
                self._written.add(prefix_hash)
                write = max(write, tokens - read)
        return AnthropicBill(
            input_tokens=total,
            uncached_tokens=total - read - write,
            write_tokens=write,
            read_tokens=read,
            markers=len(marked),
        )


def openai_to_anthropic(
    messages: list[dict[str, Any]], *, mark_system: bool, mark_history: bool
) -> dict[str, Any]:
    """Convert an OpenAI-shape request to Anthropic's shape, with the markers a careful user adds.

    ``mark_system`` puts a marker on the system prompt, ``mark_history`` one on the last message
    before the current user turn (the multi-turn pattern in Anthropic's caching guide).
    """
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role")
        if role in ("system", "developer"):
            system.append({"type": "text", "text": message_text(m)[0]})
            continue
        blocks: list[dict[str, Any]] = []
        if role == "tool":
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": m.get("tool_call_id"),
                    "content": message_text(m)[0],
                }
            )
            role = "user"
        else:
            text = message_text(m)[0]
            if text:
                blocks.append({"type": "text", "text": text})
            for call in m.get("tool_calls") or ():
                fn = call.get("function", {})
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except json.JSONDecodeError:
                    args = {"raw": fn.get("arguments")}
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call.get("id"),
                        "name": fn.get("name"),
                        "input": args,
                    }
                )
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    if mark_system and system:
        system[-1] = {**system[-1], "cache_control": {"type": "ephemeral"}}
    if mark_history and len(out) >= 2:
        # The last message is the current user turn; mark the message before it.
        target = out[-2]["content"]
        target[-1] = {**target[-1], "cache_control": {"type": "ephemeral"}}
    return {"system": system, "messages": out}
