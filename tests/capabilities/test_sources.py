"""Every capability-map entry names its source page and that page's date; docs' models resolve."""

from __future__ import annotations

import json
import re
from datetime import date
from importlib import resources
from pathlib import Path

import pytest

from membrane.capabilities import (
    get_model_capabilities,
    load_capability_map,
    provider_model_id,
    resolve_model_id,
)
from membrane.errors import InvalidInputError

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = json.loads(
    resources.files("membrane.capabilities").joinpath("llm_capabilities.json").read_text("utf-8")
)

# Ids the docs name on purpose as ones that do not resolve (retired generations, a map of your
# own, a registry fallback) and id prefixes named as such (docs/agents.md: `o3`/`o4`).
DOCUMENTED_UNKNOWN = {
    "claude-3-5-haiku",
    "anthropic/claude-3.5-haiku",
    "openai/gpt-4",
    "acme/model-x",
    "o4",
    # Retired generations docs/providers.md names as staying unknown.
    "gpt-4",
    "gpt-4-turbo",
    "gpt-3.5-turbo",
    "gemini-2.0-flash",
}
MODEL_ID = re.compile(
    r"(?<![\w-])(?:(?:openai|anthropic|google|x-ai|ollama)/)?"
    r"(?:gpt-[0-9][\w.:-]*|o[34](?:-mini)?|claude-[\w.:-]+|gemini-[\w.-]+|grok-[\w.-]+|"
    r"llama-?[0-9][\w.:-]*|qwen[0-9][\w.:-]*)(?![\w-])"
)


def test_every_entry_names_its_source_page_and_that_pages_date() -> None:
    checked = date.fromisoformat(BUNDLED["checked"])
    models = BUNDLED["models"]
    missing = [k for k in BUNDLED["capabilities"] if k not in models]
    assert not missing, f"entries without a 'models' record: {missing}"
    for key, entry in models.items():
        assert key in BUNDLED["capabilities"], key
        assert entry.get("source", "").startswith("https://"), key
        updated = date.fromisoformat(entry["source_updated"])  # a date, as YYYY-MM-DD
        # The page's own date, so never the day the map was checked (nor after it).
        assert updated < checked, key


# Listed without a window because no page read published one (the map's notes say so).
NO_PUBLISHED_LIMITS = {"anthropic/claude-mythos-preview"}


def test_entries_carry_caps_output_limits_and_cache_figures() -> None:
    for key, entry in BUNDLED["models"].items():
        caching = BUNDLED["capabilities"][key]["prompt_caching"]
        # gemini-pro-1.5 caches only through explicit cache objects: no per-request pricing.
        assert caching == (key in BUNDLED["cache_pricing"]) or key == "google/gemini-pro-1.5", key
        if key.startswith(("openai/", "anthropic/", "google/gemini-4", "google/gemini-3.")):
            if key in NO_PUBLISHED_LIMITS:
                assert BUNDLED["context_caps"][key] is None and key in BUNDLED["notes"]
            elif key != "google/gemini-3.1-pro-preview":
                assert BUNDLED["context_caps"][key] and BUNDLED["max_output_tokens"][key], key
        if key.startswith("anthropic/"):
            assert entry["api_ids"]["anthropic"].startswith("claude-"), key
        if entry.get("secondary"):
            assert key in BUNDLED["notes"], f"{key}: a secondary source needs a note saying whose"
        if key.startswith("openai/"):
            assert entry["api_ids"]["openai"] == key.split("/", 1)[1], key


def test_a_models_entry_without_source_or_date_is_refused(tmp_path: Path, monkeypatch) -> None:
    base = {
        "capabilities": {"acme/x": {"prompt_caching": False}},
        "context_caps": {"acme/x": 1000},
    }
    for bad, field in (
        ({"source_updated": "2026-01-02"}, "source"),
        ({"source": "https://example.com/x"}, "source_updated"),
        ({"source": "https://example.com/x", "source_updated": "Jan 2026"}, "source_updated"),
    ):
        path = tmp_path / f"{field}.json"
        path.write_text(json.dumps({**base, "models": {"acme/x": bad}}))
        monkeypatch.setenv("LLM_CAPABILITY_MAP_PATH", str(path))
        with pytest.raises(InvalidInputError, match=rf"models\['acme/x'\]\.{field}"):
            load_capability_map()


def _mentioned_models() -> set[str]:
    found: set[str] = set()
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = re.sub(r"https?://\S+", "", path.read_text("utf-8"))  # links are not model ids
        found.update(m.group(0).rstrip(".:") for m in MODEL_ID.finditer(text))
    return found


def test_every_model_the_readme_or_docs_mention_resolves() -> None:
    mentioned = _mentioned_models()
    assert {"gpt-4o", "claude-opus-5-5", "llama3.1:8b"} <= mentioned  # the scan finds them
    unresolved = sorted(m for m in mentioned - DOCUMENTED_UNKNOWN if resolve_model_id(m) is None)
    assert not unresolved, f"models named in README/docs but not in the map: {unresolved}"


@pytest.mark.parametrize(
    ("model_id", "provider", "expected"),
    [
        ("anthropic/claude-opus-5-5", "anthropic", "claude-opus-5-5"),
        ("claude-haiku-4-5-20251001", "anthropic", "claude-haiku-4-5"),
        ("openai/gpt-4.1", "openai", "gpt-4.1"),
        ("gpt-4o-2024-08-06", "openai", "gpt-4o"),
        # Matched only by family: Opus 7 is not Opus 5.5, so no name is guessed.
        ("claude-opus-7", "anthropic", None),
        ("anthropic/claude-opus-5-5", "openai", None),
        ("us.anthropic.claude-opus-5-5-v1:0", "bedrock", None),
        ("not-a-model-at-all-31", "openai", None),
        (None, "openai", None),
    ],
)
def test_provider_model_id(model_id: str | None, provider: str, expected: str | None) -> None:
    assert provider_model_id(model_id, provider) == expected


def test_max_output_tokens() -> None:
    assert get_model_capabilities("gpt-4.1").max_output_tokens == 32_768
    assert get_model_capabilities("claude-haiku-4-5").max_output_tokens == 64_000
    assert get_model_capabilities("claude-opus-5-5").max_output_tokens == 128_000
    assert get_model_capabilities("llama-3").max_output_tokens is None
