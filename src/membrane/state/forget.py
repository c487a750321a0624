"""Erasing a conversation from a state store (a user's request, a redaction, a retention rule)."""

from __future__ import annotations

from membrane.state.keys import check_id, check_namespace, conversation_key, scoped_conversation
from membrane.state.protocol import STATE_FORMAT_VERSION, VERSION_FIELD, StateStore

__all__ = ["forget_conversation"]


def forget_conversation(
    store: StateStore,
    conversation_id: str,
    state_namespace: str | None = None,
    *,
    user_id: str | None = None,
) -> None:
    """Remove the conversation's state value from ``store``: the cut, the index room and the
    history snapshot, whose index lines quote old messages.

    The key is the one the compiles used: ``state_namespace`` as the compiler's, and
    ``user_id`` only for conversations compiled by ``compile_prompt_async`` (which folds it into
    the id). A store with a ``delete(key)`` method (both of Membrane's) drops the key; another
    gets an empty state value in its place. :meth:`membrane.ContextCompiler.forget` calls this
    and also drops what the compiler keeps in memory.
    """
    check_id(conversation_id, "conversation_id")
    check_id(user_id, "user_id", optional=True)
    namespace = check_namespace(state_namespace)
    scoped = conversation_id if user_id is None else scoped_conversation(user_id, conversation_id)
    key = conversation_key(scoped, namespace)
    delete = getattr(store, "delete", None)
    if callable(delete):
        delete(key)
    else:
        store.put(key, {VERSION_FIELD: STATE_FORMAT_VERSION})
