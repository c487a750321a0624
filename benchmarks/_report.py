"""Machine description, JSON results, markdown tables and plots shared by the suites."""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = [
    "RESULTS_DIR",
    "child_json",
    "fmt_ms",
    "fmt_num",
    "fmt_pct",
    "machine",
    "markdown_table",
    "plot_lines",
    "read_result",
    "write_result",
]

RESULTS_DIR = Path(__file__).resolve().parent / "results"
_PACKAGES = ("membrane-aol", "tiktoken", "langchain-core", "llama-index-core", "matplotlib", "tqdm")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        if dist == "membrane-aol":
            # Run from a checkout with PYTHONPATH=src: the package is importable, not installed.
            try:
                import membrane

                return f"{membrane.__version__} (source tree)"
            except (ImportError, AttributeError):
                return None
        return None


def _run(command: list[str], cwd: Path | None = None) -> str | None:
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, check=False, cwd=cwd, timeout=20
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    """Where and on what code a result was measured."""
    repo = Path(__file__).resolve().parent.parent
    priompt_pkg = (
        repo
        / "benchmarks"
        / "priompt_node"
        / "node_modules"
        / "@impowering"
        / ("priompt/package.json")
    )
    priompt_version = None
    if priompt_pkg.exists():
        priompt_version = json.loads(priompt_pkg.read_text()).get("version")
    commit = _run(["git", "rev-parse", "--short", "HEAD"], cwd=repo)
    dirty = _run(["git", "status", "--porcelain", "--", "src"], cwd=repo)
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "packages": {name: _version(name) for name in _PACKAGES},
        "node": _run(["node", "--version"]) if shutil.which("node") else None,
        "priompt": priompt_version,
        "git_commit": commit,
        "src_uncommitted_changes": bool(dirty),
    }


def child_json(module: str, args: Sequence[str], timeout: float) -> Any:
    """What ``python -m module --child *args`` prints last, as JSON: one measurement in a fresh
    process, with this tree's ``src`` and the repository on its path."""
    root = RESULTS_DIR.parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}
    done = subprocess.run(
        [sys.executable, "-m", module, "--child", *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=root,
        timeout=timeout,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def write_result(name: str, payload: dict[str, Any]) -> Path:
    """Write ``payload`` as ``benchmarks/results/<name>.json`` (stable key order, NaN as null)."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(_clean(payload), indent=2, sort_keys=False) + "\n")
    return path


def read_result(name: str) -> dict[str, Any] | None:
    path = RESULTS_DIR / f"{name}.json"
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else round(value, 6)
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def fmt_pct(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "–"
    return f"{100 * value:.{digits}f}%"


def fmt_num(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def fmt_ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def markdown_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], align: str | None = None
) -> str:
    """A GitHub markdown table; ``align`` is one letter per column, ``l`` or ``r``."""
    align = align or "l" + "r" * (len(header) - 1)
    rule = ["---" if a == "l" else "---:" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def plot_lines(
    path: Path,
    title: str,
    panels: Sequence[tuple[str, dict[str, Sequence[float]]]],
    xlabel: str = "turn",
) -> Path | None:
    """Save one PNG with a panel per (y label, {series label: values}); None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 3.2 * len(panels)), sharex=True)
    if len(panels) == 1:
        axes = [axes]
    from matplotlib.ticker import MaxNLocator

    styles = ["-", "--", "-.", ":"]
    for ax, (ylabel, series) in zip(axes, panels, strict=True):
        for i, (label, values) in enumerate(series.items()):
            # Identical peers would hide each other: vary the dash and draw Membrane thicker.
            mine = label.startswith("Membrane")
            ax.plot(
                range(1, len(values) + 1),
                values,
                label=label,
                linestyle="-" if mine else styles[i % len(styles)],
                linewidth=2.2 if mine else 1.3,
                alpha=0.9,
            )
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0].set_title(title)
    axes[-1].set_xlabel(xlabel)
    axes[0].legend(fontsize=8, loc="best")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_bars(
    path: Path,
    title: str,
    groups: Sequence[str],
    series: dict[str, Sequence[float | None]],
    ylabel: str,
) -> Path | None:
    """Grouped bar chart (one group per scenario, one bar per strategy)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    n = max(1, len(series))
    width = 0.8 / n
    fig, ax = plt.subplots(figsize=(max(9, 1.1 * len(groups)), 5.2))
    for i, (label, values) in enumerate(series.items()):
        xs = [g + (i - (n - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, [v if v is not None else 0 for v in values], width, label=label)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.32))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
