"""The chat-backend entry point: :func:`compile_prompt_async` (alias ``compile_prompt_payload``).

A chat backend receives, per request, the conversation's raw message list and the memories its
retriever found. Compiling that with a fresh compiler every turn would forget where the history
was cut, so every turn would validate and re-plan the whole history and the cached prefix would
move. :func:`compile_prompt_async` instead keeps one compiler per configuration in a
:class:`CompilerPool` (made on first use, shared by threads and tasks) and compiles each turn
against the conversation's state, so consecutive turns emit the same prefix bytes.

Nothing here opens a connection unless asked: ``persist_ref_map_to_redis=True``, a
``redis_client`` or a Redis ``state_store``. Nothing embeds unless an ``embedder`` is passed.
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from membrane.compiler import ContextCompiler
from membrane.errors import InvalidInputError
from membrane.lod import explain_attention_shift
from membrane.messages import message_text
from membrane.result import CompileResult
from membrane.state.async_redis import async_client_from_url, check_async_client, save_ref_map
from membrane.state.keys import scoped_conversation
from membrane.stress import record_recent_stress

if TYPE_CHECKING:
    from membrane.messages import Message
    from membrane.stages.preflight import AsyncCompressor, PreFlightAnalyst
    from membrane.state import StateStore
    from membrane.text.semantic import Embedder

__all__ = ["CompilerPool", "compile_prompt_async", "compile_prompt_payload", "default_pool"]

#: User messages before the current one that topic-shift detection compares it with.
RECENT_USER_MESSAGES = 3
_POOL_SIZE = 64
_CONSTRUCTOR_OPTIONS = frozenset(inspect.signature(ContextCompiler.__init__).parameters) - {
    "self",
    "max_tokens",
    "model_id",
    "core_content",
}


def _option_key(value: object) -> Hashable:
    # Plain values (numbers, strings, dicts and lists of them) are compared by value, so a
    # fresh `{"semantic": 1500}` on every call still finds its compiler. Stores, embedders and
    # callbacks are told apart by identity; the pool keeps them alive (each compiler holds its
    # own), so an id is never reused while its entry exists.
    if isinstance(value, Mapping):
        return ("map", tuple(sorted((str(k), _option_key(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(_option_key(v) for v in value))
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return ("value", type(value).__qualname__, value)


class CompilerPool:
    """One :class:`ContextCompiler` per configuration, created on first use.

    Safe to share between threads and asyncio tasks: creation happens under a lock, and a
    pooled compiler is an ordinary :class:`ContextCompiler`, so compiles of one conversation
    take turns under its per-conversation lock while different conversations run side by side.
    The pool holds at most ``size`` configurations and drops the least recently used one beyond
    that.
    """

    def __init__(self, size: int = _POOL_SIZE) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InvalidInputError(f"size must be a positive int, got {size!r}", field="size")
        self._size = size
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, ContextCompiler] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(
        self, max_tokens: int, model_id: str | None, core_content: str, **options: Any
    ) -> ContextCompiler:
        """The compiler for this configuration (made now if it is new)."""
        unknown = sorted(set(options) - _CONSTRUCTOR_OPTIONS)
        if unknown:
            raise TypeError(f"unknown ContextCompiler options: {', '.join(unknown)}")
        key = (
            max_tokens,
            model_id,
            core_content,
            tuple(sorted((name, _option_key(v)) for name, v in options.items())),
        )
        with self._lock:
            compiler = self._entries.get(key)
            if compiler is None:
                compiler = ContextCompiler(max_tokens, model_id, core_content, **options)
                self._entries[key] = compiler
                while len(self._entries) > self._size:
                    self._entries.popitem(last=False)
            else:
                self._entries.move_to_end(key)
            return compiler


_default_pool: CompilerPool | None = None
_default_pool_lock = threading.Lock()


def default_pool() -> CompilerPool:
    """The process's shared pool (made on the first call)."""
    global _default_pool
    with _default_pool_lock:
        if _default_pool is None:
            _default_pool = CompilerPool()
        return _default_pool


def split_history(messages_list: Sequence[Message] | None, user_msg: str) -> list[Message]:
    """The history before the current turn: a trailing user message equal to ``user_msg``
    (a backend's list often ends with the turn being answered) is the current turn, not history.
    """
    history = list(messages_list or [])
    last = history[-1] if history else None
    is_user = isinstance(last, Mapping) and last.get("role") == "user"
    if is_user and message_text(last).strip() == user_msg.strip():  # type: ignore[arg-type]
        history.pop()
    return history


def _recent_user_texts(history: Sequence[Message]) -> list[str]:
    texts = [message_text(m) for m in history if isinstance(m, Mapping) and m.get("role") == "user"]
    return texts[-RECENT_USER_MESSAGES:]


def _check_ids(user_msg: object, user_id: object, conversation_id: object) -> None:
    if not isinstance(user_msg, str):
        raise InvalidInputError("user_msg must be a string", field="user_msg")
    for name, value in (("user_id", user_id), ("conversation_id", conversation_id)):
        if value is not None and (not isinstance(value, str) or not value):
            raise InvalidInputError(f"{name} must be a non-empty string", field=name)


