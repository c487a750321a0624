"""Runs a script from examples/ in a fresh interpreter, as a reader would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Its sitecustomize refuses connections off loopback in the spawned interpreter too.
LOOPBACK_SITE = Path(__file__).resolve().parent / "loopback_site"
QUIET = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "OTEL_SDK_DISABLED": "true",
    "HAYSTACK_TELEMETRY_ENABLED": "False",
}


def run_example(name: str) -> str:
    env = {**os.environ, **QUIET}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(LOOPBACK_SITE), str(ROOT / "src"), env.get("PYTHONPATH", "")]
    )
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],  # an absolute name is used as is
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout
