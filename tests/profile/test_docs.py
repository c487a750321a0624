"""docs/profiles.md: every worked example (a Python block with an assert) runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "profiles.md"
BLOCKS = [
    block
    for block in re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    if "assert " in block
]


def test_every_module_has_a_worked_example() -> None:
    assert len(BLOCKS) >= 7


@pytest.mark.parametrize("block", BLOCKS, ids=[f"example-{i}" for i in range(len(BLOCKS))])
def test_worked_example_runs(block: str) -> None:
    exec(compile(block, str(PAGE), "exec"), {})
