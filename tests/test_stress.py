"""The stress extra: a CPU-load sample for debug snapshots and per-turn budget pressure."""

from __future__ import annotations

import importlib.util
import json

import pytest

pytest.importorskip("psutil", reason="psutil is not installed: pip install -e '.[stress]'")

import psutil

import membrane.stress
from membrane import ContextCompiler, MemoryItem
from membrane.stress import sample_load, stress_record


def test_a_load_sample_reads_psutil() -> None:
    sample = sample_load()
    assert sample["available"] is True
    assert sample["cpu_count"] == psutil.cpu_count()
    assert 0.0 <= sample["cpu_percent"] <= 100.0
    assert sample["load_per_cpu_1m"] >= 0.0


def test_without_psutil_the_sample_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        membrane.stress.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "psutil" else real(name, *a),
    )
    sample = sample_load()
    assert sample["available"] is False and "stress" in sample["reason"]


def test_to_debug_dict_adds_the_environment_only_when_asked() -> None:
    result = ContextCompiler(2048).compile([MemoryItem(id="m", content="A note.")], "Hi")
    plain = result.to_debug_dict()
    assert "environment" not in plain
    with_env = result.to_debug_dict(environment=True)
    assert with_env["environment"]["cpu_count"] == psutil.cpu_count()
    assert {k: v for k, v in with_env.items() if k != "environment"} == plain
    json.dumps(with_env)  # still JSON-friendly


def test_a_stress_record_reports_the_turns_budget_pressure() -> None:
    memories = [MemoryItem(id=f"m{i}", content=f"Note {i}. " * 40) for i in range(30)]
    result = ContextCompiler(600).compile(memories, "Which note?")
    load = {"available": True, "cpu_percent": 12.5, "load_per_cpu_1m": 0.5, "cpu_count": 2}
    record = stress_record(result.metadata, load)
    md = result.metadata
    assert record["tokens_budget"] == 600
    assert record["sent_tokens"] == md["token_count"] + md["message_framing_tokens"]
    assert record["budget_fill"] == round(record["sent_tokens"] / 600, 4)
    assert record["memories_dropped"] == md["segments_offered"] - md["segments_kept"] > 0
    assert record["tokens_trimmed"] == md["tokens_trimmed"] > 0
    assert record["load"] == load
