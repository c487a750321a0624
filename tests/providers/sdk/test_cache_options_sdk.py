"""Provider caching options, checked by each official SDK's request types on the way out.

OpenAI (3.63.0): explicit ``prompt_cache_breakpoint`` markers for GPT-5.6 and later, three in
the default implicit mode and four with ``prompt_cache_options={"mode": "explicit"}``.
Anthropic (2.17.0): the top-level ``cache_control`` and ``context_management``, with Membrane's
own markers kept so that all of them together stay within four.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from membrane import anthropic_request, openai_request, openai_responses_request
from membrane.errors import InvalidInputError
from tests.providers.sdk.cases import compiled, five_breakpoints
from tests.providers.sdk.routes import (
    anthropic_beta_route,
    openai_chat_route,
    openai_responses_route,
)
from tests.providers.sdk.stub import Stub, running_stub

MARK = {"mode": "explicit"}


def _marked_parts(messages: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [
        (i, j)
        for i, m in enumerate(messages)
        if isinstance(m.get("content"), list)
        for j, part in enumerate(m["content"])
        if "prompt_cache_breakpoint" in part
    ]


@pytest.fixture(scope="module")
def openai_stub() -> Iterator[Stub]:
    with running_stub([openai_chat_route(), openai_responses_route()]) as server:
        yield server


@pytest.fixture
def client(openai_stub: Stub) -> Iterator[openai.OpenAI]:
    openai_stub.received.clear()
    with openai.OpenAI(base_url=f"{openai_stub.base_url}/v1", api_key="t", max_retries=0) as c:
        yield c
    assert openai_stub.errors() == []


@pytest.mark.parametrize(("options", "limit"), [(None, 3), ({"mode": "explicit"}, 4)])
def test_chat_marks_the_longest_prefixes(
    openai_stub: Stub, client: openai.OpenAI, options: Any, limit: int
) -> None:
    result = five_breakpoints("openai/gpt-5.6-sol")
    extra = {} if options is None else {"prompt_cache_options": options}
    client.chat.completions.create(**openai_request(result, **extra))
    (body,) = openai_stub.bodies("/chat/completions")
    marked = _marked_parts(body["messages"])
    # Five prefixes end at messages 0, 2, 4, 6 and 8; the longest ones get the markers.
    assert [i for i, _ in marked] == [0, 2, 4, 6, 8][-limit:]
    for i, m in enumerate(body["messages"]):
        text = "".join(p["text"] for p in m["content"]) if i in dict(marked) else m["content"]
        assert text == result.messages[i]["content"]  # the same text, in parts
        if i in dict(marked):
            assert m["content"][-1]["prompt_cache_breakpoint"] == MARK


@pytest.mark.parametrize(("options", "limit"), [(None, 3), ({"mode": "explicit"}, 4)])
def test_responses_moves_a_prefix_that_ends_on_an_answer_back(
    openai_stub: Stub, client: openai.OpenAI, options: Any, limit: int
) -> None:
    result = five_breakpoints("openai/gpt-5.6-sol")
    extra = {} if options is None else {"prompt_cache_options": options}
    client.responses.create(**openai_responses_request(result, **extra))
    (body,) = openai_stub.bodies("/responses")
    marked = _marked_parts(body["input"])
    # Assistant text is output_text, which takes no marker: the prefix ends a message earlier.
    assert [i for i, _ in marked] == [0, 1, 3, 5, 7][-limit:]
    assert all(body["input"][i]["role"] != "assistant" for i, _ in marked)
    assert body.get("prompt_cache_options") == options


def test_only_models_that_take_breakpoints_get_them_by_default(
    openai_stub: Stub, client: openai.OpenAI
) -> None:
    older = compiled("openai/gpt-5.1")
    assert _marked_parts(openai_request(older)["messages"]) == []
    assert _marked_parts(openai_responses_request(older)["input"]) == []
    forced = openai_request(older, cache_breakpoints=True)
    assert _marked_parts(forced["messages"]) != []
    client.chat.completions.create(**forced)
    newer = compiled("openai/gpt-6.1-sol")
    assert _marked_parts(openai_request(newer)["messages"]) != []
    assert _marked_parts(openai_request(newer, cache_breakpoints=False)["messages"]) == []
    with pytest.raises(InvalidInputError) as caught:
        openai_request(newer, cache_breakpoints="yes")  # type: ignore[arg-type]
    assert caught.value.field == "cache_breakpoints"


def test_a_real_compile_with_tools_and_images_goes_through_both_apis(
    openai_stub: Stub, client: openai.OpenAI
) -> None:
    result = compiled("openai/gpt-5.6-sol")
    client.chat.completions.create(**openai_request(result))
    client.responses.create(**openai_responses_request(result))
    (chat,) = openai_stub.bodies("/chat/completions")
    (responses,) = openai_stub.bodies("/responses")
    assert _marked_parts(chat["messages"])[0] == (0, 0)  # the rules' end
    assert len(_marked_parts(responses["input"])) == 2


# ---------------------------------------------------------------- Anthropic


@pytest.fixture(scope="module")
def beta_stub() -> Iterator[Stub]:
    with running_stub([anthropic_beta_route()]) as server:
        yield server


def _markers(body: dict[str, Any]) -> int:
    blocks = [*body.get("system", []), *body.get("tools", [])]
    blocks += [b for m in body["messages"] for b in m["content"]]
    return sum("cache_control" in b for b in blocks) + ("cache_control" in body)


def test_top_level_cache_control_takes_one_of_the_four_places(beta_stub: Stub) -> None:
    result = five_breakpoints("anthropic/claude-sonnet-5-5")
    assert _markers(anthropic_request(result, max_tokens=64)) == 4
    edits = [
        {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": 30000},
            "clear_at_least": {"type": "input_tokens", "value": 5000},
        }
    ]
    request = anthropic_request(
        result, "1h", max_tokens=64, cache_control=True, context_management={"edits": edits}
    )
    assert request["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert _markers(request) == 4  # three of Membrane's and the top-level one
    with anthropic.Anthropic(base_url=beta_stub.base_url, api_key="t", max_retries=0) as c:
        c.beta.messages.create(betas=["context-management-2025-06-27"], **request)
    assert beta_stub.errors() == []
    (body,) = beta_stub.bodies("/v1/messages")
    assert body["context_management"] == {"edits": edits}
    assert json.dumps(body["messages"]) == json.dumps(request["messages"])


def test_anthropic_options_are_checked() -> None:
    result = five_breakpoints("anthropic/claude-sonnet-5-5")
    with pytest.raises(InvalidInputError) as caught:
        anthropic_request(result, cache_control="yes")  # type: ignore[arg-type]
    assert caught.value.field == "cache_control"
    with pytest.raises(InvalidInputError) as caught:
        anthropic_request(result, context_management=["clear"])  # type: ignore[arg-type]
    assert caught.value.field == "context_management"
