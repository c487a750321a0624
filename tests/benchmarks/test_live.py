"""The live benchmark entry points, end to end against the loopback stub (no real API)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks import hard_suite_live
from benchmarks._live import codes_in, judge
from tests.providers.sdk.routes import USAGE, anthropic_route
from tests.providers.sdk.stub import Stub, running_stub


def _prompt_codes(body: Any) -> str:
    """A stand-in model that recalls perfectly: it states every code its prompt contains."""
    return " ".join(sorted(codes_in(json.dumps(body))))


@pytest.fixture
def anthropic_stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stub]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with running_stub([anthropic_route(_prompt_codes)]) as stub:
        yield stub
    assert stub.errors() == []


def test_judge_scores_codes() -> None:
    assert judge("It is K7Q-42.", ["K7Q-42"]) == (True, False)
    assert judge("It is K7Q-43.", ["K7Q-42"]) == (False, True)
    assert judge("I do not know that code.", ["K7Q-42"]) == (False, False)
    assert codes_in("A-1 AB-2345 abc-123 2024") == {"AB-2345"}


@pytest.mark.parametrize(
    ("module", "var"),
    [(hard_suite_live, "ANTHROPIC_API_KEY")],
)
def test_refuses_without_a_key(
    module: Any, var: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(var, raising=False)
    with pytest.raises(SystemExit) as exit_info:
        module.main(["--base-url", "http://127.0.0.1:9"])
    assert exit_info.value.code == 2
    assert var in capsys.readouterr().err


def test_hard_suite_live_end_to_end(anthropic_stub: Stub, tmp_path: Path) -> None:
    out = tmp_path / "live.json"
    code = hard_suite_live.main(
        [
            "--base-url",
            anthropic_stub.base_url,
            "--scenarios",
            "long_chat",
            "--strategies",
            "naive,membrane",
            "--max-turns",
            "12",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    bodies = anthropic_stub.bodies("/v1/messages")
    assert len(bodies) == 2 * 12
    assert {b["model"] for b in bodies} == {"claude-opus-5-5"}
    # Membrane's requests carry its cache markers (once its prefix reaches the model's minimum);
    # the naive loop's carry none.
    naive, membrane = bodies[:12], bodies[12:]
    assert not any("cache_control" in json.dumps(b) for b in naive)
    assert all("cache_control" in json.dumps(b) for b in membrane[1:])
    result = json.loads(out.read_text())
    rows = result["scenarios"]["long_chat"]
    for row in rows.values():
        assert row["requests"] == 12
        # The stand-in model states every code in its prompt: accuracy is the prompt's recall.
        assert row["questions"] > 0 and row["accuracy"] == 1.0 and row["wrong"] == 0
        assert row["input_tokens"] == 12 * USAGE["input"]
        assert row["cache_read_tokens"] == 12 * USAGE["cached"]
    assert result["model"] == "claude-opus-5-5" and result["cache_prices"]["read"] == 0.05
