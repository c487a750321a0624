"""LlamaIndex ChatMessage <-> Membrane chat dicts: the chat form, and the way back."""

from __future__ import annotations

import base64
from typing import Any

import pytest

pytest.importorskip(
    "llama_index.core",
    reason="llama-index-core is not installed: pip install -e '.[llamaindex]'",
)

from llama_index.core.base.llms.types import (
    AudioBlock,
    CacheControl,
    CachePoint,
    CitableBlock,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.llms import ChatMessage

from membrane.adapters.llamaindex import (
    SOURCE_KEY,
    from_llamaindex_messages,
    to_llamaindex_messages,
)
from membrane.errors import InvalidInputError
from membrane.messages import group_units, message_text, normalize_messages

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def _result(call_id: str, text: str) -> ChatMessage:
    return ChatMessage(role="tool", content=text, additional_kwargs={"tool_call_id": call_id})


def _agent_turn() -> list[ChatMessage]:
    """One tool-calling turn as FunctionAgent and 0.14's integrations store it."""
    return [
        ChatMessage(role="user", content="When does atlas ship?"),
        ChatMessage(
            role="assistant",
            blocks=[
                ThinkingBlock(content="Look it up.", additional_information={"signature": "s-1"}),
                TextBlock(text="Checking."),
                ToolCallBlock(
                    tool_call_id="c1", tool_name="lookup", tool_kwargs={"project": "atlas"}
                ),
                ToolCallBlock(
                    tool_call_id="c2", tool_name="lookup", tool_kwargs={"project": "cinder"}
                ),
            ],
        ),
        _result("c1", "atlas: 4 March"),
        _result("c2", "cinder: 5 March"),
        ChatMessage(role="assistant", content="4 March [Mem:1]."),
    ]


def _without_source(dicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in d.items() if k != SOURCE_KEY} for d in dicts]


def test_a_tool_turn_reads_as_openai_chat_with_calls_results_and_thinking() -> None:
    assert _without_source(from_llamaindex_messages(_agent_turn())) == [
        {"role": "user", "content": "When does atlas ship?"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Look it up.", "signature": "s-1"},
                {"type": "text", "text": "Checking."},
            ],
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"project": "atlas"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"project": "cinder"}'},
                },
            ],
        },
        {"role": "tool", "content": "atlas: 4 March", "tool_call_id": "c1"},
        {"role": "tool", "content": "cinder: 5 March", "tool_call_id": "c2"},
        {"role": "assistant", "content": "4 March [Mem:1]."},
    ]


def test_membrane_reads_the_chat_form_and_pairs_the_calls() -> None:
    dicts = from_llamaindex_messages(_agent_turn())
    units = group_units(dicts)
    assert [(u.start, u.stop) for u in units] == [(0, 1), (1, 4), (4, 5)]
    parts = normalize_messages(dicts)
    assert [type(p).__name__ for p in parts[1].parts] == ["Opaque", "Text", "ToolCall", "ToolCall"]
    assert "Look it up." in message_text(dicts[1])  # reasoning sent back is counted


def test_the_way_back_gives_the_very_messages_for_dicts_left_as_read() -> None:
    messages = _agent_turn()
    back = to_llamaindex_messages(from_llamaindex_messages(messages))
    assert all(a is b for a, b in zip(back, messages, strict=True))


def test_what_has_no_chat_form_still_reaches_the_llm_unchanged() -> None:
    message = ChatMessage(
        role="chatbot",
        blocks=[
            TextBlock(text="See the clip."),
            AudioBlock(audio=b"RIFF....", format="wav"),
            CachePoint(cache_control=CacheControl(type="ephemeral")),
        ],
        additional_kwargs={"session_id": "s-1", "logprobs": [0.1]},
    )
    (read,) = from_llamaindex_messages([message])
    assert read["role"] == "assistant"
    assert read["content"] == [
        {"type": "text", "text": "See the clip."},
        {"type": "llamaindex_block", "block_type": "audio"},
    ]
    assert to_llamaindex_messages([read])[0] is message


