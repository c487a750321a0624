"""The names of the keys Membrane keeps in a state store.

Every key of one conversation holds the conversation id inside braces, ``{<id>}``: Redis
Cluster hashes only what is between the first ``{`` and the next ``}``, so all of a
conversation's keys live in one slot and no command crosses slots. Braces and ``%`` inside an
id are percent-encoded, so an id can neither end the tag early nor spell another id's key.
The optional namespace (a tenant) and the model id are encoded the same way, ``:`` included,
so the parts of a key never run into each other: two (namespace, id) pairs never share a key.

A caller's other data (the ref map, the recent-stress record, the pre-flight cache) is kept
under its own prefix followed by the same scope, ``[<namespace>:]{<id>}`` (:func:`scope`), so
no caller ever reads another's. ``compile_prompt_async`` folds its ``user_id`` into the id
(:func:`scoped_conversation`) before any key is made.

``KEY_VERSION`` is part of every name. It changes only when the names do; the format of the
values under them is versioned separately (:data:`membrane.state.STATE_FORMAT_VERSION`).
"""

from __future__ import annotations

import re

from membrane import config
from membrane.errors import InvalidInputError

__all__ = [
    "DEFAULT_CONVERSATION",
    "KEY_VERSION",
    "check_id",
    "check_namespace",
    "conversation_key",
    "escape_glob",
    "glob_regex",
    "preflight_key",
    "ref_map_key",
    "scale_key",
    "scope",
    "scoped_conversation",
    "stress_key",
    "user_conversations",
    "user_scopes",
]

#: Bumped from the unversioned ``membrane:conversation:<id>`` / ``membrane:scale:<model>`` names.
KEY_VERSION = 2

_TAG = str.maketrans({"%": "%25", "{": "%7B", "}": "%7D"})
_PART = str.maketrans({"%": "%25", "{": "%7B", "}": "%7D", ":": "%3A"})

#: The conversation of a compile given no ``conversation_id``. It holds a lone surrogate, which
#: no caller's id can (ids must be text UTF-8 can encode), so no id equals it, in a key or in a
#: compiler's in-process caches; its keys spell it ``%default``, which no id's encoding gives
#: (an id's ``%`` is always written ``%25``).
DEFAULT_CONVERSATION = "\udc00default"
_DEFAULT_TAG = "%default"

# What compile_prompt_async's fold makes of a user id and a conversation id: "<len>:<user>/".
_FOLDED = re.compile(r"[0-9]+:")


def _head(namespace: str | None) -> str:
    head = f"membrane:v{KEY_VERSION}:"
    return head if namespace is None else f"{head}{namespace.translate(_PART)}:"


def _tag(conversation: str) -> str:
    if conversation == DEFAULT_CONVERSATION:
        return _DEFAULT_TAG
    return conversation.translate(_TAG)


def conversation_key(conversation: str, namespace: str | None = None) -> str:
    """The key of a conversation's state: ``membrane:v2:[<namespace>:]conversation:{<id>}``."""
    return f"{_head(namespace)}conversation:{{{_tag(conversation)}}}"


def scope(conversation: str, namespace: str | None = None) -> str:
    """A conversation's full scope as it ends a key: ``[<namespace>:]{<id>}``.

    The id is the hash tag of the conversation's state key, so on a Redis Cluster a
    conversation's other keys live in the same slot as its state.
    """
    head = "" if namespace is None else f"{namespace.translate(_PART)}:"
    return f"{head}{{{_tag(conversation)}}}"


def scoped_conversation(user_id: str | None, conversation_id: str) -> str:
    """The one id of a user's conversation: ``<len(user)>:<user>/<id>``.

    Without a user the id stays as it is, unless it starts like a folded pair (digits and a
    colon); then ``0:`` goes in front, which no user's fold starts with (a user id is never
    empty). So no two (user, id) pairs ever give the same id.
    """
    if user_id is not None:
        return f"{len(user_id)}:{user_id}/{conversation_id}"
    return f"0:{conversation_id}" if _FOLDED.match(conversation_id) else conversation_id


def ref_map_key(conversation: str, namespace: str | None = None) -> str:
    """Where a conversation's ref map is saved: ``MEMBRANE_REF_MAP_PREFIX`` + :func:`scope`."""
    return config.ref_map_prefix() + scope(conversation, namespace)


def stress_key(conversation: str, namespace: str | None = None) -> str:
    """Where a conversation's recent-stress record is kept (``MEMBRANE_STRESS_KEY_PREFIX``)."""
    return config.stress_key_prefix() + scope(conversation, namespace)


def preflight_key(conversation: str, namespace: str | None, digest: str) -> str:
    """Where a pre-flight summary is cached (``MEMBRANE_PREFLIGHT_CACHE_PREFIX``, scope, digest)."""
    return f"{config.preflight_cache_prefix()}{scope(conversation, namespace)}:{digest}"


def scale_key(model_id: str | None, namespace: str | None = None) -> str:
    """The key of a model's token-scale calibration (no braces: it is no conversation's)."""
    return f"{_head(namespace)}scale:{(model_id or '').lower().translate(_PART)}"


def escape_glob(text: str) -> str:
    """``text`` as a literal inside a Redis ``SCAN MATCH`` glob."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


def glob_regex(match: str) -> str:
    """The regular expression a Redis glob stands for (``*``, ``?``, ``[...]``, escapes)."""
    out, i = [], 0
    while i < len(match):
        c = match[i]
        if c == "\\" and i + 1 < len(match):
            out.append(re.escape(match[i + 1]))
            i += 2
            continue
        if c == "[" and "]" in match[i + 1 :]:
            end = match.index("]", i + 1)
            body = match[i + 1 : end]
            out.append(
                "[^" + re.escape(body[1:]) + "]"
                if body.startswith("^")
                else "[" + re.escape(body) + "]"
            )
            i = end + 1
            continue
        out.append({"*": ".*", "?": "."}.get(c, re.escape(c)))
        i += 1
    return "".join(out)


def user_conversations(user_id: str, namespace: str | None = None) -> str:
    """The ``SCAN MATCH`` glob of every state key of ``user_id``'s conversations."""
    tag = f"{len(user_id)}:{user_id}/".translate(_TAG)
    return f"{escape_glob(_head(namespace))}conversation:{{{escape_glob(tag)}*}}"


def user_scopes(user_id: str, namespace: str | None = None) -> str:
    """The glob of :func:`scope` for every conversation of ``user_id`` (after a key prefix)."""
    head = "" if namespace is None else f"{namespace.translate(_PART)}:"
    tag = f"{len(user_id)}:{user_id}/".translate(_TAG)
    return f"{escape_glob(head)}{{{escape_glob(tag)}*}}"


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


def check_id(value: object, field: str, *, optional: bool = False) -> None:
    """Raise InvalidInputError unless ``value`` is a non-empty string UTF-8 can encode."""
    if value is None and optional:
        return
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{field} must be a non-empty string, got {value!r}", field=field)
    if any("\ud800" <= ch <= "\udfff" for ch in value):
        raise InvalidInputError(
            f"{field} must be text without lone surrogates, got {value!r}", field=field
        )
