"""The live benchmark entry points, end to end against the loopback stub (no real API)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks import (
    _report,
    hard_suite_live,
    measure_token_scale,
    peer_comparison,
    token_savings_bench,
    trimming_bench,
)
from benchmarks._live import codes_in, judge
from tests.providers.sdk.routes import (
    USAGE,
    anthropic_route,
    count_tokens_route,
    openai_chat_route,
)
from tests.providers.sdk.stub import Stub, running_stub


def _prompt_codes(body: Any) -> str:
    """A stand-in model that recalls perfectly: it states every code its prompt contains."""
    return " ".join(sorted(codes_in(json.dumps(body))))


@pytest.fixture
def anthropic_stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stub]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with running_stub([count_tokens_route(), anthropic_route(_prompt_codes)]) as stub:
        yield stub
    assert stub.errors() == []


def test_judge_scores_codes() -> None:
    assert judge("It is K7Q-42.", ["K7Q-42"]) == (True, False)
    assert judge("It is K7Q-43.", ["K7Q-42"]) == (False, True)
    assert judge("I do not know that code.", ["K7Q-42"]) == (False, False)
    assert codes_in("A-1 AB-2345 abc-123 2024") == {"AB-2345"}


@pytest.mark.parametrize(
    ("module", "flags", "var"),
    [
        (hard_suite_live, [], "ANTHROPIC_API_KEY"),
        (measure_token_scale, [], "ANTHROPIC_API_KEY"),
        (peer_comparison, ["--live"], "OPENAI_API_KEY"),
        (token_savings_bench, [], "OPENAI_API_KEY"),
        (trimming_bench, [], "OPENAI_API_KEY"),
    ],
)
def test_refuses_without_a_key(
    module: Any,
    flags: list[str],
    var: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv(var, raising=False)
    with pytest.raises(SystemExit) as exit_info:
        module.main([*flags, "--base-url", "http://127.0.0.1:9"])
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


def test_measure_token_scale_end_to_end(anthropic_stub: Stub, tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    argv = ["--base-url", anthropic_stub.base_url, "--models", "claude-opus-5-5,claude-haiku-4-5"]
    assert measure_token_scale.main([*argv, "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result["ratios"]) == {"claude-opus-5-5", "claude-haiku-4-5"}
    for ratios in result["ratios"].values():
        assert set(ratios) == {"prose", "code", "digits"} and all(r > 0 for r in ratios.values())
    assert result["map_seed"] == {"claude-opus-5-5": 1.51, "claude-haiku-4-5": 1.11}
    # Four requests per model (the framing probe and three texts), each a valid count request.
    assert len(anthropic_stub.bodies("/count_tokens")) == 8


def test_measure_token_scale_from_usage_needs_no_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    usage = tmp_path / "usage.jsonl"
    rows = [("claude-opus-5-5", 1000, 1500), ("claude-opus-5-5", 1000, 1520), ("x", 10, 11)]
    usage.write_text(
        "\n".join(json.dumps({"model": m, "counted": c, "billed": b}) for m, c, b in rows)
    )
    out = tmp_path / "scale.json"
    assert measure_token_scale.main(["--usage", str(usage), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["from_usage"] == {
        "claude-opus-5-5": {"median": 1.51, "requests": 2},
        "x": {"median": 1.1, "requests": 1},
    }


def test_default_models_are_the_current_claude_ids() -> None:
    models = measure_token_scale.default_models()
    assert "claude-opus-5-5" in models and "claude-haiku-4-5" in models
    assert all(m.startswith("claude-") for m in models)


@pytest.fixture
def openai_stub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Stub]:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setattr(_report, "RESULTS_DIR", tmp_path)
    with running_stub([openai_chat_route(_prompt_codes)]) as stub:
        yield stub
    assert stub.errors() == []


def test_peer_comparison_live_end_to_end(openai_stub: Stub, tmp_path: Path) -> None:
    argv = ["--live", "--base-url", f"{openai_stub.base_url}/v1", "--budget", "6000"]
    argv += ["--seeds", "1", "--strategies", "naive,membrane", "--max-turns", "12"]
    assert peer_comparison.main(argv) == 0
    bodies = openai_stub.bodies("/chat/completions")
    assert len(bodies) == 24 and {b["model"] for b in bodies} == {"gpt-4.1-mini"}
    result = json.loads((tmp_path / "peer_comparison_live.json").read_text())
    (config,) = result["configs"]
    assert config["budget"] == 6000 and set(config["results"]) == {"naive", "membrane"}
    for row in config["results"].values():
        assert row["requests"] == 12 and row["accuracy"] == 1.0
        assert row["cache_read_tokens"] == 12 * USAGE["cached"]
    assert result["cached_read_price"] == 0.25


def test_token_savings_bench_end_to_end(openai_stub: Stub, tmp_path: Path) -> None:
    out = tmp_path / "savings.json"
    argv = ["--base-url", f"{openai_stub.base_url}/v1", "--seeds", "2", "--out", str(out)]
    assert token_savings_bench.main(argv) == 0
    result = json.loads(out.read_text())
    modes = result["modes"]
    assert modes["naive"]["saving_vs_naive"] == 0 and modes["naive"]["accuracy"] == 1.0
    # Both Membrane prompts fit the 4,000-token budget; the naive one holds all 24 chunks.
    assert modes["trimmed"]["tokens"] <= 2 * 4000 < modes["naive"]["tokens"]
    assert modes["compressed"]["tokens"] < modes["trimmed"]["tokens"]
    # The stand-in compressor keeps the codes, so the compressed prompt still answers.
    assert result["compressor"]["calls"] == 2 and modes["compressed"]["accuracy"] == 1.0
    # Per seed: one compression call and three questions.
    assert len(openai_stub.bodies("/chat/completions")) == 2 * 4


def test_trimming_bench_end_to_end(openai_stub: Stub, tmp_path: Path) -> None:
    out = tmp_path / "trim.json"
    argv = ["--base-url", f"{openai_stub.base_url}/v1", "--seeds", "2", "--out", str(out)]
    assert trimming_bench.main([*argv, "--budgets", "6000,500"]) == 0
    budgets = json.loads(out.read_text())["budgets"]
    assert set(budgets) == {"6000", "500"}
    for row in budgets.values():
        assert row["checks_failed"] == 0
        assert row["procedural_kept"] == 1.0 and row["procedural_answered"] == 1.0
    assert budgets["6000"]["episodic_kept_when_not_asked"] == 1.0
    # Under pressure the low tier goes first when nothing ranks it up; the asked one stays.
    assert budgets["500"]["episodic_kept_when_not_asked"] < 1.0
    assert budgets["500"]["episodic_kept"] == 1.0
    assert budgets["500"]["memories_kept"] < budgets["6000"]["memories_kept"]