@pytest.mark.parametrize(
    "message",
    [
        ChatMessage(role="system", content="Rules."),
        ChatMessage(role="developer", content="Be brief."),
        ChatMessage(role="user", content=""),
        ChatMessage(role="user", blocks=[TextBlock(text="a"), TextBlock(text="b")]),
        ChatMessage(
            role="user",
            blocks=[
                TextBlock(text="What is this?"),
                ImageBlock(url="https://x.org/a.png", detail="low"),
            ],
        ),
        ChatMessage(role="user", blocks=[ImageBlock(image=PNG, image_mimetype="image/png")]),
        *_agent_turn(),
    ],
    ids=lambda m: f"{m.role.value}-{len(m.blocks)}",
)
def test_a_dict_built_from_its_chat_form_alone_equals_the_message(message: ChatMessage) -> None:
    (read,) = _without_source(from_llamaindex_messages([message]))
    (built,) = to_llamaindex_messages([read])
    assert built is not message
    assert built == message


def test_arguments_kept_as_text_are_sent_as_that_text() -> None:
    # 0.14 may keep a call's arguments as the JSON text the model streamed
    message = ChatMessage(
        role="assistant",
        blocks=[ToolCallBlock(tool_call_id="c1", tool_name="f", tool_kwargs='{"a":1}')],
    )
    (read,) = from_llamaindex_messages([message])
    assert read["tool_calls"][0]["function"]["arguments"] == '{"a":1}'
    assert to_llamaindex_messages([read])[0] is message
    (built,) = to_llamaindex_messages(_without_source([read]))
    assert built.blocks == [ToolCallBlock(tool_call_id="c1", tool_name="f", tool_kwargs={"a": 1})]


def test_an_inline_image_becomes_a_data_url() -> None:
    (read,) = from_llamaindex_messages([ChatMessage(role="user", blocks=[ImageBlock(image=PNG)])])
    url = read["content"][0]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == PNG


def test_tool_calls_kept_in_additional_kwargs_are_read_in_openai_and_anthropic_forms() -> None:
    openai_style = ChatMessage(
        role="assistant",
        content="",
        additional_kwargs={
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"project":"atlas"}'},
                }
            ]
        },
    )
    anthropic_style = ChatMessage(
        role="assistant",
        content="",
        additional_kwargs={
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "name": "lookup",
                    "input": {"project": "atlas"},
                    "type": "tool_use",
                }
            ]
        },
    )
    calls = [d["tool_calls"] for d in from_llamaindex_messages([openai_style, anthropic_style])]
    assert calls == [
        [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"project":"atlas"}'},
            }
        ],
        [
            {
                "id": "toolu_1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"project": "atlas"}'},
            }
        ],
    ]


def test_calls_in_blocks_and_in_additional_kwargs_are_not_counted_twice() -> None:
    both = ChatMessage(
        role="assistant",
        blocks=[ToolCallBlock(tool_call_id="c1", tool_name="lookup", tool_kwargs={})],
        additional_kwargs={
            "tool_calls": [{"id": "c1", "function": {"name": "lookup", "arguments": "{}"}}]
        },
    )
    (read,) = from_llamaindex_messages([both])
    assert [c["id"] for c in read["tool_calls"]] == ["c1"]


def test_a_built_call_takes_the_0_14_block_form() -> None:
    (built,) = to_llamaindex_messages(
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c9", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            }
        ]
    )
    assert built.blocks == [ToolCallBlock(tool_call_id="c9", tool_name="f", tool_kwargs={})]
    assert built.additional_kwargs == {}


def test_an_edited_dict_is_built_anew_from_what_it_now_says() -> None:
    messages = _agent_turn()
    dicts = from_llamaindex_messages(messages)
    dicts[2]["content"] = "[lookup result cut: 1,050 tokens]"
    back = to_llamaindex_messages(dicts)
    assert back[2] is not messages[2]
    assert back[2].content == "[lookup result cut: 1,050 tokens]"
    assert back[2].additional_kwargs == {"tool_call_id": "c1"}
    assert back[2].role.value == "tool"


def test_citable_text_is_counted() -> None:
    message = ChatMessage(
        role="user",
        blocks=[CitableBlock(title="Handbook", source="hb", content=[TextBlock(text="30 days.")])],
    )
    (read,) = from_llamaindex_messages([message])
    assert message_text(read) == "30 days."


def test_something_else_than_a_chat_message_is_refused() -> None:
    with pytest.raises(InvalidInputError, match=r"messages\[1\] must be a llama_index ChatMessage"):
        from_llamaindex_messages([ChatMessage(content="ok"), {"role": "user", "content": "x"}])  # type: ignore[list-item]
