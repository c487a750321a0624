"""ContextCompiler behaviour, checked with values: layout, budgets, tiers, metadata, calibration."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane import (
    INTERRUPT_INSTRUCTION,
    CompileMetrics,
    CompileResult,
    ContextCompiler,
    MemoryItem,
    compile_anonymous,
    count_tokens,
)
from membrane.messages import message_text
from membrane.records import KernelMemoryObject
from membrane.stages.history import INDEX_HEADER
from membrane.stages.layout import CURRENT_MESSAGE_HEADER, LAST_REPLY_HEADER
from membrane.state import InMemoryStateStore

CORE = "You are a support agent for a bicycle shop."
MEM_LINE = re.compile(r"^\[Mem:(\d+)\] ", re.MULTILINE)


def _fact(i: int, text: str | None = None) -> MemoryItem:
    return MemoryItem(id=f"f{i}", content=text or f"Fact {i}: the shop stocks frame size {i}.")


def _episode(i: int) -> MemoryItem:
    return MemoryItem(
        id=f"e{i}",
        content=f"Visit {i}: customer asked about tyre pressure and bought an inner tube.",
        memory_type="episodic",
    )


def _procedure(i: int) -> MemoryItem:
    return MemoryItem(
        id=f"p{i}",
        content=f"Procedure {i}: check the serial number first.",
        memory_type="procedural",
    )


def _sent_tokens(result: CompileResult) -> int:
    """What the request costs in counted tokens: content plus per-message framing."""
    md = result.metadata
    return md["token_count"] + md["message_framing_tokens"]


def _history(turns: int, words: int = 40) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(turns):
        out.append(
            {"role": "user", "content": f"Question {i} about gear ratios. " + "spoke " * words}
        )
        out.append({"role": "assistant", "content": f"Answer {i} on chain wear. " + "rim " * words})
    return out


def _mem_numbers_in_order(text: str) -> list[int]:
    return [int(n) for n in MEM_LINE.findall(text)]


# ---------------------------------------------------------------- placements


def test_end_placement_layout() -> None:
    compiler = ContextCompiler(4000, core_content=CORE)
    history = _history(2, words=3)
    result = compiler.compile([_fact(1)], "Do you fit disc brakes?", conversation_messages=history)
    msgs = result.messages
    assert msgs[0] == {"role": "system", "content": f"{CORE}\n\n{INTERRUPT_INSTRUCTION}"}
    assert msgs[1:-1] == history
    assert msgs[-1]["role"] == "user"
    assert msgs[-1]["content"] == (
        f"[Mem:1] [fact] kind=note | text={_fact(1).content} | conf=1.00\n\n"
        f"{CURRENT_MESSAGE_HEADER}\nDo you fit disc brakes?"
    )
    assert result.metadata["memory_placement"] == "end"
    assert result.metadata["stable_prefix_messages"] == 1 + len(history)


def test_system_placement_is_one_message_with_core_memories_last_turn_and_question() -> None:
    compiler = ContextCompiler(4000, core_content=CORE, memory_placement="system")
    history = _history(3, words=2)
    result = compiler.compile(
        [_fact(1), _episode(2)],
        "Can I book a service?",
        conversation_messages=history,
        dynamic_directives="Mention opening hours.",
    )
    assert len(result.messages) == 1
    assert result.messages[0]["role"] == "system"
    content = result.messages[0]["content"]
    # Order: core, memories, the last assistant turn only, the question, directives.
    positions = [
        content.index(CORE),
        content.index("[Mem:1]"),
        content.index("[Mem:2]"),
        content.index(LAST_REPLY_HEADER + "\n" + history[-1]["content"]),
        content.index(CURRENT_MESSAGE_HEADER + "\nCan I book a service?"),
        content.index("<ACTIVE_SYSTEM_DIRECTIVES>"),
    ]
    assert positions == sorted(positions)
    assert history[0]["content"] not in content
    assert history[-2]["content"] not in content
    md = result.metadata
    assert md["memory_placement"] == "system"
    assert md["stable_prefix_messages"] == 0
    assert md["token_count"] == count_tokens(content)
    assert md["message_framing_tokens"] == 3
    assert md["cache_breakpoints"] == [] and md["prompt_cache_used"] is False
    assert result.ref_map == {1: "f1", 2: "e2"}


def test_system_placement_prefers_an_explicit_last_assistant_turn() -> None:
    compiler = ContextCompiler(4000, core_content=CORE, memory_placement="system")
    result = compiler.compile(
        [], "And the price?", conversation_messages=_history(1, 1), last_assistant_turn="We fit it."
    )
    assert (
        f"{LAST_REPLY_HEADER}\nWe fit it.\n\n{CURRENT_MESSAGE_HEADER}"
        in (result.messages[0]["content"])
    )


def test_system_placement_trims_memories_within_budget() -> None:
    compiler = ContextCompiler(260, core_content=CORE, memory_placement="system")
    memories = [_fact(1), _procedure(2)] + [_episode(i) for i in range(3, 15)]
    result = compiler.compile(memories, "Hello?")
    assert _sent_tokens(result) <= 260
    assert result.metadata["segments_kept"] < result.metadata["segments_offered"] == 14
    assert {1: "f1", 2: "p2"}.items() <= result.ref_map.items()
    assert not result.metadata["budget_exceeded"]


# ---------------------------------------------------------------- budget


def test_max_tokens_is_capped_by_a_known_model_context() -> None:
    compiler = ContextCompiler(1_000_000, model_id="llama3.2")
    result = compiler.compile([_fact(1)], "Hi")
    # The 4,096-token window less the default output reserve (a tenth of it, rounded up).
    assert result.metadata["reserve_output_tokens"] == 410
    assert result.metadata["tokens_budget"] == 4096 - 410


def test_unknown_model_never_shrinks_the_budget() -> None:
    compiler = ContextCompiler(1_000_000, model_id="acme/not-a-real-model-xyz")
    result = compiler.compile([_fact(1)], "Hi")
    assert result.metadata["tokens_budget"] == 1_000_000
    assert result.metadata["cache_mode"] is None


def test_budget_below_the_model_cap_is_kept() -> None:
    result = ContextCompiler(3000, model_id="llama3.2").compile([_fact(1)], "Hi")
    assert result.metadata["tokens_budget"] == 3000


@given(budget=st.integers(150, 1200), n=st.integers(0, 25))
def test_sent_tokens_never_exceed_the_budget(budget: int, n: int) -> None:
    compiler = ContextCompiler(budget, core_content=CORE)
    memories = [(_fact, _episode, _procedure)[i % 3](i) for i in range(n)]
    result = compiler.compile(memories, "Which helmet fits a 58 cm head?")
    assert _sent_tokens(result) <= budget
    assert result.metadata["token_count"] == sum(
        count_tokens(message_text(m)) for m in result.messages
    )
    assert not result.metadata["budget_exceeded"]


def test_fixed_token_scale_divides_the_budget() -> None:
    compiler = ContextCompiler(1000, core_content=CORE, token_scale=2.0)
    memories = [_fact(i, f"Fact {i}: " + "wheel hub bearing " * 12) for i in range(30)]
    result = compiler.compile(memories, "Hub advice?")
    md = result.metadata
    assert md["token_scale"] == 2.0
    assert md["tokens_budget"] == 1000
    assert md["tokens_budget_counted"] == 500
    assert 400 < _sent_tokens(result) <= 500
    assert md["token_scale_samples"] == 0


@pytest.mark.parametrize(
    ("budget", "scale", "counted"),
    [(8800, 1.1, 8000), (110, 1.1, 100), (8000, 1.6, 5000), (8000, 1.51, 5298)],
)
def test_counted_budget_is_the_exact_quotient_rounded_down(
    budget: int, scale: float, counted: int
) -> None:
    # 8800 / 1.1 is 8000 exactly; float division gives 7999.999..., which must not lose a token.
    result = ContextCompiler(budget, token_scale=scale).compile([], "Hi")
    assert result.metadata["tokens_budget_counted"] == counted


def test_scale_of_one_sets_no_counted_budget_key() -> None:
    result = ContextCompiler(1000, token_scale=1.0).compile([_fact(1)], "Hi")
    assert result.metadata["token_scale"] == 1.0
    assert "tokens_budget_counted" not in result.metadata


@pytest.mark.parametrize("overhead", [0, 3, 11])
def test_message_overhead_tokens_are_reserved_per_message(overhead: int) -> None:
    compiler = ContextCompiler(400, core_content=CORE, message_overhead_tokens=overhead)
    memories = [_fact(i, f"Fact {i}: " + "saddle " * 20) for i in range(20)]
    history = _history(2, words=5)
    result = compiler.compile(memories, "Saddle?", conversation_messages=history)
    md = result.metadata
    assert md["message_framing_tokens"] == overhead * len(result.messages)
    assert md["token_count"] + overhead * len(result.messages) <= 400


def test_more_overhead_leaves_less_room_for_memories() -> None:
    memories = [_fact(i, f"Fact {i}: " + "saddle " * 20) for i in range(20)]
    kept = [
        ContextCompiler(600, message_overhead_tokens=o)
        .compile(memories, "Saddle?")
        .metadata["segments_kept"]
        for o in (0, 100)
    ]
    assert kept[0] > kept[1]


# ---------------------------------------------------------------- core and end regions


def test_agent_persona_is_appended_after_the_core() -> None:
    compiler = ContextCompiler(4000, core_content=CORE)
    result = compiler.compile([], "Hi", agent_persona_prompt="Your name is Spoke.")
    assert result.messages[0]["content"] == (
        f"{CORE}\n\nYour name is Spoke.\n\n{INTERRUPT_INSTRUCTION}"
    )


def test_interrupt_instruction_can_be_left_out() -> None:
    compiler = ContextCompiler(4000, core_content=CORE, include_interrupt_instruction=False)
    result = compiler.compile([_fact(1)], "Hi")
    assert result.messages[0]["content"] == CORE
    assert "SYSTEM_INTERRUPT_FETCH" not in json.dumps(result.messages)


def test_dynamic_directives_close_the_prompt() -> None:
    compiler = ContextCompiler(4000, core_content=CORE)
    result = compiler.compile(
        [_fact(1)], "Hi", dynamic_directives=["Reply in Dutch.", "  ", "Keep it short."]
    )
    tail = result.messages[-1]["content"]
    assert tail.endswith(
        "\n\n<ACTIVE_SYSTEM_DIRECTIVES>\n- Reply in Dutch.\n- Keep it short.\n"
        "</ACTIVE_SYSTEM_DIRECTIVES>"
    )
    assert tail.index(CURRENT_MESSAGE_HEADER) < tail.index("<ACTIVE_SYSTEM_DIRECTIVES>")
    assert "ACTIVE_SYSTEM_DIRECTIVES" not in result.messages[0]["content"]


def test_a_single_directive_string_is_one_item_and_empty_ones_add_nothing() -> None:
    compiler = ContextCompiler(4000)
    one = compiler.compile([], "Hi", dynamic_directives="Be formal.")
    assert one.messages[-1]["content"].endswith(
        "<ACTIVE_SYSTEM_DIRECTIVES>\n- Be formal.\n</ACTIVE_SYSTEM_DIRECTIVES>"
    )
    for empty in (None, "", [], ["   "]):
        result = compiler.compile([], "Hi", dynamic_directives=empty)
        assert result.messages[-1]["content"] == f"{CURRENT_MESSAGE_HEADER}\nHi"


def test_last_assistant_turn_without_history_sits_before_the_question() -> None:
    compiler = ContextCompiler(4000, core_content=CORE)
    result = compiler.compile([_fact(1)], "And the blue one?", last_assistant_turn="Red is 40 EUR.")
    tail = result.messages[-1]["content"]
    assert tail.endswith(
        f"\n\n{LAST_REPLY_HEADER}\nRed is 40 EUR.\n\n{CURRENT_MESSAGE_HEADER}\nAnd the blue one?"
    )
    assert tail.index("[Mem:1]") < tail.index(LAST_REPLY_HEADER)


def test_last_assistant_turn_is_not_repeated_when_history_is_given() -> None:
    history = _history(1, words=1)
    result = ContextCompiler(4000).compile(
        [], "Next?", conversation_messages=history, last_assistant_turn=history[-1]["content"]
    )
    assert LAST_REPLY_HEADER not in result.messages[-1]["content"]
    assert result.messages[-2] == history[-1]


def test_current_turn_is_kept_even_when_it_alone_exceeds_the_budget() -> None:
    question = "Explain derailleur indexing. " * 80
    result = ContextCompiler(100, core_content=CORE).compile([_fact(1)], question)
    assert result.messages[-1]["content"].endswith(question)
    assert result.messages[0]["content"].startswith(CORE)
    assert result.metadata["budget_exceeded"] is True
    assert result.ref_map == {}


# ---------------------------------------------------------------- tiers


def test_lowest_tier_is_dropped_first() -> None:
    memories = [_episode(1), _fact(2), _episode(3), _fact(4), _procedure(5), _episode(6)]
    full = ContextCompiler(4000, thin_before_drop=False).compile(memories, "Hi")
    sizes = {
        n: count_tokens(line)
        for n, line in zip(
            _mem_numbers_in_order(full.messages[-1]["content"]),
            full.messages[-1]["content"].split("\n"),
            strict=False,
        )
    }
    fixed = _sent_tokens(full) - sum(sizes.values()) - len(sizes)
    # Room for the procedure and both facts, not for any episode.
    budget = fixed + sizes[5] + sizes[2] + sizes[4] + 3 + sizes[1] // 2
    result = ContextCompiler(budget, thin_before_drop=False).compile(memories, "Hi")
    assert set(result.ref_map) == {2, 4, 5}


def test_at_most_three_procedures_are_kept_even_with_room() -> None:
    memories = [_procedure(i) for i in range(1, 6)]
    for placement in ("end", "system"):
        result = ContextCompiler(8000, memory_placement=placement).compile(memories, "Hi")
        assert result.ref_map == {1: "p1", 2: "p2", 3: "p3"}
        assert result.metadata["segments_offered"] == 5
        assert result.metadata["segments_kept"] == 3


def test_kept_memories_appear_in_tier_order_numbered_by_input_order() -> None:
    memories = [_episode(1), _fact(2), _procedure(3), _episode(4), _procedure(5), _fact(6)]
    result = ContextCompiler(8000).compile(memories, "Hi")
    assert _mem_numbers_in_order(result.messages[-1]["content"]) == [3, 5, 2, 6, 1, 4]
    assert result.ref_map == {1: "e1", 2: "f2", 3: "p3", 4: "e4", 5: "p5", 6: "f6"}
    assert result.ref_map_type == {
        1: "episodic",
        2: "semantic",
        3: "procedural",
        4: "episodic",
        5: "procedural",
        6: "semantic",
    }


def test_priority_overrides_the_kind_tier() -> None:
    urgent = MemoryItem(
        id="ep", content="Customer reported a recall.", memory_type="episodic", priority=1
    )
    result = ContextCompiler(8000).compile([_fact(1), urgent], "Hi")
    assert _mem_numbers_in_order(result.messages[-1]["content"]) == [2, 1]
    assert result.ref_map_type[2] == "episodic"


def test_tier_by_memory_id_overrides_tiers_by_object_identity() -> None:
    memories = [_episode(i) for i in range(1, 11)]
    baseline = ContextCompiler(300, thin_before_drop=False).compile(memories, "Hi")
    assert 10 not in baseline.ref_map and 1 in baseline.ref_map
    result = ContextCompiler(300, thin_before_drop=False).compile(
        memories, "Hi", tier_by_memory_id={id(memories[9]): 1}
    )
    assert 10 in result.ref_map
    assert _mem_numbers_in_order(result.messages[-1]["content"])[0] == 10
    assert len(result.ref_map) <= len(baseline.ref_map)
    # An equal but distinct object is not overridden: the key is the object's id().
    twin = MemoryItem(id="e10", content=memories[9].content, memory_type="episodic")
    assert twin == memories[9]
    again = ContextCompiler(300, thin_before_drop=False).compile(
        memories, "Hi", tier_by_memory_id={id(twin): 1}
    )
    assert again.ref_map == baseline.ref_map


def test_middle_extras_are_trimmed_by_tier_like_memories() -> None:
    extras = [("Shop policy: returns within 30 days. " * 3, 1), ("Old newsletter. " * 40, 3)]
    roomy = ContextCompiler(4000).compile([_fact(1)], "Hi", middle_extras=extras)
    tail = roomy.messages[-1]["content"]
    # Tier 1 extra first, then the fact, then the tier 3 extra.
    assert tail.index("Shop policy") < tail.index("[Mem:1]") < tail.index("Old newsletter")
    assert roomy.metadata["segments_offered"] == 3
    assert roomy.ref_map == {1: "f1"}

    fixed = _sent_tokens(ContextCompiler(4000).compile([_fact(1)], "Hi"))
    budget = fixed + count_tokens(extras[0][0]) + 10
    tight = ContextCompiler(budget, thin_before_drop=False).compile(
        [_fact(1)], "Hi", middle_extras=extras
    )
    tight_tail = tight.messages[-1]["content"]
    assert "Shop policy" in tight_tail and "Old newsletter" not in tight_tail
    assert tight.ref_map == {1: "f1"}
    assert tight.metadata["segments_kept"] == 2


def test_rank_fusion_saves_the_memory_that_matches_the_question() -> None:
    memories = [
        _fact(i, f"Fact {i}: the shop sells bells, lights and mudguards in many colours.")
        for i in range(1, 9)
    ]
    memories.append(_fact(9, "Fact 9: the shop rents a tandem for 45 euros a day, lights on."))
    question = "How much is the tandem rental?"
    roomy = ContextCompiler(8000).compile(memories, question)
    lines = roomy.messages[-1]["content"].split("\n")[:9]
    fixed = _sent_tokens(roomy) - count_tokens("\n".join(lines))
    tandem = next(line for line in lines if line.startswith("[Mem:9]"))
    # Room for five of the nine lines, whichever is fifth.
    budget = fixed + sum(count_tokens(line) + 1 for line in lines[:4])
    budget += max(count_tokens(lines[4]), count_tokens(tandem)) + 2
    fused = ContextCompiler(budget, thin_before_drop=False).compile(memories, question)
    plain = ContextCompiler(budget, thin_before_drop=False, rank_fusion=False).compile(
        memories, question
    )
    assert set(plain.ref_map) == {1, 2, 3, 4, 5}
    # Fused with the lexical ranking, the tandem fact outranks the fifth generic fact.
    assert set(fused.ref_map) == {1, 2, 3, 4, 9}
    # Survivors keep the caller's order.
    assert _mem_numbers_in_order(fused.messages[-1]["content"]) == [1, 2, 3, 4, 9]


# ---------------------------------------------------------------- memory text caps


def _text_field(line: str) -> str:
    return line.split(" | text=", 1)[1].rsplit(" | conf=", 1)[0]


def _lines_by_number(result: CompileResult) -> dict[int, str]:
    tail = result.messages[-1]["content"]
    return {int(m.group(1)): line for line in tail.split("\n") if (m := MEM_LINE.match(line))}


LONG = " ".join(f"word{i}" for i in range(200))


def test_default_text_caps_per_kind() -> None:
    memories = [
        MemoryItem(id="s", content=LONG),
        MemoryItem(id="e", content=LONG, memory_type="episodic"),
        MemoryItem(id="p", content=LONG, memory_type="procedural"),
        MemoryItem(id="short", content="Short."),
    ]
    result = ContextCompiler(8000).compile(memories, "Hi")
    lines = _lines_by_number(result)
    for number, cap in ((1, 200), (2, 280), (3, 500)):
        text = _text_field(lines[number])
        assert len(text) <= cap
        assert len(text) > cap - 15
        assert text.endswith("…")
        assert LONG.startswith(text[:-1].rstrip())
    assert _text_field(lines[4]) == "Short."
    assert result.metadata["memories_truncated"] == 3


def test_text_cap_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBRANE_MEMORY_TEXT_MAX_CHARS", "60")
    memories = [
        MemoryItem(id="s", content=LONG),
        MemoryItem(id="p", content=LONG, memory_type="procedural"),
        MemoryItem(id="short", content="Fifty-nine characters or fewer stay exactly as written."),
    ]
    result = ContextCompiler(8000).compile(memories, "Hi")
    lines = _lines_by_number(result)
    assert all(len(_text_field(lines[n])) <= 60 for n in (1, 2))
    assert _text_field(lines[1]).endswith("…")
    assert _text_field(lines[3]) == memories[2].content
    assert result.metadata["memories_truncated"] == 2


def test_text_cap_zero_disables_capping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBRANE_MEMORY_TEXT_MAX_CHARS", "0")
    result = ContextCompiler(8000).compile([MemoryItem(id="s", content=LONG)], "Hi")
    assert _text_field(_lines_by_number(result)[1]) == LONG
    assert result.metadata["memories_truncated"] == 0


def test_memory_text_whitespace_is_collapsed_onto_one_line() -> None:
    result = ContextCompiler(8000).compile(
        [MemoryItem(id="s", content="Line one.\n\nLine   two.\tEnd.")], "Hi"
    )
    assert _text_field(_lines_by_number(result)[1]) == "Line one. Line two. End."


# ---------------------------------------------------------------- thinning


def test_thin_before_drop_keeps_every_memory_as_a_keyframe() -> None:
    memories = [
        _fact(
            i,
            f"Store {i} opened in spring. The workshop at store {i} repairs carbon frames "
            f"and hydraulic brakes. Parking is available.",
        )
        for i in range(1, 9)
    ]
    full = ContextCompiler(8000).compile(memories, "Who repairs carbon frames?")
    budget = _sent_tokens(full) - 60
    thin = ContextCompiler(budget).compile(memories, "Who repairs carbon frames?")
    md = thin.metadata
    assert _sent_tokens(thin) <= budget
    assert md["segments_kept"] == 8
    assert md["segments_thinned"] > 0
    assert set(thin.ref_map) == set(range(1, 9))
    thinned = [line for line in _lines_by_number(thin).values() if line.endswith("…")]
    assert len(thinned) == md["segments_thinned"]
    assert md["retrieval_summary"] == {
        "offered": 8,
        "kept_full": 8 - md["segments_thinned"],
        "thinned": md["segments_thinned"],
        "dropped": 0,
    }
    dropped = ContextCompiler(budget, thin_before_drop=False).compile(
        memories, "Who repairs carbon frames?"
    )
    assert dropped.metadata["segments_kept"] < 8
    assert dropped.metadata["segments_thinned"] == 0


# ---------------------------------------------------------------- ref map


@pytest.mark.parametrize("placement", ["end", "system"])
def test_ref_map_ignores_tags_outside_the_memory_lines(placement: str) -> None:
    memories = [_fact(1), _episode(2)]
    question = "Earlier you cited [Mem:2], what was it?"
    persona = "Never cite [Mem:2] twice."
    fixed = ContextCompiler(4000, memory_placement=placement).compile(
        [_fact(1)], question, agent_persona_prompt=persona
    )
    # A few tokens of slack: the fitter reserves room for the joins.
    budget = _sent_tokens(fixed) + 6
    result = ContextCompiler(budget, memory_placement=placement, thin_before_drop=False).compile(
        memories, question, agent_persona_prompt=persona
    )
    assert result.ref_map == {1: "f1"}
    assert set(result.ref_map_type) == {1}


def test_ref_map_is_pruned_to_survivors() -> None:
    memories = [_fact(1)] + [_episode(i) for i in range(2, 20)]
    result = ContextCompiler(250, thin_before_drop=False).compile(memories, "Hi")
    tail = result.messages[-1]["content"]
    assert set(result.ref_map) == set(_mem_numbers_in_order(tail))
    assert 1 in result.ref_map and len(result.ref_map) < 19


def test_records_with_memory_kind_are_accepted() -> None:
    record = KernelMemoryObject(id="k1", memory_kind="procedural", content="Torque to 5 Nm.")
    result = ContextCompiler(4000).compile([_fact(1), record], "Hi")
    assert result.ref_map == {1: "f1", 2: "k1"}
    assert result.ref_map_type[2] == "procedural"
    assert _mem_numbers_in_order(result.messages[-1]["content"]) == [2, 1]


# ---------------------------------------------------------------- history


def test_trim_history_false_sends_everything_and_flags_the_overrun() -> None:
    history = _history(12, words=40)
    compiler = ContextCompiler(600, core_content=CORE, trim_history=False)
    result = compiler.compile([_fact(1)], "Hi", conversation_messages=history)
    assert result.messages[1:-1] == history
    assert result.metadata["budget_exceeded"] is True
    assert result.metadata["history_messages_dropped"] == 0
    assert _sent_tokens(result) > 600


def test_trim_history_drops_the_oldest_turns_and_fits() -> None:
    history = _history(12, words=40)
    result = ContextCompiler(1200, core_content=CORE).compile(
        [_fact(1)], "Hi", conversation_messages=history
    )
    md = result.metadata
    dropped = md["history_messages_dropped"]
    assert dropped > 0
    assert result.messages[1:-1] == history[dropped:]
    assert md["budget_exceeded"] is False
    assert _sent_tokens(result) <= 1200


def test_every_filled_metadata_key_of_the_reference_table() -> None:
    core = "You are a cycling coach. " * 30
    compiler = ContextCompiler(3000, model_id="anthropic/claude-opus-5-5", core_content=core)
    history = _history(30, words=35)
    memories = [_fact(i) for i in range(1, 6)]
    result = compiler.compile(
        memories, "What did we say about gear ratios in question 3?", conversation_messages=history
    )
    md = result.metadata
    system = result.messages[0]["content"]
    kept_history = result.messages[1:-1]

    assert md["memory_placement"] == "end"
    assert md["stable_prefix_messages"] == 1 + len(kept_history)
    assert md["history_messages_dropped"] == len(history) - len(kept_history) > 0
    assert kept_history == history[md["history_messages_dropped"] :]
    assert md["history_messages_recalled"] >= 1
    assert "Recalled" in result.messages[-1]["content"] or md["history_messages_recalled"]
    assert md["history_index_lines"] > 0
    core_text = system[: md["core_chars"]]
    assert core_text == f"{core.strip()}\n\n{INTERRUPT_INSTRUCTION}"
    index_block = system[md["core_chars"] :].lstrip("\n")
    assert index_block.startswith(INDEX_HEADER)
    assert md["history_index_tokens"] == count_tokens(system) - count_tokens(core_text)
    assert md["segments_thinned"] >= 0
    assert md["cache_mode"] == "marked"
    assert [bp["reason"] for bp in md["cache_breakpoints"]] == ["core", "index", "history"]
    core_bp, index_bp, history_bp = md["cache_breakpoints"]
    assert core_bp == {
        "message_index": 0,
        "tokens": count_tokens(core_text) + 3,
        "reason": "core",
        "chars": md["core_chars"],
    }
    assert index_bp == {"message_index": 0, "tokens": count_tokens(system) + 3, "reason": "index"}
    history_tokens = sum(count_tokens(message_text(m)) + 3 for m in kept_history)
    assert history_bp == {
        "message_index": len(kept_history),
        "tokens": index_bp["tokens"] + history_tokens,
        "reason": "history",
    }
    assert md["token_scale"] == 1.51 and md["token_scale_samples"] == 0
    assert md["tokens_budget_counted"] == int(3000 / 1.51)
    assert md["message_framing_tokens"] == 3 * len(result.messages)
    assert md["prompt_cache_used"] is True
    assert md["cacheable_prefix_tokens"] == history_bp["tokens"]
    assert md["dynamic_tail_tokens"] == count_tokens(result.messages[-1]["content"]) + 3
    assert md["budget_exceeded"] is False
    assert _sent_tokens(result) <= md["tokens_budget_counted"]
    for key in (
        "token_count",
        "tokens_budget",
        "tokens_trimmed",
        "segments_offered",
        "segments_kept",
        "memories_truncated",
        "retrieval_summary",
    ):
        assert key in md
    assert md["tokens_budget"] == 3000
    assert md["token_count"] == sum(count_tokens(message_text(m)) for m in result.messages)


def test_prompt_cache_not_used_below_the_model_minimum() -> None:
    result = ContextCompiler(8000, model_id="openai/gpt-4o", core_content="Short.").compile(
        [_fact(1)], "Hi"
    )
    md = result.metadata
    assert md["cache_mode"] == "automatic"
    assert md["prompt_cache_used"] is False
    assert "cacheable_prefix_tokens" not in md and "dynamic_tail_tokens" not in md
    assert md["cache_breakpoints"] == [
        {
            "message_index": 0,
            "tokens": count_tokens(result.messages[0]["content"]) + 3,
            "reason": "core",
        }
    ]


def test_use_prompt_caching_split_false_sets_no_breakpoints() -> None:
    compiler = ContextCompiler(
        8000, model_id="anthropic/claude-opus-5-5", core_content="Long rules. " * 400
    )
    on = compiler.compile([_fact(1)], "Hi", conversation_messages=_history(2))
    off = compiler.compile(
        [_fact(1)], "Hi", conversation_messages=_history(2), use_prompt_caching_split=False
    )
    assert on.metadata["prompt_cache_used"] is True and on.metadata["cache_breakpoints"]
    assert off.metadata["cache_breakpoints"] == []
    assert off.metadata["prompt_cache_used"] is False
    assert off.metadata["cache_mode"] is None
    assert off.messages == on.messages


# ---------------------------------------------------------------- evidence and helpers


def test_metrics_callback_receives_the_numbers() -> None:
    seen: list[CompileMetrics] = []
    compiler = ContextCompiler(
        3000, model_id="openai/gpt-4o", core_content="Rules. " * 700, metrics_callback=seen.append
    )
    result = compiler.compile(
        [_fact(i) for i in range(40)], "Hi", conversation_messages=_history(3)
    )
    assert len(seen) == 1
    metrics, md = seen[0], result.metadata
    assert metrics == CompileMetrics(
        model_id="openai/gpt-4o",
        token_count=md["token_count"],
        tokens_budget=3000,
        tokens_trimmed=md["tokens_trimmed"],
        segments_offered=40,
        segments_kept=md["segments_kept"],
        history_messages_dropped=md["history_messages_dropped"],
        cacheable_prefix_tokens=md["cacheable_prefix_tokens"],
        dynamic_tail_tokens=md["dynamic_tail_tokens"],
        budget_exceeded=False,
    )
    assert md["prompt_cache_used"] is True
    assert metrics.segments_kept < 40 and metrics.tokens_trimmed > 0
    # Sizes only: no field carries prompt text.
    assert all(not isinstance(v, str) or v == "openai/gpt-4o" for v in vars_of(metrics))


def vars_of(metrics: CompileMetrics) -> list[object]:
    return [getattr(metrics, name) for name in metrics.__slots__]


def test_to_debug_dict_is_json_serialisable() -> None:
    compiler = ContextCompiler(1500, model_id="anthropic/claude-opus-5-5", core_content=CORE)
    result = compiler.compile(
        [_fact(i) for i in range(10)], "Hi", conversation_messages=_history(8), debug=True
    )
    snapshot = result.to_debug_dict()
    round_trip = json.loads(json.dumps(snapshot))
    assert round_trip["ref_map"] == {str(k): v for k, v in result.ref_map.items()}
    assert round_trip["metadata"]["token_count"] == result.metadata["token_count"]
    assert [m["role"] for m in round_trip["messages"]] == [m["role"] for m in result.messages]
    assert [m["chars"] for m in round_trip["messages"]] == [
        len(message_text(m)) for m in result.messages
    ]
    assert result.debug_trace is not None
    assert json.loads(json.dumps(ContextCompiler(100).compile([], "x").to_debug_dict()))


def test_compile_anonymous_matches_a_fresh_compiler() -> None:
    memories = [_fact(1), _episode(2)]
    history = _history(2, words=3)
    anon = compile_anonymous(
        max_tokens=2000,
        memories=memories,
        user_message="Hi",
        core_content=CORE,
        memory_placement="end",
        history_share=0.5,
        conversation_messages=history,
        dynamic_directives="Be brief.",
    )
    fresh = ContextCompiler(2000, core_content=CORE, history_share=0.5).compile(
        memories, "Hi", conversation_messages=history, dynamic_directives="Be brief."
    )
    assert anon.messages == fresh.messages
    assert anon.metadata == fresh.metadata
    system = compile_anonymous(
        max_tokens=2000, memories=memories, user_message="Hi", memory_placement="system"
    )
    assert len(system.messages) == 1 and system.ref_map == {1: "f1", 2: "e2"}


def test_same_inputs_give_the_same_bytes_across_compilers() -> None:
    args = ([_fact(i) for i in range(12)], "Hi")
    kwargs = {"conversation_messages": _history(20)}
    a = ContextCompiler(1500, core_content=CORE).compile(*args, **kwargs)
    b = ContextCompiler(1500, core_content=CORE).compile(*args, **kwargs)
    assert json.dumps(a.messages) == json.dumps(b.messages)
    assert a.metadata == b.metadata


# ---------------------------------------------------------------- calibration


def _counted(result: CompileResult) -> int:
    return _sent_tokens(result)


def _observe_ratio(compiler: ContextCompiler, result: CompileResult, ratio: float) -> float:
    return compiler.observe(result, round(_counted(result) * ratio))


@pytest.fixture
def opus() -> tuple[ContextCompiler, CompileResult]:
    compiler = ContextCompiler(8000, model_id="anthropic/claude-opus-5-5")
    # 100 counted tokens exactly, so ratios are exact.
    result = CompileResult(
        messages=[],
        ref_map={},
        ref_map_type={},
        metadata={
            "model_id": "anthropic/claude-opus-5-5",
            "token_count": 94,
            "message_framing_tokens": 6,
        },
    )
    return compiler, result


def test_observe_rises_at_once(opus: tuple[ContextCompiler, CompileResult]) -> None:
    compiler, result = opus
    assert compiler.token_scale_for() == 1.51
    assert compiler.observe(result, 170) == 1.7
    assert compiler.compile([], "Hi").metadata["token_scale"] == 1.7
    assert compiler.compile([], "Hi").metadata["token_scale_samples"] == 1
    assert compiler.compile([], "Hi").metadata["tokens_budget_counted"] == int(8000 / 1.7)


def test_observe_falls_only_when_the_scale_is_a_tenth_too_high(
    opus: tuple[ContextCompiler, CompileResult],
) -> None:
    compiler, result = opus
    assert compiler.observe(result, 145) == 1.51  # 0.06 too high: kept
    fresh = ContextCompiler(8000, model_id="anthropic/claude-opus-5-5")
    assert fresh.observe(result, 140) == 1.4  # 0.11 too high: falls to the step


def test_observe_moves_in_steps_of_five_hundredths(
    opus: tuple[ContextCompiler, CompileResult],
) -> None:
    compiler, result = opus
    history = [compiler.observe(result, actual) for actual in (161, 162, 173, 174, 171)]
    for scale in history:
        assert round(scale * 20) == pytest.approx(scale * 20)


def test_zero_observations_are_ignored(opus: tuple[ContextCompiler, CompileResult]) -> None:
    compiler, result = opus
    assert compiler.observe(result, 0) == 1.51
    assert compiler.compile([], "Hi").metadata["token_scale_samples"] == 0
    empty = CompileResult(
        [],
        {},
        {},
        {"model_id": "anthropic/claude-opus-5-5", "token_count": 0, "message_framing_tokens": 0},
    )
    assert compiler.observe(empty, 500) == 1.51


def test_a_huge_outlier_is_clamped(opus: tuple[ContextCompiler, CompileResult]) -> None:
    compiler, result = opus
    for _ in range(6):
        compiler.observe(result, 150)
    settled = compiler.token_scale_for()
    assert settled == 1.51
    after = compiler.observe(result, 100_000)
    assert after <= 1.75
    # A first observation is clamped to a sane ratio, never 1000x.
    first = ContextCompiler(8000, model_id="openai/gpt-4o")
    assert first.observe(result, 100_000) <= 4.0


def test_fixed_token_scale_ignores_observations(
    opus: tuple[ContextCompiler, CompileResult],
) -> None:
    _, result = opus
    compiler = ContextCompiler(8000, model_id="anthropic/claude-opus-5-5", token_scale=1.0)
    assert compiler.observe(result, 300) == 1.0
    md = compiler.compile([], "Hi").metadata
    assert md["token_scale"] == 1.0 and md["token_scale_samples"] == 0


def test_calibration_is_per_model() -> None:
    compiler = ContextCompiler(8000, model_id="openai/gpt-4o")
    result = compiler.compile([_fact(1)], "Hi")
    _observe_ratio(compiler, result, 1.3)
    assert compiler.token_scale_for("openai/gpt-4o") >= 1.3
    assert compiler.token_scale_for("anthropic/claude-opus-5-5") == 1.51


def test_observe_needs_an_int() -> None:
    compiler = ContextCompiler(8000)
    result = compiler.compile([], "Hi")
    with pytest.raises(TypeError, match="int"):
        compiler.observe(result, 12.5)  # type: ignore[arg-type]


# ---------------------------------------------------------------- counters and compressors


def test_switching_the_per_call_tokenizer_keeps_counts_exact() -> None:
    from membrane.tokenizers import TiktokenAdapter, TokenizerRegistry

    registry = TokenizerRegistry()
    registry.register("openai/gpt-4o*", TiktokenAdapter("o200k_base"))
    # Chinese text counts far fewer tokens in o200k_base than in cl100k_base.
    turn = "用户喜欢简洁的回答，请用中文回复。" * 4
    history = []
    for i in range(30):
        history.append({"role": "user", "content": f"{i} {turn}"})
        history.append({"role": "assistant", "content": f"{i} {turn}"})
    compiler = ContextCompiler(2000, model_id="openai/gpt-4o")
    compiler.compile([], "Hi", conversation_messages=history, tokenizer_registry=registry)
    result = compiler.compile([], "Hi", conversation_messages=history)
    actual = sum(count_tokens(message_text(m)) for m in result.messages)
    assert result.metadata["token_count"] == actual
    assert actual + result.metadata["message_framing_tokens"] <= 2000
    fresh = ContextCompiler(2000, model_id="openai/gpt-4o").compile(
        [], "Hi", conversation_messages=history
    )
    assert result.messages == fresh.messages


@pytest.mark.parametrize("placement", ["end", "system"])
def test_both_placements_fill_the_compile_result_keys(placement: str) -> None:
    compiler = ContextCompiler(4000, memory_placement=placement)  # type: ignore[arg-type]
    result = compiler.compile([_fact(1), _episode(2)], "Hi", conversation_messages=_history(1))
    for key in (
        "token_count",
        "tokens_budget",
        "tokens_trimmed",
        "segments_offered",
        "segments_kept",
        "memories_truncated",
        "retrieval_summary",
        "memory_placement",
        "message_framing_tokens",
        "token_scale",
        "token_scale_samples",
        "budget_exceeded",
        "cache_mode",
        "cache_breakpoints",
        "prompt_cache_used",
    ):
        assert key in result.metadata, key
    assert result.metadata["retrieval_summary"] == {
        "offered": 2,
        "kept_full": 2,
        "thinned": 0,
        "dropped": 0,
    }


def _notes(n: int) -> list[MemoryItem]:
    return [
        MemoryItem(id=f"n{i}", content=f"Note {i}: the Ghent warehouse ships pallets on day {i}.")
        for i in range(1, n + 1)
    ]


def test_compress_sync_replaces_the_middle_over_the_threshold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[str, int, str]] = []

    def compress(raw: str, target: int, question: str) -> str:
        seen.append((raw, target, question))
        return "Digest: pallets ship daily [Mem:3], [Mem:7] and [Mem:99]."

    compiler = ContextCompiler(4000)
    below = compiler.compile(_notes(20), "When?", compress_sync=compress)
    assert seen == [] and len(below.ref_map) == 20
    monkeypatch.setenv("MEMORY_PREFLIGHT_TOKEN_THRESHOLD", "50")
    monkeypatch.setenv("MEMORY_PREFLIGHT_TARGET_TOKENS", "120")
    result = compiler.compile(_notes(20), "When?", compress_sync=compress)
    [(raw, target, question)] = seen
    assert (target, question) == (120, "When?")
    assert raw.startswith("[Mem:1] [fact]") and raw.count("\n") == 19
    assert result.messages[-1]["content"].startswith("Digest: pallets ship daily")
    # Citations in the digest resolve to the records they name; unknown numbers do not.
    assert result.ref_map == {3: "n3", 7: "n7"}


def test_compile_async_accepts_an_analyst_a_wrapped_function_or_compress_fn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio

    from membrane import as_preflight_analyst

    monkeypatch.setenv("MEMORY_PREFLIGHT_TOKEN_THRESHOLD", "50")

    class Analyst:
        async def compress_retrieved_memory(self, raw: str, target: int, question: str) -> str:
            return "Analyst digest [Mem:2]."

    async def summarise(raw: str, target: int, question: str) -> str:
        return "Function digest [Mem:4]."

    async def run() -> list[CompileResult]:
        compiler = ContextCompiler(4000)
        history = _history(1, words=2)
        return [
            await compiler.compile_async(
                _notes(10), "When?", compress_async=Analyst(), conversation_messages=history
            ),
            await compiler.compile_async(_notes(10), "When?", compress_fn=summarise),
            await compiler.compile_async(
                _notes(10), "When?", compress_async=as_preflight_analyst(summarise)
            ),
        ]

    analyst, fn, wrapped = asyncio.run(run())
    assert analyst.ref_map == {2: "n2"}
    assert analyst.messages[1:3] == _history(1, words=2)
    assert fn.ref_map == wrapped.ref_map == {4: "n4"}
    assert fn.messages == wrapped.messages


def test_preflight_analyst_model_defaults_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert ContextCompiler(100).preflight_analyst_model == "openai/gpt-4o-mini"
    assert ContextCompiler(100, preflight_analyst_model="x/y").preflight_analyst_model == "x/y"
    monkeypatch.setenv("PREFLIGHT_ANALYST_MODEL", "local/llama")
    assert ContextCompiler(100).preflight_analyst_model == "local/llama"


def test_a_procedure_the_question_names_survives_the_cap_of_three_with_room_to_spare() -> None:
    procedures = [
        MemoryItem(id=f"p{i}", content=f"Procedure {i}: {text}", memory_type="procedural")
        for i, text in enumerate(
            (
                "Greet returning customers by name.",
                "Offer a free safety check with every service.",
                "Log every repair in the workshop book.",
                "Warranty claims for Velotrax frames go to the Ghent importer.",
            )
        )
    ]
    result = ContextCompiler(8000, core_content=CORE).compile(
        procedures, "Where do warranty claims for Velotrax frames go?"
    )
    kept = set(result.ref_map.values())
    assert len(kept) == 3  # the cap holds
    assert "p3" in kept  # and the one the question names is among the three


def test_reused_system_text_equals_a_fresh_compile() -> None:
    # A compiler reuses last turn's system text while its index stands; one that builds it
    # afresh (sharing the state store, so the index room is the same) must send the same.
    store = InMemoryStateStore()
    core = "You are a logistics assistant."
    reused = ContextCompiler(1500, core_content=core, state_store=store)
    history: list[dict[str, Any]] = []
    indexed = 0
    for i in range(40):
        question = f"What is the dock code of depot {i % 7}?"
        result = reused.compile([], question, conversation_messages=history)
        fresh = ContextCompiler(1500, core_content=core, state_store=store)
        assert fresh.compile([], question, conversation_messages=history).messages == (
            result.messages
        )
        indexed += result.metadata["history_index_lines"] > 0
        history.append(
            {"role": "user", "content": f"Depot {i} in Town{i} uses dock code DK-{1000 + i}."}
        )
        history.append(
            {
                "role": "assistant",
                "content": f"Noted: depot {i} has dock code DK-{1000 + i}. "
                + "Deliveries arrive on weekdays before noon. " * 4,
            }
        )
    assert indexed > 10
