"""A loopback HTTP stand-in for the provider APIs, for requests sent by the official SDKs.

The server listens on 127.0.0.1 on a free port. Each POST is matched to a route by its path;
the route's validator checks the JSON body (against the SDK's own request types, see
``strict.py``) and the route's reply is sent back in the provider's response shape. Every
request is recorded with its validation outcome, so a test can assert what arrived and that
nothing was refused. A body that fails validation gets a 400 with the validator's message,
which the SDK raises as its own error.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Received", "Route", "Stub", "running_stub"]

Validator = Callable[[Any], None]
Reply = Callable[[Any], dict[str, Any]]


@dataclass(frozen=True)
class Route:
    """Requests whose path ends with ``suffix`` are checked by ``validate`` and answered."""

    suffix: str
    validate: Validator
    reply: Reply


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any
    error: str | None = None


@dataclass
class Stub:
    base_url: str
    routes: list[Route]
    received: list[Received] = field(default_factory=list)

    def bodies(self, suffix: str = "") -> list[Any]:
        return [r.body for r in self.received if r.path.endswith(suffix)]

    def errors(self) -> list[str]:
        return [f"{r.path}: {r.error}" for r in self.received if r.error is not None]


def _handler(stub: Stub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            del format, args  # keep test output quiet

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            path = self.path.split("?", 1)[0]
            record = Received(path, {k.lower(): v for k, v in self.headers.items()}, None)
            stub.received.append(record)
            try:
                record.body = json.loads(raw)
            except json.JSONDecodeError as exc:
                record.error = f"body is not JSON: {exc}"
                self._send(400, {"error": {"message": record.error}})
                return
            route = next((r for r in stub.routes if path.endswith(r.suffix)), None)
            if route is None:
                record.error = f"no route for {path}"
                self._send(404, {"error": {"message": record.error}})
                return
            try:
                route.validate(record.body)
            except Exception as exc:  # the validator's message is the point of the test
                record.error = f"{type(exc).__name__}: {exc}"
                self._send(400, {"error": {"type": "invalid_request", "message": record.error}})
                return
            self._send(200, route.reply(record.body))

    return Handler


@contextmanager
def running_stub(routes: list[Route]) -> Iterator[Stub]:
    """A stub server on 127.0.0.1 for the duration of the ``with`` block."""
    stub = Stub("", routes)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stub))
    stub.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
