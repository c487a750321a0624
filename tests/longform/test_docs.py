"""The examples in docs/longform.md run, in order, as one script."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "longform.md"


def test_doc_examples_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)
    assert len(blocks) >= 5
    namespace: dict[str, object] = {}
    for number, code in enumerate(blocks, start=1):
        exec(compile(code, f"{DOC.name} example {number}", "exec"), namespace)


def test_doc_quotes_the_committed_benchmark() -> None:
    import json

    result = json.loads(
        (DOC.parents[1] / "benchmarks" / "results" / "longform_constant_budget.json").read_text()
    )
    text = DOC.read_text(encoding="utf-8")
    for row in result["blocks"]:
        if row["chapter"] in (10, 100, 1_000, 10_000):
            assert f"| {row['chapter']:,} | {row['block_tokens_cl100k']:,} |" in text
            assert f"| {row['naive_tokens_cl100k']:,} |" in text
