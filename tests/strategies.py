"""Hypothesis strategies for compiler inputs: memories and conversations with tool calls."""

from __future__ import annotations

import datetime
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
