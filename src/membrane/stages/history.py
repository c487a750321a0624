"""History under a budget: the chunked cut, the eviction index and recall of dropped passages.

The cut is a pure function of the history, the share it may hold and the chunk size: replay the
conversation one unit at a time and, whenever the kept part outgrows the share, drop the oldest
units until at least a chunk is gone and the rest fits. Because it is replayed, any worker that
sees the same history puts the cut in the same place, and the cut only moves when a chunk goes,
which keeps the cached prefix byte-stable in between.

:class:`HistoryTracker` is the incremental form of that replay (work per turn is the new
messages); :func:`reference_cut` is the slow, obvious form the tests compare it with.
"""

from __future__ import annotations

import json
import math
import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from membrane.messages import group_units, message_text
from membrane.prompt_text import INDEX_HEADER, RECALL_HEADER, index_block
from membrane.text.relevance import (
    TermStats,
    content_word_set,
    content_words,
    marked_words,
    query_weights,
    rank_fusion,
)
from membrane.text.sentences import (
    is_question,
    is_short,
    opens_with_pronoun,
    split_sentences,
)

__all__ = [
    "INDEX_HEADER",
    "KEYFRAME_SPAN_TOKENS",
    "PASSAGE_WORDS",
    "RARE_DOCUMENT_FREQUENCY",
    "RECALL_HEADER",
    "CutEvent",
    "HistoryTracker",
    "IndexLine",
    "Passage",
    "RecalledPassage",
    "index_digest",
    "reference_cut",
    "render_index",
    "select_index_lines",
    "select_passages",
]

# A long message keeps one keyframe for each this many tokens of its length.
KEYFRAME_SPAN_TOKENS = 400
# A word in at most this many messages of the conversation marks a sentence worth indexing.
RARE_DOCUMENT_FREQUENCY = 2
PASSAGE_WORDS = 60
# A question of more words than this is a request; a keyframe prefers what was stated.
_SHORT_QUESTION_WORDS = 5
# A tool result's index line names the call's arguments up to this many characters.
_CALL_LABEL_CHARS = 80
_REQUEST_DISCOUNT = 0.3
# A sentence keeping less than this share of its density once repeated words are discounted
# is mostly the layout its message repeats (a log line, an export row): it names nothing.
_LAYOUT_SHARE = 0.5
# Query words found in more passages than this are too common to tell passages apart.
_MAX_POSTINGS_SCANNED = 128
_QUESTION_WEIGHT = 0.5
_MESSAGE_CONTEXT_WEIGHT = 0.5
# Recall looks at the best-scoring passages only, and stops when what is left of its room
# could not hold a useful one.
_MAX_RECALL_CANDIDATES = 48
_MAX_QUERY_WORDS = 16
_MIN_USEFUL_PASSAGE_TOKENS = 12

Count = Callable[[str], int]


@dataclass(frozen=True, slots=True)
class CutEvent:
    """The cut moved to unit ``cut`` when the history had ``seen`` units."""

    seen: int
    cut: int


@dataclass(frozen=True, slots=True)
class IndexLine:
    """The index line of one dropped message."""

    unit: int
    text: str
    tokens: int


@dataclass(frozen=True, slots=True)
class Passage:
    """About sixty words of a dropped message, with what its scoring needs."""

    unit: int
    message: int
    role: str
    text: str
    tokens: int
    sentences: tuple[str, ...]


def reference_cut(unit_tokens: Sequence[int], share: int, chunk: int) -> tuple[int, list[CutEvent]]:
    """The cut position (first kept unit) and its events, replayed from scratch."""
    cut, kept, events = 0, 0, []
    for i, tokens in enumerate(unit_tokens):
        kept += tokens
        if kept > share:
            dropped = 0
            while cut <= i and (dropped < chunk or kept > share):
                kept -= unit_tokens[cut]
                dropped += unit_tokens[cut]
                cut += 1
            events.append(CutEvent(seen=i + 1, cut=cut))
    return cut, events


def _role_label(message: Mapping[str, Any], calls: Mapping[str, str]) -> str:
    """``user``/``assistant``, or ``tool result (<call>)`` naming the call it answers."""
    role = str(message.get("role", "user"))
    if role == "tool":
        call = calls.get(str(message.get("tool_call_id", "")), "tool")
        return f"tool result ({message.get('name') or call})"
    content = message.get("content")
    if isinstance(content, list):
        answered = [
            calls.get(str(b.get("tool_use_id", "")), "")
            for b in content
            if isinstance(b, Mapping) and b.get("type") == "tool_result"
        ]
        if answered:
            named = "; ".join(a for a in answered if a)
            return f"tool result ({named})" if named else "tool result"
    return role


