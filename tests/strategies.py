"""Hypothesis strategies for compiler inputs: memories and conversations with tool calls."""

from __future__ import annotations

import datetime
import itertools
import json
from typing import Any

from hypothesis import strategies as st

from membrane.records import MemoryItem

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "code",
    "vault",
    "river",
    "mountain",
    "invoice",
    "shipping",
    "order",
    "refund",
    "pytest",
    "deploy",
    "cluster",
    "latency",
    "budget",
    "cache",
    "token",
    "paris",
    "lagos",
    "tuesday",
    "amber",
    "cobalt",
    "seven",
    "ninety",
]

word = st.sampled_from(WORDS)
sentence = st.lists(word, min_size=1, max_size=14).map(lambda ws: " ".join(ws).capitalize() + ".")
text = st.lists(sentence, min_size=1, max_size=6).map(" ".join)
long_text = st.lists(sentence, min_size=40, max_size=120).map(" ".join)

#: What retrieved chunks of code, configuration, URLs and Markdown carry: the characters a
#: memory line must keep as written (``=``, ``|``, ``\\``, backticks).
_RAG_PIECES = [
    "limit=100",
    "resp = client.get(url)",
    "x == y",
    "| col | col2 |",
    "|---|---|",
    "https://example.com/a?b=1&c=2",
    "C:\\Users\\ops",
    "re.compile(r'\\d+\\|x')",
    "`code`",
    "``double``",
    "```",
    "`",
    "\\",
    "a|b",
    "key: value",
    "--flag=on",
]
rag_text = st.lists(st.one_of(st.sampled_from(_RAG_PIECES), word), min_size=1, max_size=10).map(
    " ".join
)


@st.composite
def memory_items(draw: st.DrawFn, max_size: int = 12) -> list[MemoryItem]:
    n = draw(st.integers(0, max_size))
    out = []
    for i in range(n):
        kind = draw(st.sampled_from(["semantic", "episodic", "procedural"]))
        out.append(MemoryItem(id=f"m{i}", content=draw(text), memory_type=kind))
    return out


@st.composite
def _turn(draw: st.DrawFn, index: int) -> list[dict[str, Any]]:
    """One exchange: a user message, then a reply, a tool round trip, or parallel tool calls."""
    shape = draw(
        st.sampled_from(["plain", "plain", "parts", "long", "tool", "parallel", "anthropic"])
    )
    user_content: Any = draw(text)
    if shape == "parts":
        user_content = [{"type": "text", "text": draw(text)}, {"type": "text", "text": draw(text)}]
    if shape == "long":
        user_content = draw(long_text)
    msgs: list[dict[str, Any]] = [{"role": "user", "content": user_content}]
    if shape in ("tool", "parallel"):
        calls = 1 if shape == "tool" else draw(st.integers(2, 3))
        ids = [f"call_{index}_{k}" for k in range(calls)]
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": "lookup", "arguments": json.dumps({"q": draw(word)})},
                    }
                    for cid in ids
                ],
            }
        )
        msgs.extend({"role": "tool", "tool_call_id": cid, "content": draw(text)} for cid in ids)
    elif shape == "anthropic":
        tid = f"toolu_{index}"
        msgs.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": tid, "name": "lookup", "input": {"q": "x"}}],
            }
        )
        msgs.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": tid, "content": draw(text)}],
            }
        )
    msgs.append({"role": "assistant", "content": draw(text)})
    return msgs


@st.composite
def conversations(draw: st.DrawFn, max_turns: int = 30) -> list[dict[str, Any]]:
    n = draw(st.integers(0, max_turns))
    out: list[dict[str, Any]] = []
    for i in range(n):
        out.extend(draw(_turn(i)))
    return out


@st.composite
def stamped_conversations(draw: st.DrawFn, max_turns: int = 30) -> list[dict[str, Any]]:
    """Conversations whose messages carry a ``timestamp``: seconds apart within a session,
    hours apart (a cold provider cache) where a new session starts; the stamp's form (epoch
    number or ISO 8601 string) varies, and some messages carry none."""
    history = draw(conversations(max_turns))
    clock = 1_700_000_000.0
    out = []
    for message in history:
        clock += draw(st.sampled_from([5.0, 30.0, 290.0, 301.0, 7200.0]))
        form = draw(st.sampled_from(["epoch", "epoch", "iso", "none"]))
        if form == "none":
            out.append(message)
            continue
        stamp: float | str = clock
        if form == "iso":
            stamp = datetime.datetime.fromtimestamp(clock, datetime.timezone.utc).isoformat()
        out.append({**message, "timestamp": stamp})
    return out


