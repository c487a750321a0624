"""Capability map: bundled figures, model-id resolution, replacement maps, warnings."""

from __future__ import annotations

import json
import logging
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.capabilities import (
    CachePricing,
    get_cache_pricing,
    get_context_cap_for_model,
    get_model_capabilities,
    get_token_scale,
    has_prompt_caching,
    load_capability_map,
    resolve_model_id,
)
from membrane.errors import InvalidInputError

BUNDLED = load_capability_map()


@pytest.fixture(autouse=True)
def _bundled_map(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLM_CAPABILITY_MAP_PATH", raising=False)


def _unique(prefix: str = "no-such-model") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_reference_examples() -> None:
    assert has_prompt_caching("gpt-4o")
    assert get_context_cap_for_model("anthropic/claude-sonnet-4.5") == 200_000
    assert get_token_scale("gpt-4o") == 1.0
    assert (
        repr(get_cache_pricing("claude-opus-5-5"))
        == "CachePricing(mode='marked', write=1.25, read=0.05, min_tokens=512)"
    )


@pytest.mark.parametrize(
    ("model_id", "key"),
    [
        ("gpt-4o", "openai/gpt-4o"),
        ("GPT-4o", "openai/gpt-4o"),
        ("openai/gpt-4o-2024-08-06", "openai/gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "openai/gpt-4o-mini"),
        ("openrouter/openai/gpt-5.1", "openai/gpt-5.1"),
        ("claude-opus-5-5", "anthropic/claude-opus-5.5"),
        ("anthropic/claude-opus-4.6", "anthropic/claude-opus-4.6"),
        ("claude-opus-4-6", "anthropic/claude-opus-4.6"),
        ("claude-haiku-4-5-20251001", "anthropic/claude-haiku-4.5"),
        ("claude-sonnet-4-5@20250929", "anthropic/claude-sonnet-4.5"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic/claude-sonnet-4.5"),
        ("anthropic.claude-haiku-5-5", "anthropic/claude-haiku-5.5"),
        ("anthropic/claude-opus-4.6:thinking", "anthropic/claude-opus-4.6"),
        ("claude-fable-5-1", "anthropic/claude-fable-5.1"),
        ("claude-fable", "anthropic/claude-fable-5.2"),
        ("claude-opus-7", "anthropic/claude-opus-5.5"),
        ("gemini-3-pro-preview", "google/gemini-3-pro-preview"),
        ("ollama/llama3.1:8b", "llama3.1:8b"),
        ("llama3.2:latest", "llama3.2"),
        ("X-AI/Grok-4", "x-ai/grok-4"),
    ],
)
def test_resolution(model_id: str, key: str) -> None:
    assert resolve_model_id(model_id) == key


@pytest.mark.parametrize(
    ("model_id", "cap", "scale"),
    [
        ("claude-opus-4-5", 200_000, 1.11),
        ("claude-haiku-4-5", 200_000, 1.11),
        ("claude-opus-4-6", 1_000_000, 1.11),
        ("claude-sonnet-4-6", 1_000_000, 1.11),
        ("claude-opus-4-7", 1_000_000, 1.51),
        ("claude-opus-5-5", 1_000_000, 1.51),
        ("claude-haiku-5-5", 1_000_000, 1.51),
        ("claude-fable-5", 1_000_000, 1.51),
        ("anthropic/claude-sonnet-4.5", 200_000, 1.0),
        # Versions the map does not list follow the family rules.
        ("claude-haiku-5", 1_000_000, 1.51),
        ("claude-sonnet-4-7", 1_000_000, 1.51),
        ("claude-opus-4-1", 200_000, 1.11),
        ("gpt-4o", 128_000, 1.0),
        ("google/gemini-3-pro-preview", 1_048_576, 1.0),
        ("x-ai/grok-4", 256_000, 1.0),
        ("qwen2.5:7b", 32_768, 1.0),
        ("gpt-4.1-2025-04-14", 1_047_576, 1.0),
        ("o4-mini", 200_000, 1.0),
        ("openai/gpt-5.1", 400_000, 1.0),
        ("gemini-2.5-pro", 1_048_576, 1.0),
    ],
)
def test_caps_and_token_scale_seeds(model_id: str, cap: int, scale: float) -> None:
    assert get_context_cap_for_model(model_id) == cap
    assert get_token_scale(model_id) == scale


@pytest.mark.parametrize(
    ("model_id", "pricing"),
    [
        ("gpt-4o", CachePricing("automatic", 1.0, 0.5, 1024)),
        ("gpt-5.1", CachePricing("automatic", 1.0, 0.1, 1024)),
        ("claude-sonnet-4-6", CachePricing("marked", 1.25, 0.1, 1024)),
        ("claude-opus-4-6", CachePricing("marked", 1.25, 0.1, 4096)),
        ("claude-haiku-4-5", CachePricing("marked", 1.25, 0.1, 4096)),
        ("claude-fable-5-1", CachePricing("marked", 1.25, 0.025, 512)),
        ("gemini-3-pro-preview", CachePricing("automatic", 1.0, 0.1, 4096)),
        ("gpt-4.1-mini", CachePricing("automatic", 1.0, 0.25, 1024)),
        ("o3", CachePricing("automatic", 1.0, 0.25, 1024)),
        ("gpt-5-nano", CachePricing("automatic", 1.0, 0.1, 1024)),
        ("claude-sonnet-5-5", CachePricing("marked", 1.25, 0.05, 512)),
        ("claude-opus-4-7", CachePricing("marked", 1.25, 0.1, 2048)),
        ("gemini-2.5-flash", CachePricing("automatic", 1.0, 0.1, 2048)),
    ],
)
def test_cache_pricing(model_id: str, pricing: CachePricing) -> None:
    assert get_cache_pricing(model_id) == pricing


def test_local_models_have_no_caching() -> None:
    for model in ("qwen2.5:7b", "llama3.2", "llama3.1:8b", "llama-3", "gpt-oss:20b"):
        assert not has_prompt_caching(model)
        assert get_cache_pricing(model) is None
        assert 8192 <= (get_context_cap_for_model(model) or 0) <= 131_072


def test_bundled_map_is_consistent() -> None:
    caps, flags = BUNDLED["context_caps"], BUNDLED["capabilities"]
    assert set(caps) == set(flags)
    assert BUNDLED["checked"] and BUNDLED["source_note"]
    for key, entry in BUNDLED["cache_pricing"].items():
        assert flags[key]["prompt_caching"], key
        expected_mode = "marked" if key.startswith("anthropic/") else "automatic"
        assert entry["mode"] == expected_mode, key
        assert 0 < entry["read"] < 1 <= entry["write"], key
        if key.startswith("anthropic/"):
            assert entry["write"] == 1.25 and entry["write_1h"] == 2.0
            assert entry["min_tokens"] in (512, 1024, 2048, 4096)
        if key.startswith("openai/"):
            assert entry["min_tokens"] == 1024
    for key in BUNDLED["token_scale"]:
        assert key in caps
    seed_table = [
        "openai/gpt-4o",
        "openai/gpt-4o-mini",
        "openai/gpt-5.1",
        "anthropic/claude-sonnet-4.5",
        "google/gemini-3-pro-preview",
        "google/gemini-pro-1.5",
        "x-ai/grok-4",
        "qwen2.5:7b",
        "llama3.2",
        "llama3.1:8b",
        "llama-3",
    ]
    assert all(key in caps for key in seed_table)


def test_retired_generations_are_unknown() -> None:
    for model in ("claude-3-5-haiku-20241022", "claude-3-opus", "gpt-4-turbo"):
        assert resolve_model_id(model) is None


def test_unknown_models_warn_once(caplog: pytest.LogCaptureFixture) -> None:
    model = _unique()
    with caplog.at_level(logging.WARNING, logger="membrane.capabilities"):
        assert get_context_cap_for_model(model) is None
        assert not has_prompt_caching(model)
        assert get_cache_pricing(model) is None
        assert get_token_scale(model) == 1.0
        assert resolve_model_id(model) is None
    warnings = [r for r in caplog.records if r.name == "membrane.capabilities"]
    assert len(warnings) == 1
    assert model in warnings[0].getMessage()


def test_no_model_means_no_lookup(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="membrane.capabilities"):
        assert get_context_cap_for_model(None) is None
        assert resolve_model_id("  ") is None
    assert caplog.records == []
    with pytest.raises(TypeError):
        get_context_cap_for_model(42)  # type: ignore[arg-type]


def test_load_returns_a_copy() -> None:
    copy = load_capability_map()
    copy["context_caps"]["openai/gpt-4o"] = 1
    assert get_context_cap_for_model("gpt-4o") == 128_000


def _write(path: Path, data: Any, mtime_ns: int | None = None) -> None:
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))


def test_a_user_map_merges_over_the_bundled_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "caps.json"
    _write(
        path,
        {
            "capabilities": {"acme/model-x": {"prompt_caching": True}},
            "context_caps": {"acme/model-x": 50_000, "anthropic/claude-3.5-haiku": 200_000},
        },
        mtime_ns=1_000_000_000,
    )
    monkeypatch.setenv("LLM_CAPABILITY_MAP_PATH", str(path))
    assert get_context_cap_for_model("model-x") == 50_000
    assert has_prompt_caching("ACME/model-x")
    assert get_cache_pricing("model-x") is None  # no cache_pricing entry
    assert get_token_scale("model-x") == 1.0
    assert resolve_model_id("claude-3-5-haiku-20241022") == "anthropic/claude-3.5-haiku"
    # Every bundled model is still there.
    assert get_context_cap_for_model("gpt-4o") == 128_000
    assert get_cache_pricing("claude-opus-5-5") == CachePricing("marked", 1.25, 0.05, 512)
    assert load_capability_map()["context_caps"]["acme/model-x"] == 50_000

    # A changed file is read again.
    _write(
        path,
        {"capabilities": {"acme/model-x": {}}, "context_caps": {"acme/model-x": 70_000}},
        mtime_ns=2_000_000_000,
    )
    assert get_context_cap_for_model("model-x") == 70_000
    assert not has_prompt_caching("model-x")


def test_an_entry_replaces_one_model_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "caps.json"
    _write(path, {"context_caps": {"openai/gpt-4o": 64_000}})
    monkeypatch.setenv("LLM_CAPABILITY_MAP_PATH", str(path))
    found = get_model_capabilities("gpt-4o-2024-08-06")
    # The bundled gpt-4o (caching, its pricing, its 16,384 output limit) is gone with it.
    assert (found.context_cap, found.prompt_caching, found.cache_pricing) == (64_000, False, None)
    assert found.max_output_tokens is None
    assert get_context_cap_for_model("gpt-4o-mini") == 128_000  # its neighbour is untouched


def test_remove_drops_bundled_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "caps.json"
    _write(path, {"remove": ["openai/gpt-4o", "X-AI/Grok-4"]})
    monkeypatch.setenv("LLM_CAPABILITY_MAP_PATH", str(path))
    assert resolve_model_id(_unique("gpt-4o")) is None
    assert resolve_model_id("gpt-4o") is None
    assert resolve_model_id("x-ai/grok-4") is None
    assert resolve_model_id("gpt-4o-mini") == "openai/gpt-4o-mini"
    assert "openai/gpt-4o" not in load_capability_map()["models"]


def test_replace_bundled_keeps_the_user_map_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "caps.json"
    _write(
        path,
        {
            "replace_bundled": True,
            "capabilities": {"acme/model-x": {"prompt_caching": False}},
            "context_caps": {"acme/model-x": 8_000},
        },
    )
    monkeypatch.setenv("LLM_CAPABILITY_MAP_PATH", str(path))
    assert get_context_cap_for_model("model-x") == 8_000
    assert resolve_model_id("gpt-4o") is None


def test_user_rules_merge_key_by_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "caps.json"
    _write(path, {"reasoning": {"openai": {"reserve": 40_000}}})
    monkeypatch.setenv("LLM_CAPABILITY_MAP_PATH", str(path))
    assert get_model_capabilities("o3").reasoning_reserve == 40_000
    assert get_model_capabilities("gemini-2.5-pro").reasoning_reserve == 65_536


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ({"token_scale": {"acme/x": 1.2}}, "'acme/x' has no 'capabilities' or 'context_caps'"),
        ({"remove": "openai/gpt-4o"}, "remove must be a list"),
        ({"remove": ["openai/gpt-9000"]}, "openai/gpt-9000"),
        ({"replace_bundled": "yes"}, "replace_bundled"),
        ({"capabilities": {"m": {"reasoning": "yes"}}}, "reasoning"),
        ({"reasoning": {"openai": {"reserve": 0}}}, "reasoning['openai'].reserve"),
        ({"context_caps": {"m": 10}, "max_input_tokens": {"m": -1}}, "max_input_tokens"),
        ("{not json", "not valid JSON"),
        ([1, 2], "top level"),
        ({"capabilities": {}, "context_caps": {"m": -5}}, "positive integer"),
        ({"capabilities": {"m": {"prompt_caching": "yes"}}, "context_caps": {}}, "prompt_caching"),
        (
            {
                "capabilities": {},
                "context_caps": {},
                "cache_pricing": {
                    "m": {"mode": "sometimes", "write": 1, "read": 0, "min_tokens": 0}
                },
            },
            "mode",
        ),
        ({"capabilities": {"m": {}}, "context_caps": {}, "token_scale": {"m": 0}}, "token_scale"),
    ],
)
def test_malformed_map(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: Any, problem: str
) -> None:
    path = tmp_path / f"bad-{uuid.uuid4().hex[:6]}.json"
    _write(path, content)
    monkeypatch.setenv("LLM_CAPABILITY_MAP_PATH", str(path))
    with pytest.raises(InvalidInputError) as err:
        get_context_cap_for_model("gpt-4o")
    assert str(path) in str(err.value)
    assert problem in str(err.value)
    assert err.value.field == "LLM_CAPABILITY_MAP_PATH"