def _is_call_stub(message: Mapping[str, Any]) -> bool:
    """An assistant message that only calls tools: its results carry the information."""
    if message.get("role") != "assistant":
        return False
    content = message.get("content")
    if isinstance(content, list):
        return all(isinstance(b, Mapping) and b.get("type") == "tool_use" for b in content)
    has_calls = bool(message.get("tool_calls"))
    return has_calls and not (isinstance(content, str) and content.strip())


def _call_label(name: str, arguments: Any) -> str:
    """A tool's name with what it was asked, e.g. ``search_crm entity=Slate Health``."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return name
    if not isinstance(arguments, Mapping):
        return name
    asked = ", ".join(
        f"{key}={value}" for key, value in arguments.items() if isinstance(value, (str, int, float))
    )
    if len(asked) > _CALL_LABEL_CHARS:
        asked = asked[: _CALL_LABEL_CHARS - 1].rstrip() + "…"
    return f"{name} {asked}" if asked else name


def _tool_names(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    names: dict[str, str] = {}
    for m in messages:
        for call in m.get("tool_calls") or ():
            if isinstance(call, Mapping):
                function = call.get("function", {})
                names[str(call.get("id", ""))] = _call_label(
                    str(function.get("name", "")), function.get("arguments")
                )
        content = m.get("content")
        if isinstance(content, list):
            for b in content:
                if isinstance(b, Mapping) and b.get("type") == "tool_use":
                    names[str(b.get("id", ""))] = _call_label(
                        str(b.get("name", "")), b.get("input")
                    )
    return names


def _truncate_to(text: str, count: Count, max_tokens: int) -> str:
    words = text.split()
    lo, hi = 0, len(words)
    while lo < hi:  # longest word prefix that fits
        mid = (lo + hi + 1) // 2
        if count(" ".join(words[:mid]) + " …") <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo]) + " …" if lo else ""


def _sentence_words(text: str) -> list[str]:
    """The content words of ``text``'s sentences; as a set, those of the whole text."""
    return [w for sentence in split_sentences(text) for w in content_words(sentence)]


def _has_rare_word(sentence: str, stats: TermStats) -> bool:
    return any(stats.df(w) <= RARE_DOCUMENT_FREQUENCY for w in content_words(sentence))


def _rare_specifics(sentence: str, stats: TermStats) -> frozenset[str]:
    """The sentence's codes, numbers and names that are rare in the conversation."""
    return frozenset(w for w in marked_words(sentence) if stats.df(w) <= RARE_DOCUMENT_FREQUENCY)


def _leans_back(sentence: str, rare_marked: frozenset[str]) -> bool:
    """True when ``sentence`` needs the one before it to be understood.

    A pronoun opener always does. A short sentence does unless it names someone or something
    rare ("News from Vale Systems today."): that one opens a topic rather than finishing one.
    A short sentence with a code ("Use KJ-2848 instead.") still leans: the code's meaning is
    in the sentence before.
    """
    if _JSON_MEMBER.fullmatch(sentence):
        return False  # a "key": value line of a record stands on its own
    if opens_with_pronoun(sentence):
        return True
    names = [word for word in rare_marked if not _has_digit(word)]
    return is_short(sentence) and not names


def _is_request(sentence: str) -> bool:
    """A question of more than a few words asks for something rather than stating it."""
    return is_question(sentence) and len(sentence.split()) > _SHORT_QUESTION_WORDS


