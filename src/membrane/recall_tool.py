"""``membrane_recall``: the interrupt protocol as a tool an agent calls.

When a conversation outgrows its budget, the compiler drops its oldest messages and files
them, cut into passages, in an inverted index (``membrane.stages.history``). The seed's
interrupt protocol lets a model ask for a missing detail with a tag in its reply; an agent that
calls tools asks with this tool instead. :class:`RecallTool` answers a query from the passages
of the conversation's *dropped* messages only (what the model can no longer see), best match
first, inside a token cap counted with the compiler's own counter. The answer goes back as an
ordinary tool result, so the next compile counts it like any other.

>>> from membrane import ContextCompiler
>>> tool = RecallTool(ContextCompiler(max_tokens=4096))
>>> tool.definition["function"]["name"]
'membrane_recall'
>>> tool.recall("the launch date of project Atlas") == NOTHING_DROPPED
True

The query and whatever the state store holds can only change the answer: nothing here writes
to the compiler, its caches or the store, and every stored value read is checked first.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from membrane.compile_state import StateView, StoreNotes
from membrane.compiler import ContextCompiler
from membrane.errors import InvalidInputError
from membrane.interrupt import MAX_QUERY_CHARS
from membrane.messages import check_history, leading_unit
from membrane.prompt_text import one_line
from membrane.stages.firewall import PIN_MIN_SCORE
from membrane.stages.history import (
    HistoryTracker,
    RecalledPassage,
    read_snapshot,
    recall_candidates,
    restore_tracker,
    select_passages,
)
from membrane.state import StateStoreWarning
from membrane.state.keys import DEFAULT_CONVERSATION, check_id
from membrane.tokenizers import MemoizedCounter

__all__ = [
    "DEFAULT_RECALL_TOKENS",
    "FOUND_HEADER",
    "MIN_RECALL_TOKENS",
    "NOTHING_DROPPED",
    "NO_MATCH",
    "NO_ROOM",
    "QUERY_DESCRIPTION",
    "RECALL_TOOL_NAME",
    "RecallAnswer",
    "RecallTool",
    "RecalledMessage",
    "check_query",
]

RECALL_TOOL_NAME = "membrane_recall"
#: The default cap on one answer, in the compiler's tokens.
DEFAULT_RECALL_TOKENS = 500
#: The smallest cap accepted: room for the header and one short passage.
MIN_RECALL_TOKENS = 64

FOUND_HEADER = (
    "Passages of earlier messages of this conversation that are no longer in your context, "
    "oldest first, quoted as written (#N is the message's position in the conversation):"
)
NO_MATCH = (
    "Nothing found: no message dropped from your context matches this query. Try other words "
    "for the same detail, or look in the messages you can see."
)
NOTHING_DROPPED = (
    "Nothing found: no earlier message of this conversation has been dropped from your "
    "context, so everything said so far is in the messages you can see."
)

NO_ROOM = (
    "Nothing shown: the passages that match this query do not fit this answer's size limit. "
    "Ask for one detail at a time."
)

_DESCRIPTION = (
    "Look up a detail said earlier in this conversation that is no longer in your context. "
    "When a conversation grows long, its oldest messages and tool results are set aside; this "
    "searches them. Pass a short, precise query naming what you need (a name, code, number, "
    "date or topic). It returns the matching passages quoted as written, or says that nothing "
    "matches. Call it instead of guessing a detail you cannot see."
)
QUERY_DESCRIPTION = (
    f"What to look for, in a few words (at most {MAX_QUERY_CHARS} characters): the detail you "
    "need and what it is about."
)

Status = Literal["found", "no_match", "no_room", "nothing_dropped"]
Count = Callable[[str], int]


@dataclass(frozen=True, slots=True)
class RecalledMessage:
    """One passage of the answer: where it came from and what it says.

    ``message`` is the position of its message in the history Membrane tracks for the
    conversation (0 for the first; after a compaction block, the first message after it),
    ``speaker`` the role or ``tool result (...)`` label, ``text`` the line as the answer shows it.
    """

    message: int
    speaker: str
    text: str


@dataclass(frozen=True, slots=True)
class RecallAnswer:
    """A recall's answer: ``text`` is what the tool returns; ``tokens`` is its count."""

    text: str
    status: Status
    passages: tuple[RecalledMessage, ...]
    tokens: int


