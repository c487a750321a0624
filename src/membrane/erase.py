"""One call that erases a conversation, or all of a user's, from every key Membrane keeps.

A conversation leaves data in up to five places: its state value in the state store (the cut,
the index, the history snapshot that quotes old messages), a compiler's in-process copies, and,
when ``compile_prompt_async`` was given a Redis client, its ref map, its recent-stress record and
its cached pre-flight summaries. :func:`erase` removes all of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from membrane import config
from membrane.errors import InvalidInputError
from membrane.state.async_redis import check_async_client
from membrane.state.forget import forget_conversation
from membrane.state.keys import (
    check_id,
    check_namespace,
    escape_glob,
    scope,
    scoped_conversation,
    user_conversations,
    user_scopes,
)
from membrane.state.protocol import StateStore

if TYPE_CHECKING:
    from membrane.compiler import ContextCompiler

__all__ = ["Erased", "erase"]

_PREFIXES: tuple[Callable[[], str], ...] = (
    config.ref_map_prefix,
    config.stress_key_prefix,
    config.preflight_cache_prefix,
)


@dataclass(frozen=True, slots=True)
class Erased:
    """What :func:`erase` removed."""

    #: The state-store conversation ids (user-scoped where a user was given) erased.
    conversations: tuple[str, ...]
    #: Keys deleted through ``redis_client`` (ref maps, stress records, pre-flight summaries).
    redis_keys: int


async def erase(
    *,
    conversation_id: str | None = None,
    user_id: str | None = None,
    compiler: ContextCompiler | None = None,
    store: StateStore | None = None,
    redis_client: Any = None,
    state_namespace: str | None = None,
) -> Erased:
    """Erase one conversation, or every conversation of ``user_id`` when no
    ``conversation_id`` is given, from the state store, the compiler's memory and Redis.

    ``store`` and ``state_namespace`` default to ``compiler``'s. ``user_id`` is the one given to
    ``compile_prompt_async``; a user's erasure finds their conversations by scanning the store
    (the store needs a ``scan(match)`` method: both of Membrane's have one). ``redis_client`` (a
    ``redis.asyncio`` client) is the one the ref map, stress record and pre-flight cache went
    through. Store calls run off the event loop.
    """
    check_id(conversation_id, "conversation_id", optional=True)
    check_id(user_id, "user_id", optional=True)
    if conversation_id is None and user_id is None:
        raise InvalidInputError(
            "erase needs a conversation_id, a user_id or both", field="conversation_id"
        )
    if compiler is not None:
        store = compiler.state_store if store is None else store
        if state_namespace is None:
            state_namespace = compiler.state_namespace
    namespace = check_namespace(state_namespace)
    ids = await asyncio.to_thread(_erase_state, store, conversation_id, user_id, namespace)
    if compiler is not None:
        for scoped in ids:
            await asyncio.to_thread(compiler.forget, scoped)
    deleted = 0
    if redis_client is not None:
        client = check_async_client(redis_client)
        deleted = await _erase_redis(client, conversation_id, user_id, namespace)
    return Erased(tuple(ids), deleted)


def _erase_state(
    store: StateStore | None,
    conversation_id: str | None,
    user_id: str | None,
    namespace: str | None,
) -> list[str]:
    """Delete the state values; the (scoped) conversation ids erased."""
    if conversation_id is not None:
        # A compile's own id, and the one compile_prompt_async folds it into.
        ids = list(dict.fromkeys([conversation_id, scoped_conversation(user_id, conversation_id)]))
        if user_id is not None:
            ids = ids[1:]
        if store is not None:
            for scoped in ids:
                forget_conversation(store, scoped, namespace)
        return ids
    if store is None:
        return []
    scan = getattr(store, "scan", None)
    if not callable(scan):
        raise TypeError(
            f"erasing a user needs a store with scan(match); {type(store).__name__} has none"
        )
    ids = [_scoped_id(key) for key in scan(user_conversations(str(user_id), namespace))]
    for scoped in ids:
        forget_conversation(store, scoped, namespace)
    return ids


def _scoped_id(key: str) -> str:
    """The conversation id inside a state key's braces, decoded."""
    tag = key[key.index("{") + 1 : key.rindex("}")]
    return tag.replace("%7D", "}").replace("%7B", "{").replace("%25", "%")


async def _erase_redis(
    client: Any, conversation_id: str | None, user_id: str | None, namespace: str | None
) -> int:
    if conversation_id is not None:
        scoped = scoped_conversation(user_id, conversation_id)
        where = escape_glob(scope(scoped, namespace))
    else:
        where = user_scopes(str(user_id), namespace)
    names: list[Any] = []
    for prefix in _PREFIXES:
        head = escape_glob(prefix()) + where
        names += [name async for name in client.scan_iter(match=head)]
        names += [name async for name in client.scan_iter(match=f"{head}:*")]
    return await _delete(client, names)


async def _delete(client: Any, names: Sequence[Any]) -> int:
    deleted = 0
    for name in names:  # one key a call: on a cluster each may live on another node
        deleted += int(await client.delete(name))
    return deleted
