"""The README's Python examples run and say what the README claims; its links lead somewhere."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RESULTS = ROOT / "benchmarks" / "results"


def _text() -> str:
    return README.read_text(encoding="utf-8")


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", _text(), re.S)


def _section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", _text(), re.S | re.M)
    assert match, f"the README has no '## {title}' section"
    return match.group(1)


def test_quickstart_runs_and_matches_its_comments() -> None:
    (quickstart,) = _python_blocks()[:1]
    namespace: dict[str, object] = {}
    exec(compile(quickstart, "README.md", "exec"), namespace)
    result = namespace["result"]
    assert result.ref_map == {1: "doc-381", 2: "doc-112"}  # type: ignore[attr-defined]
    roles = [m["role"] for m in result.messages]  # type: ignore[attr-defined]
    assert roles == ["system", "user", "assistant", "user"]
    assert result.metadata["cache_breakpoints"][-1]["reason"] == "history"  # type: ignore[attr-defined]


def test_every_python_example_runs() -> None:
    for block in _python_blocks():
        exec(compile(block, "README.md", "exec"), {})


def test_set_up_is_the_two_make_targets() -> None:
    (commands,) = re.findall(r"```bash\n(.*?)```", _section("Set up"), re.S)
    targets = [line.split("#")[0].strip() for line in commands.strip().splitlines()]
    assert targets == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)


def test_caveats_are_there_with_numbers() -> None:
    caveats = _section("Caveats")
    items = re.findall(r"^- ", caveats, re.M)
    assert len(items) >= 5
    assert len(re.findall(r"\d+(?:\.\d+)?\s?(?:%|ms|×)", caveats)) >= 10


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings (duplicates get -1, -2, ...)."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    seen: dict[str, int] = {}
    anchors = set()
    for heading in re.findall(r"^#+ (.*)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def test_links_in_the_readme_and_docs_resolve() -> None:
    pages = [README, ROOT / "CHANGELOG.md", ROOT / "benchmarks" / "README.md"]
    pages += sorted((ROOT / "docs").glob("*.md"))
    broken = []
    for page in pages:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if "://" in target:
                continue
            path, _, fragment = target.partition("#")
            dest = page.parent / path if path else page
            if not dest.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif fragment and dest.suffix == ".md" and fragment not in _anchors(dest):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert broken == []


def test_results_come_from_committed_files() -> None:
    # Every benchmark result the README or the docs name is a committed file, so a removed
    # (superseded) result cannot stay quoted.
    pages = [README, ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    named = set()
    for page in pages:
        text = page.read_text(encoding="utf-8")
        named.update(re.findall(r"benchmarks/results/([\w.-]+\.(?:json|png))", text))
    assert named, "no result file is named"
    missing = sorted(name for name in named if not (RESULTS / name).exists())
    assert missing == []
    results_table = _section("Results")
    linked = re.findall(r"\(benchmarks/results/([\w.-]+\.json)\)", results_table)
    assert len(linked) >= 5, "the headline results link their files"
