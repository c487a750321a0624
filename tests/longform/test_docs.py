"""The examples in docs/longform.md run, in order, as one script."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[2] / "docs" / "longform.md"


def test_doc_examples_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)
    assert len(blocks) >= 5
    namespace: dict[str, object] = {}
    for number, code in enumerate(blocks, start=1):
        exec(compile(code, f"{DOC.name} example {number}", "exec"), namespace)


def test_doc_quotes_the_committed_benchmark() -> None:
    result = json.loads(
        (DOC.parents[1] / "benchmarks" / "results" / "longform_constant_budget.json").read_text()
    )
    text = DOC.read_text(encoding="utf-8")
    for row in result["blocks"]:
        if row["chapter"] in (10, 100, 1_000, 10_000):
            assert f"| {row['chapter']:,} | {row['block_tokens_cl100k']:,} |" in text
            assert f"| {row['naive_tokens_cl100k']:,} |" in text


def _ms(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f} ms"
    if value >= 10:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms"


def search_rows(result: dict[str, Any]) -> list[str]:
    """The search table of docs/longform.md, row by row, from the committed result."""
    lines = []
    for entry in result["search"]["sizes"]:
        store = entry["store"]
        lines.append(
            f"| {entry['rows']:,} | {_ms(entry['published']['query_ms_median'])} "
            f"| {_ms(entry['pure']['query_ms_median'])} | {_ms(entry['numpy']['query_ms_median'])} "
            f"| {_ms(store['warm_query_ms_median'])} "
            f"| {_ms(store['cold_first_query_after_open_ms'])} "
            f"| {_ms(store['first_query_after_write_ms'])} "
            f"| {entry['speedup_vs_published']['store_warm']:,.0f}x |"
        )
    return lines


def interleaved_line(result: dict[str, Any]) -> str:
    inter = result["search"]["interleaved"]
    return (
        f"{inter['writes']:,} writes on a {inter['base_rows']:,}-row document, each followed by "
        f"a query: {_ms(inter['store_write_ms_median'])} per write and "
        f"{_ms(inter['store_query_ms_median'])} per query through the store"
    )


def test_doc_quotes_the_committed_search_run() -> None:
    result = json.loads(
        (DOC.parents[1] / "benchmarks" / "results" / "longform_constant_budget.json").read_text()
    )
    text = DOC.read_text(encoding="utf-8")
    for line in search_rows(result):
        assert line in text
    flowing = " ".join(text.split())
    assert interleaved_line(result) in flowing
    # The targets of the search work, checked on the committed numbers.
    for entry in result["search"]["sizes"]:
        assert entry["identical_hits"] and entry["digest_equal"]
        published = entry["published"]["query_ms_median"]
        assert entry["store"]["cold_first_query_after_open_ms"] <= published
    ten_thousand = next(e for e in result["search"]["sizes"] if e["rows"] == 10_000)
    assert ten_thousand["speedup_vs_published"]["store_warm"] >= 100
    assert result["search"]["corrupt_row_case"] == {"published": [], "ours": ["good", "near"]}
