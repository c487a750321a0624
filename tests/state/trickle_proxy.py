"""A TCP proxy on loopback that can pass a Redis server's replies on a few bytes at a time.

Each chunk arrives well within any socket timeout, so a client that bounds each socket read (and
not the whole call) waits as long as the trickle lasts. What the client sends reaches the server
at once. Every thread is a daemon and ends when the proxy is closed.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from types import TracebackType


class TrickleProxy:
    """``with TrickleProxy(port) as proxy``: ``proxy.url``; ``proxy.trickle = True`` slows it."""

    def __init__(self, upstream_port: int, *, chunk: int = 16, every: float = 0.05) -> None:
        self._upstream = upstream_port
        self.chunk, self.every = chunk, every
        self.trickle = False
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()

    def __enter__(self) -> TrickleProxy:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def _accept(self) -> None:
        self._listener.settimeout(0.2)
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            server = socket.create_connection(("127.0.0.1", self._upstream), timeout=5)
            with self._lock:
                self._sockets += [client, server]
            threading.Thread(target=self._pipe, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, True), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, replies: bool) -> None:
        source.settimeout(0.2)
        while not self._closed.is_set():
            try:
                data = source.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if not data:
                break
            try:
                if replies and self.trickle:
                    for start in range(0, len(data), self.chunk):
                        if self._closed.wait(self.every):
                            return
                        sink.sendall(data[start : start + self.chunk])
                else:
                    sink.sendall(data)
            except OSError:
                break
        for end in (source, sink):
            _close(end)

    def close(self) -> None:
        self._closed.set()
        _close(self._listener)
        with self._lock:
            for s in self._sockets:
                _close(s)
        time.sleep(0.05)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _close(s: socket.socket) -> None:
    with contextlib.suppress(OSError):
        s.shutdown(socket.SHUT_RDWR)
    s.close()