def test_missing_map_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "absent.json"
    monkeypatch.setenv("LLM_CAPABILITY_MAP_PATH", str(path))
    with pytest.raises(InvalidInputError, match=r"absent\.json"):
        load_capability_map()


_KEYS = sorted(BUNDLED["context_caps"])
_SUFFIXES = ["", "-20250929", "-2024-08-06", "@20250929"]


@given(
    key=st.sampled_from(_KEYS),
    drop_prefix=st.booleans(),
    suffix=st.sampled_from(_SUFFIXES),
    upper=st.lists(st.booleans(), min_size=40, max_size=40),
)
def test_decorated_ids_resolve_to_their_key(
    key: str, drop_prefix: bool, suffix: str, upper: list[bool]
) -> None:
    model_id = key.rsplit("/", 1)[-1] if drop_prefix else key
    if ":" not in model_id:  # Ollama tags carry no snapshot suffix
        model_id += suffix
    model_id = "".join(c.upper() if u else c for c, u in zip(model_id, upper * 4, strict=False))
    assert resolve_model_id(model_id) == key


@given(
    model_id=st.one_of(
        st.sampled_from(sorted(BUNDLED["context_caps"])),
        st.sampled_from(["gpt-4o-2024-08-06", "claude-opus-5-5", "llama3.1:8b", "", "  "]),
    )
)
def test_one_lookup_gives_what_the_three_lookups_give(model_id: str) -> None:
    found = get_model_capabilities(model_id)
    assert (found.context_cap, found.prompt_caching, found.cache_pricing) == (
        get_context_cap_for_model(model_id),
        has_prompt_caching(model_id),
        get_cache_pricing(model_id),
    )


@pytest.mark.parametrize(
    ("model_id", "provider", "max_output"),
    [
        ("gpt-4o-2024-08-06", "openai", 16_384),
        ("anthropic/claude-sonnet-4.5", "anthropic", 64_000),
        ("claude-opus-5-5", "anthropic", 128_000),
        ("anthropic.claude-unlisted-v1:0", "anthropic", None),
        ("gemini-2.5-flash", "google", 65_536),
        ("llama3.1:8b", None, None),
        ("", None, None),
    ],
)
def test_provider_and_maximum_output(
    model_id: str, provider: str | None, max_output: int | None
) -> None:
    found = get_model_capabilities(model_id)
    assert (found.provider, found.max_output_tokens) == (provider, max_output)


def test_max_output_tokens_must_be_positive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = dict(BUNDLED, max_output_tokens={"openai/gpt-4o": 0})
    path = tmp_path / "map.json"
    path.write_text(json.dumps(bad))
    monkeypatch.setenv("LLM_CAPABILITY_MAP_PATH", str(path))
    with pytest.raises(InvalidInputError, match=r"max_output_tokens\['openai/gpt-4o'\]"):
        get_model_capabilities("gpt-4o")
