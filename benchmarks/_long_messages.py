"""A seeded chat of long messages (30 to 220 words each), for the server-cost benchmarks.

The words are real: each message is a run of consecutive utterances of real human small talk
(the ``chitchat-dataset`` conversations the conversation benchmark uses, joined with spaces
until the message has its length), so the vocabulary grows as a real chat's does. Each user
message also states a fact with a unique code (``TextFactory``) and ends on a question about an
earlier one. Lengths are drawn uniformly between :data:`MIN_WORDS` and :data:`MAX_WORDS`, as in
the independent probe the server-cost issue quotes (80 messages of about 83 KB).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from benchmarks._chats import _chitchat
from benchmarks._text import Fact, TextFactory

__all__ = ["MAX_WORDS", "MIN_WORDS", "LongChat", "long_message_chat"]

MIN_WORDS = 30
MAX_WORDS = 220


@dataclass(frozen=True)
class LongChat:
    """The messages in order (OpenAI chat shape)."""

    messages: list[dict[str, Any]]

    def turns(self) -> list[tuple[list[dict[str, Any]], str]]:
        """Per user message: the history before it and its text (what one turn compiles)."""
        return [
            (self.messages[:i], str(m["content"]))
            for i, m in enumerate(self.messages)
            if m["role"] == "user"
        ]

    def text_bytes(self) -> int:
        """The UTF-8 bytes of every message's text."""
        return sum(len(str(m["content"]).encode()) for m in self.messages)


def _utterances(rng: random.Random) -> Iterator[str]:
    """Real chat lines, conversation after conversation, from a seeded starting point."""
    conversations = _chitchat()
    start = rng.randrange(len(conversations))
    for i in range(start, start + 10 * len(conversations)):
        for text, _ in conversations[i % len(conversations)]:
            yield " ".join(text.split())


def _words(lines: Iterator[str], count: int) -> str:
    out: list[str] = []
    while len(out) < count:
        out.extend(next(lines).split())
    return " ".join(out[:count])


def long_message_chat(messages: int, seed: int = 1) -> LongChat:
    """A chat of ``messages`` messages, user and assistant in turn, 30-220 words each."""
    rng = random.Random(seed)
    factory = TextFactory(rng)
    lines = _utterances(rng)
    facts: list[Fact] = []
    out: list[dict[str, Any]] = []
    for i in range(messages):
        words = rng.randint(MIN_WORDS, MAX_WORDS)
        if i % 2:
            out.append({"role": "assistant", "content": _words(lines, words)})
            continue
        fact = factory.fact()
        stated = factory.statement(fact)
        asked = factory.question(rng.choice(facts)) if facts else "What do you think?"
        facts.append(fact)
        rest = max(words - len(stated.split()) - len(asked.split()), 5)
        out.append({"role": "user", "content": f"{stated} {_words(lines, rest)} {asked}"})
    return LongChat(out)