def index_digest(text: str, stats: TermStats, count: Count, frame_tokens: int) -> str:
    """The index line body of a dropped message: its keyframes and its other rare facts.

    A message none of whose words is rare in the conversation gets no line (it repeats what
    is said elsewhere), and neither does one that names no rare code, number or name, unless
    its writer uses no capitals at all. Otherwise every KEYFRAME_SPAN_TOKENS of it give one
    keyframe: the densest sentence of that span under ``frame_tokens`` that names something
    (a question ranks low, as it asks rather than tells; a span that names nothing gives
    none). Density counts a word less the more sentences of the message use it, so in a
    pasted log or export the lines someone wrote stand out from the repeated records, and a
    sentence that is mostly such layout does not count as naming anything.

    Further sentences join, densest first, when they hold an exact value (a rare word with
    a digit: a code, number or date) not yet on the line, while the line stays under
    ``frame_tokens`` times the square root of the message's length in 50-token steps. Names
    alone do not earn a further sentence: the keyframe says what the message is about, and
    the room goes to values nobody could reconstruct. A sentence that leans on the one
    before it brings that one along. Sentences keep their order; JSON members lose their
    quotes.
    """
    sentences = split_sentences(text)
    if not sentences:
        return ""
    if not any(_has_rare_word(sentence, stats) for sentence in sentences):
        return ""  # nothing here that the rest of the conversation does not say too
    specifics = [_rare_specifics(sentence, stats) for sentence in sentences]
    if not any(specifics) and not text.islower():
        # A writer who uses capitals marks names with them: no rare code or name, no fact.
        return ""
    sizes = [count(sentence) for sentence in sentences]
    plain, distinct = _densities(sentences, stats)
    for i in range(len(sentences)):
        if specifics[i] and distinct[i] < _LAYOUT_SHARE * plain[i]:
            specifics[i] = frozenset()  # mostly the message's repeated layout
    density = [
        -1.0
        if size > frame_tokens
        else score * (_REQUEST_DISCOUNT if _is_request(sentence) else 1.0)
        for sentence, size, score in zip(sentences, sizes, distinct, strict=True)
    ]
    total = sum(sizes)
    chosen = _keyframes(density, specifics, total)
    if not chosen:
        return _truncate_to(sentences[0], count, frame_tokens)
    cap = frame_tokens * math.ceil(math.sqrt(total / 50))
    used = sum(sizes[i] for i in chosen)
    covered = set().union(*(specifics[i] for i in chosen))
    for i in sorted(range(len(sentences)), key=lambda i: -density[i]):
        new = {word for word in specifics[i] - covered if _has_digit(word)}
        if i in chosen or density[i] < 0 or not new or _is_request(sentences[i]):
            continue
        if used + sizes[i] <= cap:
            chosen.add(i)
            covered |= new
            used += sizes[i]
    for i in sorted(chosen):  # a chosen sentence that leans on the one before brings it along
        leans = (
            i > 0
            and i - 1 not in chosen
            and _leans_back(sentences[i], specifics[i])
            and not _is_request(sentences[i - 1])
        )
        if leans and used + sizes[i - 1] <= cap:
            chosen.add(i - 1)
            used += sizes[i - 1]
    return _in_order(sentences, chosen)


def _has_digit(word: str) -> bool:
    return _DIGIT.search(word) is not None


_DIGIT = re.compile(r"\d")


# Digits read as 0 and letters as a: dates, counters and IDs written to one pattern (the
# timestamps of a log, the key column of an export) count as one word repeated in a message.
_SHAPE = str.maketrans(
    {**dict.fromkeys("0123456789", "0"), **dict.fromkeys(string.ascii_lowercase, "a")}
)


def _shape(word: str) -> str:
    if word.isalpha() or not _has_digit(word):
        return word
    return word.translate(_SHAPE)


def _densities(sentences: Sequence[str], stats: TermStats) -> tuple[list[float], list[float]]:
    """Each sentence's :func:`sentence_density`, and the same with each word's rarity divided
    by how many sentences of the message use it (the two agree when no word repeats)."""
    words = [content_words(sentence) for sentence in sentences]
    shapes = [{w: _shape(w) for w in set(sentence_words)} for sentence_words in words]
    spread: dict[str, int] = {}
    for shaped in shapes:
        for shape in set(shaped.values()):
            spread[shape] = spread.get(shape, 0) + 1
    plain, distinct = [], []
    for sentence_words, shaped in zip(words, shapes, strict=True):
        if not shaped:
            plain.append(0.0)
            distinct.append(0.0)
            continue
        root = math.sqrt(len(sentence_words))
        rarity = {w: stats.idf(w) for w in shaped}
        plain.append(math.fsum(rarity.values()) / root)
        distinct.append(math.fsum(r / spread[shaped[w]] for w, r in rarity.items()) / root)
    return plain, distinct


