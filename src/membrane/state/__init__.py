"""Where the compiler keeps what must survive between turns.

Only two things do: per conversation, the eviction-index room decided at the last history cut,
and per model, the token-scale calibration. Both are small JSON-serialisable dicts behind the
:class:`StateStore` protocol, so a fleet of workers sharing one store emits the same bytes.
"""

from __future__ import annotations

from membrane.state.forget import forget_conversation
from membrane.state.memory import InMemoryStateStore
from membrane.state.protocol import STATE_FORMAT_VERSION, StateStore, StateStoreWarning
from membrane.state.redis import (
    RedisStateStore,
    get_ref_map_for_conversation,
    set_ref_map_for_conversation,
)

__all__ = [
    "STATE_FORMAT_VERSION",
    "InMemoryStateStore",
    "RedisStateStore",
    "StateStore",
    "StateStoreWarning",
    "forget_conversation",
    "get_ref_map_for_conversation",
    "set_ref_map_for_conversation",
]
