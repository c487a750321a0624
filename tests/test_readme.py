"""The README's Python examples run and say what the README claims."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_quickstart_runs_and_matches_its_comments() -> None:
    (quickstart,) = _python_blocks()[:1]
    namespace: dict[str, object] = {}
    exec(compile(quickstart, "README.md", "exec"), namespace)
    result = namespace["result"]
    assert result.ref_map == {1: "doc-381", 2: "doc-112"}  # type: ignore[attr-defined]
    roles = [m["role"] for m in result.messages]  # type: ignore[attr-defined]
    assert roles == ["system", "user", "assistant", "user"]
    assert result.metadata["cache_breakpoints"][-1]["reason"] == "history"  # type: ignore[attr-defined]
