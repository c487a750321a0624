"""A call in the middle of an agent's turn: the question, the steps after it, and their cost.

With ``continue_turn`` the last question in the history (:func:`membrane.messages.turn_start`)
is this turn's question, and the messages after it are the turn's steps: the model's tool calls
and their results. The question takes the final message's place, with the memories and recall
around it, and the steps follow it as given, counted inside the budget; a tool result that would
not fit is replaced by a note saying so, oldest first, so every call keeps its result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from membrane.errors import InvalidInputError
from membrane.messages import (
    Message,
    ends_in_results,
    is_results,
    message_text,
    stub_results,
    turn_start,
)
from membrane.stages.values import TurnSteps

__all__ = ["TurnSplit", "fit_steps", "split_turn"]

STUB_NOTE = (
    "[Membrane left this tool result out: its {tokens} tokens did not fit the prompt's budget. "
    "Call the tool again for what you need from it.]"
)


@dataclass(frozen=True, slots=True)
class TurnSplit:
    """The history before the question, the question's text and other parts, the steps."""

    earlier: list[Message]
    question: str
    #: The question's parts that are not text (images, files), sent after its text.
    parts: list[Any]
    steps: list[Message]
    #: The question's index in the history (chat form).
    at: int


def wants_turn(continue_turn: object, user_message: str, messages: Sequence[Message]) -> bool:
    """Whether this compile continues a turn: asked for, or (None) the history ends in tool
    results and no new question is given."""
    if continue_turn is None:
        return user_message == "" and ends_in_results(messages)
    if not isinstance(continue_turn, bool):
        raise InvalidInputError(
            f"continue_turn must be True, False or None, got {type(continue_turn).__name__}",
            field="continue_turn",
        )
    if continue_turn and user_message:
        raise InvalidInputError(
            "continue_turn=True takes the question from the history; pass user_message='' "
            "(or continue_turn=False to ask a new question)",
            field="continue_turn",
        )
    return continue_turn


def split_turn(messages: list[Message]) -> TurnSplit:
    """Split ``messages`` at their last question (a typed error when there is none)."""
    at = turn_start(messages)
    if at is None:
        raise InvalidInputError(
            "continue_turn needs a question in conversation_messages: a user message that is "
            "not only tool results",
            field="continue_turn",
        )
    content = messages[at].get("content")
    if isinstance(content, str):
        question, parts = content, []
    else:
        given = list(content or ())
        texts = [p for p in given if isinstance(p, Mapping) and p.get("type") == "text"]
        question = "\n".join(str(p.get("text", "")) for p in texts)
        parts = [p for p in given if not any(p is t for t in texts)]
    return TurnSplit(messages[:at], question, parts, messages[at + 1 :], at)


def fit_steps(
    split: TurnSplit,
    room: int,
    count: Callable[[str], int],
    overhead: int,
    image_tokens: Callable[[Mapping[str, Any]], int],
) -> TurnSteps:
    """The steps, with the oldest tool results stubbed until they fit ``room`` tokens (less
    what the question's other parts cost)."""
    steps, extra = split.steps, 0
    if split.parts:
        parts: Message = {"role": "user", "content": split.parts}
        extra = count(message_text(parts)) + image_tokens(parts)
        room -= extra
    costs = [count(message_text(m)) + image_tokens(m) + overhead for m in steps]
    out, stubbed = list(steps), 0
    for i, message in enumerate(steps):
        if sum(costs) <= room:
            break
        if not is_results(message):
            continue
        note = STUB_NOTE.format(tokens=costs[i] - overhead)
        out[i] = stub_results(message, note)
        costs[i] = count(message_text(out[i])) + image_tokens(out[i]) + overhead
        stubbed += 1
    return TurnSteps(out, sum(costs) + extra, stubbed, split.parts)
