"""A seeded chat of long messages (30 to 220 words each), for the server-cost benchmarks.

Each user message mixes a few stated facts (each with a unique code) with chatter and ends on
a question about an earlier fact; each assistant reply is scripted sentences. Message lengths
are drawn uniformly between :data:`MIN_WORDS` and :data:`MAX_WORDS`, so the chat looks like the
independent probe's (80 messages of about 83 KB of text).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from benchmarks._text import Fact, TextFactory

__all__ = ["MAX_WORDS", "MIN_WORDS", "LongChat", "long_message_chat"]

MIN_WORDS = 30
MAX_WORDS = 220


@dataclass(frozen=True)
class LongChat:
    """The messages in order (OpenAI chat shape) and, per user message, its question."""

    messages: list[dict[str, Any]]
    questions: list[str]

    def turns(self) -> list[tuple[list[dict[str, Any]], str]]:
        """Per user message: the history before it and its text (what one turn compiles)."""
        out = []
        for i, message in enumerate(self.messages):
            if message["role"] == "user":
                out.append((self.messages[:i], str(message["content"])))
        return out

    def text_bytes(self) -> int:
        """The UTF-8 bytes of every message's text."""
        return sum(len(str(m["content"]).encode()) for m in self.messages)


def _to_length(factory: TextFactory, first: list[str], words: int) -> str:
    """``first`` and chatter until the text has about ``words`` words."""
    parts = list(first)
    while sum(len(p.split()) for p in parts) < words:
        parts.extend(factory.filler(1))
    return " ".join(" ".join(parts).split()[:words])


def long_message_chat(messages: int, seed: int = 1) -> LongChat:
    """A chat of ``messages`` messages, user and assistant in turn, 30-220 words each."""
    rng = random.Random(seed)
    factory = TextFactory(rng)
    facts: list[Fact] = []
    out: list[dict[str, Any]] = []
    questions: list[str] = []
    for i in range(messages):
        words = rng.randint(MIN_WORDS, MAX_WORDS)
        if i % 2 == 0:
            new = [factory.fact() for _ in range(1 + words // 100)]
            asked = factory.question(rng.choice(facts)) if facts else "What do you think?"
            facts.extend(new)
            stated = [factory.statement(f) for f in new]
            body = _to_length(factory, stated, max(words - len(asked.split()), 10))
            text = f"{body} {asked}"
            questions.append(asked)
            out.append({"role": "user", "content": text})
        else:
            reply = factory.reply(max(words // 12, 1))
            out.append({"role": "assistant", "content": _to_length(factory, [reply], words)})
    return LongChat(out, questions)
