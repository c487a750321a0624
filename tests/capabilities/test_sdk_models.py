"""Every current model id of the pinned official SDKs resolves in the capability map.

The ids come from the SDKs' own type literals (scripts/sdk_model_ids.py says which). The
versions are pinned in constraints/sdks.txt so that a new SDK release cannot fail CI overnight;
``make check-models`` runs the same check against the newest releases.
"""

from __future__ import annotations

import pytest
from scripts import sdk_model_ids as sdk

from membrane.capabilities import resolve_model_id


@pytest.fixture(autouse=True)
def _bundled_map(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLM_CAPABILITY_MAP_PATH", raising=False)


def test_the_installed_sdks_are_the_pinned_ones() -> None:
    pins = sdk.pinned_versions()
    assert set(pins) == set(sdk.SDKS)
    assert sdk.installed_versions() == pins, (
        "install constraints/sdks.txt (make test does), or raise the pins with the map"
    )


def test_every_current_sdk_model_id_resolves_bare_and_prefixed() -> None:
    ids = sdk.sdk_model_ids()
    # The literals are read, not hard-coded: these are the counts of the pinned releases.
    assert {p: len(v) for p, v in ids.items()} == {"openai": 73, "anthropic": 20, "google": 26}
    assert {"gpt-6.2-sol", "o3-mini", "gpt-5.1-codex"} <= set(ids["openai"])
    assert {"claude-mythos-5-2", "claude-mythos-preview"} <= set(ids["anthropic"])
    assert {"gemini-4-argon", "gemini-flash-latest"} <= set(ids["google"])
    assert sdk.unresolved(ids) == []


def test_retired_generations_the_sdk_still_names_stay_unknown() -> None:
    retired = sdk.retired_openai_ids()
    assert "gpt-4-turbo" in retired and "gpt-3.5-turbo" in retired
    assert [m for m in retired if resolve_model_id(m) is not None] == []


def test_the_check_script_reports_all_resolved(capsys: pytest.CaptureFixture[str]) -> None:
    assert sdk.main([]) == 0
    assert "119 of 119 ids resolve" in capsys.readouterr().out
