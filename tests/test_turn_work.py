"""A reused compiler tokenises what is new on a turn, not the conversation again.

A guard on the per-turn cost that does not time anything: the characters handed to tiktoken on
each turn of an 80-turn chat are compared with the characters that turn brought (new history
messages, memories and the question). Counting the kept window, the system prompt or the index
again on every turn would put each turn far above its new text.
"""

from __future__ import annotations

from dataclasses import replace

from benchmarks._scenarios import HARD_SCENARIOS, build_scenario
from membrane import ContextCompiler, MemoryItem
from membrane.tokenizers._counters import TiktokenAdapter

# A turn that moves the cut also counts the index lines and recalled passages it makes.
_MAX_PER_TURN = 2.0
_MAX_OVER_THE_CHAT = 1.0


class _Recording(TiktokenAdapter):
    def __init__(self) -> None:
        super().__init__("o200k_base")
        self.chars = 0

    def count(self, text: str) -> int:
        self.chars += len(text)
        return super().count(text)


def test_each_turn_counts_about_its_new_text_only() -> None:
    spec = replace(HARD_SCENARIOS["long_chat"], memories=(5, 5), fresh_memories=True)
    scenario = build_scenario(spec, 3)
    inner = _Recording()
    compiler = ContextCompiler(
        max_tokens=scenario.budget,
        model_id="openai/gpt-4o",
        core_content=scenario.system_prompt,
        token_scale=1.0,
        token_counter=inner,
    )
    history: list[dict[str, str]] = []
    seen = 0
    ratios, brought, counted = [], 0, 0
    for number, turn in enumerate(scenario.turns):
        memories = [MemoryItem(content=m.content, id=m.id) for m in turn.memories]
        new = sum(len(m["content"]) for m in history[seen:])
        new += sum(len(m.content) for m in memories) + len(turn.user_message)
        seen, before = len(history), inner.chars
        compiler.compile(memories, turn.user_message, conversation_messages=history)
        if number:  # the first turn counts the system prompt once
            ratios.append((inner.chars - before) / new)
            brought += new
            counted += inner.chars - before
        history.append({"role": "user", "content": turn.user_message})
        history.extend(dict(m) for m in turn.reply)
    assert len(ratios) == len(scenario.turns) - 1 >= 79
    assert max(ratios) <= _MAX_PER_TURN, sorted(ratios)[-5:]
    assert counted <= _MAX_OVER_THE_CHAT * brought, counted / brought
