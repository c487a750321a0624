"""observe_usage fed the usage each official SDK parsed from a cache-hit reply.

Six turns per provider: each compile is sent through the SDK to the loopback stub (or botocore's
Stubber), whose reply bills ``ceil(counted * RATIO)`` prompt tokens, most of them read from the
cache. The SDK parses the reply into its own types; ``observe_usage`` gets that object.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import boto3
import openai
import pytest
from botocore.config import Config
from botocore.stub import Stubber
from google import genai
from google.genai import types as genai_types

from membrane import CompileResult, ContextCompiler, MemoryItem, bedrock_converse_request
from membrane.errors import InvalidInputError
from tests.providers.sdk.cases import RULES
from tests.providers.sdk.routes import (
    anthropic_route,
    gemini_route,
    openai_chat_route,
    openai_responses_route,
)
from tests.providers.sdk.sdk_calls import (
    send_anthropic,
    send_gemini,
    send_openai_chat,
    send_openai_responses,
)
from tests.providers.sdk.stub import Route, Stub, running_stub

TURNS = 6


class Billing:
    """The prompt the next reply bills: the whole, and how much of it the cache read/wrote."""

    def __init__(self) -> None:
        self.total = self.read = self.written = 0

    def set(self, result: CompileResult, ratio: float) -> None:
        self.total = math.ceil(result.report.sent_tokens * ratio)
        self.read = self.total * 4 // 5  # a cache hit: four fifths of the prompt read back
        self.written = self.total // 20
        assert self.read + self.written < self.total

    @property
    def fresh(self) -> int:
        return self.total - self.read - self.written


BILL = Billing()


def _usage_for(suffix: str) -> dict[str, Any]:
    b = BILL
    if suffix == "/chat/completions":
        return {
            "prompt_tokens": b.total,
            "completion_tokens": 7,
            "total_tokens": b.total + 7,
            "prompt_tokens_details": {"cached_tokens": b.read},
        }
    if suffix == "/responses":
        return {
            "input_tokens": b.total,
            "input_tokens_details": {"cached_tokens": b.read, "cache_write_tokens": b.written},
            "output_tokens": 7,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": b.total + 7,
        }
    if suffix == "/v1/messages":
        return {
            "input_tokens": b.fresh,
            "cache_read_input_tokens": b.read,
            "cache_creation_input_tokens": b.written,
            "output_tokens": 7,
        }
    return {
        "promptTokenCount": b.total,
        "cachedContentTokenCount": b.read,
        "candidatesTokenCount": 7,
        "totalTokenCount": b.total + 7,
    }


def _billing(route: Route) -> Route:
    def reply(body: Any) -> dict[str, Any]:
        out = route.reply(body)
        key = "usageMetadata" if route.suffix == ":generateContent" else "usage"
        out[key] = _usage_for(route.suffix)
        return out

    return Route(route.suffix, route.validate, reply)


@pytest.fixture(scope="module")
def stub() -> Iterator[Stub]:
    routes = [openai_chat_route(), openai_responses_route(), anthropic_route(), gemini_route()]
    with running_stub([_billing(r) for r in routes]) as server:
        yield server


def _turns(
    model_id: str, ratio: float, send: Callable[[CompileResult], Any]
) -> tuple[list[float], ContextCompiler]:
    compiler = ContextCompiler(max_tokens=60_000, model_id=model_id, core_content=RULES)
    history: list[dict[str, Any]] = []
    scales = []
    for turn in range(TURNS):
        question = f"Turn {turn}: where is order A-{1000 + turn} now?"
        result = compiler.compile(
            [MemoryItem(id="m1", content="Orders ship from Lagos.")],
            question,
            conversation_messages=history,
        )
        BILL.set(result, ratio)
        scales.append(compiler.observe_usage(result, send(result)))
        history += [
            {"role": "user", "content": question},
            {"role": "assistant", "content": f"A-{1000 + turn} left the warehouse."},
        ]
    return scales, compiler


def _check(scales: list[float], ratio: float) -> None:
    assert len(scales) == TURNS
    for scale in scales:
        assert ratio <= scale <= ratio + 0.2, (scales, ratio)


def test_openai_chat_usage(stub: Stub) -> None:
    with openai.OpenAI(base_url=f"{stub.base_url}/v1", api_key="t", max_retries=0) as client:
        scales, _ = _turns("openai/gpt-4.1", 1.07, lambda r: send_openai_chat(client, r))
    _check(scales, 1.07)
    assert stub.errors() == []


def test_openai_responses_usage(stub: Stub) -> None:
    with openai.OpenAI(base_url=f"{stub.base_url}/v1", api_key="t", max_retries=0) as client:
        # The Response object itself: observe_usage finds response.usage.
        scales, _ = _turns("openai/gpt-5.1", 1.12, lambda r: send_openai_responses(client, r))
    _check(scales, 1.12)
    assert stub.errors() == []


def test_anthropic_usage_adds_the_cache_reads_and_writes(stub: Stub) -> None:
    with anthropic.Anthropic(base_url=stub.base_url, api_key="t", max_retries=0) as client:
        replies: list[anthropic.types.Message] = []

        def send(result: CompileResult) -> anthropic.types.Usage:
            replies.append(send_anthropic(client, result, "claude-opus-5-5"))
            return replies[-1].usage

        scales, _ = _turns("anthropic/claude-opus-5-5", 1.31, send)
    _check(scales, 1.31)
    usage = replies[-1].usage
    assert usage.cache_read_input_tokens and usage.input_tokens < usage.cache_read_input_tokens
    assert stub.errors() == []


def test_gemini_usage(stub: Stub) -> None:
    options = genai_types.HttpOptions(base_url=stub.base_url, retry_options=None)
    client = genai.Client(api_key="t", http_options=options)
    try:
        scales, _ = _turns(
            "google/gemini-2.5-pro",
            1.12,
            lambda r: send_gemini(client, r, "gemini-2.5-pro").usage_metadata,
        )
    finally:
        client.close()
    _check(scales, 1.12)
    assert stub.errors() == []


def test_bedrock_usage() -> None:
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="t",
        aws_secret_access_key="t",
        config=Config(parameter_validation=True),
    )
    model = "us.anthropic.claude-opus-5-5-v1:0"

    def send(result: CompileResult) -> Any:
        kwargs = bedrock_converse_request(result, model_id=model, max_tokens=64)
        reply = {
            "output": {"message": {"role": "assistant", "content": [{"text": "Shipped."}]}},
            "stopReason": "end_turn",
            "usage": {
                "inputTokens": BILL.fresh,
                "outputTokens": 7,
                "totalTokens": BILL.total + 7,
                "cacheReadInputTokens": BILL.read,
                "cacheWriteInputTokens": BILL.written,
            },
            "metrics": {"latencyMs": 5},
        }
        # Stubber checks the reply against botocore's Converse output shape too.
        with Stubber(client) as stubber:
            stubber.add_response("converse", reply, kwargs)
            return client.converse(**kwargs)  # the whole response dict

    try:
        scales, _ = _turns("anthropic/claude-opus-5-5", 1.31, send)
    finally:
        client.close()
    _check(scales, 1.31)


def test_anthropic_bare_input_tokens_on_a_cache_hit_are_refused(stub: Stub) -> None:
    with anthropic.Anthropic(base_url=stub.base_url, api_key="t", max_retries=0) as client:
        compiler = ContextCompiler(60_000, model_id="anthropic/claude-opus-5-5", core_content=RULES)
        result = compiler.compile([], "Where is A-1000?")
        BILL.set(result, 1.31)
        reply = send_anthropic(client, result, "claude-opus-5-5")
    before = compiler.token_scale_for()
    with pytest.raises(InvalidInputError, match="observe_usage") as caught:
        compiler.observe(result, reply.usage.input_tokens)
    assert caught.value.field == "actual_prompt_tokens"
    assert compiler.token_scale_for() == before  # nothing was folded in
    # The same reply through observe_usage counts the whole prompt.
    assert compiler.observe_usage(result, reply) == 1.35
