"""A thread event loop of the test's own for ``Runner.run_sync``, closed afterwards.

``run_sync`` reuses the thread's default event loop and leaves it open; a later ``asyncio.run``
unsets it and the open loop is collected with a ResourceWarning (an error under this suite).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def own_loop() -> Iterator[None]:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield
    finally:
        loop.close()
        asyncio.set_event_loop(None)
