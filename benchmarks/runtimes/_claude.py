"""A ``ChatAnthropic`` whose client is a script, and what its requests cost under Anthropic's cache.

``ScriptedClaude`` is LangChain's real ``ChatAnthropic``: it renders the messages it is given
into the Messages API payload as it would for Claude (``_get_request_payload``), and only the
network call is replaced. The payload is recorded, and the answer comes back through the real
response parsing (``_format_output``, or the stream events for ``stream``/``astream``), so the
agent sees what Claude's SDK would give it: native ``tool_use`` blocks beside ``tool_calls``,
``response_metadata["model_provider"] == "anthropic"``, and with ``think_before_calls=True``
a signed ``thinking`` block before each call.

The model plays the agent scenario of ``benchmarks._agent_scenario`` in order, whatever it is
sent (as a scripted fake model does): each turn's first request gets a ``lookup`` call, the
second the answer citing ``[Mem:2]``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

import anthropic.types as at
from langchain_anthropic import ChatAnthropic
from pydantic import Field

from benchmarks._agent_scenario import TURNS, Turn, scripted_answer
from benchmarks._providers import AnthropicMarkedCache

__all__ = [
    "CLAUDE_MODEL",
    "ScriptedClaude",
    "cache_form",
    "cache_reads",
    "for_judge",
    "request_turn",
    "scripted_turn_message",
]

CLAUDE_MODEL = "claude-sonnet-4-5"
SIGNATURE = "c2lnbmVkLXRoaW5raW5n"


def request_turn(position: int) -> tuple[Turn, bool]:
    """The turn of the scenario's ``position``-th request, and whether it follows the tool result.

    The scenario alternates: a turn's first request asks for ``lookup``, its second answers.
    """
    return TURNS[position // 2], position % 2 == 1


def scripted_turn_message(turn: Turn, answered: bool, thinking: bool = False) -> at.Message:
    """What Claude says: a ``lookup`` call (after a signed thought with ``thinking``), or the
    cited answer."""
    if answered:
        content: list[Any] = [at.TextBlock(type="text", text=scripted_answer(turn))]
        stop = "end_turn"
    else:
        thought = at.ThinkingBlock(
            type="thinking", thinking="I need its report.", signature=SIGNATURE
        )
        content = [
            *([thought] if thinking else []),
            at.TextBlock(type="text", text=f"Looking up {turn.project}."),
            at.ToolUseBlock(
                type="tool_use",
                id=f"toolu_{turn.index:02d}",
                name="lookup",
                input={"project": turn.project},
            ),
        ]
        stop = "tool_use"
    return at.Message(
        id=f"msg_{turn.index}_{int(answered)}",
        type="message",
        role="assistant",
        model=CLAUDE_MODEL,
        content=content,
        stop_reason=stop,  # type: ignore[arg-type]
        stop_sequence=None,
        usage=at.Usage(input_tokens=1, output_tokens=20),
    )


def _block_events(index: int, block: Any) -> Iterator[Any]:
    if block.type == "tool_use":
        start = at.ToolUseBlock(type="tool_use", id=block.id, name=block.name, input={})
        delta: Any = at.InputJSONDelta(
            type="input_json_delta", partial_json=json.dumps(block.input)
        )
    elif block.type == "thinking":
        start, delta = block, None  # the whole signed thought opens the block
    else:
        start = at.TextBlock(type="text", text="")
        delta = at.TextDelta(type="text_delta", text=block.text)
    yield at.RawContentBlockStartEvent(type="content_block_start", index=index, content_block=start)
    if delta is not None:
        yield at.RawContentBlockDeltaEvent(type="content_block_delta", index=index, delta=delta)
    yield at.RawContentBlockStopEvent(type="content_block_stop", index=index)


def stream_events(message: at.Message) -> list[Any]:
    """The server-sent events of ``message`` as Anthropic streams it."""
    opening = message.model_copy(update={"content": [], "stop_reason": None})
    events: list[Any] = [at.RawMessageStartEvent(type="message_start", message=opening)]
    for index, block in enumerate(message.content):
        events += list(_block_events(index, block))
    delta = at.raw_message_delta_event.Delta(stop_reason=message.stop_reason, stop_sequence=None)
    usage = at.MessageDeltaUsage(output_tokens=message.usage.output_tokens)
    events.append(at.RawMessageDeltaEvent(type="message_delta", delta=delta, usage=usage))
    events.append(at.RawMessageStopEvent(type="message_stop"))
    return events


class _Raw:
    """The SDK's raw response: ``parse()`` gives the message or the event stream."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def parse(self) -> Any:
        return self.value


