"""Input-cost quotes for compiled prompts. Membrane ships no price list: the caller names it."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from membrane.errors import InvalidInputError
from membrane.tokenizers._calibration import provider_tokens

if TYPE_CHECKING:
    from membrane.compiler import CompileResult, CostQuote

__all__ = ["quote_for"]


def quote_for(result: CompileResult, price_per_1k_input_tokens: float) -> CostQuote:
    """Quote ``result`` at ``price_per_1k_input_tokens`` (provider tokens, framing included)."""
    from membrane.compiler import CostQuote

    price = price_per_1k_input_tokens
    if isinstance(price, bool) or not isinstance(price, (int, float)) or not math.isfinite(price):
        raise InvalidInputError(
            "price_per_1k_input_tokens must be a finite number", field="price_per_1k_input_tokens"
        )
    if price < 0:
        raise InvalidInputError(
            "price_per_1k_input_tokens cannot be negative", field="price_per_1k_input_tokens"
        )
    md = result.metadata
    counted = int(md["token_count"]) + int(md.get("message_framing_tokens", 0))
    total = provider_tokens(counted, float(md.get("token_scale", 1.0)))
    strategies = []
    if md.get("segments_kept", 0) < md.get("segments_offered", 0):
        strategies.append("memories_dropped")
    if md.get("segments_thinned"):
        strategies.append("memories_thinned")
    if md.get("memories_truncated"):
        strategies.append("memory_text_capped")
    if md.get("history_messages_dropped"):
        strategies.append("history_cut")
    if md.get("history_messages_recalled"):
        strategies.append("history_recalled")
    return CostQuote(
        total_tokens=total,
        estimated_cost_usd=round(total / 1000 * price, 10),
        price_per_1k_input_tokens=float(price),
        trimming_strategies=tuple(strategies),
        compile_result=result,
    )
