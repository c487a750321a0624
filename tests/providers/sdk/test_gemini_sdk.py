"""gemini_request through the official google-genai client, checked against its own types."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from google import genai
from google.genai import types

from membrane import gemini_request
from tests.providers.sdk.cases import PNG_B64, compiled, five_breakpoints
from tests.providers.sdk.routes import REPLY_TEXT, USAGE, gemini_route
from tests.providers.sdk.sdk_calls import send_gemini
from tests.providers.sdk.stub import Stub, running_stub


def _camel(value: Any) -> Any:
    """Field names in camelCase (the API takes both spellings; the SDK sends some snake_case)."""
    if isinstance(value, list):
        return [_camel(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        head, *rest = key.split("_")
        name = head + "".join(w.title() for w in rest)
        # Function arguments and responses are the caller's data: their keys stay as they are.
        out[name] = item if name in ("args", "response") else _camel(item)
    return out


@pytest.fixture(scope="module")
def stub() -> Iterator[Stub]:
    with running_stub([gemini_route()]) as server:
        yield server


@pytest.fixture
def client(stub: Stub) -> Iterator[genai.Client]:
    stub.received.clear()
    options = types.HttpOptions(base_url=stub.base_url, retry_options=None)
    c = genai.Client(api_key="test", http_options=options)
    yield c
    c.close()
    assert stub.errors() == []


def test_tools_images_and_names(stub: Stub, client: genai.Client) -> None:
    result = compiled("google/gemini-2.5-pro")
    reply = send_gemini(client, result, "gemini-2.5-pro")
    assert reply.text == REPLY_TEXT
    assert reply.usage_metadata is not None
    assert reply.usage_metadata.cached_content_token_count == USAGE["cached"]
    (request,) = stub.received
    assert request.path.endswith("/models/gemini-2.5-pro:generateContent")
    body = request.body
    built = gemini_request(result)
    # What the SDK put on the wire is what the builder made (camelCase field names).
    assert _camel(body["contents"]) == built["contents"]
    assert _camel(body["systemInstruction"]["parts"]) == built["system_instruction"]["parts"]
    parts = [p for c in _camel(body["contents"]) for p in c["parts"]]
    calls = [p["functionCall"] for p in parts if "functionCall" in p]
    answers = [p["functionResponse"] for p in parts if "functionResponse" in p]
    assert [(c["id"], c["name"], c["args"]) for c in calls] == [
        ("call_1001", "order_status", {"order": "A-1001"}),
        ("call_1002", "order_status", {"order": "A-1002"}),
    ]
    assert answers[0]["response"] == {"status": "shipped"}
    assert answers[1]["response"] == {"output": "delayed: weather"}
    assert {"inlineData": {"mimeType": "image/png", "data": PNG_B64}} in parts
    texts = [p["text"] for p in parts if "text" in p]
    assert (
        "ada: Where is order A-1001?" in texts and "bo: And can you check A-1002 as well?" in texts
    )
    assert [c["role"] for c in body["contents"]][-1] == "user"


def test_thought_signatures_survive_the_sdk(stub: Stub, client: genai.Client) -> None:
    result = compiled("google/gemini-3-pro-preview")
    body = gemini_request(result, thought_signature_fallback="c2tpcF90aG91Z2h0X3NpZ25hdHVyZQ==")
    client.models.generate_content(
        model="gemini-3-pro-preview",
        contents=body["contents"],
        config=types.GenerateContentConfig(system_instruction=body["system_instruction"]),
    )
    (request,) = stub.received
    signed = [p for c in request.body["contents"] for p in c["parts"] if "thoughtSignature" in p]
    assert [p["thoughtSignature"] for p in signed] == ["c2tpcF90aG91Z2h0X3NpZ25hdHVyZQ=="]


def test_string_content_split_at_cache_cuts_arrives_whole(stub: Stub, client: genai.Client) -> None:
    result = five_breakpoints("google/gemini-2.5-flash")
    send_gemini(client, result, "gemini-2.5-flash")
    (request,) = stub.received
    texts = ["".join(p["text"] for p in c["parts"]) for c in request.body["contents"]]
    assert texts == [m["content"] for m in result.messages[1:]]