def _keyframes(density: list[float], specifics: list[frozenset[str]], total: int) -> set[int]:
    """One sentence per KEYFRAME_SPAN_TOKENS: the densest that fits and names something.

    When no sentence of the message names anything, the densest sentence of each span.
    """
    per_span = math.ceil(len(density) / max(1, math.ceil(total / KEYFRAME_SPAN_TOKENS)))
    named = any(specifics)
    chosen: set[int] = set()
    for start in range(0, len(density), per_span):
        span = range(start, min(start + per_span, len(density)))
        best = max(span, key=lambda i: (density[i] >= 0 and bool(specifics[i]), density[i]))
        if density[best] >= 0 and (specifics[best] or not named):
            chosen.add(best)
    return chosen


def _in_order(sentences: Sequence[str], chosen: set[int]) -> str:
    """The chosen sentences in their order, with … where sentences were left out between."""
    parts: list[str] = []
    previous = -2
    for i in sorted(chosen):
        if parts and i != previous + 1:
            parts.append("…")
        parts.append(_unquoted(sentences[i]))
        previous = i
    return " ".join(parts)


# A JSON object member alone on its line, with a string or scalar value: "key": "value",
_JSON_MEMBER = re.compile(r'"([^"\\]+)": ("[^"\\]*"|[\w.+-]+)(,?)')


def _unquoted(sentence: str) -> str:
    """A JSON member line without its quotes (``city: Oslo,``); other sentences unchanged.

    Tool results are mostly JSON; in an index line the quotes cost tokens and say nothing.
    """
    member = _JSON_MEMBER.fullmatch(sentence)
    if member is None:
        return sentence
    key, value, comma = member.groups()
    return f"{key}: {value.strip(chr(34))}{comma}"


def _passages_of(unit: int, message: int, role: str, text: str, count: Count) -> list[Passage]:
    out: list[Passage] = []
    bucket: list[str] = []
    words = 0

    def flush() -> None:
        if bucket:
            body = " ".join(bucket)
            out.append(Passage(unit, message, role, body, count(body), tuple(bucket)))

    for sentence in split_sentences(text):
        n = len(sentence.split())
        if n > PASSAGE_WORDS * 2:  # one very long sentence: split it by words
            flush()
            bucket, words = [], 0
            tokens = sentence.split()
            for i in range(0, len(tokens), PASSAGE_WORDS):
                piece = " ".join(tokens[i : i + PASSAGE_WORDS])
                out.append(Passage(unit, message, role, piece, count(piece), (piece,)))
            continue
        if words and words + n > PASSAGE_WORDS * 1.5:
            flush()
            bucket, words = [], 0
        bucket.append(sentence)
        words += n
        if words >= PASSAGE_WORDS:
            flush()
            bucket, words = [], 0
    flush()
    return out


def _unit_key(messages: Sequence[Mapping[str, Any]]) -> tuple[tuple[str, str], ...]:
    # The texts themselves rather than a hash of them: a message passed again is usually the
    # same string object, which compares equal at once.
    return tuple((str(m.get("role", "")), message_text(m)) for m in messages)


