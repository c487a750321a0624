"""The names of the keys Membrane keeps in a state store.

Every key of one conversation holds the conversation id inside braces, ``{<id>}``: Redis
Cluster hashes only what is between the first ``{`` and the next ``}``, so all of a
conversation's keys live in one slot and no command crosses slots. Braces and ``%`` inside an
id are percent-encoded, so an id can neither end the tag early nor spell another id's key.
The optional namespace (a tenant) and the model id are encoded the same way, ``:`` included,
so the parts of a key never run into each other: two (namespace, id) pairs never share a key.

``KEY_VERSION`` is part of every name. It changes only when the names do; the format of the
values under them is versioned separately (:data:`membrane.state.STATE_FORMAT_VERSION`).
"""

from __future__ import annotations

from membrane.errors import InvalidInputError

__all__ = ["KEY_VERSION", "check_namespace", "conversation_key", "scale_key"]

#: Bumped from the unversioned ``membrane:conversation:<id>`` / ``membrane:scale:<model>`` names.
KEY_VERSION = 2

_TAG = str.maketrans({"%": "%25", "{": "%7B", "}": "%7D"})
_PART = str.maketrans({"%": "%25", "{": "%7B", "}": "%7D", ":": "%3A"})


def _head(namespace: str | None) -> str:
    head = f"membrane:v{KEY_VERSION}:"
    return head if namespace is None else f"{head}{namespace.translate(_PART)}:"


def conversation_key(conversation: str, namespace: str | None = None) -> str:
    """The key of a conversation's state: ``membrane:v2:[<namespace>:]conversation:{<id>}``."""
    return f"{_head(namespace)}conversation:{{{conversation.translate(_TAG)}}}"


def scale_key(model_id: str | None, namespace: str | None = None) -> str:
    """The key of a model's token-scale calibration (no braces: it is no conversation's)."""
    return f"{_head(namespace)}scale:{(model_id or '').lower().translate(_PART)}"


def check_namespace(namespace: object, field: str = "state_namespace") -> str | None:
    """``namespace`` if it is None or a non-empty string UTF-8 can encode; else an error."""
    if namespace is None:
        return None
    if not isinstance(namespace, str) or not namespace:
        raise InvalidInputError(
            f"{field} must be a non-empty string or None, got {namespace!r}", field=field
        )
    if any("\ud800" <= ch <= "\udfff" for ch in namespace):
        raise InvalidInputError(
            f"{field} must be text without lone surrogates, got {namespace!r}", field=field
        )
    return namespace
