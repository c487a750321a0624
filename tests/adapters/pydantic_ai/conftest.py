"""PydanticAI adapter tests: close the event loop ``run_sync`` leaves behind after each test.

``Agent.run_sync`` runs on the thread's current event loop and, when there is none (as after
``asyncio.run``), creates one and leaves it set. Closed here, it cannot be garbage-collected
open later, which Python reports as a ``ResourceWarning`` (an error under this suite's
``filterwarnings``).
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _close_the_sync_loop() -> Iterator[None]:
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