@st.composite
def _responses_turn(draw: st.DrawFn, index: int) -> list[dict[str, Any]]:
    """One exchange as Responses items: a user message, then reasoning, tool calls with their
    outputs (one or parallel), a hosted web search, and an assistant message, in the order
    ``response.output`` gives them."""
    out: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": draw(text)}]}
    ]
    for step in range(draw(st.integers(0, 2))):
        if draw(st.booleans()):
            out.append(_reasoning(f"rs_{index}_{step}", draw(st.integers(8, 400))))
        ids = [f"call_{index}_{step}_{k}" for k in range(draw(st.integers(1, 3)))]
        for call_id in ids:
            arguments = json.dumps({"q": draw(word)})
            out.append(
                {
                    "type": "function_call",
                    "call_id": call_id,
                    "name": "lookup",
                    "arguments": arguments,
                    "id": f"fc_{call_id}",
                    "status": "completed",
                }
            )
        out.extend(
            {"type": "function_call_output", "call_id": c, "output": draw(text)} for c in ids
        )
    if draw(st.booleans()):
        out.append(
            {
                "type": "web_search_call",
                "id": f"ws_{index}",
                "status": "completed",
                "action": {"type": "search", "query": draw(word)},
            }
        )
    if draw(st.booleans()):
        out.append(_reasoning(f"rs_{index}_answer", draw(st.integers(8, 400))))
    out.append(
        {
            "type": "message",
            "id": f"msg_{index}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": draw(text), "annotations": []}],
        }
    )
    return out


def _reasoning(item_id: str, size: int) -> dict[str, Any]:
    # Stands in for encrypted content: base64-like text of the given length.
    blob = ("gAAAAAB" + "Qx7pL2mZ" * (size // 8 + 1))[:size]
    return {"type": "reasoning", "id": item_id, "summary": [], "encrypted_content": blob}


@st.composite
def responses_histories(draw: st.DrawFn, max_turns: int = 12) -> list[dict[str, Any]]:
    """Conversations as Responses API input items (see ``_responses_turn``)."""
    out: list[dict[str, Any]] = []
    for i in range(draw(st.integers(0, max_turns))):
        out.extend(draw(_responses_turn(i)))
    return out


#: A word no strategy draws: it marks what lies before a compaction boundary.
BEFORE_BOUNDARY = "zebrafore"


@st.composite
def compacted_histories(draw: st.DrawFn) -> tuple[list[dict[str, Any]], int, str]:
    """A history with a compaction boundary in it: (messages, the boundary's index, provider).

    Everything before the boundary says ``BEFORE_BOUNDARY``. The boundary is an Anthropic
    ``compaction`` block opening an assistant message (after an earlier block and text of the
    same message, sometimes) or an OpenAI ``compaction`` item.
    """
    before = [
        {"role": role, "content": f"{BEFORE_BOUNDARY} {i}: {draw(text)}"}
        for i, role in zip(range(draw(st.integers(0, 12))), itertools.cycle(["user", "assistant"]))
    ]
    provider = draw(st.sampled_from(["anthropic", "openai"]))
    summary = draw(text)
    if provider == "openai":
        boundary: dict[str, Any] = {
            "type": "compaction",
            "id": "cmp_1",
            "encrypted_content": "gAAAAAB" + "Zq9" * 40,
        }
        after = draw(responses_histories(max_turns=8))
    else:
        block = {
            "type": "compaction",
            "content": summary,
            "encrypted_content": "opaque-" + "Kv3" * 20,
            "signature": "sig-" + "9f" * 16,
            "tool_changes": [],
        }
        earlier = [{"type": "text", "text": f"{BEFORE_BOUNDARY} in the same message"}]
        lead = earlier if draw(st.booleans()) else []
        boundary = {
            "role": "assistant",
            "content": [*lead, block, {"type": "text", "text": draw(text)}],
        }
        after = draw(conversations(max_turns=8))
    return [*before, boundary, *after], len(before), provider
