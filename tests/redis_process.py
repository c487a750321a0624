"""A private redis-server on a free loopback port, which a test may freeze (SIGSTOP) and kill,
and a private three-node Redis Cluster made of them.

The session's shared server (tests/state/conftest.py), the output-hash corpus, the tests that
stop or kill their own server and the cluster tests all start it here. Every signal goes to
this process's own child, by PID.
"""

from __future__ import annotations

import os
import random
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


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _cluster_port(taken: set[int]) -> int:
    """A port that is free, and whose cluster-bus port (+10000) is free too."""
    for _ in range(200):
        port = random.randint(20_000, 50_000)
        near = {port, port + 10_000} & (taken | {p + 10_000 for p in taken})
        if not near and _bindable(port) and _bindable(port + 10_000):
            return port
    raise RuntimeError("no free pair of loopback ports for a cluster node")


class RedisProcess:
    """``with RedisProcess() as server``: ``server.url``, ``freeze()``, ``thaw()``, ``kill()``.

    ``cluster_port_taken`` (a set of ports other nodes use) makes a cluster node: a port whose
    bus port is free too, and ``--cluster-enabled yes``.
    """

    def __init__(self, cluster_port_taken: set[int] | None = None) -> None:
        self._cluster = cluster_port_taken is not None
        if cluster_port_taken is None:
            self.port = _free_port()
        else:
            self.port = _cluster_port(cluster_port_taken)
            cluster_port_taken.add(self.port)
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
                *(
                    ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]
                    if self._cluster
                    else []
                ),
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


class RedisClusterProcess:
    """``with RedisClusterProcess() as cluster``: three master nodes on loopback, all slots
    assigned (``redis-cli --cluster create``), ``cluster.url`` the first node's address.
    """

    def __init__(self, nodes: int = 3) -> None:
        taken: set[int] = set()
        self.nodes = [RedisProcess(cluster_port_taken=taken) for _ in range(nodes)]
        self.url = f"redis://127.0.0.1:{self.nodes[0].port}/0"

    def start(self) -> RedisClusterProcess:
        cli = shutil.which("redis-cli")
        if cli is None:
            raise RuntimeError("redis-cli is not installed; `make system-deps` installs it")
        try:
            for node in self.nodes:
                node.start()
            addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
            create = ["--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"]
            subprocess.run(
                [cli, *create],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=60,
            )
            self._wait_until_ok()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_ok(self) -> None:
        import redis

        give_up = time.monotonic() + 30
        for node in self.nodes:
            client = redis.Redis(
                host="127.0.0.1", port=node.port, socket_timeout=2, socket_connect_timeout=2
            )
            while b"cluster_state:ok" not in client.execute_command("CLUSTER", "INFO"):
                if time.monotonic() > give_up:
                    raise RuntimeError(f"cluster node {node.port} never reached cluster_state:ok")
                time.sleep(0.05)
            client.close()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> RedisClusterProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
