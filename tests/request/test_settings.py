"""The compiler's settings record and the caller's model limits."""

from __future__ import annotations

import pytest

from membrane import ContextCompiler, InvalidInputError, ModelLimits


def test_settings_are_checked_once_and_read_back_by_name() -> None:
    compiler = ContextCompiler(900, model_id="gpt-4o", history_share=0.5, keyframe_tokens=40)
    settings = compiler.settings
    assert settings.window.history_share == 0.5
    assert settings.tail.keyframe_tokens == settings.window.keyframe_tokens == 40
    # The seed's attribute spelling still reads the same record.
    assert compiler.max_tokens == 900 and compiler.history_share == 0.5
    with pytest.raises(AttributeError):
        _ = compiler.no_such_option


def test_a_bad_option_names_itself() -> None:
    with pytest.raises(InvalidInputError, match="history_share"):
        ContextCompiler(900, history_share=1.5)
    with pytest.raises(TypeError, match="ModelLimits"):
        ContextCompiler(900, model_limits={"context_window": 1000})  # type: ignore[arg-type]


def test_model_limits_win_over_the_map() -> None:
    big = "word " * 3_000
    history = [{"role": "user", "content": big}, {"role": "assistant", "content": "ok"}]
    mapped = ContextCompiler(100_000, model_id="gpt-4o").compile(
        [], "Hi", conversation_messages=history
    )
    limited = ContextCompiler(
        100_000, model_id="gpt-4o", model_limits=ModelLimits(context_window=2_000)
    ).compile([], "Hi", conversation_messages=history)
    assert mapped.report.agent is not None and mapped.report.agent.context_window == 128_000
    assert limited.report.agent is not None and limited.report.agent.context_window == 2_000
    # prompt + reserve stays within the caller's window.
    reserve = limited.report.agent.reserve_output_tokens or 0
    assert limited.report.tokens_budget + reserve <= 2_000
    assert limited.report.sent_tokens <= limited.report.tokens_budget


def test_model_limits_give_an_unknown_model_a_window() -> None:
    result = ContextCompiler(50_000, model_limits=ModelLimits(context_window=8_000)).compile(
        [], "Hi"
    )
    assert result.report.agent is not None and result.report.agent.context_window == 8_000
