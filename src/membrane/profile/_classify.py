"""The query classifier: a label for this turn, and what a label changes in the fit."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from membrane.errors import InvalidInputError

__all__ = [
    "LABELS",
    "Classifier",
    "LabelEffect",
    "check_effects",
    "classify_query",
    "run_classifier",
]

#: The labels :func:`classify_query` gives. A caller's classifier may return any other
#: non-empty string; a label the profile has no effect for changes nothing.
LABELS = ("code", "lookup", "chit-chat", "task")

#: ``classifier(user_message, recent_user_messages) -> label``; ``recent_user_messages`` are
#: the texts of the last few user turns before this one, oldest first.
Classifier = Callable[[str, Sequence[str]], str]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# One of these alone marks code: a call `name(`, a snake_case name, a source file or a dotted
# name (`utils.py`, `a.b.c`), an error class (`KeyError`), a shell prompt. Each pattern starts
# with its rare character, so the regex engine skips to it instead of trying every position:
# on the hard suite's 320-character messages classify_query takes about 12 us, and took 83 us
# when these were one pattern of alternatives.
_CODE_MARKS = (
    re.compile(r"\((?<=\w\()"),
    re.compile(r"_(?<=[a-z]_)[a-z0-9]"),
    re.compile(
        r"\.(?<=\w\.)(?:(?:py|js|ts|tsx|rs|go|java|rb|c|h|cpp|cs|kt|sh|sql|toml|yaml|yml|json)\b"
        r"|\w+\.\w)"
    ),
    re.compile(r"Error\b(?<=[a-z]Error)"),
    re.compile(r"Exception\b(?<=[a-z]Exception)"),
)
_SHELL_PROMPT = re.compile(r"^[ \t]*\$ ", re.MULTILINE)
# Two different ones of these mark code.
_CODE_WORDS = _words(
    "api bug compile compiler debug deploy endpoint exception function import lint method "
    "module python javascript typescript refactor regex repo repository segfault syntax "
    "test tests unittest pytest variable class commit merge branch git docker kubernetes "
    "null pointer library dependency build script query sql schema migration"
)
_GREETINGS = re.compile(
    r"^(?:hi|hello|hey|yo|thanks|thank you|thx|cheers|good (?:morning|afternoon|evening|night)"
    r"|how are you|how's it going|what's up|nice|cool|great|awesome|ok|okay|lol|haha|bye"
    r"|see you|sounds good|got it|perfect|no worries)\b",
    re.IGNORECASE,
)
_TASK_VERBS = _words(
    "write draft create make build generate summarize summarise plan translate rewrite "
    "edit list outline compose book schedule send remind fix add remove update prepare "
    "explain describe compare design convert format organize organise help please"
)
_QUESTION_STARTS = _words(
    "what when where who whom whose which why how is are was were do does did can could "
    "will would should has have had may might"
)
# Skipped before looking for an imperative: "please draft", "can you write", "now fix".
_FILLER = _words("now then also so please pls kindly and but can could would will you just ok okay")
_FOLLOW_UP = re.compile(r"^(?:and|also|what about|how about|why|same|then|so)\b", re.IGNORECASE)
_LOWER_WORD = re.compile(r"[a-z']+")


def classify_query(user_message: str, recent: Sequence[str] = ()) -> str:
    """A fast rule-based label for the turn: ``code``, ``lookup``, ``chit-chat`` or ``task``.

    Code marks win, then small talk, then an imperative (``task``), then a question
    (``lookup``). A follow-up ("and the staging one?", or three words at most) without code
    marks or small talk of its own takes the label of the last recent message that has one.

    >>> classify_query("Why does parse_date() fail on leap years?")
    'code'
    >>> classify_query("thanks, that helped!")
    'chit-chat'
    >>> classify_query("When is the dentist appointment?")
    'lookup'
    >>> classify_query("and the other one?", ["Fix the bug in utils.py"])
    'code'
    """
    own = _own_label(user_message)
    if own in ("code", "chit-chat"):
        return own
    if recent and (len(user_message.split()) <= 3 or _FOLLOW_UP.match(user_message.strip())):
        for earlier in reversed(recent):
            label = _own_label(earlier)
            if label is not None and label != "chit-chat":
                return label
    if own is not None:
        return own
    return "lookup" if user_message.rstrip().endswith("?") else "task"


def _has_code_marks(text: str, lower: str) -> bool:
    if "`" in text or "traceback" in lower or "stack trace" in lower or "stacktrace" in lower:
        return True
    if "$ " in text and _SHELL_PROMPT.search(text):
        return True
    return any(pattern.search(text) for pattern in _CODE_MARKS)


def _own_label(text: str) -> str | None:
    """The label the text's own marks give, or None when it has none."""
    lower = text.lower()
    words = _LOWER_WORD.findall(lower)
    if _has_code_marks(text, lower) or len(_CODE_WORDS.intersection(words)) >= 2:
        return "code"
    stripped = text.strip()
    greeting = _GREETINGS.match(stripped)
    if greeting is not None:
        # "Thanks, that helped" is small talk; "Great, now draft the notes" is the draft.
        rest = stripped[greeting.end() :].strip(" ,.!;:-")
        after = _own_label(rest) if len(rest.split()) >= 3 else None
        return after if after is not None else "chit-chat"
    if not words:
        return None
    first = next((w for w in words if w not in _FILLER), "")
    if first in _TASK_VERBS:
        return "task"
    if words[0] in _QUESTION_STARTS or stripped.endswith("?"):
        return "lookup"
    return None


