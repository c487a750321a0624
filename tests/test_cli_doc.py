"""docs/cli.md quotes today's output: its generated parts equal a fresh run of the script."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "generate_cli_md", ROOT / "scripts" / "generate_cli_md.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_cli_md_is_what_the_script_generates() -> None:
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert page == _script().render(page), "run: python scripts/generate_cli_md.py"


def test_every_generated_part_is_filled_and_the_story_names_the_first_cut() -> None:
    from membrane.demo import run_demo

    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    names = re.findall(r"<!-- generated: ([\w-]+) -->\n(?!<!-- end)", page)
    assert names == ["inspect", "demo-excerpt", "demo-story"]
    run = run_demo()
    first_cut = run.cut_turns[0]
    assert f"Turn {first_cut} shows the first history cut" in page
    row = next(t for t in run.turns if t.turn == first_cut)
    assert f"{row.report.history_messages_dropped} messages leave the window" in page


def test_a_stale_page_is_refreshed() -> None:
    script = _script()
    stale = (
        "intro\n<!-- generated: demo-story -->\nTurn 12 shows the first cut, long ago.\n"
        "<!-- end generated -->\nend\n"
    )
    fresh = script.render(stale)
    assert fresh.startswith("intro\n<!-- generated: demo-story -->\nTurn ")
    assert "long ago" not in fresh and fresh.endswith("<!-- end generated -->\nend\n")
