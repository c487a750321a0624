"""Adapter tests: telemetry off and sockets limited to loopback.

The frameworks under test phone home unless told not to; the variables below are set before
any of them is imported. Any socket connection to an address off this machine fails the test
that made it. A test module whose framework is not installed skips with the reason (the
extra to install); with ``CI=true`` that skip counts as a failure (``tests/conftest.py``), so
a framework that did not install never passes as "skipped". The CrewAI tests run only in the
CrewAI environment (``MEMBRANE_ADAPTER_ENV=crewai``), which the Makefile builds next to
``.venv``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_DISABLE_TRACKING"] = "true"
os.environ["OTEL_SDK_DISABLED"] = "true"
os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "False"
os.environ["ANONYMIZED_TELEMETRY"] = "False"
os.environ["LLAMA_INDEX_CACHE_DIR"] = os.environ.get("LLAMA_INDEX_CACHE_DIR", "/tmp/llama_index")

CREWAI_ENV = os.environ.get("MEMBRANE_ADAPTER_ENV") == "crewai"

# The CrewAI env holds only CrewAI, MCP 1.x and LangChain core; the main env has no CrewAI.
collect_ignore = [] if CREWAI_ENV else ["crewai"]
if CREWAI_ENV:
    collect_ignore += [
        "test_langchain.py",
        "test_llamaindex.py",
        "llamaindex",
        "test_haystack.py",
        "test_examples.py",
        "test_recall_tools.py",
        "langchain",
        "pydantic_ai",
        "openai_agents",
    ]


# CrewAI's import chain warns on import (ImportWarning from its lazy subpackages, pydantic and
# third-party deprecations); those are not ours, and the run treats warnings as errors.
CREWAI_WARNINGS = (
    "ignore::ImportWarning",
    "ignore::DeprecationWarning",
    "ignore::PendingDeprecationWarning",
    "ignore::pydantic.warnings.PydanticDeprecatedSince20",
    "ignore::UserWarning",
)


@pytest.fixture(autouse=True)
def _close_the_sync_loop() -> Iterator[None]:
    """Close the event loop a framework's ``run_sync`` left set on the thread.

    PydanticAI's ``Agent.run_sync`` and the Agents SDK's ``Runner.run_sync`` run on the thread's
    current event loop, create one when there is none, and leave it open. Closed here, it is not
    garbage-collected open during a later test, which Python reports as a ``ResourceWarning``
    (an error under this suite's ``filterwarnings``).
    """
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            return  # none is set
    if not loop.is_running():
        loop.close()
        asyncio.set_event_loop(None)


def pytest_configure(config: pytest.Config) -> None:
    if CREWAI_ENV:
        for line in CREWAI_WARNINGS:
            config.addinivalue_line("filterwarnings", line)


def _loopback(address: Any) -> bool:
    if not isinstance(address, tuple):
        return True  # AF_UNIX paths and the like stay on this machine
    host = str(address[0])
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def connect(self: socket.socket, address: Any) -> None:
        if not _loopback(address):
            raise ConnectionRefusedError(f"adapter tests may not connect to {address!r}")
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if not _loopback(address):
            raise ConnectionRefusedError(f"adapter tests may not connect to {address!r}")
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    yield
