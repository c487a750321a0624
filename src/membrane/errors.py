"""Errors raised by Membrane.

Every error the library raises on purpose derives from :class:`MembraneError`::

    MembraneError
    ├── InvalidInputError          bad arguments or malformed messages/memories (also a ValueError)
    │   └── ToolPairingError       a tool result without its call, or a call without its result
    ├── TokenizerDataError         a bundled encoding file is missing or fails its hash check
    ├── EmbedderUnavailable        an embedding model or the packages it runs on are missing
    ├── StoreUnavailable           the state store (e.g. Redis) cannot be reached
    └── MemoryCollisionError       a framework's own memory is active beside Membrane

Each error carries the values that explain it as attributes, and its message says what to do.
Programming mistakes such as a wrong argument type raise plain ``TypeError``.
"""

from __future__ import annotations

__all__ = [
    "EmbedderUnavailable",
    "InvalidInputError",
    "MembraneError",
    "MemoryCollisionError",
    "StoreUnavailable",
    "TokenizerDataError",
    "ToolPairingError",
]


class MembraneError(Exception):
    """Base class of every error Membrane raises on purpose."""


class InvalidInputError(MembraneError, ValueError):
    """An argument, message or memory is malformed.

    ``field`` names the offending argument (``"max_tokens"``, ``"conversation_messages[3]"``).
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class ToolPairingError(InvalidInputError):
    """A tool result has no matching call, or a call id is answered twice."""

    def __init__(self, message: str, *, field: str | None = None, tool_call_id: str = "") -> None:
        super().__init__(message, field=field)
        self.tool_call_id = tool_call_id


class TokenizerDataError(MembraneError):
    """A bundled tokenizer file is missing, unreadable or does not match its pinned hash."""

    def __init__(self, message: str, *, encoding: str) -> None:
        super().__init__(message)
        self.encoding = encoding


class EmbedderUnavailable(MembraneError):
    """An embedding model cannot run: a package is missing, or its files are missing or altered.

    ``embedder`` names the model or path that was asked for.
    """

    def __init__(self, message: str, *, embedder: str) -> None:
        super().__init__(message)
        self.embedder = embedder


class StoreUnavailable(MembraneError):
    """The compiler state store could not be read or written."""

    def __init__(self, message: str, *, store: str) -> None:
        super().__init__(message)
        self.store = store


class MemoryCollisionError(MembraneError):
    """A framework's own conversation memory is still active while Membrane manages context.

    ``framework`` names the framework (``"langchain"``, ``"crewai"`` ...) and ``locations``
    says where in the caller's object the memory was found.
    """

    def __init__(
        self, message: str, *, framework: str = "", locations: tuple[str, ...] = ()
    ) -> None:
        super().__init__(message)
        self.framework = framework
        self.locations = locations
