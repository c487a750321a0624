"""bedrock_converse_request through boto3, checked by botocore against the service model."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ParamValidationError
from botocore.stub import Stubber

from membrane import bedrock_converse_request
from tests.providers.sdk.cases import PNG_B64, compiled, five_breakpoints
from tests.providers.sdk.sdk_calls import send_bedrock

MODEL = "us.anthropic.claude-opus-5-5-v1:0"
RESPONSE = {
    "output": {"message": {"role": "assistant", "content": [{"text": "The code is 4417."}]}},
    "stopReason": "end_turn",
    "usage": {
        "inputTokens": 30,
        "outputTokens": 7,
        "totalTokens": 1211,
        "cacheReadInputTokens": 1024,
        "cacheWriteInputTokens": 150,
    },
    "metrics": {"latencyMs": 5},
}


@pytest.fixture
def client() -> Iterator[Any]:
    c = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(parameter_validation=True),
    )
    yield c
    c.close()


@pytest.mark.parametrize("ttl", ["5m", "1h"])
def test_tools_images_names_and_both_ttls(client: Any, ttl: str) -> None:
    result = compiled("anthropic/claude-opus-5-5")
    kwargs = bedrock_converse_request(result, model_id=MODEL, ttl=ttl, max_tokens=64)
    expected = kwargs
    with Stubber(client) as stubber:
        stubber.add_response("converse", RESPONSE, expected)
        reply = send_bedrock(client, result, MODEL, ttl)
        stubber.assert_no_pending_responses()
    assert reply["usage"]["cacheReadInputTokens"] == 1024
    blocks = list(kwargs["system"]) + [b for m in kwargs["messages"] for b in m["content"]]
    points = [b["cachePoint"] for b in blocks if "cachePoint" in b]
    expected_point = {"type": "default"} if ttl == "5m" else {"type": "default", "ttl": "1h"}
    assert points and all(p == expected_point for p in points)
    uses = [b["toolUse"] for b in blocks if "toolUse" in b]
    assert [u["toolUseId"] for u in uses] == ["call_1001", "call_1002"]
    results = [b["toolResult"] for b in blocks if "toolResult" in b]
    assert [r["toolUseId"] for r in results] == ["call_1001", "call_1002"]
    images = [b["image"] for b in blocks if "image" in b]
    assert images == [{"format": "png", "source": {"bytes": base64.b64decode(PNG_B64)}}]
    texts = [b["text"] for b in blocks if "text" in b]
    assert (
        "ada: Where is order A-1001?" in texts and "bo: And can you check A-1002 as well?" in texts
    )


def test_a_request_at_four_cache_points(client: Any) -> None:
    result = five_breakpoints("anthropic/claude-sonnet-5-5")
    kwargs = bedrock_converse_request(result, model_id=MODEL, max_tokens=64)
    with Stubber(client) as stubber:
        stubber.add_response("converse", RESPONSE, kwargs)
        send_bedrock(client, result, MODEL)
    blocks = list(kwargs["system"]) + [b for m in kwargs["messages"] for b in m["content"]]
    assert sum("cachePoint" in b for b in blocks) == 4


def test_botocore_validation_is_on(client: Any) -> None:
    """The check the round trips rely on: a field Converse does not know is refused."""
    with Stubber(client) as stubber, pytest.raises(ParamValidationError, match="speaker"):
        stubber.add_response("converse", RESPONSE)
        client.converse(
            modelId=MODEL, messages=[{"role": "user", "content": [{"text": "hi"}], "speaker": "a"}]
        )
