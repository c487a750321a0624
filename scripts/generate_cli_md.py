"""Regenerate the parts of docs/cli.md that quote the program's output.

    python scripts/generate_cli_md.py           # rewrite docs/cli.md in place
    python scripts/generate_cli_md.py --check   # exit 1 when docs/cli.md is out of date

Each generated part sits between ``<!-- generated: NAME -->`` and ``<!-- end generated -->``
markers; everything else in the page is written by hand. The demo excerpt and the story told
about it are computed from a fresh demo run, so they cannot drift from what ``make demo``
prints; ``tests/test_cli_doc.py`` fails when the page differs from this script's output.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import textwrap
from pathlib import Path

from membrane.cli import main as cli_main
from membrane.demo import DemoRun, TurnReport, render_report, run_demo

PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
_BLOCK = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- end generated -->)", re.S)


def _cli(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli_main(argv)
    assert code == 0, argv
    return out.getvalue()


def _inspect_example() -> str:
    argv = [
        "inspect",
        "--user-message",
        "Explain the retry policy.",
        "--memory",
        "policy|2|Retries use exponential backoff with jitter.",
        "--max-tokens",
        "2048",
    ]
    return f"```\n$ membrane {' '.join(_quote(a) for a in argv)}\n{_cli(argv)}```\n"


def _quote(arg: str) -> str:
    return f'"{arg}"' if " " in arg else arg


def _excerpt(run: DemoRun, turns: list[int]) -> str:
    report = render_report(run).splitlines()
    start = next(i for i, line in enumerate(report) if "tokens per region" in line)
    head = report[start : start + 2]
    rows = [line for line in report if re.match(r"\s*(\d+) ", line)]
    chosen = [line for line in rows if int(line.split()[0]) in turns]
    return "```\n" + "\n".join([*head, *chosen]) + "\n```\n"


def _squeeze(run: DemoRun) -> int:
    """The turn that trimmed the most memories (the later one on a tie)."""

    def trimmed(t: TurnReport) -> tuple[int, int]:
        r = t.report
        return (r.tail.segments_offered - r.tail.segments_kept + r.tail.segments_thinned, t.turn)

    return max(run.turns, key=trimmed).turn


def _story(run: DemoRun) -> str:
    turns = {t.turn: t for t in run.turns}
    cuts = run.cut_turns
    first = turns[cuts[0]].report
    first_recall = run.recall_turns[0]
    squeeze = turns[_squeeze(run)]
    p = squeeze.report
    kept, thinned = p.tail.segments_kept - p.tail.segments_thinned, p.tail.segments_thinned
    dropped = p.tail.segments_offered - p.tail.segments_kept
    changed = [t.turn for t in run.turns if t.prefix_same is False]
    same = sum(1 for t in run.turns if t.prefix_same)
    late = [turns[t] for t in run.recall_turns if t > cuts[-1]]
    recall_note = (
        "and passages of the dropped messages come back as recall on the same turn"
        if first_recall == cuts[0]
        else f"and from turn {first_recall} on, passages of the dropped messages come back as "
        "recall when a question matches them"
    )
    story = (
        f"Turn {cuts[0]} shows the first history cut: {first.history_messages_dropped} messages "
        f"leave the window, the eviction index ({first.window.index_lines} lines, "
        f"{first.window.index_tokens} tokens) appears in the system message, {recall_note}. "
        f"The prefix changes only at turns {', '.join(map(str, changed))}, where the cut moves, "
        f"and is repeated byte for byte in between ({same} of {len(run.turns) - 1} turns). "
        f"Turn {squeeze.turn} is the tightest: a {squeeze.regions['current']}-token message "
        f"arrives while {squeeze.regions['history']:,} tokens of history are kept, and of the "
        f"{p.tail.segments_offered} memories offered {kept} stay in full, {thinned} are thinned to "
        f"their keyframes and {dropped} dropped, so the turn still fits "
        f"({squeeze.sent_tokens:,} of {run.budget:,} tokens). After the last cut, "
        f"{len(late)} of the {len(run.turns) - cuts[-1] + 1} remaining turns bring back "
        f"{sum(t.report.tail.messages_recalled for t in late)} passages of messages that were "
        "dropped long before."
    )
    return textwrap.fill(story, width=96) + "\n"


def render(text: str) -> str:
    """``text`` (the page) with every generated part brought up to date."""
    run = run_demo()
    cut = run.cut_turns[0]
    parts = {
        "inspect": _inspect_example,
        "demo-excerpt": lambda: _excerpt(run, sorted({cut - 1, cut, cut + 1, _squeeze(run)})),
        "demo-story": lambda: _story(run),
    }

    def fill(match: re.Match[str]) -> str:
        name = match.group(2)
        if name not in parts:
            raise SystemExit(f"docs/cli.md: unknown generated part {name!r}")
        return match.group(1) + parts[name]() + match.group(4)

    return _BLOCK.sub(fill, text)


def main(argv: list[str]) -> int:
    current = PAGE.read_text(encoding="utf-8")
    fresh = render(current)
    if "--check" in argv:
        if fresh != current:
            sys.stderr.write("docs/cli.md is out of date: run python scripts/generate_cli_md.py\n")
            return 1
        return 0
    PAGE.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
