"""PydanticAI messages <-> Membrane chat messages: lossless both ways, and what each part is."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

pytest.importorskip(
    "pydantic_ai", reason="pydantic-ai is not installed: pip install -e '.[pydantic-ai]'"
)

from pydantic_ai.exceptions import PydanticAIDeprecationWarning
from pydantic_ai.messages import (
    BinaryContent,
    CachePoint,
    CompactionPart,
    DocumentUrl,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    RetryInfo,
    RetryPromptPart,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolAvailabilityDeltaPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from membrane.adapters.pydantic_ai import REF_KEY, from_membrane, to_membrane
from membrane.errors import InvalidInputError

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def _history() -> list[ModelMessage]:
    """A history with every kind of part the converters read."""
    return [
        ModelRequest(
            parts=[SystemPromptPart("Be brief."), UserPromptPart("Status of atlas?")],
            instructions="Cite as [Mem:N].",
            run_id="run-1",
        ),
        ModelResponse(
            parts=[
                ThinkingPart("I should look it up.", signature="sig-1", provider_name="anthropic"),
                TextPart("Looking."),
                ToolCallPart("lookup", {"project": "atlas"}, tool_call_id="c1"),
                ToolCallPart("lookup", '{"project": "borealis"}', tool_call_id="c2"),
            ],
            model_name="claude",
        ),
        ModelRequest(
            parts=[
                ToolReturnPart("lookup", {"ships": "3 March"}, tool_call_id="c1"),
                ToolReturnPart(
                    "lookup",
                    "unknown project",
                    tool_call_id="c2",
                    outcome="retried",
                    retry=RetryInfo(cause="model_retry"),
                ),
            ]
        ),
        ModelResponse(parts=[TextPart("Atlas ships on 3 March.")]),
        ModelRequest(
            parts=[RetryFeedbackPart("Answer in French.", retry=RetryInfo(cause="model_retry"))]
        ),
        ModelResponse(
            parts=[
                ThinkingPart(
                    "", id="redacted_thinking", signature="opaque", provider_name="anthropic"
                ),
                NativeToolCallPart("web_search", {"query": "atlas"}, tool_call_id="s1"),
                NativeToolReturnPart("web_search", [{"title": "Atlas"}], tool_call_id="s1"),
                TextPart("Atlas sort le 3 mars."),
            ]
        ),
        ModelRequest(
            parts=[
                UserPromptPart(
                    [
                        "Compare with this chart",
                        TextContent("and this note", metadata={"from": "app"}),
                        ImageUrl("https://example.com/chart.png"),
                        BinaryContent(PNG, media_type="image/png"),
                        DocumentUrl("https://example.com/spec.pdf"),
                        CachePoint(),
                    ]
                )
            ]
        ),
        ModelResponse(parts=[]),
    ]


def test_every_message_comes_back_as_the_same_object() -> None:
    history = _history()
    converted = to_membrane(history)
    back = from_membrane(converted.messages, converted)
    assert len(back) == len(history)
    assert all(a is b for a, b in zip(back, history, strict=True))


def test_each_part_becomes_the_chat_message_the_model_reads() -> None:
    chat = [{k: v for k, v in m.items() if k != REF_KEY} for m in to_membrane(_history()).messages]
    assert chat[0] == {"role": "system", "content": "Be brief."}
    assert chat[1] == {"role": "user", "content": "Status of atlas?"}
    assert chat[2] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "I should look it up.", "signature": "sig-1"},
            {"type": "text", "text": "Looking."},
        ],
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"project":"atlas"}'},
            },
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"project":"borealis"}'},
            },
        ],
    }
    assert chat[3] == {"role": "tool", "tool_call_id": "c1", "content": '{"ships":"3 March"}'}
    assert chat[4] == {
        "role": "tool",
        "tool_call_id": "c2",
        "content": '{"error":"unknown project"}',
    }
    assert chat[5] == {"role": "assistant", "content": "Atlas ships on 3 March."}
    assert chat[6]["role"] == "system" and "Answer in French." in chat[6]["content"]
    assert chat[7]["content"][0] == {"type": "redacted_thinking", "data": "opaque"}
    assert chat[7]["content"][1] == {
        "type": "server_tool_use",
        "id": "s1",
        "name": "web_search",
        "input": {"query": "atlas"},
    }
    assert chat[7]["content"][2]["type"] == "server_tool_result"
    assert chat[8]["content"] == [
        {"type": "text", "text": "Compare with this chart"},
        {"type": "text", "text": "and this note"},
        {"type": "image_url", "image_url": {"url": "https://example.com/chart.png"}},
        {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAAAAAAAAAAAAAAAAAAAA"},
        },
        {"type": "file", "url": "https://example.com/spec.pdf"},
    ]
    assert chat[9] == {"role": "assistant", "content": ""}
    assert len(chat) == 10


def test_chat_form_matches_what_pydantic_ai_sends_openai() -> None:
    """For text and tool parts, Membrane reads exactly PydanticAI's own OpenAI chat messages."""
    history: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart("Be brief."), UserPromptPart("Status?")]),
        ModelResponse(
            parts=[
                TextPart("One"),
                TextPart("two"),
                ToolCallPart("lookup", {"p": 1}, tool_call_id="c1"),
            ]
        ),
        ModelRequest(parts=[ToolReturnPart("lookup", {"ok": True}, tool_call_id="c1")]),
        ModelResponse(parts=[TextPart("Done.")]),
        ModelRequest(parts=[UserPromptPart("Next?")]),
    ]
    model = OpenAIChatModel("gpt-4o", provider=OpenAIProvider(api_key="unused"))
    sent = asyncio.run(model._map_messages(history, ModelRequestParameters()))
    chat = [{k: v for k, v in m.items() if k != REF_KEY} for m in to_membrane(history).messages]
    assert chat == sent


