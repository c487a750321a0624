"""Every docstring example in the package runs, with plain doctest and no fixtures.

Each module under ``src/membrane`` and ``membrane-longform-memory/src/longform_memory`` (the
drop-in, a distribution of its own) is imported and handed to ``doctest.testmod`` with
``ELLIPSIS | NORMALIZE_WHITESPACE``, as a reader would run it. A
module whose optional dependency is not installed must fail to import with ``ImportError`` and
nothing else; it is then skipped with the reason (under ``CI=true`` such a skip is a failure,
as in the adapter tests, because CI installs every extra). The CrewAI adapter is the one
exception: CrewAI lives in an environment of its own (see the Makefile), where its tests run,
so in the main one only its ImportError is checked. It has no examples.

A second test replays the whole run in a fresh interpreter that can import only the standard
library and what ``pip install .`` brings (tiktoken and its dependencies): the examples must
pass, or their module must raise only ``ImportError``, when no extra is installed.
"""

from __future__ import annotations

import contextlib
import doctest
import importlib
import io
import json
import os
import pkgutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Each package and the folder it is imported from.
SOURCES = {"membrane": ROOT / "src", "longform_memory": ROOT / "membrane-longform-memory" / "src"}
PACKAGES = tuple(SOURCES)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
# Modules whose framework is installed only in an environment of their own.
OWN_ENVIRONMENT = {"membrane.adapters.crewai": "crewai"}
# There are about 120 examples today; far fewer means modules stopped being found.
MIN_EXAMPLES = 100


def _module_names() -> list[str]:
    names: list[str] = []
    for package in PACKAGES:
        names.append(package)
        for info in pkgutil.walk_packages([str(SOURCES[package] / package)], f"{package}."):
            names.append(info.name)
    return sorted(names)


MODULES = _module_names()


@dataclass(frozen=True)
class Outcome:
    attempted: int
    failed: int
    report: str
    missing: str | None = None


def _run(name: str) -> Outcome:
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        return Outcome(0, 0, "", missing=f"{name} needs {exc.name or exc}: {exc}")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = doctest.testmod(module, optionflags=FLAGS, verbose=False)
    return Outcome(result.attempted, result.failed, out.getvalue())


_OUTCOMES: dict[str, Outcome] = {}


def _outcome(name: str) -> Outcome:
    if name not in _OUTCOMES:
        _OUTCOMES[name] = _run(name)
    return _OUTCOMES[name]


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_pass(name: str) -> None:
    outcome = _outcome(name)
    if outcome.missing is not None:
        environment = OWN_ENVIRONMENT.get(name)
        if environment is not None and os.environ.get("MEMBRANE_ADAPTER_ENV") != environment:
            # Its framework has an environment of its own, where its tests run; here the module
            # fails to import with ImportError naming that framework, and nothing else (a skip
            # would fail the run under CI=true, see tests/conftest.py).
            assert f"needs {environment}" in outcome.missing, outcome.missing
            return
        if _in_ci():
            pytest.fail(f"an extra is missing under CI=true: {outcome.missing}")
        pytest.skip(outcome.missing)
    assert outcome.failed == 0, outcome.report


def test_examples_cover_the_library() -> None:
    attempted = sum(_outcome(name).attempted for name in MODULES)
    assert attempted > MIN_EXAMPLES, f"only {attempted} docstring examples ran"


# Run in a fresh interpreter: block every top-level import that is neither the standard
# library, our packages, nor part of the core install, then import and test every module.
_WITHOUT_EXTRAS = textwrap.dedent(
    """
    import contextlib, doctest, importlib, importlib.abc, importlib.metadata, io, json, re, sys

    def core_modules():
        dists, todo = set(), ["tiktoken"]
        while todo:
            dist = todo.pop()
            if dist in dists:
                continue
            dists.add(dist)
            for req in importlib.metadata.requires(dist) or []:
                if "extra ==" not in req:
                    todo.append(re.split(r"[^A-Za-z0-9_.-]", req, maxsplit=1)[0])
        wanted = {d.lower().replace("-", "_") for d in dists}
        return {
            top
            for top, owners in importlib.metadata.packages_distributions().items()
            if any(o.lower().replace("-", "_") in wanted for o in owners)
        }

    ALLOWED = set(sys.stdlib_module_names) | set(PACKAGES) | core_modules()
    ALLOWED |= {"_distutils_hack", "_virtualenv"}

    class NoExtras(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            top = fullname.partition(".")[0]
            if top not in ALLOWED and not top.startswith("_"):
                raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
            return None

    sys.meta_path.insert(0, NoExtras())
    report = {}
    for name in NAMES:
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
                module = importlib.import_module(name)
        except ImportError as exc:
            report[name] = {"missing": str(exc)}
            continue
        except BaseException as exc:
            report[name] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            result = doctest.testmod(module, optionflags=FLAGS, verbose=False)
        report[name] = {
            "attempted": result.attempted,
            "failed": result.failed,
            "output": out.getvalue(),
            "printed_on_import": printed.getvalue(),
        }
    print(json.dumps(report))
    """
)


def test_examples_pass_without_extras() -> None:
    script = (
        f"NAMES = {MODULES!r}\nPACKAGES = {PACKAGES!r}\nFLAGS = {int(FLAGS)}\n{_WITHOUT_EXTRAS}"
    )
    path = os.pathsep.join(str(folder) for folder in SOURCES.values())
    env = {**os.environ, "PYTHONPATH": path, "PYTHONWARNINGS": "error"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    errors = {name: r["error"] for name, r in report.items() if "error" in r}
    assert errors == {}, "a module raised something other than ImportError on import"
    noisy = {n: r["printed_on_import"] for n, r in report.items() if r.get("printed_on_import")}
    assert noisy == {}, "importing a module must not run anything"
    failed = {name: r["output"] for name, r in report.items() if r.get("failed")}
    assert failed == {}, "examples fail when the extras are missing"
    # The blocker works (an adapter's framework is out of reach) ...
    assert "missing" in report["membrane.adapters.langchain"]
    # ... and the core imports without any extra.
    for name in ("membrane", "membrane.compiler", "membrane.longform", "longform_memory"):
        assert "attempted" in report[name], report[name]
