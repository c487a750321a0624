"""Family fallbacks for GPT, o-series and Gemini ids; caller limits; the default output reserve."""

from __future__ import annotations

import pytest

from membrane.capabilities import (
    ModelCapabilities,
    ModelLimits,
    default_output_reserve,
    get_context_cap_for_model,
    get_model_capabilities,
    get_token_scale,
    provider_model_id,
    resolve_model_id,
)


@pytest.fixture(autouse=True)
def _bundled_map(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLM_CAPABILITY_MAP_PATH", raising=False)


@pytest.mark.parametrize(
    ("model_id", "key"),
    [
        # Listed ids, bare and prefixed, with their snapshots.
        ("gpt-5.6-sol", "openai/gpt-5.6-sol"),
        ("openai/gpt-6.2-astra", "openai/gpt-6.2-astra"),
        ("gpt-5.4-mini-2026-03-17", "openai/gpt-5.4-mini"),
        ("o3-mini-2025-01-31", "openai/o3-mini"),
        ("claude-mythos-5-2", "anthropic/claude-mythos-5.2"),
        ("anthropic/claude-mythos-preview", "anthropic/claude-mythos-preview"),
        ("google/gemini-4-argon", "google/gemini-4-argon"),
        # GPT: the newest listed model of the same variant at or below the version.
        ("gpt-5.3", "openai/gpt-5.2"),
        ("gpt-5.3-chat-latest", "openai/gpt-5.2-chat-latest"),
        ("gpt-5.1-mini", "openai/gpt-5-mini"),
        ("gpt-6.3-sol", "openai/gpt-6.2-sol"),
        ("openai/gpt-6.1-luna", "openai/gpt-6-luna"),
        # The unsuffixed tier is Sol from GPT-5.6 on (OpenAI routes gpt-5.6 there).
        ("gpt-5.6", "openai/gpt-5.6-sol"),
        ("gpt-7", "openai/gpt-6.2-sol"),
        # o-series.
        ("o5", "openai/o3"),
        ("o5-mini", "openai/o4-mini"),
        ("o2-mini", "openai/o1-mini"),
        # Gemini: by tier and version; an unlisted Gemini 4 name takes its generation's newest.
        ("gemini-3.1-flash-lite", "google/gemini-2.5-flash-lite"),
        ("gemini-3.1-pro-preview-customtools", "google/gemini-3.1-pro-preview"),
        ("gemini-2.5-flash-preview-05-20", "google/gemini-2.5-flash"),
        ("gemini-flash-latest", "google/gemini-3.8-flash"),
        ("gemini-4-neon", "google/gemini-4-argon"),
        ("publishers/google/models/gemini-3.9-flash", "google/gemini-3.8-flash"),
    ],
)
def test_resolution(model_id: str, key: str) -> None:
    assert resolve_model_id(model_id) == key


@pytest.mark.parametrize(
    "model_id",
    [
        # Retired generations stay unknown: older than every listed version of their family.
        "gpt-4",
        "gpt-4-turbo",
        "gpt-4-32k-0613",
        "gpt-3.5-turbo-0125",
        "gemini-2.0-flash",
        "gemini-1.5-pro",
        # A variant no listed model has, and other models sharing a name (image, speech).
        "o1-pro",
        "gemini-3.1-flash-image",
        "gemini-2.5-flash-preview-tts",
    ],
)
def test_unknown(model_id: str) -> None:
    assert resolve_model_id(model_id) is None


def test_a_family_match_names_no_api_model_and_keeps_its_own_scale() -> None:
    assert provider_model_id("gpt-5.3", "openai") is None
    assert provider_model_id("gpt-5.2", "openai") == "gpt-5.2"
    # Claude's version rule for the token scale (1.51 from 4.7 on) is not applied to GPT 5.3.
    assert get_token_scale("gpt-5.3") == 1.0


@pytest.mark.parametrize(
    ("model_id", "window", "output", "max_input", "reasoning"),
    [
        ("gpt-6.2-sol", 1_050_000, 128_000, 922_000, True),
        ("gpt-5.4-nano", 400_000, 128_000, 272_000, True),
        ("gpt-5.1", 400_000, 128_000, 272_000, True),
        ("gpt-4o-search-preview", 128_000, 16_384, None, False),
        ("o1-mini", 128_000, 65_536, None, True),
        ("claude-mythos-5-1", 1_000_000, 128_000, None, True),
        ("claude-sonnet-4-5", 200_000, 64_000, None, False),
        ("claude-mythos-preview", None, None, None, True),
        ("gemini-3.7-flash", 1_048_576, 65_536, None, True),
        ("gemini-3.8-flash", 1_000_000, 65_536, None, True),
    ],
)
def test_limits(
    model_id: str, window: int | None, output: int | None, max_input: int | None, reasoning: bool
) -> None:
    found = get_model_capabilities(model_id)
    assert (found.context_cap, found.max_output_tokens) == (window, output)
    assert (found.max_input_tokens, found.reasoning) == (max_input, reasoning)


def test_gpt_5_6_and_later_charge_cache_writes() -> None:
    for model in ("gpt-5.6-luna", "gpt-6-sol", "gpt-6.2-sol"):
        pricing = get_model_capabilities(model).cache_pricing
        assert pricing is not None and (pricing.mode, pricing.write) == ("automatic", 1.25)
    before = get_model_capabilities("gpt-5.5").cache_pricing
    assert before is not None and before.write == 1.0
    assert get_model_capabilities("gpt-5.2-pro").cache_pricing is None  # no cached price


@pytest.mark.parametrize(
    ("model_id", "reserve"),
    [
        ("gpt-4o", 12_800),  # a tenth of 128,000
        ("claude-sonnet-4-5", 16_384),  # the ceiling
        ("gemini-pro-1.5", 8_192),  # its maximum output
        # Models that reason by default: their provider's documented room for thinking.
        ("o3", 25_000),
        ("gpt-6.2-sol", 25_000),
        ("gpt-5.2-chat-latest", 16_384),  # 25,000, but at most the model's output limit
        ("claude-opus-5-5", 16_384),  # Anthropic's 16,000 is under the ceiling
        ("gemini-2.5-pro", 65_536),
        ("claude-mythos-preview", None),  # no window
        ("not-a-model-at-all-77", None),
    ],
)
def test_default_output_reserve(model_id: str, reserve: int | None) -> None:
    assert default_output_reserve(get_model_capabilities(model_id)) == reserve


def test_caller_limits_win_over_the_map() -> None:
    limits = ModelLimits(context_window=32_768, max_output_tokens=4_096)
    found = get_model_capabilities("gpt-4o", limits)
    assert (found.context_cap, found.max_output_tokens) == (32_768, 4_096)
    assert found.prompt_caching  # the rest is the map's
    assert default_output_reserve(found) == 3_277
    # An unknown model, or none, gets the caller's window.
    alone = get_model_capabilities(None, ModelLimits(context_window=50_000))
    assert (alone.context_cap, alone.prompt_caching, alone.provider) == (50_000, False, None)
    local = get_model_capabilities("acme/local-9", ModelLimits(context_window=8_000))
    assert local.context_cap == 8_000
    # A reasoning flag turns the reasoning reserve on or off; it never exceeds half the window.
    thinking = get_model_capabilities("gpt-4.1", ModelLimits(context_window=40_000, reasoning=True))
    assert default_output_reserve(thinking) == 20_000
    assert get_context_cap_for_model("gpt-4o") == 128_000  # the map itself is unchanged


def test_limits_from_a_framework_profile() -> None:
    profile = {"max_input_tokens": 400_000, "max_output_tokens": 128_000, "reasoning_output": True}
    assert ModelLimits.from_profile(profile) == ModelLimits(400_000, 128_000, True)
    assert ModelLimits.from_profile({"max_input_tokens": "big", "name": "x"}) == ModelLimits()
    assert ModelLimits.from_profile(None) == ModelLimits()


@pytest.mark.parametrize(
    "kwargs", [{"context_window": 0}, {"max_output_tokens": True}, {"reasoning": "yes"}]
)
def test_bad_limits_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="ModelLimits"):
        ModelLimits(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ModelLimits"):
        get_model_capabilities("gpt-4o", {"context_window": 10})  # type: ignore[arg-type]


def test_capabilities_keep_their_positional_shape() -> None:
    # Code that builds ModelCapabilities by hand (tests, adapters) keeps working.
    caps = ModelCapabilities(100_000, False, None, 8_000)
    assert (caps.reasoning, caps.reasoning_reserve, caps.max_input_tokens) == (False, None, None)
    assert default_output_reserve(caps) == 8_000
