"""Shared helpers for the longform tests."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import longform_memory
import membrane


def source_root(package: ModuleType) -> str:
    """The folder holding a package of this checkout (``src`` or the drop-in's ``src``)."""
    return str(Path(str(package.__file__)).resolve().parent.parent)


def subprocess_env() -> dict[str, str]:
    """The environment for a child interpreter that must import this checkout of membrane and
    of the drop-in ``longform_memory`` (a distribution of its own, not installed by Membrane)."""
    roots = dict.fromkeys((source_root(membrane), source_root(longform_memory)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (*roots, env.get("PYTHONPATH")) if p)
    return env
