"""A real redis-server on a free loopback port, started once per test session."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = shutil.which("redis-server")
    if server is None:
        raise RuntimeError("redis-server is not installed; `make test` installs it from Debian")
    port = _free_port()
    workdir = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen(
        [
            server,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import redis

    client = redis.Redis(host="127.0.0.1", port=port)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis.exceptions.ConnectionError:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.05)
    client.close()
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[Any]:
    """A client the store's deadline rules accept (5 s: a loaded test machine is slow)."""
    from membrane.state.redis import bounded_client

    client = bounded_client(redis_url, deadline_seconds=5.0)
    client.flushdb()
    yield client
    client.close()