def check_query(query: object) -> str:
    """``query`` stripped; TypeError for a non-string, InvalidInputError for an unusable one."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a str, got {type(query).__name__}")
    stripped = query.strip()
    if not stripped:
        raise InvalidInputError(
            "query is empty: name the detail to look up in a few words", field="query"
        )
    if len(stripped) > MAX_QUERY_CHARS:
        raise InvalidInputError(
            f"query has {len(stripped)} characters; keep it to at most {MAX_QUERY_CHARS}: "
            "name the detail, do not paste text",
            field="query",
        )
    if any("\ud800" <= ch <= "\udfff" for ch in stripped):
        raise InvalidInputError("query holds lone surrogates; send text", field="query")
    return stripped


def _check_cap(value: object, budget: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"max_tokens must be an int, got {type(value).__name__}")
    if not MIN_RECALL_TOKENS <= value <= budget:
        raise InvalidInputError(
            f"max_tokens must be between {MIN_RECALL_TOKENS} and the compiler's budget "
            f"({budget}), got {value}",
            field="max_tokens",
        )
    return value


class RecallTool:
    """Answers ``membrane_recall(query)`` from one compiler's dropped history.

    Share it as freely as the compiler: a recall holds the conversation's lock while it reads,
    so it never sees a compile of that conversation half done, and it changes nothing a
    compile reads. ``max_tokens`` caps each answer (per call too); ``description`` replaces the
    text the model reads about the tool.
    """

    name = RECALL_TOOL_NAME

    def __init__(
        self,
        compiler: ContextCompiler,
        *,
        max_tokens: int = DEFAULT_RECALL_TOKENS,
        description: str | None = None,
    ) -> None:
        if not isinstance(compiler, ContextCompiler):
            raise TypeError(f"compiler must be a ContextCompiler, got {type(compiler).__name__}")
        self.compiler = compiler
        self.max_tokens = _check_cap(max_tokens, compiler.settings.max_tokens)
        if description is not None and (not isinstance(description, str) or not description):
            raise TypeError("description must be a non-empty str")
        self.description = description if description is not None else _DESCRIPTION

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the tool's arguments."""
        return {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": QUERY_DESCRIPTION,
                }
            },
            "required": ["query"],
            "additionalProperties": False,
        }

    @property
    def definition(self) -> dict[str, Any]:
        """The tool as an OpenAI-style function definition (``tools=[tool.definition]``)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def recall(
        self,
        query: str,
        *,
        conversation_id: str | None = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """The tool's answer to ``query`` for ``conversation_id``: see :meth:`lookup`."""
        return self.lookup(
            query, conversation_id=conversation_id, messages=messages, max_tokens=max_tokens
        ).text

    def lookup(
        self,
        query: str,
        *,
        conversation_id: str | None = None,
        messages: Sequence[Mapping[str, Any]] | None = None,
        max_tokens: int | None = None,
    ) -> RecallAnswer:
        """The dropped passages that best match ``query``, within ``max_tokens``.

        The conversation's dropped history is the one the compiler's last compile of it cut
        (no ``conversation_id``: the compiler's default conversation). A worker that has not
        compiled the conversation finds it through the state store when given the
        conversation's ``messages`` (as they were compiled): the stored cut is checked against
        them, and the passages are cut from them again.
        """
        text = check_query(query)
        check_id(conversation_id, "conversation_id", optional=True)
        cap = self.max_tokens if max_tokens is None else _check_cap(max_tokens, self._budget())
        conversation = DEFAULT_CONVERSATION if conversation_id is None else conversation_id
        count = _count_of(self.compiler)
        with _dropped_history(self.compiler, conversation, messages) as tracker:
            if tracker is None or not tracker.passages:
                return _answer(NOTHING_DROPPED, "nothing_dropped", (), count)
            return _found(tracker, text, cap, count)

    def _budget(self) -> int:
        return self.compiler.settings.max_tokens


