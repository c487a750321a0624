"""A continued turn keeps its question message: the same bytes on each of the turn's calls.

An agent's turn makes several model calls, each sending the same prefix (system, kept history,
the question message) followed by a growing list of steps. When the question message of the
turn's earlier call still fits beside the new steps, it is sent again unchanged (memories and
recalled passages as they were), so a provider's prefix cache keeps serving the turn. It is
fitted anew only when the window moved, the memories on offer changed, or it no longer fits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from membrane.compile_state import LRUCache
from membrane.stages.final import FinalInput, FinalSettings, FittedFinal, fit_final
from membrane.stages.values import HistoryRequest, TurnSteps
from membrane.stages.window import MAX_CONVERSATIONS, HistoryWindow

__all__ = ["TurnFreezer"]

_Key = tuple[str, int, tuple[str, ...], str, int]


@dataclass(frozen=True, slots=True)
class _Frozen:
    key: _Key
    final: FittedFinal


def _key(given: FinalInput, window: HistoryWindow, history_length: int) -> _Key:
    offered = tuple(given.offer.lines())
    question = given.text.end_text
    return (question, history_length, offered, window.system_text, window.dropped_messages)


class TurnFreezer:
    """The last question message fitted for each conversation's continued turn."""

    def __init__(self) -> None:
        self._turns: LRUCache[str, _Frozen] = LRUCache(
            MAX_CONVERSATIONS, max_bytes=64 << 20, size=lambda f: 200 + 2 * len(f.final.text)
        )

    def fit(
        self,
        given: FinalInput,
        window: HistoryWindow,
        settings: FinalSettings,
        steps: TurnSteps,
        history: HistoryRequest,
    ) -> FittedFinal:
        """The final message for this call (``reused`` when it is the turn's earlier one);
        ``history`` is what precedes the question."""
        budget = replace(given.budget, counted=given.budget.counted - steps.tokens)
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
