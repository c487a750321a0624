"""The profiler: per-stage timings and counts when on, nothing at all when off."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from membrane import ContextCompiler
from membrane.cli import main
from membrane.profile import NO_WATCH, STAGES, MembraneProfile, Stopwatch, start_watch
from membrane.records import MemoryItem
from membrane.report import CompileReport
from tests.strategies import conversations, memory_items, text

PROFILED = MembraneProfile(name="timed", profiler=True)


def test_start_watch_is_the_empty_watch_unless_asked() -> None:
    assert start_watch(None) is NO_WATCH
    assert start_watch(MembraneProfile.coding()) is NO_WATCH
    assert isinstance(start_watch(PROFILED), Stopwatch)
    assert NO_WATCH.timings({"fit": 3}) == ()


def test_stopwatch_laps_in_pipeline_order_with_counts() -> None:
    watch = Stopwatch()
    for stage in reversed(STAGES):
        watch.lap(stage)
    rows = watch.timings({"fit": 4})
    assert [stage for stage, _, _ in rows] == list(STAGES)
    assert all(ms >= 0 for _, ms, _ in rows)
    assert dict((stage, items) for stage, _, items in rows)["fit"] == 4


def test_timings_and_counts_of_an_end_placement_compile() -> None:
    history: list[dict[str, Any]] = []
    for i in range(40):
        history += [
            {"role": "user", "content": f"Question {i} about the cobalt cluster and its logs."},
            {"role": "assistant", "content": f"Answer {i}: the logs rotate every {i} hours."},
        ]
    memories = [MemoryItem(id=f"m{i}", content=f"Fact {i} about amber.") for i in range(5)]
    compiler = ContextCompiler(600, core_content="Be brief.")
    result = compiler.compile(memories, "Logs?", conversation_messages=history, profile=PROFILED)
    timings = result.metadata["profile_timings"]
    assert list(timings) == list(STAGES)
    report = CompileReport.from_metadata(result.metadata)
    kept = report.stable_prefix_messages - 1
    assert report.history_messages_dropped > 0
    assert timings["normalise"]["items"] == len(history)
    assert timings["history"]["items"] == kept
    assert timings["layout"]["items"] == 5
    assert timings["fit"]["items"] == report.tail.segments_kept
    assert timings["render"]["items"] == len(result.messages)
    assert timings["state_store"]["items"] == 1  # the new cut was saved
    assert all(row["ms"] >= 0 for row in timings.values())


def test_system_placement_reports_the_stages_it_has() -> None:
    compiler = ContextCompiler(600, memory_placement="system")
    result = compiler.compile([MemoryItem(id="a", content="x")], "?", profile=PROFILED)
    assert list(result.metadata["profile_timings"]) == [
        "normalise",
        "layout",
        "render",
        "state_store",
    ]


@given(
    memories=memory_items(),
    history=conversations(max_turns=10),
    question=text,
    budget=st.integers(300, 3000),
    preset=st.sampled_from(["minimal", "coding", "conversational"]),
)
def test_the_profiler_changes_no_byte_and_off_adds_no_key(
    memories: list[MemoryItem],
    history: list[dict[str, Any]],
    question: str,
    budget: int,
    preset: str,
) -> None:
    base = MembraneProfile.preset(preset)
    timed = dataclasses.replace(base, profiler=True)
    off = ContextCompiler(budget).compile(
        memories, question, conversation_messages=history, profile=base
    )
    on = ContextCompiler(budget).compile(
        memories, question, conversation_messages=history, profile=timed
    )
    assert on.messages == off.messages
    assert on.ref_map == off.ref_map
    assert "profile_timings" not in off.metadata
    on_md = dict(on.metadata)
    assert on_md.pop("profile_timings")
    assert on_md == off.metadata


def test_inspect_shows_the_timings_and_the_label(capsys: Any) -> None:
    code = main(
        [
            "inspect",
            "--user-message",
            "hi there",
            "--memory",
            "a|3|User hiked on Sunday.",
            "--profile",
            "conversational",
            "--timings",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    profile = out.split("\nProfile\n", 1)[1].splitlines()
    assert profile[0] == "  label: chit-chat (tier order 3, 2, 1; memory share 25%)"
    assert [line.split()[0] for line in profile[-6:]] == list(STAGES)
    assert "\nProfile\n" not in _inspect_plain(capsys)


def _inspect_plain(capsys: Any) -> str:
    main(["inspect", "--user-message", "hi there", "--memory", "a|3|User hiked on Sunday."])
    return str(capsys.readouterr().out)
