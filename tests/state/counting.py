"""Count a redis-py client's commands: each is one network round trip."""

from __future__ import annotations

from collections import Counter
from typing import Any


def count_commands(client: Any) -> Counter[tuple[str, str]]:
    """Count ``client``'s commands by (name, key) from now on (every command is a round trip)."""
    seen: Counter[tuple[str, str]] = Counter()
    send = client.execute_command

    def counted(*args: Any, **kwargs: Any) -> Any:
        name = str(args[0]).upper()
        key = args[3] if name == "EVAL" else args[1]
        seen[name, key.decode() if isinstance(key, bytes) else str(key)] += 1
        return send(*args, **kwargs)

    client.execute_command = counted
    return seen
