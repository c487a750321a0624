"""Loaded at start-up by the interpreters the adapter tests spawn (examples, the MCP server).

It refuses socket connections to any address off this machine, as the in-process guard in
``tests/adapters/conftest.py`` does, so a framework phoning home fails loudly instead.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any


def _loopback(address: Any) -> bool:
    if not isinstance(address, tuple):
        return True
    host = str(address[0])
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex


def _guarded_connect(self: socket.socket, address: Any) -> None:
    if not _loopback(address):
        raise ConnectionRefusedError(f"adapter tests may not connect to {address!r}")
    _connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    if not _loopback(address):
        raise ConnectionRefusedError(f"adapter tests may not connect to {address!r}")
    return _connect_ex(self, address)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
