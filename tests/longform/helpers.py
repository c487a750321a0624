"""Shared helpers for the longform tests."""

from __future__ import annotations

import os
from pathlib import Path

import membrane


def subprocess_env() -> dict[str, str]:
    """The environment for a child interpreter that must import this checkout of membrane."""
    source_root = str(Path(membrane.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (source_root, env.get("PYTHONPATH")) if p)
    return env
