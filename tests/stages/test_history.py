"""The history stage: the cut against its reference, the index, recall, and long scenarios."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from membrane.compiler import ContextCompiler
from membrane.messages import group_units, message_text
from membrane.records import MemoryItem
from membrane.stages.history import (
    INDEX_HEADER,
    RECALL_HEADER,
    HistoryTracker,
    reference_cut,
    select_index_lines,
    telling_words,
    window_cover,
)
from membrane.stages.history._cut import _sentence_words
from membrane.text.relevance import TermStats, content_words, query_weights, stem
from membrane.tokenizers import count_tokens
from tests.strategies import WORDS, conversations

OVERHEAD = 3


def _unit_tokens(history: list[dict[str, Any]]) -> list[int]:
    return [
        sum(count_tokens(message_text(m)) + OVERHEAD for m in history[u.start : u.stop])
        for u in group_units(history)
    ]


@given(
    history=conversations(max_turns=40),
    share=st.integers(50, 3000),
    steps=st.lists(st.integers(1, 6), min_size=1, max_size=20),
)
def test_incremental_cut_matches_the_reference(
    history: list[dict[str, Any]], share: int, steps: list[int]
) -> None:
    tracker = HistoryTracker(share, share // 2, count_tokens, OVERHEAD, 40)
    units = group_units(history)
    seen = 0
    for step in steps:  # feed the conversation in uneven growth steps
        seen = min(seen + step, len(units))
        upto = units[seen - 1].stop if seen else 0
        tracker.update(history[:upto], "h")
    tracker.update(history, "h")
    cut, events = reference_cut(_unit_tokens(history), share, share // 2)
    assert tracker.cut == cut
    assert tracker.events == events
    assert tracker.kept_tokens <= share or tracker.cut == len(units)


def test_reference_cut_drops_in_chunks() -> None:
    cut, events = reference_cut([10] * 20, share=50, chunk=25)
    # Past 50 tokens the oldest 30 (>= one chunk) go; the cut then waits for another chunk.
    assert [(e.seen, e.cut) for e in events] == [(6, 3), (9, 6), (12, 9), (15, 12), (18, 15)]
    assert cut == 15


def test_index_lines_never_change_once_written() -> None:
    rng = random.Random(7)
    tracker = HistoryTracker(400, 200, count_tokens, OVERHEAD, 40)
    history: list[dict[str, Any]] = []
    written: dict[int, str] = {}
    for turn in range(60):
        history.append(
            {
                "role": "user",
                "content": f"Turn {turn}: the badge code is Q{rng.randint(1000, 9999)}. "
                "Also some chatter about lunch plans and weather.",
            }
        )
        history.append({"role": "assistant", "content": f"Noted for turn {turn}."})
        tracker.update(history, "h")
        for i, line in enumerate(tracker.lines):
            assert written.setdefault(i, line.text) == line.text
    assert len(tracker.lines) > 20


def test_tool_results_get_index_lines_and_call_stubs_do_not() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Look up order 1234 please."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_order", "arguments": "{}"},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": "Order 1234 ships from depot ZETA-9 on Friday.",
        },
        {"role": "assistant", "content": "It ships Friday from ZETA-9."},
    ] + [
        {"role": "user" if i % 2 == 0 else "assistant", "content": "filler " * 60}
        for i in range(10)
    ]
    tracker = HistoryTracker(200, 100, count_tokens, OVERHEAD, 40)
    tracker.update(history, "h")
    texts = [line.text for line in tracker.lines]
    assert any(t.startswith('- tool result (get_order): "') and "ZETA-9" in t for t in texts)
    assert not any("get_order({})" in t for t in texts)
    assert tracker.bounds[1] == (1, 3)  # the call and its result form one unit


def test_long_message_keeps_one_keyframe_per_400_tokens() -> None:
    sentences = [f"Section {i} names the unique marker M{i:03d}X for later." for i in range(120)]
    long_text = " ".join(sentences)
    history = [{"role": "user", "content": long_text}, {"role": "assistant", "content": "ok"}] * 1
    history += [
        {"role": "user", "content": "more " * 300},
        {"role": "assistant", "content": "fine"},
    ]
    tracker = HistoryTracker(400, 200, count_tokens, OVERHEAD, 40)
    tracker.update(history, "h")
    line = next(t.text for t in tracker.lines if t.text.startswith('- user: "Section'))
    expected_frames = -(-count_tokens(long_text) // 400)
    assert line.count(" … ") == expected_frames - 1


def test_select_index_lines_keeps_newest_within_room() -> None:
    from membrane.stages.history import IndexLine

    lines = [IndexLine(i, f"- user: line {i}", 10) for i in range(10)]
    assert select_index_lines(lines, room=5 + 3 * 11, header_tokens=5) == 7
    assert select_index_lines(lines, room=4, header_tokens=5) == 10


# ------------------------------------------------------------------ scenarios

_TOPICS = [
    "river survey",
    "billing migration",
    "kiosk rollout",
    "vendor audit",
    "lab move",
    "harbour crane",
    "data retention",
    "press launch",
    "sensor recall",
    "choir tour",
]
_FILLER = [
    "We spent a while on staffing and on who covers the late shift.",
    "The weather delayed two deliveries but nothing critical slipped.",
    "Someone suggested moving the weekly sync to Thursday mornings.",
    "There was a long tangent about the coffee machine on floor three.",
    "Budget questions came up again without a firm answer.",
]


def _code(rng: random.Random) -> str:
    letters = "ABCDEFGHJKLMNPQRSTUVWXYZ"
    return (
        f"{rng.choice(letters)}{rng.choice(letters)}{rng.randint(100, 999)}-{rng.randint(10, 99)}"
    )


def test_eighty_turn_chat_keeps_facts_asked_up_to_thirty_turns_later() -> None:
    rng = random.Random(42)
    compiler = ContextCompiler(
        4000, model_id="openai/gpt-4o", core_content="You are a project assistant.", token_scale=1.0
    )
    history: list[dict[str, Any]] = []
    facts: list[tuple[str, str]] = []
    found = asked = 0
    for turn in range(80):
        topic = f"{rng.choice(_TOPICS)} {turn}"
        code = _code(rng)
        facts.append((topic, code))
        if turn >= 5:
            back = rng.randint(5, min(30, turn))
            ask_topic, ask_code = facts[turn - back]
            question = f"Which reference number did I give for the {ask_topic}?"
        else:
            question, ask_code = "Let's keep going.", ""
        result = compiler.compile(
            [MemoryItem(id=f"m{turn}", content=f"User works on the {topic}.")],
            question,
            conversation_messages=history,
        )
        md = result.metadata
        assert md["token_count"] + md["message_framing_tokens"] <= 4000
        if ask_code:
            asked += 1
            found += any(ask_code in message_text(m) for m in result.messages)
        history.append(
            {
                "role": "user",
                "content": f"For the {topic}, the reference number is {code}. "
                + " ".join(rng.sample(_FILLER, 3)),
            }
        )
        history.append(
            {"role": "assistant", "content": f"Got it, {topic} noted. " + rng.choice(_FILLER)}
        )
    assert md["history_messages_dropped"] > 0 and md["history_index_lines"] > 0
    assert found == asked


def test_memory_flood_keeps_the_needed_memory() -> None:
    rng = random.Random(5)
    compiler = ContextCompiler(
        3000, model_id="openai/gpt-4o", core_content="Support assistant.", token_scale=1.0
    )
    kept = 0
    for turn in range(30):
        needed = _code(rng)
        name = f"Project {rng.choice(['Heron', 'Quartz', 'Maple', 'Orbit', 'Falcon'])}-{turn}"
        memories = [
            MemoryItem(
                id=f"noise{turn}-{i}",
                content=f"Note {i}: {rng.choice(_FILLER)} {rng.choice(_FILLER)}",
                memory_type=rng.choice(["semantic", "episodic"]),
            )
            for i in range(40)
        ]
        position = rng.randrange(40)
        memories[position] = MemoryItem(
            id="needed", content=f"The access code for {name} is {needed}."
        )
        result = compiler.compile(memories, f"What is the access code for {name}?")
        md = result.metadata
        assert md["token_count"] + md["message_framing_tokens"] <= 3000
        kept += needed in result.messages[-1]["content"] and "needed" in result.ref_map.values()
    assert kept == 30


@given(history=conversations(max_turns=30), seed=st.integers(0, 1000))
def test_three_thousand_token_budget_never_goes_over(
    history: list[dict[str, Any]], seed: int
) -> None:
    rng = random.Random(seed)
    compiler = ContextCompiler(3000, core_content="Assistant. " * 30, token_scale=1.0)
    memories = [MemoryItem(id=f"m{i}", content=" ".join(rng.sample(_FILLER, 2))) for i in range(15)]
    result = compiler.compile(
        memories, "What did we decide about the river survey?", conversation_messages=history
    )
    md = result.metadata
    assert not md["budget_exceeded"]
    sent = sum(count_tokens(message_text(m)) + OVERHEAD for m in result.messages)
    assert sent <= 3000


def test_index_block_follows_the_core_and_is_marked_for_caching() -> None:
    compiler = ContextCompiler(
        1500, model_id="anthropic/claude-opus-5-5", core_content="Rules here.", token_scale=1.0
    )
    history = []
    for i in range(40):
        history += [
            {"role": "user", "content": f"Message {i} mentions harbour crane H{i:02d}. " * 3},
            {"role": "assistant", "content": f"Reply {i}."},
        ]
    result = compiler.compile(
        [], "Which crane did message 3 mention?", conversation_messages=history
    )
    md = result.metadata
    system = result.messages[0]["content"]
    assert system[: md["core_chars"]].startswith("Rules here.")
    assert system[md["core_chars"] :].startswith("\n\n" + INDEX_HEADER)
    reasons = [b["reason"] for b in md["cache_breakpoints"]]
    assert reasons == ["core", "index", "history"]
    assert md["cache_breakpoints"][0]["chars"] == md["core_chars"]


def test_index_line_keeps_every_rare_fact_of_a_message() -> None:
    from membrane.stages.history import index_digest
    from membrane.text.relevance import TermStats

    filler = "We talked about the weather and the coffee machine again."
    message = (
        "Writing this down: the gate code for Harbor Labs is GX-4471. "
        f"{filler} The invoice reference for Maple Print is MP-9083. {filler}"
    )
    stats = TermStats([message, *([filler] * 6)])
    line = index_digest(message, stats, count_tokens, 40)
    assert "GX-4471" in line and "MP-9083" in line
    assert "coffee machine" not in line
    assert index_digest(filler, stats, count_tokens, 40) == ""  # nothing rare: no line


def test_index_line_leaves_out_chatter_repeats_and_requests() -> None:
    from membrane.stages.history import index_digest
    from membrane.text.relevance import TermStats

    message = (
        "Which badge number goes with the Norwegian research facility again? "
        "Quick update on Quarry Health. Their door PIN got reset after the audit. "
        "Going forward it is LF79-3G. Lunch was risotto, which is the third time this week. "
        "I spoke with Quarry Health twice about it."
    )
    stats = TermStats([message])  # every word is rare here: only the kind of word decides
    line = index_digest(message, stats, count_tokens, 40)
    assert "LF79-3G" in line and "Quarry Health" in line
    assert "risotto" not in line  # a rare word, but neither a code nor a name
    assert "Norwegian" not in line  # a question asks; it does not tell
    assert "twice" not in line  # names Quarry Health again and nothing new


def test_a_message_that_only_asks_still_gets_its_question_as_the_line() -> None:
    from membrane.stages.history import index_digest
    from membrane.text.relevance import TermStats

    message = "Can you check whether invoice INV-20931 from Tarn Logistics was paid?"
    line = index_digest(message, TermStats([message]), count_tokens, 40)
    assert line == message


def test_only_a_message_naming_a_rare_code_or_name_gets_a_line() -> None:
    from membrane.stages.history import index_digest
    from membrane.text.relevance import TermStats

    chatter = "Keeping decisions in one shared place saves a lot of searching afterwards."
    fact = "Keeping the spare key at Birch Lane saves a trip; the lockbox code is 4471."
    lowercase = "my locker is the blue one near the stairs, second shelf from the top."
    stats = TermStats([chatter, fact, lowercase])
    assert index_digest(chatter, stats, count_tokens, 40) == ""
    assert index_digest(fact, stats, count_tokens, 40) == fact
    # A writer who never uses capitals cannot mark names: any rare word earns the line.
    assert index_digest(lowercase, stats, count_tokens, 40) == lowercase


def test_in_a_pasted_log_the_lines_someone_wrote_are_indexed_not_the_records() -> None:
    from membrane.stages.history import index_digest
    from membrane.text.relevance import TermStats

    rng = random.Random(7)
    chores = [
        "cache warmed for the nightly batch",
        "retrying the upload after a timeout",
        "queue drained, worker idle",
        "config reloaded from disk",
    ]
    lines = [
        f"2026-03-{1 + n % 28:02d}T{n % 24:02d}:{(7 * n) % 60:02d}:11Z "
        f"{rng.choice(['INFO', 'WARN', 'DEBUG'])} worker-{n % 7} {rng.choice(chores)} "
        f"req={rng.choice('ABCDEFGH')}{rng.randint(100, 999)}-{rng.randint(10, 99)}"
        for n in range(80)
    ]
    lines.insert(30, "Note from Dana: the vault code for Orchid Works is VK-4471.")
    lines.insert(60, "Reminder: Tern Freight's courier account is CA-9120.")
    paste = "Here is the log I mentioned:\n" + "\n".join(lines)
    line = index_digest(paste, TermStats([paste, "Thanks, that helps."]), count_tokens, 40)
    assert "VK-4471" in line and "CA-9120" in line
    assert "req=" not in line and "worker-" not in line  # the repeated records stay out


def test_a_further_sentence_joins_for_an_exact_value_not_for_a_name() -> None:
    from membrane.stages.history import index_digest
    from membrane.text.relevance import TermStats

    message = (
        "The gate code for Harbor Labs is GX-4471. "
        "We met Priya Raman at the Bergen office. "
        "The loading dock closes at 1800 on Fridays."
    )
    # Priya, Raman and Bergen are rare (in two messages) but less rare than the gate code.
    stats = TermStats([message, "Priya Raman runs the Bergen office."])
    line = index_digest(message, stats, count_tokens, 40)
    assert line == (
        "The gate code for Harbor Labs is GX-4471. … The loading dock closes at 1800 on Fridays."
    )


def test_json_members_are_indexed_without_quotes_and_stand_on_their_own() -> None:
    from membrane.stages.history import index_digest
    from membrane.text.relevance import TermStats

    record = (
        '{\n "entity": "Harbor Labs",\n "notes": "Spoke to them on Monday. All fine.",\n'
        ' "gate code": "GX-4471",\n "bays": 12,\n "dock PIN": "DP-2090"\n}'
    )
    line = index_digest(record, TermStats([record]), count_tokens, 40)
    assert "gate code: GX-4471," in line and "dock PIN: DP-2090" in line
    assert '"' not in line.replace('"notes"', "")  # members lose their quotes
    assert "All fine" not in line  # a short member line does not pull in the line before


@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12, unique=True))
def test_densities_discount_only_the_words_other_sentences_repeat(words: list[str]) -> None:
    from membrane.stages.history._index import _densities
    from membrane.text.keyframes import sentence_density
    from membrane.text.relevance import TermStats

    sentences = [f"{word.capitalize()} by the lantern, {word}." for word in words]
    stats = TermStats([" ".join(words), "a lantern"])
    plain, distinct = _densities(sentences, stats)
    assert plain == [sentence_density(s, stats) for s in sentences]
    # "lantern" is in every sentence, so only it is discounted: lower unless it is alone.
    if len(words) == 1:
        assert distinct == plain
    else:
        assert all(d < p for d, p in zip(distinct, plain, strict=True))


def test_a_dropped_question_is_never_recalled_as_if_it_held_the_answer() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Which parcel trace code goes with the Osaka depot again?"},
        {"role": "assistant", "content": "I do not have that yet."},
        {"role": "user", "content": "The parcel trace code for the Osaka depot is PT-5531."},
        {"role": "assistant", "content": "Noted."},
    ] + [
        {"role": "user" if i % 2 == 0 else "assistant", "content": "filler " * 80} for i in range(8)
    ]
    tracker = HistoryTracker(300, 150, count_tokens, OVERHEAD, 40)
    tracker.update(history, "h")
    scores = tracker.score_passages("What was the parcel trace code of the Osaka depot?")
    assert {tracker.passages[pid].message for pid in scores} == {2}


@pytest.mark.parametrize(
    ("call", "result"),
    [
        (  # OpenAI: arguments are a JSON string
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {
                            "name": "crm",
                            "arguments": '{"entity": "Slate Health", "limit": 1, "tags": ["a"]}',
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "Account: 6DB2-M3."},
        ),
        (  # Anthropic: input is a dict
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "c1",
                        "name": "crm",
                        "input": {"entity": "Slate Health", "limit": 1, "tags": ["a"]},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "Account: 6DB2-M3."}
                ],
            },
        ),
    ],
)
def test_a_tool_result_line_names_what_the_call_asked(
    call: dict[str, Any], result: dict[str, Any]
) -> None:
    history = [{"role": "user", "content": "Look up Slate Health."}, call, result] + [
        {"role": "user" if i % 2 == 0 else "assistant", "content": "filler " * 60}
        for i in range(10)
    ]
    tracker = HistoryTracker(200, 100, count_tokens, OVERHEAD, 40)
    tracker.update(history, "h")
    lines = [line.text for line in tracker.lines if "6DB2-M3" in line.text]
    assert len(lines) == 1
    # scalars only, in order, quoted as JSON
    assert '(crm {"entity": "Slate Health", "limit": 1}): ' in lines[0]


def test_a_short_sentence_naming_a_topic_does_not_pull_in_the_one_before() -> None:
    from membrane.stages.history import index_digest
    from membrane.text.relevance import TermStats

    message = (
        "The spreadsheet is finally in a shape everyone likes. News from Slate Freight today. "
        "Apparently the old purchase order expired. Use TN96-5Y instead."
    )
    line = index_digest(message, TermStats([message]), count_tokens, 40)
    # The code's sentence leans on the one before it (that one says what the code is for);
    # the short topic opener names Slate Freight and stands on its own.
    assert "Apparently the old purchase order expired. Use TN96-5Y instead." in line
    assert "News from Slate Freight today." in line
    assert "spreadsheet" not in line


def test_passage_scores_follow_the_rarities_of_a_later_turn() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "The harbour crane code is HC-2291 for the north quay."},
        {"role": "assistant", "content": "Noted."},
    ] + [
        {"role": "user" if i % 2 == 0 else "assistant", "content": "filler " * 80} for i in range(8)
    ]
    query = "Which crane code is on the north quay?"
    tracker = HistoryTracker(300, 150, count_tokens, OVERHEAD, 40)
    tracker.update(history, "h")
    before = dict(tracker.score_passages(query))
    history += [{"role": "user", "content": "The north quay is closed today."}]
    tracker.update(history, "h")  # "north" and "quay" get commoner; no passage is added
    fresh = HistoryTracker(300, 150, count_tokens, OVERHEAD, 40)
    fresh.update(history, "h")
    assert tracker.score_passages(query) == fresh.score_passages(query) != before


def test_passage_scores_count_the_question_and_the_record_it_belongs_to() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "Look up Slate Health please."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "crm", "arguments": "{}"}}
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": "Entity: Slate Health, a supplier in Monterrey. "
            + "Notes: "
            + "routine words " * 40
            + ". Account number: 6DB2-M3. Owner: Esi.",
        },
        {"role": "assistant", "content": "Found it."},
    ] + [
        {"role": "user" if i % 2 == 0 else "assistant", "content": "filler " * 80} for i in range(8)
    ]
    tracker = HistoryTracker(300, 150, count_tokens, OVERHEAD, 40)
    tracker.update(history, "h")
    query = "I updated the vendor list. What's the account number of Slate Health?"
    scores = tracker.score_passages(query)
    best = max(scores, key=scores.__getitem__)
    record = [pid for pid, p in enumerate(tracker.passages) if p.message == 2]
    assert len(record) >= 2 and best in record
    answer = next(pid for pid in record if "6DB2-M3" in tracker.passages[pid].text)
    assert answer in scores and scores[answer] > min(scores.values())


def _reference_scores(tracker: HistoryTracker, query: str) -> dict[int, float]:
    """score_passages written out from the passages themselves, in the same summing order."""
    found: dict[str, list[tuple[int, int, float]]] = {}  # word -> (pid, message, weight)
    for pid, passage in enumerate(tracker.passages):
        weights: dict[str, float] = {}
        for sentence in passage.sentences:
            weight = 0.5 if sentence.rstrip().endswith("?") else 1.0
            for w in content_words(sentence):
                weights[w] = max(weights.get(w, 0.0), weight)
        for w, weight in weights.items():
            found.setdefault(w, []).append((pid, passage.message, weight))
    weighted = [(w, q * tracker.stats.idf(w)) for w, q in query_weights(query).items()]
    weighted.sort(key=lambda item: (-item[1], item[0]))
    own: dict[int, float] = {}
    context: dict[int, float] = {}
    for w, weight in weighted[:16]:
        entries = found.get(w, [])
        if not entries or len(entries) > 128:
            continue
        best: dict[int, float] = {}
        for pid, message, sentence_weight in entries:
            own[pid] = own.get(pid, 0.0) + weight * sentence_weight
            best[message] = max(best.get(message, 0.0), weight * sentence_weight)
        for message, gain in best.items():
            context[message] = context.get(message, 0.0) + gain
    return {pid: score + 0.5 * context[tracker.passages[pid].message] for pid, score in own.items()}


@settings(max_examples=40)
@given(
    history=conversations(max_turns=20),
    share=st.integers(50, 600),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=20).map(" ".join),
    question=st.booleans(),
)
def test_passage_scores_match_the_reference(
    history: list[dict[str, Any]], share: int, query: str, question: bool
) -> None:
    tracker = HistoryTracker(share, share // 2, count_tokens, OVERHEAD, 40)
    tracker.update(history, "h")
    query = f"Noted. {query}?" if question else query
    assert tracker.score_passages(query) == _reference_scores(tracker, query)


@given(st.text(alphabet=st.sampled_from([*"ab Z9.!?\"')]-'\n\t", "é", "’", "\u2028"]), max_size=60))
def test_sentence_words_are_the_words_of_the_whole_text(text: str) -> None:
    # A user message enters the statistics through its (memoised) sentences.
    assert set(_sentence_words(text)) == set(content_words(text))


def test_a_long_quoted_question_is_a_request_like_a_plain_one() -> None:
    from membrane.stages.history import index_digest
    from membrane.text.relevance import TermStats

    asked = 'Dana wrote, "Which badge number goes with the Tromsø research lab again?"'
    fact = "The badge number for Lumen Labs is BN-7731."
    message = f"{asked} {fact}"
    line = index_digest(message, TermStats([message]), count_tokens, 40)
    assert line == fact


def _depot_chat(restated: bool) -> list[dict[str, Any]]:
    """The depot's code is said first, then long filler; ``restated`` repeats it near the end."""
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "The parcel trace code for the Osaka depot is PT-5531."},
        {"role": "assistant", "content": "Noted."},
    ]
    for i in range(30):
        history.append({"role": "user", "content": f"Weather note {i}: " + "cloudy skies " * 30})
        history.append({"role": "assistant", "content": f"Reply {i}: " + "understood " * 20})
    if restated:
        reminder = "Reminder: the parcel trace code of the Osaka depot is PT-5531."
        history.append({"role": "user", "content": reminder})
        history.append({"role": "assistant", "content": "Thanks."})
    return history