def _count_of(compiler: ContextCompiler) -> Count:
    """The compiler's own counter (memoised, shared with its compiles)."""
    with compiler.held_history("") as (_tracker, counter):
        return counter.count


@contextmanager
def _dropped_history(
    compiler: ContextCompiler,
    conversation: str,
    messages: Sequence[Mapping[str, Any]] | None,
) -> Iterator[HistoryTracker | None]:
    """The conversation's tracker, held under its lock while the caller reads it.

    The compiler's compiles of the conversation wait meanwhile (and a recall waits for a
    compile in progress), so a recall never reads a tracker half updated.
    """
    with compiler.held_history(conversation) as (tracker, counter):
        if tracker is None and messages is not None:
            tracker = stored_tracker(compiler, counter, conversation, messages)
        yield tracker


def stored_tracker(
    compiler: ContextCompiler,
    counter: MemoizedCounter,
    conversation: str,
    messages: Sequence[Mapping[str, Any]],
) -> HistoryTracker | None:
    """The tracker saved in the compiler's store for ``conversation``, checked against
    ``messages``; None when nothing usable is saved.

    Nothing is written back. A saved value that fails its checks, or whose counts or index
    lines are not those of ``messages``, is set aside with a :class:`StateStoreWarning`; one
    that describes other messages (older, or edited since) is set aside silently.
    """
    namespace = compiler.state_namespace
    view = StateView(compiler.state_store, conversation, StoreNotes(), namespace)
    saved = view.conversation_state.get("tracker")
    if saved is None:
        return None
    history, _proof, read = check_history(messages, None)
    if read.boundary is not None:  # the tracker starts after the last compaction boundary
        history = history[leading_unit(history) :]
    try:
        snapshot = read_snapshot(saved)
    except ValueError as exc:
        _set_aside(view.key, f"its history snapshot is unusable: {exc}")
        return None
    if snapshot.counter != counter.name:
        return None
    restored = restore_tracker(snapshot, history, counter.count, None, "conversation_messages")
    if isinstance(restored, str):
        if restored in ("counts", "lines"):
            _set_aside(view.key, f"its history snapshot's {restored} disagree with the messages")
        return None
    return restored


def _set_aside(key: str, reason: str) -> None:
    message = f"recall set aside the state stored under {key!r}: {reason}"
    warnings.warn(message, StateStoreWarning, stacklevel=5)


def _answer(
    text: str, status: Status, passages: tuple[RecalledMessage, ...], count: Count
) -> RecallAnswer:
    return RecallAnswer(text, status, passages, count(text))


def _lines(tracker: HistoryTracker, chosen: Sequence[RecalledPassage]) -> list[RecalledMessage]:
    out = []
    for recalled in chosen:
        passage = tracker.passages[recalled.pid]
        # recalled.text is "[speaker] passage" (or its best sentence), already on one line
        # and neutralised: no text of the conversation can open a structural line here.
        out.append(
            RecalledMessage(
                passage.message, one_line(passage.role), f"#{passage.message + 1} {recalled.text}"
            )
        )
    return out


def _render(lines: Sequence[RecalledMessage]) -> str:
    return "\n".join([FOUND_HEADER, *(line.text for line in lines)])


def _found(tracker: HistoryTracker, query: str, cap: int, count: Count) -> RecallAnswer:
    """The best passages whose answer, counted whole, fits ``cap``.

    Passages are chosen to fit a room; the position marks and the joins can cost a little
    more than the room says, so the room shrinks by the overshoot and the choice is made
    again (the room only shrinks, so this ends).
    """
    room = cap - count(FOUND_HEADER) - 1
    matched = False
    while room > 0:
        chosen = select_passages(
            tracker, query, room, limit=room, count=count, min_score=PIN_MIN_SCORE
        )
        if not chosen:
            break
        matched = True
        lines = _lines(tracker, chosen)
        text = _render(lines)
        over = count(text) - cap
        if over <= 0:
            return _answer(text, "found", tuple(lines), count)
        room -= over + 1
    if matched or recall_candidates(tracker, query, min_score=PIN_MIN_SCORE):
        return _answer(NO_ROOM, "no_room", (), count)
    return _answer(NO_MATCH, "no_match", (), count)
