"""The demo shows its three headline features: a legend for every column, the ref map back to
record ids, and a provider request with its cache markers."""

from __future__ import annotations

import re

from membrane import anthropic_request
from membrane.demo import load_demo_data, render_report, run_demo


def test_every_column_has_a_legend_entry() -> None:
    text = render_report(run_demo())
    legend = text.split("Columns\n", 1)[1].split("\n\n", 1)[0]
    named = re.findall(r"^  (\S+(?: \S+)*?)\s{2,}", legend, re.M)
    for column in (
        "core",
        "index",
        "hist",
        "mem",
        "recall",
        "turn",
        "total/budget",
        "kept/th/dr",
        "drop/rec",
        "prefix share",
        "prefix vs last turn",
    ):
        assert column in named, column
    assert "keyframe" in legend and "thinned" in legend


def test_the_ref_map_lines_lead_back_to_record_ids() -> None:
    run = run_demo()
    final = run.turns[-1].result
    text = render_report(run)
    section = text.split("Citations:", 1)[1].split("\n\n", 1)[0]
    store = {m.id for m in load_demo_data().memories}
    lines = re.findall(r"\[Mem:(\d+)\] -> (\S+)\s+(\w+)", section)
    assert {int(n): ref for n, ref, _ in lines} == final.ref_map
    assert {int(n): kind for n, _, kind in lines} == final.ref_map_type
    assert {ref for _, ref, _ in lines} <= store
    cited = sorted(final.ref_map)[-2:]
    assert "cites records " + ", ".join(repr(final.ref_map[n]) for n in cited) in section


def test_the_cache_markers_shown_are_where_anthropic_request_puts_them() -> None:
    run = run_demo()
    final = run.turns[-1].result
    section = render_report(run).split("Provider requests for the final turn", 1)[1]
    request = anthropic_request(final)
    marked = [
        (i, j)
        for i, m in enumerate(request["messages"])
        if isinstance(m["content"], list)
        for j, b in enumerate(m["content"])
        if "cache_control" in b
    ]
    assert marked
    shown = [
        (int(i), int(j)) for i, j in re.findall(r"messages\[(\d+)\] \(\w+\) block (\d+)", section)
    ]
    assert shown == marked
    for point in final.metadata["cache_breakpoints"]:
        assert f"after message {point['message_index']:>2}: {point['tokens']:>5,} tokens" in section