def run_classifier(classifier: Classifier, user_message: str, recent: Sequence[str]) -> str:
    """Call ``classifier`` and check it returned a usable label."""
    label = classifier(user_message, tuple(recent))
    if not isinstance(label, str) or not label.strip() or "\n" in label:
        raise InvalidInputError(
            f"the classifier returned {label!r}; it must return a one-line, non-empty label "
            "such as 'code' or 'lookup'",
            field="classifier",
        )
    return label.strip()


@dataclass(frozen=True, slots=True)
class LabelEffect:
    """What one label changes in the fit.

    ``tier_order``: the order tiers are kept in when the memories do not all fit (the default
    keeps procedures, then facts, then episodes). ``memory_share``: at most this fraction of
    the budget goes to memories and extras (None: whatever the rest leaves); memories a policy
    must include are exempt. Neither moves the history cut, so the cached prefix is the same
    whatever the label.
    """

    tier_order: tuple[int, ...] = (1, 2, 3)
    memory_share: float | None = None

    def __post_init__(self) -> None:
        order = tuple(self.tier_order)
        if sorted(order) != [1, 2, 3]:
            raise InvalidInputError(
                f"tier_order must list the tiers 1, 2 and 3 once each, got {order!r}",
                field="tier_order",
            )
        object.__setattr__(self, "tier_order", order)
        share = self.memory_share
        if share is not None and (
            isinstance(share, bool)
            or not isinstance(share, (int, float))
            or not 0.0 < float(share) <= 1.0
        ):
            raise InvalidInputError(
                f"memory_share must be in (0, 1] or None, got {share!r}", field="memory_share"
            )

    @property
    def changes_nothing(self) -> bool:
        return self.tier_order == (1, 2, 3) and self.memory_share is None

    def to_dict(self) -> dict[str, Any]:
        return {"tier_order": list(self.tier_order), "memory_share": self.memory_share}


def check_effects(
    effects: Mapping[str, LabelEffect] | Sequence[tuple[str, LabelEffect]],
) -> tuple[tuple[str, LabelEffect], ...]:
    """The label effects as sorted ``(label, effect)`` pairs, checked."""
    pairs = list(effects.items()) if isinstance(effects, Mapping) else list(effects)
    out = []
    for pair in pairs:
        if (
            not isinstance(pair, tuple)
            or len(pair) != 2
            or not isinstance(pair[0], str)
            or not pair[0].strip()
            or not isinstance(pair[1], LabelEffect)
        ):
            raise InvalidInputError(
                f"label_effects must map labels (non-empty strings) to LabelEffect, got {pair!r}",
                field="label_effects",
            )
        out.append((pair[0].strip(), pair[1]))
    labels = [label for label, _ in out]
    if len(set(labels)) != len(labels):
        raise InvalidInputError(
            f"label_effects names a label twice: {labels!r}", field="label_effects"
        )
    return tuple(sorted(out))