def test_cut_history_keeps_the_rest_of_each_message() -> None:
    history = _history()
    converted = to_membrane(history)
    # Drop the second tool result: its request comes back with the first one only.
    kept = [m for m in converted.messages if m.get("tool_call_id") != "c2"]
    back = from_membrane(kept, converted)
    assert back[2] is not history[2]
    assert back[2].parts == [history[2].parts[0]]
    assert back[2].parts[0] is history[2].parts[0]
    assert back[2].timestamp == history[2].timestamp
    assert [m for i, m in enumerate(back) if i != 2] == [m for i, m in enumerate(history) if i != 2]


def test_a_dropped_system_prompt_leaves_the_user_prompt_in_its_request() -> None:
    history = _history()
    converted = to_membrane(history)
    back = from_membrane(converted.messages[1:], converted)
    assert back[0].parts == [history[0].parts[1]]
    assert back[0].instructions == "Cite as [Mem:N]." and back[0].run_id == "run-1"
    assert all(a is b for a, b in zip(back[1:], history[1:], strict=True))


def test_a_stubbed_tool_result_stays_the_return_part_of_its_call() -> None:
    history = _history()
    converted = to_membrane(history)
    chat = [dict(m) for m in converted.messages]
    chat[3]["content"] = "[tool result cut: 1,050 tokens]"
    back = from_membrane(chat, converted)
    part = back[2].parts[0]
    assert isinstance(part, ToolReturnPart)
    assert part.content == "[tool result cut: 1,050 tokens]"
    assert (part.tool_call_id, part.tool_name, part.timestamp) == (
        "c1",
        "lookup",
        history[2].parts[0].timestamp,
    )
    assert back[2].parts[1] is history[2].parts[1]
    assert history[2].parts[0].content == {"ships": "3 March"}  # the stored part is untouched


def test_membranes_final_message_takes_the_place_of_the_question() -> None:
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("Status?")], instructions="rules", run_id="r"),
        ModelResponse(parts=[ToolCallPart("lookup", {}, tool_call_id="c1")]),
        ModelRequest(parts=[ToolReturnPart("lookup", "fine", tool_call_id="c1")]),
    ]
    converted = to_membrane(history)
    final = {"role": "user", "content": "[Mem:1] a memory\n\nStatus?"}
    back = from_membrane([final, *converted.messages[1:]], converted)
    question = back[0].parts[0]
    assert isinstance(question, UserPromptPart)
    assert question.content == "[Mem:1] a memory\n\nStatus?"
    assert question.timestamp == history[0].parts[0].timestamp
    assert (back[0].instructions, back[0].run_id) == ("rules", "r")
    assert back[1] is history[1] and back[2] is history[2]
    assert history[0].parts[0].content == "Status?"


def test_the_final_message_keeps_the_questions_images() -> None:
    image = BinaryContent(PNG, media_type="image/png")
    history: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(["What is this?", image])])]
    converted = to_membrane(history)
    content = [{"type": "text", "text": "[Mem:1] m"}, *converted.messages[0]["content"]]
    back = from_membrane([{"role": "user", "content": content}], converted)
    assert back[0].parts[0].content == ["[Mem:1] m", "What is this?", image]
    assert back[0].parts[0].content[2] is image


