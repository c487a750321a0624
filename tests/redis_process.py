"""A private redis-server on a free loopback port, which a test may freeze (SIGSTOP) and kill.

The session's shared server (tests/state/conftest.py), the output-hash corpus and the tests
that stop or kill their own server all start it here. Every signal goes to this process's own
child, by PID.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from types import TracebackType


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisProcess:
    """``with RedisProcess() as server``: ``server.url``, ``freeze()``, ``thaw()``, ``kill()``."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._dir = tempfile.mkdtemp(prefix="membrane-redis-")
        self._proc: subprocess.Popen[bytes] | None = None
        self._frozen = False

    def start(self) -> RedisProcess:
        server = shutil.which("redis-server")
        if server is None:
            raise RuntimeError("redis-server is not installed; `make system-deps` installs it")
        self._proc = subprocess.Popen(
            [
                server,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self._dir,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._wait_until_it_answers()
        return self

    def _wait_until_it_answers(self) -> None:
        import redis

        client = redis.Redis(
            host="127.0.0.1", port=self.port, socket_timeout=2, socket_connect_timeout=2
        )
        give_up = time.monotonic() + 15
        while True:
            try:
                client.ping()
                break
            except redis.exceptions.ConnectionError:
                if time.monotonic() > give_up:
                    raise
                time.sleep(0.05)
        client.close()

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def freeze(self) -> None:
        """SIGSTOP: the kernel still accepts connections and bytes; nothing answers."""
        os.kill(self.pid, signal.SIGSTOP)
        self._frozen = True

    def thaw(self) -> None:
        os.kill(self.pid, signal.SIGCONT)
        self._frozen = False

    def kill(self) -> None:
        """SIGKILL: connections are refused from now on."""
        assert self._proc is not None
        os.kill(self.pid, signal.SIGKILL)
        self._proc.wait(timeout=10)

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            if self._frozen:
                self.thaw()
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> RedisProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
