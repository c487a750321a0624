"""The turn-phases benchmark groups turns by whether they moved the cut, from real laps."""

from __future__ import annotations

from benchmarks.turn_phases import SPEC, _group, _turns


def test_every_turn_has_its_stage_laps_and_some_move_the_cut() -> None:
    rows = _turns(1)
    assert len(rows) == SPEC.turns
    moved = [r for r in rows if r["moves_cut"]]
    assert 0 < len(moved) < len(rows) // 4  # the cut moves in chunks, not every turn
    for row in rows:
        assert {"normalise", "history", "fit", "render"} <= set(row["stages"])
        # The laps are parts of the compile the total was timed around.
        assert sum(row["stages"].values()) <= row["ms"] + 0.01
    group = _group(moved)
    assert group["turns"] == len(moved)
    assert set(group["stage_ms_median"]) >= {"history", "fit"}
