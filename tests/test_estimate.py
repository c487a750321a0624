"""Cost quotes: provider tokens from the compiled size and scale, the caller's price, the trims."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from membrane import CompileResult, ContextCompiler, CostQuote, MemoryItem
from membrane.estimate import quote_for


def _result(**metadata: Any) -> CompileResult:
    md = {
        "token_count": 97,
        "message_framing_tokens": 3,
        "segments_offered": 0,
        "segments_kept": 0,
        **metadata,
    }
    return CompileResult(messages=[], ref_map={}, ref_map_type={}, metadata=md)


def test_quote_at_scale_one() -> None:
    quote = quote_for(_result(), 2.5)
    assert quote.total_tokens == 100
    assert quote.estimated_cost_usd == 0.25
    assert quote.price_per_1k_input_tokens == 2.5
    assert quote.trimming_strategies == ()
    assert quote.compile_result.metadata["token_count"] == 97


def test_quote_rounds_provider_tokens_up() -> None:
    assert quote_for(_result(token_scale=1.51), 1.0).total_tokens == 151
    assert quote_for(_result(token_count=98, token_scale=1.51), 1.0).total_tokens == math.ceil(
        101 * 1.51
    )


@pytest.mark.parametrize("scale", [1.1, 1.15, 1.3, 1.45, 1.7])
def test_exact_products_are_not_rounded_past_themselves(scale: float) -> None:
    # 100 counted tokens at a scale of 1.1 are 110 provider tokens, not 111.
    expected = round(100 * scale)
    assert quote_for(_result(token_scale=scale), 1.0).total_tokens == expected


def test_free_price_and_integer_price() -> None:
    assert quote_for(_result(), 0).estimated_cost_usd == 0.0
    quote = quote_for(_result(), 3)
    assert quote.estimated_cost_usd == 0.3
    assert isinstance(quote.price_per_1k_input_tokens, float)


@pytest.mark.parametrize(
    ("metadata", "strategies"),
    [
        ({"segments_offered": 5, "segments_kept": 3}, ("memories_dropped",)),
        ({"segments_thinned": 2}, ("memories_thinned",)),
        ({"memories_truncated": 1}, ("memory_text_capped",)),
        ({"history_messages_dropped": 8}, ("history_cut",)),
        ({"history_messages_recalled": 2}, ("history_recalled",)),
        (
            {
                "segments_offered": 5,
                "segments_kept": 4,
                "segments_thinned": 1,
                "memories_truncated": 1,
                "history_messages_dropped": 4,
                "history_messages_recalled": 1,
            },
            (
                "memories_dropped",
                "memories_thinned",
                "memory_text_capped",
                "history_cut",
                "history_recalled",
            ),
        ),
    ],
)
def test_trimming_strategies(metadata: dict[str, Any], strategies: tuple[str, ...]) -> None:
    assert quote_for(_result(**metadata), 1.0).trimming_strategies == strategies


def test_quote_is_frozen() -> None:
    quote = quote_for(_result(), 1.0)
    assert isinstance(quote, CostQuote)
    with pytest.raises(dataclasses.FrozenInstanceError):
        quote.total_tokens = 1  # type: ignore[misc]


def test_compiler_estimate_passes_compile_arguments_through() -> None:
    compiler = ContextCompiler(
        700, model_id="anthropic/claude-opus-5-5", core_content="You are a gardening assistant."
    )
    history = []
    for i in range(12):
        history.append({"role": "user", "content": f"Question {i} on roses and aphids. " * 6})
        history.append({"role": "assistant", "content": f"Answer {i} about pruning. " * 6})
    memories = [
        MemoryItem(id=f"g{i}", content=f"Garden note {i}: " + "compost mulch " * 60)
        for i in range(10)
    ]
    kwargs: dict[str, Any] = {"conversation_messages": history, "dynamic_directives": "Be brief."}
    quote = compiler.estimate(
        memories, "What about aphids on roses?", price_per_1k_input_tokens=0.003, **kwargs
    )
    result = quote.compile_result
    direct = compiler.compile(memories, "What about aphids on roses?", **kwargs)
    assert result.messages == direct.messages
    md = result.metadata
    assert quote.total_tokens == math.ceil(
        (md["token_count"] + md["message_framing_tokens"]) * 1.51
    )
    assert quote.total_tokens <= 700
    assert quote.estimated_cost_usd == pytest.approx(quote.total_tokens * 0.003 / 1000)
    assert "memory_text_capped" in quote.trimming_strategies
    assert "history_cut" in quote.trimming_strategies
    assert result.messages[-1]["content"].endswith("</ACTIVE_SYSTEM_DIRECTIVES>")
