"""Hypothesis strategies for bad arguments to the compiler (issue 11, point 8).

Each draw is a :class:`BadCall`: a compile that is valid except for one argument, and the
field an :class:`~membrane.errors.InvalidInputError` must name (as a prefix: message errors
name the part, e.g. ``conversation_messages[3].tool_calls``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from tests.strategies import conversations, memory_items

LONE_SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
_TEXT = st.text(
    st.characters(min_codepoint=32, max_codepoint=0x2FFF, exclude_categories=["Cs"]), max_size=12
)
NOT_TEXT = st.one_of(
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.just(b"bytes"),
    st.lists(st.integers(), max_size=2),
    st.just({"a": 1}),
)


@dataclass
class BadCall:
    field: str
    ctor: dict[str, Any] = field(default_factory=dict)
    call: dict[str, Any] = field(default_factory=dict)


@st.composite
def broken_text(draw: st.DrawFn) -> str:
    """Text with one lone surrogate somewhere in it."""
    return draw(_TEXT) + draw(LONE_SURROGATES) + draw(_TEXT)


@st.composite
def _bad_turn_argument(draw: st.DrawFn) -> BadCall:
    name = draw(
        st.sampled_from(
            [
                "core_content",
                "user_message",
                "agent_persona_prompt",
                "last_assistant_turn",
                "dynamic_directives",
                "conversation_id",
            ]
        )
    )
    may_be_none = name in (
        "agent_persona_prompt",
        "last_assistant_turn",
        "dynamic_directives",
        "conversation_id",
    )
    bad = draw(
        st.one_of(broken_text(), NOT_TEXT if may_be_none else st.one_of(NOT_TEXT, st.none()))
    )
    if name == "dynamic_directives" and isinstance(bad, list):
        return BadCall("dynamic_directives[", call={name: bad or [7]})
    if name == "dynamic_directives" and draw(st.booleans()) and isinstance(bad, str):
        lines = draw(st.lists(_TEXT, max_size=3))
        at = draw(st.integers(0, len(lines)))
        return BadCall(f"dynamic_directives[{at}]", call={name: [*lines[:at], bad, *lines[at:]]})
    if name == "core_content":
        return BadCall(name, ctor={name: bad})
    return BadCall(name, call={name: bad})


def _assistant_without_anything() -> dict[str, Any]:
    return {"role": "assistant", "content": None}


@st.composite
def _bad_message(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    """A malformed message and the suffix the error's field ends its index with."""
    kind = draw(st.sampled_from(["surrogate", "tool_calls", "nothing", "tool_input", "role"]))
    if kind == "surrogate":
        role = draw(st.sampled_from(["user", "assistant"]))
        return {"role": role, "content": draw(broken_text())}, ""
    if kind == "tool_calls":
        calls = draw(st.one_of(st.text(max_size=8), st.integers(), st.just({"id": "c"})))
        return {"role": "assistant", "content": "x", "tool_calls": calls}, ".tool_calls"
    if kind == "nothing":
        return _assistant_without_anything(), ""
    if kind == "role":
        return {"role": draw(st.sampled_from(["bot", "", "USER", "model"])), "content": "x"}, ""
    return {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "t-bad",
                "name": "f",
                "input": {"x": draw(st.sampled_from([object(), {1, 2}, float("nan")]))},
            }
        ],
    }, ".content[0].input"


@st.composite
def _bad_history(draw: st.DrawFn) -> BadCall:
    history = draw(conversations(max_turns=4))
    message, suffix = draw(_bad_message())
    # Put it right after a complete unit: the start, the end, or after a plain message.
    cuts = [0, len(history)] + [
        i + 1
        for i, m in enumerate(history)
        if m.get("role") in ("user", "assistant")
        and not m.get("tool_calls")
        and not isinstance(m.get("content"), list)
        and (i + 1 == len(history) or history[i + 1].get("role") != "tool")
    ]
    at = draw(st.sampled_from(cuts))
    bad_history = [*history[:at], message, *history[at:]]
    return BadCall(
        f"conversation_messages[{at}]{suffix}", call={"conversation_messages": bad_history}
    )


@st.composite
def _bad_memory(draw: st.DrawFn) -> BadCall:
    """A bad confidence (refused when the MemoryItem is made) or text no request can encode
    (refused by the compile, naming the memory's position and attribute)."""
    from membrane import MemoryItem

    name = draw(st.sampled_from(["confidence", "content", "kind"]))
    if name == "confidence":
        value: Any = draw(
            st.one_of(
                st.text(max_size=5),
                st.just(None),
                st.booleans(),
                st.floats(min_value=1.01),
                st.floats(max_value=-0.01),
                st.just(float("nan")),
            )
        )
        where = name
    else:
        value = draw(broken_text())
        where = f"memories[0].{name}"
    kwargs = {"id": "m1", "content": "text", name: value}
    return BadCall(where, call={"memories_factory": lambda: [MemoryItem(**kwargs)]})


@st.composite
def _bad_extras(draw: st.DrawFn) -> BadCall:
    return BadCall("middle_extras[0]", call={"middle_extras": [(draw(broken_text()), 2)]})


@st.composite
def bad_calls(draw: st.DrawFn) -> BadCall:
    """One compile with exactly one bad argument, among plausible good ones."""
    bad = draw(st.one_of(_bad_turn_argument(), _bad_history(), _bad_memory(), _bad_extras()))
    bad.call.setdefault("memories", draw(memory_items(max_size=3)))
    return bad