_DEPOT_QUESTION = "What was the parcel trace code of the Osaka depot?"
_DEPOT_STATEMENT = "I am sending the parcel to the Osaka depot, trace code included."


@pytest.mark.parametrize(
    ("restated", "turn", "reason", "recalled"),
    [
        (False, _DEPOT_QUESTION, "recalled", True),
        (False, _DEPOT_STATEMENT, "recalled", True),
        # The window restates the fact: a turn that asks nothing recalls nothing more ...
        (True, _DEPOT_STATEMENT, "window_holds", False),
        # ... and neither does a question the restatement answers as well as the original.
        (True, _DEPOT_QUESTION, "window_answers", False),
        (False, "Which violin did the orchestra tune?", "no_match", False),
    ],
)
def test_recall_skips_what_the_kept_window_states_on_turns_that_ask_nothing(
    restated: bool, turn: str, reason: str, recalled: bool
) -> None:
    compiler = ContextCompiler(1500, core_content="Assistant.", token_scale=1.0)
    result = compiler.compile([], turn, conversation_messages=_depot_chat(restated))
    md = result.metadata
    assert md["history_messages_dropped"] > 0
    assert md["history_recall_reason"] == reason
    assert (md["history_messages_recalled"] > 0) is recalled
    assert (RECALL_HEADER in result.messages[-1]["content"]) is recalled
    if "Osaka" in turn:  # the code is in the prompt either way: recalled, or in the window
        assert any("PT-5531" in message_text(m) for m in result.messages)


