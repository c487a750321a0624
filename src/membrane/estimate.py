"""Input-cost quotes for compiled prompts. Membrane ships no price list: the caller names it."""

from __future__ import annotations

import sys

from membrane.errors import InvalidInputError
from membrane.result import CompileResult, CostQuote
from membrane.tokenizers import provider_tokens

__all__ = ["quote_for"]


def quote_for(result: CompileResult, price_per_1k_input_tokens: float) -> CostQuote:
    """Quote ``result`` at ``price_per_1k_input_tokens`` (provider tokens, framing included)."""
    price = price_per_1k_input_tokens
    number = isinstance(price, (int, float)) and not isinstance(price, bool)
    # Python compares an int with a float exactly, so a 400-digit int fails without overflowing.
    if not number or not -sys.float_info.max <= price <= sys.float_info.max:
        raise InvalidInputError(
            "price_per_1k_input_tokens must be a finite number", field="price_per_1k_input_tokens"
        )
    if price < 0:
        raise InvalidInputError(
            "price_per_1k_input_tokens cannot be negative", field="price_per_1k_input_tokens"
        )
    report = result.report
    total = provider_tokens(report.sent_tokens, report.token_scale)
    strategies = []
    if report.fit.segments_kept < report.fit.segments_offered:
        strategies.append("memories_dropped")
    if report.fit.segments_thinned:
        strategies.append("memories_thinned")
    if report.memories_truncated:
        strategies.append("memory_text_capped")
    if report.history_messages_dropped:
        strategies.append("history_cut")
    if report.fit.messages_recalled:
        strategies.append("history_recalled")
    return CostQuote(
        total_tokens=total,
        estimated_cost_usd=round(total / 1000 * price, 10),
        price_per_1k_input_tokens=float(price),
        trimming_strategies=tuple(strategies),
        compile_result=result,
    )