def _pairs(
    retrieved_objects: Sequence[tuple[object, int]] | None,
) -> tuple[list[object], dict[int, int]]:
    memories: list[object] = []
    tiers: dict[int, int] = {}
    for index, pair in enumerate(retrieved_objects or ()):
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise InvalidInputError(
                f"retrieved_objects[{index}] must be a (memory, tier) pair, got {pair!r}",
                field=f"retrieved_objects[{index}]",
            )
        memory, tier = pair
        if isinstance(tier, bool) or tier not in (1, 2, 3):
            raise InvalidInputError(
                f"retrieved_objects[{index}] has tier {tier!r}; tiers are 1, 2 or 3",
                field=f"retrieved_objects[{index}]",
            )
        memories.append(memory)
        tiers[id(memory)] = tier
    return memories, tiers


def _check_call(
    user_msg: object,
    user_id: object,
    conversation_id: object,
    redis_client: Any,
    persist_ref_map: bool,
    record_stress: bool,
) -> None:
    """The ids, and what the Redis options need, checked before anything runs."""
    _check_ids(user_msg, user_id, conversation_id)
    if (persist_ref_map or record_stress) and conversation_id is None:
        raise InvalidInputError(
            "persist_ref_map_to_redis and record_stress need a conversation_id to key Redis",
            field="conversation_id",
        )
    if redis_client is not None:
        check_async_client(redis_client)
    elif record_stress:
        raise InvalidInputError("record_stress needs a redis_client", field="redis_client")


def _scoped(user_id: str | None, conversation_id: str | None) -> str | None:
    return None if conversation_id is None else scoped_conversation(user_id, conversation_id)


def _with_topic_shift(
    result: CompileResult, history: Sequence[Message], user_msg: str, embedder: Embedder | None
) -> CompileResult:
    """``result`` with the topic-shift verdict in its report (None without an embedder)."""
    shifted, reason = explain_attention_shift(_recent_user_texts(history), user_msg, None, embedder)
    report = dataclasses.replace(
        result.report, topic_shift=shifted, topic_shift_reason=reason, topic_shift_checked=True
    )
    return result.with_report(report)


async def compile_prompt_async(
    user_msg: str,
    messages_list: Sequence[Message] | None = None,
    *,
    max_tokens: int,
    user_id: str | None = None,
    conversation_id: str | None = None,
    model_id: str | None = None,
    core_content: str = "",
    retrieved_objects: Sequence[tuple[object, int]] | None = None,
    persist_ref_map_to_redis: bool = False,
    record_stress: bool = False,
    redis_client: Any = None,
    state_store: StateStore | None = None,
    embedder: Embedder | None = None,
    compress_async: AsyncCompressor | PreFlightAnalyst | None = None,
    pool: CompilerPool | None = None,
    **options: Any,
) -> CompileResult:
    """Compile one chat-backend turn.

    ``retrieved_objects`` are ``(memory, tier)`` pairs, numbered ``[Mem:N]`` in order;
    ``messages_list`` is the conversation so far (a last user message equal to ``user_msg`` is
    the current turn). One compiler per configuration (``max_tokens``, ``model_id``, any
    :class:`ContextCompiler` option given as a keyword) is reused, against the state of
    ``user_id`` + ``conversation_id``; other keywords go to ``compile_async``.

    ``persist_ref_map_to_redis=True`` saves the ref map through ``redis_client`` (a
    ``redis.asyncio`` client) or one made for ``MEMBRANE_REDIS_URL`` (read it back with
    :func:`~membrane.state.get_ref_map_for_conversation`); ``redis_client`` also caches
    ``compress_async``'s summaries, and ``record_stress=True`` keeps the turn's stress record.
    Every such key carries the conversation's full scope. ``metadata["topic_shift"]`` needs an
    ``embedder`` (``metadata["topic_shift_reason"]`` says why it is None).
    """
    _check_call(
        user_msg, user_id, conversation_id, redis_client, persist_ref_map_to_redis, record_stress
    )
    memories, tiers = _pairs(retrieved_objects)
    history = split_history(messages_list, user_msg)
    ctor = {k: options.pop(k) for k in list(options) if k in _CONSTRUCTOR_OPTIONS}
    ctor.update(state_store=state_store, embedder=embedder)
    pool = pool if pool is not None else default_pool()
    compiler = pool.get(max_tokens, model_id, core_content, **ctor)
    result = await compiler.compile_async(
        memories,
        user_msg,
        conversation_messages=history,
        tier_by_memory_id=tiers,
        conversation_id=_scoped(user_id, conversation_id),
        compress_async=compress_async,
        redis_client=redis_client,
        **options,
    )
    result = _with_topic_shift(result, history, user_msg, embedder)
    scope = {"user_id": user_id, "state_namespace": ctor.get("state_namespace")}
    if conversation_id is not None and persist_ref_map_to_redis:
        await _persist_ref_map(conversation_id, result.ref_map, redis_client, scope)
    if conversation_id is not None and record_stress:
        await record_recent_stress(conversation_id, result.report, redis_client, **scope)
    return result


async def _persist_ref_map(
    conversation_id: str, ref_map: dict[int, str], client: Any, scope: dict[str, Any]
) -> None:
    if client is not None:
        await save_ref_map(conversation_id, ref_map, client, **scope)
        return
    own = async_client_from_url()
    try:
        await save_ref_map(conversation_id, ref_map, own, **scope)
    finally:
        await own.aclose()


#: The seed's other name for :func:`compile_prompt_async`.
compile_prompt_payload = compile_prompt_async