@dataclass
class HistoryTracker:
    """The incremental replay of one conversation's history for one share and chunk.

    Feed it the whole history each turn with :meth:`update`; it checks that what it saw before
    is still the start of the history (otherwise it starts over) and processes only the rest.
    """

    share: int
    chunk: int
    count: Count
    overhead: int
    keyframe_tokens: int
    bounds: list[tuple[int, int]] = field(default_factory=list)
    unit_tokens: list[int] = field(default_factory=list)
    unit_keys: list[tuple[tuple[str, str], ...]] = field(default_factory=list)
    cut: int = 0
    kept_tokens: int = 0
    total_tokens: int = 0
    events: list[CutEvent] = field(default_factory=list)
    lines: list[IndexLine] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    # word -> (pid, message, sentence weight) of each passage holding it, in pid order
    postings: dict[str, list[tuple[int, int, float]]] = field(default_factory=dict)
    stats: TermStats = field(default_factory=TermStats)
    # pid -> the passage recalled whole
    _recalled: dict[int, RecalledPassage] = field(default_factory=dict)
    _last_scores: tuple[tuple[str, int, int], dict[int, float]] | None = None

    @property
    def seen_messages(self) -> int:
        return self.bounds[-1][1] if self.bounds else 0

    def matches(self, messages: Sequence[Mapping[str, Any]]) -> bool:
        """True when the history this tracker saw is still the start of ``messages``."""
        if not self.bounds:
            return True
        if len(messages) < self.seen_messages:
            return False
        for unit in {0, self.cut if self.cut < len(self.bounds) else 0, len(self.bounds) - 1}:
            start, stop = self.bounds[unit]
            if _unit_key(messages[start:stop]) != self.unit_keys[unit]:
                return False
        return True

    def update(self, messages: Sequence[Mapping[str, Any]], field_name: str) -> None:
        """Process the messages after the ones already seen (validated by the caller)."""
        offset = self.seen_messages
        new = messages[offset:]
        for unit in group_units(new, field=field_name, offset=offset):
            start, stop = unit.start + offset, unit.stop + offset
            span = messages[start:stop]
            texts = [message_text(m) for m in span]
            tokens = sum(self.count(text) + self.overhead for text in texts)
            self.bounds.append((start, stop))
            self.unit_tokens.append(tokens)
            self.unit_keys.append(_unit_key(span))
            for message, text in zip(span, texts, strict=True):
                if message.get("role") == "user":
                    # Last turn's question: the words of its sentences are memoised already.
                    self.stats.add_words(_sentence_words(text))
                else:
                    self.stats.add_words(content_word_set(text))
            self.kept_tokens += tokens
            self.total_tokens += tokens
            if self.kept_tokens > self.share:
                self._cut(len(self.bounds) - 1, messages)

    def _cut(self, newest: int, messages: Sequence[Mapping[str, Any]]) -> None:
        dropped = 0
        while self.cut <= newest and (dropped < self.chunk or self.kept_tokens > self.share):
            self.kept_tokens -= self.unit_tokens[self.cut]
            dropped += self.unit_tokens[self.cut]
            self._evict(self.cut, messages)
            self.cut += 1
        self.events.append(CutEvent(seen=newest + 1, cut=self.cut))

    def _evict(self, unit: int, messages: Sequence[Mapping[str, Any]]) -> None:
        start, stop = self.bounds[unit]
        span = messages[start:stop]
        names = _tool_names(span)
        for offset, m in enumerate(span):
            text = message_text(m) if m.get("role") != "assistant" else _assistant_text(m)
            if not text.strip():
                continue
            label = _role_label(m, names)
            for p in _passages_of(unit, start + offset, label, text, self.count):
                self._add_passage(p)
            if _is_call_stub(m):
                continue
            frame = index_digest(text, self.stats, self.count, self.keyframe_tokens)
            if frame:
                line = f"- {label}: {frame}"
                self.lines.append(IndexLine(unit, line, self.count(line)))

    def _add_passage(self, passage: Passage) -> None:
        pid = len(self.passages)
        self.passages.append(passage)
        weights: dict[str, float] = {}
        for sentence in passage.sentences:
            if _is_request(sentence):
                continue  # a question asks for the answer; it does not hold it
            weight = _QUESTION_WEIGHT if is_question(sentence) else 1.0
            for w in content_words(sentence):
                if weights.get(w, 0.0) < weight:
                    weights[w] = weight
        message = passage.message
        for w, weight in weights.items():
            self.postings.setdefault(w, []).append((pid, message, weight))

    def recalled(self, pid: int) -> RecalledPassage:
        """Passage ``pid`` recalled whole (its tokens count the line break after it)."""
        known = self._recalled.get(pid)
        if known is None:
            passage = self.passages[pid]
            line = f"[{passage.role}] {passage.text}"
            known = self._recalled[pid] = RecalledPassage(
                pid, passage.role, line, self.count(line) + 1
            )
        return known

    def score_passages(self, query: str) -> dict[int, float]:
        """Relevance of each dropped passage to ``query`` (only passages sharing a word).

        A passage's own shared rare words count fully; the words its message shares count
        at half weight on top, so the part of a record that holds the answer ranks with the
        part that names the record. Only the query's most telling words are looked up, which
        bounds the work however long the conversation grows.
        """
        # Rarities move with every message seen, so the memo holds within one compile only.
        key = (query, len(self.passages), self.stats.documents)
        if self._last_scores is not None and self._last_scores[0] == key:
            return self._last_scores[1]
        weights = query_weights(query)
        rarity = self.stats.idfs(weights)
        # Most telling first: by weight, then by word (negated, so plain tuple order does it).
        ranked = sorted([(-(q * r), w) for (w, q), r in zip(weights.items(), rarity, strict=True)])
        own: dict[int, float] = {}
        context: dict[int, float] = {}
        for negated, w in ranked[:_MAX_QUERY_WORDS]:
            posting = self.postings.get(w)
            if not posting or len(posting) > _MAX_POSTINGS_SCANNED:
                continue
            weight = -negated
            # A message's passages have consecutive pids, so its entries are adjacent here:
            # its best gain for this word is complete when the next message starts.
            current, best = posting[0][1], 0.0
            for pid, message, sentence_weight in posting:
                gain = weight * sentence_weight
                own[pid] = own.get(pid, 0.0) + gain
                if message != current:
                    context[current] = context.get(current, 0.0) + best
                    current, best = message, gain
                elif gain > best:
                    best = gain
            context[current] = context.get(current, 0.0) + best
        passages = self.passages
        scores = {
            pid: score + _MESSAGE_CONTEXT_WEIGHT * context[passages[pid].message]
            for pid, score in own.items()
        }
        self._last_scores = (key, scores)
        return scores


