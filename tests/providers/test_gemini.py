"""gemini_request."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given

from membrane.errors import InvalidInputError, ToolPairingError
from membrane.providers import gemini_request
from tests.providers.samples import FakeResult, anthropic_blocks, parallel_tools
from tests.strategies import conversations


def _result(history: list[dict[str, Any]]) -> FakeResult:
    messages = [{"role": "system", "content": "Rules."}, *history, {"role": "user", "content": "Q"}]
    return FakeResult(messages, {"memory_placement": "end", "model_id": "google/gemini-pro-1.5"})


def _call(call_id: str, name: str = "lookup", args: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def test_roles_and_system_instruction() -> None:
    request = gemini_request(parallel_tools())
    assert request["system_instruction"] == {
        "parts": [{"text": parallel_tools().messages[0]["content"]}]
    }
    assert [c["role"] for c in request["contents"]] == [
        "user",
        "model",
        "user",
        "model",
        "user",
        "model",
        "user",
    ]


def test_function_responses_are_named_after_their_call() -> None:
    request = gemini_request(parallel_tools())
    responses = [p["functionResponse"] for p in request["contents"][2]["parts"]]
    assert responses == [
        {
            "id": "call_a1001",
            "name": "order_status",
            "response": {"order": "A-1001", "status": "shipped", "eta": "Tuesday"},
        },
        {
            "id": "call_a1002",
            "name": "order_status",
            "response": {"output": "Order A-1002 is on hold."},
        },
    ]


def test_error_results_use_the_error_key() -> None:
    request = gemini_request(anthropic_blocks())
    response = request["contents"][2]["parts"][0]["functionResponse"]
    assert response == {
        "id": "toolu_01",
        "name": "refund_check",
        "response": {"error": "order system timeout"},
    }


def test_images() -> None:
    request = gemini_request(parallel_tools())
    assert request["contents"][4]["parts"][1]["inlineData"]["mimeType"] == "image/png"
    request = gemini_request(anthropic_blocks())
    assert request["contents"][4]["parts"][1] == {
        "fileData": {"fileUri": "https://example.com/photos/b77.jpg", "mimeType": "image/jpeg"}
    }


def test_thought_signatures() -> None:
    history = [
        {"role": "user", "content": "a"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [_call("c1"), {**_call("c2"), "thought_signature": "sig-own"}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
        {"role": "tool", "tool_call_id": "c2", "content": "y"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c3")]},
        {"role": "tool", "tool_call_id": "c3", "content": "z"},
    ]
    plain = gemini_request(_result(history))
    assert not any("thoughtSignature" in p for c in plain["contents"] for p in c["parts"][:1])
    signed = gemini_request(_result(history), thought_signature_fallback="skip")
    calls = [p for c in signed["contents"] for p in c["parts"] if "functionCall" in p]
    assert [p.get("thoughtSignature") for p in calls] == ["skip", "sig-own", "skip"]


def test_opaque_blocks_and_result_images_are_refused() -> None:
    thinking = [{"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]}]
    with pytest.raises(InvalidInputError, match="no Gemini equivalent"):
        gemini_request(_result(thinking))
    image_result = [
        {"role": "assistant", "content": None, "tool_calls": [_call("c1")]},
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": [{"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}],
        },
    ]
    with pytest.raises(InvalidInputError, match="JSON only"):
        gemini_request(_result(image_result))


def test_pairing_and_placement_are_checked() -> None:
    with pytest.raises(ToolPairingError):
        gemini_request(_result([{"role": "tool", "tool_call_id": "c", "content": "x"}]))
    result = parallel_tools()
    result.metadata["memory_placement"] = "system"
    with pytest.raises(InvalidInputError, match="memory_placement"):
        gemini_request(result)


@given(history=conversations(max_turns=12))
def test_any_valid_history_converts(history: list[dict[str, Any]]) -> None:
    request = gemini_request(_result(history))
    contents = request["contents"]
    assert all(a["role"] != b["role"] for a, b in itertools.pairwise(contents))
    calls = [p["functionCall"] for c in contents for p in c["parts"] if "functionCall" in p]
    answers = [
        p["functionResponse"] for c in contents for p in c["parts"] if "functionResponse" in p
    ]
    assert [(c["id"], c["name"]) for c in calls] == [(a["id"], a["name"]) for a in answers]
    assert all(isinstance(a["response"], dict) for a in answers)
