"""Bad compile arguments raise a typed error naming the field (issue 11, point 8, the compile
half; reproducer f8_arg_crashes.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given

from membrane import ContextCompiler, MemoryItem
from membrane.errors import InvalidInputError
from tests.adversarial.argument_strategies import BadCall, bad_calls


def _field_of(fn: Any) -> str | None:
    with pytest.raises(InvalidInputError) as raised:
        fn()
    return raised.value.field


@pytest.mark.parametrize("core", [None, 42, "rules \ud800"])
def test_core_content_must_be_encodable_text(core: object) -> None:
    assert _field_of(lambda: ContextCompiler(2000, core_content=core)) == "core_content"


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        ("agent_persona_prompt", 5),
        ("dynamic_directives", 5),
        ("dynamic_directives", b"bytes"),
        ("last_assistant_turn", 3.5),
        ("user_message", None),
        ("user_message", "lone \udc80 half"),
        ("conversation_id", 12),
    ],
)
def test_turn_arguments_name_their_field(argument: str, value: object) -> None:
    compiler = ContextCompiler(2000)
    kwargs: dict[str, Any] = {"user_message": "q", argument: value}
    assert _field_of(lambda: compiler.compile([], **kwargs)) == argument


def test_a_directive_line_is_named_by_its_index() -> None:
    field = _field_of(lambda: ContextCompiler(2000).compile([], "q", dynamic_directives=["a", 2]))
    assert field == "dynamic_directives[1]"


@pytest.mark.parametrize("confidence", ["high", None, True, 1.5, -0.1])
def test_memory_confidence_must_be_a_number_in_range(confidence: object) -> None:
    assert _field_of(lambda: MemoryItem(id="a", content="x", confidence=confidence)) == (
        "confidence"
    )


def test_a_record_with_a_lone_surrogate_names_the_memory() -> None:
    class Note:
        id = "n1"
        memory_kind = "semantic"
        content = "half \ud83d a pair"

    assert _field_of(lambda: ContextCompiler(2000).compile([Note()], "q")) == "memories[0].content"


def test_tool_use_input_must_be_json() -> None:
    history = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"x": object()}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
        },
    ]
    field = _field_of(lambda: ContextCompiler(2000).compile([], "q", conversation_messages=history))
    assert field == "conversation_messages[1].content[0].input"


def test_an_assistant_message_that_says_nothing_is_refused() -> None:
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}]
    field = _field_of(lambda: ContextCompiler(2000).compile([], "q", conversation_messages=history))
    assert field == "conversation_messages[1]"


def test_tool_calls_must_be_a_list() -> None:
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "x", "tool_calls": "notalist"},
    ]
    field = _field_of(lambda: ContextCompiler(2000).compile([], "q", conversation_messages=history))
    assert field == "conversation_messages[1].tool_calls"


def test_a_lone_surrogate_in_a_tool_argument_is_refused() -> None:
    history = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"q": "\ud800"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
    ]
    field = _field_of(lambda: ContextCompiler(2000).compile([], "q", conversation_messages=history))
    assert field == "conversation_messages[1].tool_calls[0].function.arguments"


def test_a_sync_compressor_is_refused_before_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_PREFLIGHT_TOKEN_THRESHOLD", "10")
    ran: list[str] = []

    def compress(raw: str, target: int, question: str) -> str:
        ran.append(raw)
        return "digest"

    class SyncAnalyst:
        def compress_retrieved_memory(self, raw: str, target: int, question: str) -> str:
            ran.append(raw)
            return "digest"

    memories = [MemoryItem(id=f"m{i}", content="a fact about the depot " * 5) for i in range(5)]
    for analyst in (compress, SyncAnalyst()):
        with pytest.raises(TypeError, match="async"):
            asyncio.run(ContextCompiler(2000).compile_async(memories, "q", compress_async=analyst))
    with pytest.raises(TypeError, match="compress_fn"):
        asyncio.run(ContextCompiler(2000).compile_async(memories, "q", compress_fn=compress))
    assert ran == []


def test_an_async_callable_object_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_PREFLIGHT_TOKEN_THRESHOLD", "10")

    class Summariser:
        async def __call__(self, raw: str, target: int, question: str) -> str:
            return "Callable digest."

    memories = [MemoryItem(id=f"m{i}", content="a fact about the depot " * 5) for i in range(5)]
    result = asyncio.run(
        ContextCompiler(2000).compile_async(memories, "q", compress_async=Summariser())
    )
    assert "Callable digest." in result.messages[-1]["content"]


@given(bad_calls())
def test_every_bad_argument_raises_invalid_input_naming_its_field(bad: BadCall) -> None:
    call = dict(bad.call)
    factory = call.pop("memories_factory", None)
    memories = call.pop("memories")
    user_message = call.pop("user_message", "what now?")
    try:
        compiler = ContextCompiler(2000, **bad.ctor)
        if factory is not None:
            memories = factory()
        compiler.compile(memories, user_message, **call)
    except InvalidInputError as exc:
        assert exc.field is not None and exc.field.startswith(bad.field), (exc.field, bad.field)
    else:
        raise AssertionError(f"accepted a bad {bad.field}")