def test_recall_reason_is_absent_when_nothing_was_dropped_or_recall_is_off() -> None:
    short = [{"role": "user", "content": "Hello."}, {"role": "assistant", "content": "Hi."}]
    on = ContextCompiler(1500, core_content="Assistant.", token_scale=1.0)
    md = on.compile([], "Hi?", conversation_messages=short).metadata
    assert "history_recall_reason" not in md
    off = ContextCompiler(
        1500, core_content="Assistant.", token_scale=1.0, recall_evicted_history=False
    )
    md = off.compile(
        [], "What was the Osaka depot code?", conversation_messages=_depot_chat(False)
    ).metadata
    assert md["history_messages_dropped"] > 0 and "history_recall_reason" not in md


@given(
    texts=st.lists(st.lists(st.sampled_from(WORDS), max_size=8), max_size=6),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=8),
)
def test_window_cover_lists_the_telling_words_each_kept_text_holds(
    texts: list[list[str]], query: list[str]
) -> None:
    stats = TermStats([" ".join(t) for t in texts])
    question = " ".join(query) + "?"
    kept = [" ".join(t) for t in texts]
    cover = window_cover(kept, question, stats)
    telling = telling_words(question, stats)
    assert cover.telling == telling
    # The texts are statements, so each word they hold weighs 1.
    expected = {
        frozenset((w, 1.0) for w in telling if w in map(stem, content_words(text))) for text in kept
    }
    assert set(cover.held) == expected - {frozenset()}
    assert len(cover.held) == len(set(cover.held))


