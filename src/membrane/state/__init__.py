"""Where the compiler keeps what must survive between turns.

Only two things do: per conversation, the eviction-index room decided at the last history cut,
and per model, the token-scale calibration. Both are small JSON-serialisable dicts behind the
:class:`StateStore` protocol, so a fleet of workers sharing one store emits the same bytes.
"""

from __future__ import annotations

import typing

from membrane._lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from membrane.state.forget import forget_conversation
    from membrane.state.memory import InMemoryStateStore
    from membrane.state.protocol import STATE_FORMAT_VERSION, StateStore, StateStoreWarning
    from membrane.state.redis import (
        RedisStateStore,
        get_ref_map_for_conversation,
        set_ref_map_for_conversation,
    )

# Where each name lives: imported on first use (see membrane._lazy).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "membrane.state.forget": ("forget_conversation",),
    "membrane.state.memory": ("InMemoryStateStore",),
    "membrane.state.protocol": ("STATE_FORMAT_VERSION", "StateStore", "StateStoreWarning"),
    "membrane.state.redis": (
        "RedisStateStore",
        "get_ref_map_for_conversation",
        "set_ref_map_for_conversation",
    ),
}
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

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
