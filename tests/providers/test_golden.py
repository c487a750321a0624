"""Provider requests compared byte for byte with reviewed files in tests/golden/.

Regenerate after an intended change with ``MEMBRANE_UPDATE_GOLDEN=1 pytest tests/providers``,
then review the diff like code.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from membrane.providers import (
    anthropic_request,
    bedrock_converse_request,
    gemini_request,
    openai_request,
)
from tests.providers.samples import SAMPLES, FakeResult

GOLDEN = Path(__file__).resolve().parent.parent / "golden"

BUILDERS: dict[str, Callable[[FakeResult], dict[str, Any]]] = {
    "openai": lambda r: openai_request(r, model="gpt-4o-mini", prompt_cache_key="conv-42"),
    "anthropic": anthropic_request,
    "anthropic_1h": lambda r: anthropic_request(r, ttl="1h"),
    "gemini": gemini_request,
    "bedrock": bedrock_converse_request,
}


def _encode(value: object) -> object:
    # Bedrock takes image bytes raw; golden files show them base64-encoded.
    if isinstance(value, bytes):
        return {"$bytes_base64": base64.b64encode(value).decode("ascii")}
    raise TypeError(f"unexpected {type(value).__name__} in a request")


def render(request: dict[str, Any]) -> str:
    return json.dumps(request, indent=2, sort_keys=True, ensure_ascii=False, default=_encode) + "\n"


# Bedrock cannot fetch the https image in anthropic_blocks (test_bedrock checks the error).
SKIP = {("anthropic_blocks", "bedrock")}
CASES = [
    (s, b)
    for s in SAMPLES
    for b in BUILDERS
    if (b != "anthropic_1h" or s == "parallel_tools") and (s, b) not in SKIP
]


@pytest.mark.parametrize(("sample", "builder"), CASES)
def test_request_matches_golden_file(sample: str, builder: str) -> None:
    actual = render(BUILDERS[builder](SAMPLES[sample]()))
    path = GOLDEN / f"{sample}.{builder}.json"
    if os.environ.get("MEMBRANE_UPDATE_GOLDEN") == "1":
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"{path} is missing; run with MEMBRANE_UPDATE_GOLDEN=1 and review it"
    assert path.read_text(encoding="utf-8") == actual


def test_every_golden_file_belongs_to_a_case() -> None:
    expected = {f"{s}.{b}.json" for s, b in CASES}
    manifest = "output_hashes.json"  # tests/golden/output_hashes.py, not a provider request
    assert {p.name for p in GOLDEN.glob("*.json")} - {manifest} == expected
