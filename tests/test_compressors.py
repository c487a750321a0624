"""The bundled pre-flight compressors drive the real openai and anthropic SDK clients.

Each SDK talks to an httpx MockTransport: no socket is opened, and the handler sees the exact
request body the SDK would send.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from membrane import ContextCompiler, InvalidInputError, MemoryItem
from membrane.compressors import anthropic_compressor, openai_compressor

NOTES = [MemoryItem(id=f"n{i}", content=f"Note {i}: step {i} needs approval.") for i in range(12)]


class Recorder:
    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply
        self.requests: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append((request.url.path, json.loads(request.content)))
        return httpx.Response(200, json=self.reply)

    def v2(self, request: httpx2.Request) -> httpx2.Response:
        # anthropic's SDK runs on httpx2, the successor of httpx
        self.requests.append((request.url.path, json.loads(request.content)))
        return httpx2.Response(200, json=self.reply)


@pytest.fixture
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_PREFLIGHT_TOKEN_THRESHOLD", "20")
    monkeypatch.setenv("MEMORY_PREFLIGHT_TARGET_TOKENS", "64")


@pytest.mark.usefixtures("small_threshold")
async def test_openai_compressor_through_the_sdk() -> None:
    recorder = Recorder(
        {
            "id": "cc-1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "[Mem:3] step 3 needs approval."},
                }
            ],
        }
    )
    client = openai.AsyncOpenAI(
        api_key="test", http_client=httpx.AsyncClient(transport=httpx.MockTransport(recorder))
    )
    result = await ContextCompiler(4096).compile_async(
        NOTES, "Which step needs approval?", compress_async=openai_compressor(client)
    )
    ((path, body),) = recorder.requests
    assert path == "/v1/chat/completions"
    assert body["model"] == "gpt-4o-mini" and body["max_completion_tokens"] == 64
    assert "at most 64 tokens" in body["messages"][0]["content"]
    assert "[Mem:12] [fact]" in body["messages"][1]["content"]
    assert "Which step needs approval?" in body["messages"][1]["content"]
    assert "[Mem:3] step 3 needs approval." in str(result.messages[-1]["content"])
    assert result.ref_map == {3: "n2"}  # the tag the summary kept still maps to its record
    await client.close()


@pytest.mark.usefixtures("small_threshold")
async def test_anthropic_compressor_through_the_sdk() -> None:
    recorder = Recorder(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": "Step 3 needs approval."}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )
    client = anthropic.AsyncAnthropic(
        api_key="test", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(recorder.v2))
    )
    analyst = anthropic_compressor(client, model="claude-haiku-4-5")
    result = await ContextCompiler(4096).compile_async(NOTES, "Which?", compress_async=analyst)
    ((path, body),) = recorder.requests
    assert path == "/v1/messages"
    assert body["model"] == "claude-haiku-4-5" and body["max_tokens"] == 64
    assert "at most 64 tokens" in body["system"]
    assert body["messages"][0]["role"] == "user"
    assert "Step 3 needs approval." in str(result.messages[-1]["content"])
    await client.close()


def test_the_model_must_belong_to_the_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidInputError) as info:
        anthropic_compressor(object())  # PREFLIGHT_ANALYST_MODEL defaults to an OpenAI model
    assert info.value.field == "model"
    monkeypatch.setenv("PREFLIGHT_ANALYST_MODEL", "anthropic/claude-haiku-4-5")
    assert anthropic_compressor(object()).model == "claude-haiku-4-5"  # type: ignore[attr-defined]