def _music_chat(restated: bool) -> list[dict[str, Any]]:
    """The band is said first, then long filler; ``restated`` says it again near the end."""
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "I have been listening to Radiohead on repeat all week."},
        {"role": "assistant", "content": "Nice."},
    ]
    for i in range(30):
        history.append({"role": "user", "content": f"Weather note {i}: " + "cloudy skies " * 30})
        history.append({"role": "assistant", "content": f"Reply {i}: " + "understood " * 20})
    if restated:
        history.append({"role": "user", "content": "Still listening to Radiohead on repeat."})
        history.append({"role": "assistant", "content": "Thanks."})
    return history


@pytest.mark.parametrize(("restated", "reason"), [(False, "recalled"), (True, "window_answers")])
def test_a_question_finds_another_form_of_its_word_and_is_checked_against_the_window(
    restated: bool, reason: str
) -> None:
    # "listen" finds "listening" (stemming); a kept message stating the same two telling
    # words answers the question as well as the dropped one, so nothing is recalled then.
    compiler = ContextCompiler(1500, core_content="Assistant.", token_scale=1.0)
    question = "Who does Omar listen to on repeat?"
    result = compiler.compile([], question, conversation_messages=_music_chat(restated))
    md = result.metadata
    assert md["history_messages_dropped"] > 0
    assert md["history_recall_reason"] == reason
    tail = result.messages[-1]["content"]
    assert ("listening to Radiohead on repeat all week" in tail) is (not restated)
