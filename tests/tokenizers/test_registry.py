"""TokenizerRegistry: fnmatch on the full model id, fallbacks, the shared instance."""

from __future__ import annotations

import pytest

from membrane.tokenizers import CharacterEstimateCounter, TiktokenAdapter, TokenizerRegistry


def test_shared_registry_preloads_bare_ids() -> None:
    shared = TokenizerRegistry.get()
    assert shared is TokenizerRegistry.get()
    assert shared.counter_for("gpt-4o").name == "o200k_base"
    assert shared.counter_for("gpt-4o-mini-2024-07-18").name == "o200k_base"
    assert shared.counter_for("claude-3-5-sonnet").name == "cl100k_base"
    assert shared.patterns[:2] == ("gpt-4o*", "claude*")


@pytest.mark.parametrize(
    "model_id", ["openai/gpt-4o", "anthropic/claude-opus-4-5", "GPT-4o", "my-gpt-4o", None, ""]
)
def test_shared_registry_matches_the_full_id_only(model_id: str | None) -> None:
    # A provider prefix, other casing or a missing id all fall back to the character estimate.
    counter = TokenizerRegistry.get().counter_for(model_id)
    assert isinstance(counter, CharacterEstimateCounter)
    assert TokenizerRegistry.get().count("abcdefghi", model_id) == 3


def test_fresh_registry_is_empty_and_falls_back_to_cl100k() -> None:
    registry = TokenizerRegistry()
    assert registry.patterns == ()
    fallback = registry.counter_for("gpt-4o")
    assert fallback.name == "cl100k_base"
    assert registry.count("hello world", "anything") == 2


def test_registered_patterns_route_counts() -> None:
    registry = TokenizerRegistry()
    registry.register("openai/gpt-4o*", TiktokenAdapter("o200k_base"))
    assert registry.counter_for("openai/gpt-4o-mini").name == "o200k_base"
    assert registry.counter_for("openai/gpt-4").name == "cl100k_base"
    # With a leading space the two encodings disagree: 6 tokens in o200k_base, 5 in cl100k_base.
    text = " tiktoken is great!"
    assert registry.count(text, "openai/gpt-4o") == 6
    assert registry.count(text, "openai/gpt-4") == 5


def test_later_registrations_win_ties() -> None:
    registry = TokenizerRegistry()
    coarse = CharacterEstimateCounter(2.0)
    fine = CharacterEstimateCounter(8.0)
    registry.register("vendor/*", coarse)
    registry.register("vendor/model-*", fine)
    assert registry.counter_for("vendor/model-x") is fine
    assert registry.counter_for("vendor/other") is coarse
    registry.register("vendor/*", coarse)
    assert registry.counter_for("vendor/model-x") is coarse
    assert registry.patterns == ("vendor/*", "vendor/model-*", "vendor/*")


def test_custom_fallback_and_character_classes() -> None:
    fallback = CharacterEstimateCounter(1.0)
    registry = TokenizerRegistry(fallback=fallback)
    registry.register("model-[0-9]", TiktokenAdapter())
    assert registry.counter_for("model-7").name == "cl100k_base"
    assert registry.counter_for("model-x") is fallback


def test_register_rejects_bad_arguments() -> None:
    registry = TokenizerRegistry()
    with pytest.raises(TypeError, match="non-empty string"):
        registry.register("", TiktokenAdapter())
    with pytest.raises(TypeError, match="count"):
        registry.register("gpt-*", object())  # type: ignore[arg-type]
    assert registry.patterns == ()