def _assistant_text(message: Mapping[str, Any]) -> str:
    """An assistant message's words, with the tools it called named at the end."""
    text = message_text(message) if not message.get("tool_calls") else ""
    if message.get("tool_calls"):
        content = message.get("content")
        text = content if isinstance(content, str) else ""
        names = [
            str(c.get("function", {}).get("name", ""))
            for c in message["tool_calls"]
            if isinstance(c, Mapping)
        ]
        if names and text.strip():
            text = f"{text} (called {', '.join(names)})"
    return text


def select_index_lines(lines: Sequence[IndexLine], room: int, header_tokens: int) -> int:
    """Index of the oldest line kept so that the header and newer lines fit ``room``."""
    used = header_tokens
    first = len(lines)
    for i in range(len(lines) - 1, -1, -1):
        if used + lines[i].tokens + 1 > room:
            break
        used += lines[i].tokens + 1
        first = i
    return first


def render_index(lines: Sequence[IndexLine]) -> str:
    """The eviction-index block, or "" when there are no lines."""
    if not lines:
        return ""
    return index_block([line.text for line in lines])


@dataclass(frozen=True, slots=True)
class RecalledPassage:
    """A dropped passage chosen to come back, possibly cut to its best sentence."""

    pid: int
    role: str
    text: str
    tokens: int


def _best_sentence(passage: Passage, weights: Mapping[str, float], stats: TermStats) -> str:
    def score(sentence: str) -> float:
        shared = weights.keys() & set(content_words(sentence))
        return math.fsum(weights[w] * stats.idf(w) for w in shared)  # order-free, see keyframes

    return max(passage.sentences, key=score)


def select_passages(
    tracker: HistoryTracker,
    query: str,
    room: int,
    *,
    limit: int,
    count: Count,
    extra_ranking: Sequence[int] | None = None,
    min_relative_score: float = 0.3,
    max_passages: int | None = None,
    min_score: float = 0.0,
) -> list[RecalledPassage]:
    """The best-matching dropped passages that fit ``min(room, limit)`` tokens.

    Passages rank by shared rare words with ``query``, then recency. ``extra_ranking`` (pids,
    best first, e.g. from an embedder) is fused in as a second vote.
    """
    budget = min(room, limit)
    scores = tracker.score_passages(query)
    if not scores or budget <= 0:
        return []
    best = max(scores.values())
    if best < min_score:
        return []
    floor = best * min_relative_score
    # Best score first, then the newest: sorted as (-score, -pid) pairs.
    ranked = [
        -negated for _, negated in sorted([(-s, -pid) for pid, s in scores.items() if s >= floor])
    ]
    if extra_ranking is not None:
        allowed = set(ranked)
        ranked = rank_fusion([ranked, [p for p in extra_ranking if p in allowed]])
    weights = query_weights(query)
    chosen: list[RecalledPassage] = []
    used = 0
    for pid in ranked[:_MAX_RECALL_CANDIDATES]:
        if budget - used < _MIN_USEFUL_PASSAGE_TOKENS or len(chosen) == max_passages:
            break
        recalled = tracker.recalled(pid)
        if used + recalled.tokens > budget:
            passage = tracker.passages[pid]
            sentence = _best_sentence(passage, weights, tracker.stats)
            line = f"[{passage.role}] … {sentence} …"
            recalled = RecalledPassage(pid, passage.role, line, count(line) + 1)
            if used + recalled.tokens > budget:
                continue
        chosen.append(recalled)
        used += recalled.tokens
    # Oldest first reads like the conversation did.
    chosen.sort(key=lambda r: r.pid)
    return chosen
