"""openai_request and openai_responses_request through the official openai client."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import openai
import pytest

from membrane import openai_request, openai_responses_request
from tests.providers.sdk.cases import HISTORY, PNG_DATA_URL, compiled, five_breakpoints
from tests.providers.sdk.routes import REPLY_TEXT, openai_chat_route, openai_responses_route
from tests.providers.sdk.sdk_calls import (
    send_openai_chat,
    send_openai_messages,
    send_openai_responses,
)
from tests.providers.sdk.stub import Stub, running_stub


@pytest.fixture(scope="module")
def stub() -> Iterator[Stub]:
    with running_stub([openai_chat_route(), openai_responses_route()]) as server:
        yield server


@pytest.fixture
def client(stub: Stub) -> Iterator[openai.OpenAI]:
    stub.received.clear()
    with openai.OpenAI(base_url=f"{stub.base_url}/v1", api_key="test", max_retries=0) as c:
        yield c
    assert stub.errors() == []


def test_result_messages_go_to_chat_completions_as_they_are(
    stub: Stub, client: openai.OpenAI
) -> None:
    result = compiled("openai/gpt-4.1")
    reply = send_openai_messages(client, result)
    assert reply.choices[0].message.content == REPLY_TEXT
    (body,) = stub.bodies("/chat/completions")
    assert body["messages"] == result.messages
    # The history's speaker names, tool calls and image part arrive untouched.
    sent_history = [m for m in body["messages"] if m in HISTORY]
    assert sent_history == HISTORY


def test_openai_request_names_the_model_from_the_map(stub: Stub, client: openai.OpenAI) -> None:
    result = compiled("openai/gpt-4.1")
    request = openai_request(result, prompt_cache_key="conv-7")
    assert request["model"] == "gpt-4.1"
    send_openai_chat(client, result)
    (body,) = stub.bodies("/chat/completions")
    assert body == request


def test_a_caller_model_wins_and_an_unknown_model_is_not_guessed(
    stub: Stub, client: openai.OpenAI
) -> None:
    send_openai_chat(client, compiled("openai/gpt-4.1"), model="gpt-4.1-2025-04-14")
    assert stub.bodies("/chat/completions")[-1]["model"] == "gpt-4.1-2025-04-14"
    unknown = compiled("acme/model-x")
    assert "model" not in openai_request(unknown)


def test_responses_request_round_trip(stub: Stub, client: openai.OpenAI) -> None:
    result = compiled("openai/gpt-5.1")
    reply = send_openai_responses(client, result)
    assert reply.output_text == REPLY_TEXT
    (body,) = stub.bodies("/responses")
    assert body == openai_responses_request(result)
    assert body["model"] == "gpt-5.1"
    items = body["input"]
    assert items[0]["role"] == "system" and items[0]["content"] == result.messages[0]["content"]
    calls = [i for i in items if i.get("type") == "function_call"]
    outputs = [i for i in items if i.get("type") == "function_call_output"]
    assert [c["call_id"] for c in calls] == ["call_1001", "call_1002"]
    assert [o["call_id"] for o in outputs] == ["call_1001", "call_1002"]
    assert outputs[0]["output"] == '{"status": "shipped"}'
    # Named speakers: the Responses API has no name field, so the name labels the text.
    texts = [i["content"] for i in items if i.get("role") == "user"]
    assert "ada: Where is order A-1001?" in texts
    assert "bo: And can you check A-1002 as well?" in texts
    image_message = next(t for t in texts if isinstance(t, list))
    assert image_message == [
        {"type": "input_text", "text": "ada: Here is the label on the box."},
        {"type": "input_image", "image_url": PNG_DATA_URL, "detail": "auto"},
    ]
    # Every message keeps its place: the items follow the compiled order.
    assert items[-1]["content"] == result.messages[-1]["content"]


def test_responses_request_keeps_string_content_whole_across_cache_cuts(
    stub: Stub, client: openai.OpenAI
) -> None:
    result = five_breakpoints("openai/gpt-5.1")
    send_openai_responses(client, result)
    (body,) = stub.bodies("/responses")
    assert [i["content"] for i in body["input"]] == [m["content"] for m in result.messages]


def test_the_result_is_not_changed_by_the_builders() -> None:
    result = compiled("openai/gpt-4.1")
    before = copy.deepcopy(result.messages)
    openai_request(result)["messages"][0]["content"] = "edited"
    openai_responses_request(result)
    assert result.messages == before


@pytest.mark.parametrize("model", ["o3", "gpt-5.1", "gpt-6.2-sol"])
def test_reasoning_models_get_no_cap_unless_asked(
    stub: Stub, client: openai.OpenAI, model: str
) -> None:
    # The default reserve keeps room in the window, but a cap the caller did not choose would
    # count the model's reasoning against it and cut long thinks short.
    result = compiled(f"openai/{model}")
    send_openai_chat(client, result)
    send_openai_responses(client, result)
    chat, responses = stub.bodies("/chat/completions"), stub.bodies("/responses")
    assert chat[0]["model"] == responses[0]["model"] == model
    assert "max_completion_tokens" not in chat[0] and "max_tokens" not in chat[0]
    assert "max_output_tokens" not in responses[0]
    assert result.metadata["reserve_output_tokens"] == 25_000
