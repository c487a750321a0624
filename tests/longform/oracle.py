"""Client side of the differential tests: one long-lived server process per side.

``published`` runs ``tests/longform/_oracle_server.py`` in the oracle environment
(``.venv-oracle``, made by ``make oracle`` with the published ``longform-memory==0.1.1``);
``ours`` runs the same server in this interpreter against this checkout's drop-in, or, when
``LONGFORM_DROPIN_PYTHON`` names an interpreter, in that interpreter against the drop-in it
has installed (``make dist`` leaves one: Python 3.9, the built wheel and nothing else). Both
answer the same type-tagged requests; a test compares the two answers as data.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._oracle_server import encode
from .helpers import subprocess_env

ROOT = Path(__file__).resolve().parents[2]
SERVER = Path(__file__).with_name("_oracle_server.py")
PUBLISHED_VERSION = "0.1.1"


def oracle_python() -> Path:
    """The interpreter holding the published package (``LONGFORM_ORACLE_PYTHON`` overrides)."""
    configured = os.environ.get("LONGFORM_ORACLE_PYTHON")
    return Path(configured) if configured else ROOT / ".venv-oracle" / "bin" / "python"


# ------------------------------------------------------------------ request values


@dataclass(frozen=True)
class Fn:
    """A callable both servers know by name (see ``CALLABLES`` in the server)."""

    name: str


@dataclass(frozen=True)
class New:
    """An instance of a class of the package under test, built inside the server."""

    cls: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Attr:
    """A module attribute of the package under test, such as ``language.HAN``."""

    module: str
    name: str


@dataclass(frozen=True)
class NS:
    """A plain object with these attributes (``types.SimpleNamespace``)."""

    attrs: dict[str, Any]


def to_wire(value: Any) -> Any:
    if isinstance(value, Fn):
        return {"t": "fn", "name": value.name}
    if isinstance(value, Attr):
        return {"t": "attr", "module": value.module, "name": value.name}
    if isinstance(value, NS):
        return {"t": "ns", "v": [[k, to_wire(v)] for k, v in value.attrs.items()]}
    if isinstance(value, New):
        return {
            "t": "new",
            "cls": value.cls,
            "args": [to_wire(a) for a in value.args],
            "kwargs": [[k, to_wire(v)] for k, v in value.kwargs.items()],
        }
    if isinstance(value, list):
        return {"t": "list", "v": [to_wire(v) for v in value]}
    if isinstance(value, tuple):
        return {"t": "tuple", "v": [to_wire(v) for v in value]}
    if isinstance(value, dict):
        return {"t": "dict", "v": [[to_wire(k), to_wire(v)] for k, v in value.items()]}
    return encode(value)


# ------------------------------------------------------------------ the processes


class OracleUnavailable(RuntimeError):
    pass


class Side:
    """One server process; ``call`` sends a request and waits for its one-line answer."""

    def __init__(self, name: str, command: list[str], env: dict[str, str]) -> None:
        self.name = name
        self.calls: dict[str, int] = {}
        self._proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
            cwd=str(ROOT / "tests"),
            env=env,
        )
        hello = self._readline()
        self.package_file = str(json.loads(hello)["ready"])

    def _readline(self) -> str:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            assert self._proc.stderr is not None
            raise OracleUnavailable(f"{self.name} server exited: {self._proc.stderr.read()}")
        return line

    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(payload) + "\n")
        self._proc.stdin.flush()
        reply: dict[str, Any] = json.loads(self._readline())
        if "harness_error" in reply:
            raise AssertionError(f"{self.name}: {reply['harness_error']}")
        return reply

    def call(self, function: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self.calls[function] = self.calls.get(function, 0) + 1
        return self.request(
            {
                "call": function,
                "args": [to_wire(a) for a in args],
                "kwargs": [[k, to_wire(v)] for k, v in kwargs.items()],
            }
        )

    def surface(self) -> dict[str, Any]:
        reply: dict[str, Any] = self.request({"surface": True})["ok"]
        return reply

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        finally:
            if self._proc.poll() is None:
                self._proc.kill()
            for stream in (self._proc.stdout, self._proc.stderr):
                if stream is not None:
                    stream.close()


def start_published() -> Side:
    python = oracle_python()
    if not python.exists():
        raise OracleUnavailable(
            f"no oracle interpreter at {python}: run `make oracle` (it creates .venv-oracle with "
            f"longform-memory=={PUBLISHED_VERSION}) or set LONGFORM_ORACLE_PYTHON"
        )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    # -I: no PYTHONPATH, no user site, not even the script's folder; only the oracle's own
    # site-packages can supply longform_memory.
    return Side("published", [str(python), "-I", str(SERVER)], env)


def dropin_python() -> Path | None:
    """The interpreter of a fresh environment holding only the built drop-in, if one is set."""
    configured = os.environ.get("LONGFORM_DROPIN_PYTHON")
    # absolute(), not resolve(): a venv's python is a symlink to the base interpreter.
    return Path(configured).absolute() if configured else None


def start_ours() -> Side:
    python = dropin_python()
    if python is None:
        return Side("ours", [sys.executable, str(SERVER)], subprocess_env())
    if not python.exists():
        raise OracleUnavailable(f"LONGFORM_DROPIN_PYTHON={python} does not exist: run `make dist`")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    # -I, as for the published side: only that environment's site-packages can supply
    # longform_memory, so this checkout's source is out of reach.
    return Side("ours", [str(python), "-I", str(SERVER)], env)
