"""benchmarks/README.md indexes exactly the committed result files.

A new result must be listed with its command; a superseded one is deleted, not left beside the
current file; and neither the index nor docs/benchmarks.md may name a file that is gone.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
NAME = re.compile(r"`([\w{},.-]+\.(?:json|png))`")


def _expand(pattern: str) -> set[str]:
    """``a_{x,y}.png`` -> ``{"a_x.png", "a_y.png"}``."""
    parts = re.split(r"\{([^}]*)\}", pattern)
    choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return {"".join(combo) for combo in itertools.product(*choices)}


def _named(page: Path) -> set[str]:
    names: set[str] = set()
    for pattern in NAME.findall(page.read_text(encoding="utf-8")):
        names |= _expand(pattern)
    # Output names a command would write, not committed files.
    return {n for n in names if "NAME" not in n and "<" not in n}


def test_the_index_lists_every_committed_result() -> None:
    committed = {p.name for p in RESULTS.iterdir() if p.suffix in (".json", ".png")}
    indexed = _named(ROOT / "benchmarks" / "README.md")
    assert sorted(committed - indexed) == [], "results missing from benchmarks/README.md"
    assert sorted(indexed - committed) == [], "benchmarks/README.md names a missing result"


def test_the_benchmarks_page_names_only_committed_results() -> None:
    committed = {p.name for p in RESULTS.iterdir()}
    named = _named(ROOT / "docs" / "benchmarks.md")
    assert sorted(named - committed) == []
