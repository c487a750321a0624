"""Issue 35, points 15, 16 and 19: bad input that crashed or hid the error, second round.

15. A tool definition that cannot be sent as JSON (a cycle, nesting past the encoder, a set,
    bytes keys, a lone surrogate, NaN or infinity) raises ``InvalidInputError`` naming
    ``tools[i]``, so no request is built from it.
16. Integers too large for a float (``10**400``) raise ``InvalidInputError`` naming the field,
    or are read as what they are (a ratio past the calibration's ceiling), never a bare
    ``OverflowError``.
19. An OpenAI image whose short side scales below one pixel still counts that pixel: a thin
    strip costs its tiles along the long side.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane import ContextCompiler, anthropic_request, openai_request
from membrane.errors import InvalidInputError
from membrane.messages import MAX_IMAGE_SIDE, image_tokens

_GOOD = {"name": "search", "description": "Search.", "input_schema": {"type": "object"}}
_HUGE = 10**400


def _deep(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


def _cyclic() -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["self"] = schema
    return schema


# ----------------------------------------------------------------- 15: tool definitions


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        (_cyclic(), "Circular reference"),
        (_deep(5000), "nests too deeply"),
        ({"type": "object", "enum": {1, 2}}, "set is not JSON serializable"),
        ({"type": "object", b"properties": {}}, "keys must be str"),
        ({"type": "number", "maximum": float("nan")}, "Out of range float values"),
        ({"type": "number", "minimum": float("-inf")}, "Out of range float values"),
    ],
    ids=["cycle", "5000-deep", "set", "bytes-key", "nan", "infinity"],
)
def test_15_a_tool_that_is_not_json_names_its_index(schema: dict[str, Any], words: str) -> None:
    bad = {"name": "lookup", "description": "Look up.", "input_schema": schema}
    with pytest.raises(InvalidInputError) as raised:
        ContextCompiler(2000).compile([], "q", tools=[_GOOD, bad])
    assert raised.value.field == "tools[1]"
    assert words in str(raised.value) and "must be JSON" in str(raised.value)


@pytest.mark.parametrize(
    ("tool", "field"),
    [
        (dict(_GOOD, name="look\ud800up"), "tools[1].name"),
        (dict(_GOOD, description="half \udc80 pair"), "tools[1].description"),
        (
            dict(_GOOD, input_schema={"type": "object", "properties": {"q\ud83d": {}}}),
            "tools[1].input_schema.properties.q\ud83d",
        ),
    ],
)
def test_15_a_lone_surrogate_in_a_tool_is_named(tool: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        ContextCompiler(2000).compile([], "q", tools=[_GOOD, tool])
    assert raised.value.field == field
    assert "lone surrogate" in str(raised.value)


def test_15_a_request_built_from_checked_tools_is_json() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "number", "maximum": 1e308}}}
    tool = {"name": "lookup", "description": "Look up.", "input_schema": schema}
    result = ContextCompiler(2000, model_id="openai/gpt-4o").compile([], "q", tools=[tool])
    for request in (openai_request(result, model="gpt-4o"), anthropic_request(result)):
        text = json.dumps(request, allow_nan=False)
        assert json.loads(text) == request


_NOT_JSON = st.one_of(st.sets(st.integers(), max_size=2), st.binary(max_size=3), st.just(math.nan))


@given(value=_NOT_JSON)
def test_15_any_value_that_is_not_json_is_refused(value: object) -> None:
    schema = {"type": "object", "properties": {"x": {"type": "string", "default": value}}}
    with pytest.raises(InvalidInputError) as raised:
        ContextCompiler(2000).compile([], "q", tools=[{"name": "t", "input_schema": schema}])
    assert raised.value.field == "tools[0]"


# ----------------------------------------------------------------- 16: huge integers


def test_16_a_huge_token_scale_is_refused() -> None:
    with pytest.raises(InvalidInputError) as raised:
        ContextCompiler(2000, token_scale=_HUGE)
    assert raised.value.field == "token_scale"
    assert "positive finite number" in str(raised.value)


def test_16_a_huge_image_size_is_refused() -> None:
    url = "https://example.com/a.png"
    history = [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]},
        {"role": "assistant", "content": "A chart."},
    ]
    compiler = ContextCompiler(2000)
    for size in ((_HUGE, 5), (5, MAX_IMAGE_SIDE + 1)):
        with pytest.raises(InvalidInputError) as raised:
            compiler.compile([], "q", conversation_messages=history, image_sizes={url: size})
        assert raised.value.field == "image_sizes"
    result = compiler.compile(
        [], "q", conversation_messages=history, image_sizes={url: (MAX_IMAGE_SIDE, 1)}
    )
    assert result.metadata["image_tokens"] == image_tokens((2048, 1), provider=None)


def test_16_a_huge_billed_count_reads_as_past_the_ratio_ceiling() -> None:
    compiler = ContextCompiler(2000, model_id="openai/gpt-4o")
    result = compiler.compile([], "How long do refunds take?")
    assert compiler.observe(result, _HUGE) == 3.0  # the scale's maximum, as for 10**6
    other = ContextCompiler(2000, model_id="openai/gpt-4o")
    assert other.observe(other.compile([], "How long do refunds take?"), 10**6) == 3.0


def test_16_a_huge_price_is_refused() -> None:
    with pytest.raises(InvalidInputError) as raised:
        ContextCompiler(2000).estimate([], "q", price_per_1k_input_tokens=_HUGE)
    assert raised.value.field == "price_per_1k_input_tokens"


# ----------------------------------------------------------------- 19: OpenAI image tiles


def test_19_a_thin_strip_costs_its_tiles_along_the_long_side() -> None:
    assert image_tokens((8192, 3), provider="openai") == 765
    assert image_tokens((2048, 1), provider="openai") == 765
    assert image_tokens((3, 8192), provider="openai") == 765
    assert image_tokens((100_000, 1), provider="openai") == 765


@given(long=st.integers(2049, MAX_IMAGE_SIDE), short=st.integers(1, 8), wide=st.booleans())
def test_19_no_strip_costs_less_than_one_pixel_of_height(long: int, short: int, wide: bool) -> None:
    # Fitted into 2048 x 2048 the long side is 2048 (four tiles) and the short side at most
    # 8 * 2048 / 2049 < 8 pixels: one tile.
    size = (long, short) if wide else (short, long)
    assert image_tokens(size, provider="openai") == 85 + 170 * 4
