"""What the cut, the index and recall all need: the counter type and the request test."""

from __future__ import annotations

from collections.abc import Callable

from membrane.text.sentences import is_question

Count = Callable[[str], int]

# A question of more words than this is a request; a keyframe prefers what was stated.
_SHORT_QUESTION_WORDS = 5


def is_request(sentence: str) -> bool:
    """A question of more than a few words asks for something rather than stating it."""
    return is_question(sentence) and len(sentence.split()) > _SHORT_QUESTION_WORDS