async def _async_events(events: Sequence[Any]) -> AsyncIterator[Any]:
    for event in events:
        yield event


class ScriptedClaude(ChatAnthropic):
    """``ChatAnthropic`` with a scripted client; ``payloads`` holds every request it built."""

    payloads: list[dict[str, Any]] = Field(default_factory=list)
    think_before_calls: bool = False

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("model", CLAUDE_MODEL)
        kwargs.setdefault("api_key", "sk-ant-offline")
        kwargs.setdefault("max_tokens", 1024)
        super().__init__(**kwargs)

    def _reply(self, payload: dict[str, Any]) -> at.Message:
        self.payloads.append(payload)
        return scripted_turn_message(*request_turn(len(self.payloads) - 1), self.think_before_calls)

    def _create(self, payload: dict[str, Any]) -> Any:
        message = self._reply(payload)
        return _Raw(iter(stream_events(message)) if payload.get("stream") else message)

    async def _acreate(self, payload: dict[str, Any]) -> Any:
        message = self._reply(payload)
        return _Raw(_async_events(stream_events(message)) if payload.get("stream") else message)


# ---------------------------------------------------------------------------- judging


def _text_of(blocks: Any) -> str:
    if isinstance(blocks, str):
        return blocks
    return "\n".join(b["text"] for b in blocks if b.get("type") == "text")


def _user_turn(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"role": "user", "content": content}]
    out: list[dict[str, Any]] = []
    for block in content:
        if block.get("type") == "tool_result":
            inner = block.get("content", "")
            out.append(
                {"role": "tool", "tool_call_id": block["tool_use_id"], "content": _text_of(inner)}
            )
        elif block.get("type") == "text":
            if out and out[-1]["role"] == "user":
                out[-1]["content"] += "\n" + block["text"]
            else:
                out.append({"role": "user", "content": block["text"]})
    return out


def _assistant_turn(content: Any) -> dict[str, Any]:
    if isinstance(content, str):
        return {"role": "assistant", "content": content}
    parts = [b for b in content if b.get("type") in ("text", "thinking", "redacted_thinking")]
    calls = [
        {
            "id": b["id"],
            "type": "function",
            "function": {"name": b["name"], "arguments": json.dumps(b.get("input", {}))},
        }
        for b in content
        if b.get("type") == "tool_use"
    ]
    out: dict[str, Any] = {"role": "assistant", "content": parts}
    if calls:
        out["tool_calls"] = calls
    return out


def for_judge(payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An Anthropic request as the OpenAI-shape messages ``check_request`` reads."""
    out: list[dict[str, Any]] = []
    if payload.get("system"):
        out.append({"role": "system", "content": _text_of(payload["system"])})
    for message in payload.get("messages", []):
        if message["role"] == "user":
            out += _user_turn(message["content"])
        else:
            out.append(_assistant_turn(message["content"]))
    return out


# ---------------------------------------------------------------------------- cache


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [dict(b) for b in content]


def _same_form(block: dict[str, Any]) -> dict[str, Any]:
    """A block in one spelling: string content as a text block, no ``is_error: false``."""
    if block.get("type") == "tool_result":
        block = {k: v for k, v in block.items() if not (k == "is_error" and v is False)}
        block["content"] = _blocks(block.get("content", ""))
    return block


def cache_form(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The payload in the simulator's form: tools first, then system, then the turns.

    A top-level ``cache_control`` (Anthropic's automatic caching) marks the last block.
    """
    system = [
        {"type": "tool", "tool": {k: v for k, v in t.items() if k != "cache_control"}}
        | ({"cache_control": t["cache_control"]} if "cache_control" in t else {})
        for t in payload.get("tools") or ()
    ]
    system += _blocks(payload.get("system") or [])
    messages = [
        {"role": m["role"], "content": [_same_form(b) for b in _blocks(m["content"])]}
        for m in payload.get("messages", [])
    ]
    if payload.get("cache_control") and messages:
        last = messages[-1]["content"]
        last[-1] = {**last[-1], "cache_control": payload["cache_control"]}
    return {"system": system, "messages": messages}


def cache_reads(payloads: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """``(cache_read_tokens, input_tokens)`` of each request, in order, on one simulated cache."""
    cache = AnthropicMarkedCache()
    out = []
    for payload in payloads:
        bill = cache.bill(cache_form(payload))
        out.append((bill.read_tokens, bill.input_tokens))
    return out
