"""Who wrote a message, so a question that names a person weighs what that person wrote.

In a chat between two people each message's role is its writer, and the writer's name is
rarely in the text: "What is Omar's hamster called?" shares no word with Omar's own "mine is
called Biscuit". When the caller says who is who (a ``speakers`` map of name to role, or a
message's own ``name`` field), a dropped passage that matches the question gains weight when
its writer is the person the question names (:data:`WRITER_WEIGHT`), so their passages
rank above the other person's. Whether the kept window answers the question is judged by what
its messages say, as without speakers: counting the name as said there made the window look
as if it answered questions it did not (fewer spread-out answers found on the benchmark).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from membrane.errors import InvalidInputError
from membrane.memo import memoised, pieces_bytes
from membrane.messages import MAX_NAME_CHARS, PERSON_ROLES
from membrane.stages.history._passages import Passage, stated_memo
from membrane.text.relevance import content_words, stem

__all__ = ["NO_WRITERS", "WRITER_WEIGHT", "Writers", "check_speakers", "name_stems"]

#: What the name of a passage's writer weighs when the query names them, times the name's
#: weight. On the conversation benchmark's development split (``recall_probe --speakers``)
#: 1.5 (a word the passage states) recalls the same answers with 90% of the tokens, 3.0 with
#: 61%, 6.0 with 57%.
WRITER_WEIGHT = 3.0


@memoised(0.01, pieces_bytes)
def name_stems(name: str) -> frozenset[str]:
    """The words a name states, as recall files words (lower-cased content-word stems)."""
    return frozenset(map(stem, content_words(name)))


@dataclass(frozen=True, slots=True)
class Writers:
    """The stems of the names of who writes each role (from the caller's ``speakers`` map)."""

    by_role: tuple[tuple[str, frozenset[str]], ...] = ()

    @classmethod
    def from_speakers(cls, speakers: Mapping[str, str] | None) -> Writers:
        if not speakers:
            return NO_WRITERS
        roles: dict[str, frozenset[str]] = {}
        for name in sorted(speakers):
            role = speakers[name]
            roles[role] = roles.get(role, frozenset()) | name_stems(name)
        return cls(tuple(sorted(roles.items())))

    def of(self, role: str, name: str | None) -> frozenset[str]:
        """The name words a message of ``role`` states; its own ``name`` wins over the map."""
        if role not in PERSON_ROLES:
            return frozenset()
        if name:
            return name_stems(name)
        for known, stems in self.by_role:
            if known == role:
                return stems
        return frozenset()

    def gain(self, passage: Passage, telling: Mapping[str, float]) -> float:
        """What the query's naming of the passage's writer adds to its score (0 when it does
        not, or when the passage writes the name out: its words count it already)."""
        names = self.of(passage.role, passage.writer)
        if not names:
            return 0.0
        stated = stated_memo(passage.sentences)
        named = math.fsum(telling[w] for w in sorted(names) if w in telling and w not in stated)
        return WRITER_WEIGHT * named


NO_WRITERS = Writers()


def check_speakers(speakers: object) -> dict[str, str] | None:
    """The caller's ``speakers`` map (a person's name -> ``"user"`` or ``"assistant"``), checked."""
    if speakers is None:
        return None
    if not isinstance(speakers, Mapping):
        raise InvalidInputError(
            f"speakers must map names to roles, got {type(speakers).__name__}", field="speakers"
        )
    out: dict[str, str] = {}
    for name, role in speakers.items():
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_CHARS:
            raise InvalidInputError(
                f"a speaker's name must be a non-empty str of at most {MAX_NAME_CHARS} "
                f"characters, got {name!r:.60}",
                field="speakers",
            )
        if role not in PERSON_ROLES:
            raise InvalidInputError(
                f"speaker {name!r:.60} writes as {role!r:.30}; a role is 'user' or 'assistant'",
                field="speakers",
            )
        out[name] = role
    return out
