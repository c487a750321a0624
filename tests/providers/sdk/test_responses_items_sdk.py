"""Responses items as history, sent through the official openai client to the loopback stub.

The stub checks every body against the SDK's own ``ResponseCreateParamsNonStreaming``, with
unknown keys refused at every depth (``benchmarks/_sdk_types.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import openai
import pytest

from membrane import ContextCompiler, openai_request
from tests.messages.test_responses import ITEMS
from tests.providers.sdk.routes import REPLY_TEXT, openai_chat_route, openai_responses_route
from tests.providers.sdk.sdk_calls import send_openai_responses
from tests.providers.sdk.stub import Stub, running_stub


@pytest.fixture(scope="module")
def stub() -> Iterator[Stub]:
    with running_stub([openai_responses_route(), openai_chat_route()]) as server:
        yield server


@pytest.fixture
def client(stub: Stub) -> Iterator[openai.OpenAI]:
    stub.received.clear()
    with openai.OpenAI(base_url=f"{stub.base_url}/v1", api_key="test", max_retries=0) as c:
        yield c
    assert stub.errors() == []


def test_items_arrive_as_they_were_given(stub: Stub, client: openai.OpenAI) -> None:
    compiler = ContextCompiler(8000, model_id="openai/gpt-5.1", core_content="Be brief.")
    result = compiler.compile([], "And tomorrow?", conversation_messages=ITEMS)
    reply = send_openai_responses(client, result)
    assert reply.output_text == REPLY_TEXT
    (body,) = stub.bodies("/responses")
    assert json.dumps(body["input"][1:-1]) == json.dumps(ITEMS)


def test_the_chat_form_goes_to_chat_completions(stub: Stub, client: openai.OpenAI) -> None:
    portable = [i for i in ITEMS[:6]] + [ITEMS[7], ITEMS[10]]
    compiler = ContextCompiler(8000, model_id="openai/gpt-4.1")
    result = compiler.compile([], "And tomorrow?", conversation_messages=portable)
    client.chat.completions.create(**openai_request(result))
    (body,) = stub.bodies("/chat/completions")
    calls = body["messages"][2]["tool_calls"]
    assert [c["function"]["arguments"] for c in calls] == ['{"city": "Paris"}', '{"city": "Lagos"}']
    assert body["messages"][-2]["content"] == [{"type": "text", "text": "Thanks!"}]


def test_a_compaction_item_goes_first_and_as_it_came(stub: Stub, client: openai.OpenAI) -> None:
    compaction = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAABoQ3ByZXNz"}
    history = [{"role": "user", "content": "before the boundary"}, compaction, *ITEMS]
    compiler = ContextCompiler(8000, model_id="openai/gpt-5.1")
    result = compiler.compile([], "And tomorrow?", conversation_messages=history)
    assert result.metadata["compaction_boundary"] == 1
    send_openai_responses(client, result)
    (body,) = stub.bodies("/responses")
    assert json.dumps(body["input"][1:-1]) == json.dumps(history[1:])
    assert "before the boundary" not in json.dumps(body)
