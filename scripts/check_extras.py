"""Check that every extra resolves on the oldest Python each distribution claims.

    python scripts/check_extras.py

For each pyproject.toml of the repository (Membrane's and the drop-in's), the oldest Python is
the lower bound of ``requires-python``. The core dependencies plus each extra in turn are
resolved for that Python with ``pip download --python-version X --only-binary=:all:``, as a
user's pip on that Python would resolve them from the package index. A bound that has no
release for that Python makes this fail: then either the bound comes down or
``requires-python`` goes up (and the classifiers with it). Wheels are downloaded into a
temporary folder, removed afterwards. Exit status 1 when an extra does not resolve.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import tomllib

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = (ROOT / "pyproject.toml", ROOT / "membrane-longform-memory" / "pyproject.toml")


def oldest_python(requires_python: str) -> str:
    """``">=3.11"`` -> ``"3.11"``; anything but a single lower bound is refused."""
    match = re.fullmatch(r">=\s*(3\.\d+)", requires_python.strip())
    if match is None:
        raise ValueError(f"requires-python {requires_python!r} is not a single >=3.X bound")
    return match.group(1)


def requirement_sets(project: dict[str, Any]) -> dict[str, list[str]]:
    """The requirement lists to resolve: the core alone, then the core with each extra."""
    core = list(project.get("dependencies", []))
    extras: dict[str, list[str]] = project.get("optional-dependencies", {})
    sets = {"(core)": core}
    for extra, requirements in extras.items():
        sets[extra] = core + list(requirements)
    return sets


def resolves(python: str, requirements: list[str], dest: Path) -> tuple[bool, str]:
    if not requirements:
        return True, ""
    command = [
        sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
        "--python-version", python, "--only-binary=:all:", "--dest", str(dest), *requirements,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
    return done.returncode == 0, "\n    ".join(errors[-3:])


def main() -> int:
    failed: list[str] = []
    started = time.monotonic()
    for path in PROJECTS:
        project = tomllib.loads(path.read_text(encoding="utf-8"))["project"]
        python = oldest_python(project["requires-python"])
        with tempfile.TemporaryDirectory(prefix="extras-") as dest:
            for extra, requirements in requirement_sets(project).items():
                began = time.monotonic()
                ok, errors = resolves(python, requirements, Path(dest))
                took = time.monotonic() - began
                label = f"{project['name']}[{extra}] on Python {python}"
                print(f"{'ok' if ok else 'FAILED':>6}  {label} ({took:.1f} s)")
                if not ok:
                    print(f"    {errors}")
                    failed.append(label)
    print(f"{len(failed)} failed, {time.monotonic() - started:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