def test_parts_with_no_chat_form_travel_with_their_neighbour() -> None:
    delta = ToolAvailabilityDeltaPart(tools_added=["search"])
    history: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart("Be brief."), delta, UserPromptPart("Hi")]),
        ModelResponse(parts=[TextPart("Hello.")]),
        ModelRequest(parts=[UserPromptPart("Next"), ToolAvailabilityDeltaPart(tools_added=["x"])]),
        ModelRequest(parts=[ToolAvailabilityDeltaPart(tools_added=["y"])]),
    ]
    converted = to_membrane(history)
    assert [m["role"] for m in converted.messages] == ["system", "user", "assistant", "user"]
    # The delta rides with the user prompt after the system prompt, which Membrane replaces.
    _, refs = converted.origins[converted.messages[1][REF_KEY]]
    assert refs == ((0, 1), (0, 2))
    # The last request has nothing to send: it rides with the message before it.
    _, refs = converted.origins[converted.messages[3][REF_KEY]]
    assert refs == ((2, 0), (2, 1), (3, 0))
    back = from_membrane(converted.messages, converted)
    assert all(a is b for a, b in zip(back, history, strict=True))
    without_system = from_membrane(converted.messages[1:], converted)
    assert without_system[0].parts == [delta, history[0].parts[2]]
    # A changed question keeps the parts that travel with it.
    final = {"role": "user", "content": "[Mem:1] m\n\nNext"}
    back = from_membrane([*converted.messages[1:3], final], converted)
    assert back[2].parts[0].content == "[Mem:1] m\n\nNext"
    assert back[2].parts[1] is history[2].parts[1]
    assert back[3] is history[3]


def test_a_response_compaction_starts_membranes_history() -> None:
    history: list[ModelMessage] = [
        ModelResponse(
            parts=[CompactionPart("Earlier: atlas ships in March.", provider_name="anthropic")]
        ),
        ModelRequest(parts=[UserPromptPart("And borealis?")]),
    ]
    converted = to_membrane(history)
    assert converted.messages[0]["content"] == [
        {"type": "compaction", "content": "Earlier: atlas ships in March."}
    ]
    assert from_membrane(converted.messages, converted)[0] is history[0]


def test_the_deprecated_retry_prompt_reads_as_its_two_successors() -> None:
    with pytest.warns(PydanticAIDeprecationWarning):
        to_call = RetryPromptPart("bad args", tool_name="lookup", tool_call_id="c9")
        to_none = RetryPromptPart("bad output")
    chat = to_membrane([ModelRequest(parts=[to_call, to_none])]).messages
    assert chat[0]["role"] == "tool" and chat[0]["tool_call_id"] == "c9"
    assert chat[1]["role"] == "system" and "bad output" in chat[1]["content"]


def test_plain_chat_messages_become_pydantic_ai_messages() -> None:
    chat: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look"},
                {"type": "image_url", "image_url": {"url": "https://x/a.png"}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hm", "signature": "s"},
                {"type": "text", "text": "Checking."},
            ],
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"p":1}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "fine"},
        {"role": "assistant", "content": "All fine."},
    ]
    back = from_membrane(chat)
    assert [type(m) for m in back] == [ModelRequest, ModelResponse, ModelRequest, ModelResponse]
    assert back[0].parts[0] == replace(
        SystemPromptPart("Be brief."), timestamp=back[0].parts[0].timestamp
    )
    assert back[0].parts[1].content == ["Look", ImageUrl("https://x/a.png")]
    thinking, text, call = back[1].parts
    assert (thinking.content, thinking.signature, thinking.provider_name) == (
        "hm",
        "s",
        "anthropic",
    )
    assert text.content == "Checking."
    assert (call.tool_name, call.args, call.tool_call_id) == ("lookup", '{"p":1}', "c1")
    result = back[2].parts[0]
    assert (result.tool_name, result.content, result.tool_call_id) == ("lookup", "fine", "c1")
    again = [{k: v for k, v in m.items() if k != REF_KEY} for m in to_membrane(back).messages]
    assert again == chat


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ("not a list", "messages"),
        ([{"role": "user", "content": "hi"}], "messages[0]"),
    ],
)
def test_to_membrane_refuses_what_is_not_a_model_message_list(given: Any, field: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        to_membrane(given)
    assert caught.value.field == field


def test_from_membrane_refuses_a_block_it_cannot_rebuild() -> None:
    with pytest.raises(InvalidInputError, match="'file' part") as caught:
        from_membrane([{"role": "user", "content": [{"type": "file", "url": "https://x/a.pdf"}]}])
    assert caught.value.field == "messages[0].content[0]"
    with pytest.raises(InvalidInputError, match="role 'robot'"):
        from_membrane([{"role": "robot", "content": "beep"}])


def test_a_changed_assistant_message_is_rebuilt_in_its_own_response() -> None:
    marker = CachePoint()
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart(["Hi", marker])]),
        ModelResponse(parts=[TextPart("Hello there.")], model_name="m1"),
    ]
    converted = to_membrane(history)
    chat = [dict(m) for m in converted.messages]
    chat[1]["content"] = "Hello."
    back = from_membrane(chat, converted)
    assert back[0] is history[0]
    assert isinstance(back[1], ModelResponse) and back[1].model_name == "m1"
    assert back[1].parts == [TextPart("Hello.")]
    assert history[1].parts == [TextPart("Hello there.")]
