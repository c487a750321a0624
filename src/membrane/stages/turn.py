"""A continued turn keeps its prefix: the same bytes on each of the turn's model calls.

An agent's turn makes several model calls, each sending the same prefix (system, kept history,
the question message) followed by a growing list of steps. Two things keep that prefix:

- *Room for the steps from the first call.* A continued turn sets aside at least what its
  steps take, and as much as the conversation's largest turn so far took (up to half the
  budget), so the turn's first call already leaves the room its later calls need and the
  history window does not move between them.
- *The question message of the turn's earlier call*, sent again unchanged (memories and
  recalled passages as they were) while the window stands, the memories on offer are the same
  and it fits; fitted anew otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from membrane.caches import LRUCache
from membrane.stages.final import FinalInput, FinalSettings, FittedFinal, fit_final
from membrane.stages.values import Budget, HistoryRequest, Offer, TurnSteps
from membrane.stages.window import MAX_CONVERSATIONS, HistoryWindow

__all__ = ["MEMORY_SHARE", "TurnFreezer", "memory_room"]

#: The most of the budget a continued turn keeps for its memories before history and steps.
MEMORY_SHARE = 0.25

_Key = tuple[str, int, tuple[str, ...], str, int]


@dataclass(frozen=True, slots=True)
class _Frozen:
    key: _Key
    final: FittedFinal


def memory_room(offer: Offer, budget: Budget) -> int:
    """What a continued turn keeps for the memories on offer: all of their lines, up to
    :data:`MEMORY_SHARE` of the budget. An agent's turn grows by tool results the memories
    must not give way to: they are the turn's context, sent once in its question message."""
    return min(sum(offer.line_tokens(budget.count)), int(MEMORY_SHARE * budget.counted))


def _key(given: FinalInput, window: HistoryWindow, history_length: int) -> _Key:
    offered = tuple(given.offer.lines())
    question = given.text.end_text
    return (question, history_length, offered, window.system_text, window.dropped_messages)


class TurnFreezer:
    """Per conversation: the last question message fitted for a continued turn, and the
    largest turn's steps so far."""

    def __init__(self) -> None:
        self._turns: LRUCache[str, _Frozen] = LRUCache(
            MAX_CONVERSATIONS, max_bytes=64 << 20, size=lambda f: 200 + 2 * len(f.final.text)
        )
        self._largest: LRUCache[str, int] = LRUCache(MAX_CONVERSATIONS)

    def room(
        self, history: HistoryRequest, steps: TurnSteps, budget: Budget, offer: Offer
    ) -> tuple[int, int]:
        """The tokens this call sets aside for the turn's steps (0 for a new question), and
        what the history window leaves beside the question: the steps' room and the memories'."""
        if not steps.continued:
            return 0, 0
        largest = self._largest.get(history.conversation) or 0
        if steps.tokens > largest:
            self._largest.put(history.conversation, steps.tokens)
        room = max(steps.tokens, min(largest, budget.counted // 2))
        return room, room + memory_room(offer, budget)

    def fit(
        self,
        given: FinalInput,
        window: HistoryWindow,
        settings: FinalSettings,
        room: int,
        history: HistoryRequest,
        steps: TurnSteps,
    ) -> FittedFinal:
        """The final message for this call (``reused`` when it is the turn's earlier one), in
        what the window and the ``room`` set aside for the steps leave."""
        budget = replace(given.budget, counted=given.budget.counted - room)
        if not steps.continued:
            return fit_final(replace(given, budget=budget), window, settings)
        conversation = history.conversation
        key = _key(given, window, len(history.messages))
        frozen = self._turns.get(conversation)
        if frozen is not None and frozen.key == key:
            overhead = settings.message_overhead_tokens
            count = given.budget.counter.count
            before = count(window.system_text) + overhead + window.kept_tokens + overhead
            if before + frozen.final.tokens <= budget.counted:
                return replace(frozen.final, reused=True)
        final = fit_final(replace(given, budget=budget), window, settings)
        self._turns.put(conversation, _Frozen(key, final))
        return final

    def forget(self, conversation: str) -> None:
        self._turns.discard_where(lambda c: c == conversation)
