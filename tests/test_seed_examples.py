"""One test per Python example in the README sections the compiler implements.

Each test runs the example's calls with its own data and checks what the example promises:
its assertions, and the values its comments print.
"""

from __future__ import annotations

import asyncio
import re

import pytest

from membrane import (
    TIER_EPISODIC,
    TIER_PROCEDURAL,
    TIER_SEMANTIC,
    CompileResult,
    ContextCompiler,
    ContextLayoutEngine,
    MemoryItem,
    PreFlightContextFirewall,
    SemanticMemory,
    anthropic_request,
    anthropic_system_blocks,
    build_system_messages,
    contains_interrupt,
    count_tokens,
    get_cache_pricing,
    get_context_cap_for_model,
    get_token_scale,
    glaciate,
    has_prompt_caching,
    parse_interrupt,
    strip_all_interrupts,
)
from membrane.messages import message_text
from membrane.tokenizers import TiktokenAdapter, TokenizerRegistry


def _content_tokens(result: CompileResult, encoding: str = "cl100k_base") -> int:
    return sum(count_tokens(message_text(m), encoding) for m in result.messages)


# ---------------------------------------------------------------- Quickstart


def test_quickstart_memories_then_current_turn_in_the_final_user_message() -> None:
    compiler = ContextCompiler(
        max_tokens=4000, model_id="openai/gpt-4o", core_content="You answer billing questions."
    )
    memories = [
        MemoryItem(id="acct-9", content="Account renews on the 3rd of each month.", priority=2),
        MemoryItem(id="acct-4", content="Invoices are sent by email only.", priority=2),
    ]
    result = compiler.compile(memories=memories, user_message="When is my next invoice?")

    assert [m["role"] for m in result.messages] == ["system", "user"]
    system, final = (m["content"] for m in result.messages)
    assert system.startswith("You answer billing questions.\n\n")
    assert "<SYSTEM_INTERRUPT_FETCH[" in system.split("\n\n", 1)[1]
    assert final == (
        "[Mem:1] [fact] kind=note | text=Account renews on the 3rd of each month. | conf=1.00\n"
        "[Mem:2] [fact] kind=note | text=Invoices are sent by email only. | conf=1.00\n\n"
        "--- Current user message ---\n"
        "When is my next invoice?"
    )
    assert result.ref_map == {1: "acct-9", 2: "acct-4"}
    assert result.metadata["token_count"] == _content_tokens(result)


def test_quickstart_history_goes_between_system_and_final_user_message() -> None:
    compiler = ContextCompiler(
        max_tokens=4000, model_id="openai/gpt-4o", core_content="You help with Rust."
    )
    history = [
        {"role": "user", "content": "Which crate parses TOML?"},
        {"role": "assistant", "content": "The toml crate, with serde."},
    ]
    result = compiler.compile(
        memories=[MemoryItem(id="lang-1", content="User writes Rust 2021 edition.")],
        conversation_messages=history,
        user_message="Show me how to read a config file.",
    )
    assert [m["role"] for m in result.messages] == ["system", "user", "assistant", "user"]
    assert result.messages[1:3] == history
    assert result.messages[-1]["content"].endswith("Show me how to read a config file.")


# ---------------------------------------------------------------- Token budgets and tiers


def test_tiers_example_keeps_procedural_and_semantic_under_a_tiny_budget() -> None:
    compiler = ContextCompiler(max_tokens=200, core_content="You are a travel desk agent.")
    memories = [
        MemoryItem(
            id="rule",
            content="Rebook cancelled flights before offering vouchers.",
            memory_type="procedural",
            priority=1,
        ),
        MemoryItem(id="tier", content="Traveller holds gold status.", priority=2),
        *[
            MemoryItem(
                id=f"trip{i}",
                content=f"Trip {i} to Oslo was delayed and the traveller got a meal voucher.",
                memory_type="episodic",
                priority=3,
            )
            for i in range(12)
        ],
    ]
    result = compiler.compile(memories=memories, user_message="My flight was cancelled.")
    md = result.metadata

    assert md["token_count"] + md["message_framing_tokens"] <= md["tokens_budget"] == 200
    assert md["segments_offered"] == 14
    assert md["segments_kept"] < md["segments_offered"]
    assert md["tokens_trimmed"] > 0
    assert "rule" in result.ref_map.values()
    assert "tier" in result.ref_map.values()


def test_token_scale_example_divides_the_budget_by_the_claude_seed() -> None:
    compiler = ContextCompiler(max_tokens=8000, model_id="anthropic/claude-opus-5-5")
    result = compiler.compile(
        memories=[MemoryItem(id="tz", content="User lives in Nairobi.")],
        user_message="Which time zone applies to me?",
    )
    assert result.metadata["token_scale"] == 1.51
    assert result.metadata["tokens_budget_counted"] == int(8000 / 1.51) == 5298


def test_tokenizer_registry_example_counts_with_the_registered_encoding() -> None:
    registry = TokenizerRegistry()
    registry.register("openai/gpt-4o*", TiktokenAdapter("o200k_base"))
    compiler = ContextCompiler(max_tokens=8192, model_id="openai/gpt-4o")
    result = compiler.compile(
        memories=[MemoryItem(id="1", content="用户喜欢简洁的回答，请用中文回复。")],
        user_message="Hi",
        tokenizer_registry=registry,
    )
    o200k = _content_tokens(result, "o200k_base")
    assert result.metadata["token_count"] == o200k
    assert o200k < _content_tokens(result, "cl100k_base")


def test_tokenizer_registry_patterns_match_the_full_model_id() -> None:
    shared = TokenizerRegistry.get()
    assert shared is TokenizerRegistry.get()
    assert shared.counter_for("gpt-4o-mini").name == "o200k_base"
    assert shared.counter_for("claude-opus-5-5").name == "cl100k_base"
    # The preloaded bare pattern does not match a provider-prefixed id: a character estimate.
    assert shared.counter_for("openai/gpt-4o").name.startswith("chars/")
    assert TokenizerRegistry().counter_for("openai/gpt-4o").name == "cl100k_base"


def test_profile_example_compiles_with_the_coding_preset() -> None:
    from membrane.profile import MembraneProfile

    compiler = ContextCompiler(max_tokens=8192, model_id="openai/gpt-4o")
    result = compiler.compile(
        memories=[
            MemoryItem(
                id="lint",
                content="Run ruff before committing.",
                memory_type="procedural",
                priority=1,
            )
        ],
        user_message="Add a pre-commit hook.",
        profile=MembraneProfile.coding(),
    )
    assert result.ref_map == {1: "lint"}
    assert result.ref_map_type == {1: "procedural"}


# ---------------------------------------------------------------- Ref-map citations


def test_ref_map_citation_example_resolves_every_citation() -> None:
    compiler = ContextCompiler(max_tokens=4096)
    result = compiler.compile(
        memories=[
            MemoryItem(id="kb-17", content="Standard shipping takes 5 business days."),
            MemoryItem(id="kb-90", content="Express shipping costs 12 euros."),
        ],
        user_message="How fast is shipping?",
    )
    answer = "Standard takes five days [Mem:1]; express costs extra [Mem:2]."
    cited = [result.ref_map[int(n)] for n in re.findall(r"\[Mem:(\d+)\]", answer)]
    assert cited == ["kb-17", "kb-90"]
    assert result.ref_map_type[1] == "semantic"


# ---------------------------------------------------------------- Capability map


def test_capability_examples() -> None:
    pricing = get_cache_pricing("claude-opus-5-5")
    assert pricing is not None
    assert (pricing.mode, pricing.write, pricing.read, pricing.min_tokens) == (
        "marked",
        1.25,
        0.05,
        512,
    )
    assert get_token_scale("gpt-4o") == 1.0
    assert has_prompt_caching("gpt-4o")
    assert get_context_cap_for_model("anthropic/claude-sonnet-4.5") == 200_000


def test_capability_lookup_ignores_case_prefix_and_date_suffix() -> None:
    expected = get_context_cap_for_model("openai/gpt-4o")
    assert expected == 128_000
    assert get_context_cap_for_model("gpt-4o") == expected
    assert get_context_cap_for_model("OpenAI/GPT-4o-2024-08-06") == expected


# ---------------------------------------------------------------- Providers


def test_openai_request_example_has_the_chat_completions_shape() -> None:
    compiler = ContextCompiler(
        max_tokens=8192, model_id="openai/gpt-4o-mini", core_content="You plan meals."
    )
    result = compiler.compile(
        memories=[MemoryItem(id="diet", content="User is vegetarian.")],
        user_message="Suggest a dinner.",
    )
    request = {"model": "gpt-4o-mini", "messages": result.messages}
    assert [m["role"] for m in request["messages"]] == ["system", "user"]
    assert all(isinstance(m["content"], str) for m in request["messages"])
    assert result.metadata["cache_mode"] == "automatic"


def test_anthropic_request_example_marks_the_cached_prefixes() -> None:
    core = "You are a patient maths tutor. Explain each step and check the learner's work. " * 40
    compiler = ContextCompiler(
        max_tokens=8192, model_id="anthropic/claude-opus-5-5", core_content=core
    )
    history = [
        {"role": "user", "content": "Explain fractions. " * 200},
        {"role": "assistant", "content": "A fraction is a part of a whole."},
    ]
    result = compiler.compile(
        memories=[MemoryItem(id="lvl", content="Learner is in year 6.")],
        user_message="What is a third of nine?",
        conversation_messages=history,
    )
    request = {"model": "claude-opus-5-5", "max_tokens": 1024, **anthropic_request(result)}

    assert set(request) == {"model", "max_tokens", "system", "messages"}
    assert "".join(b["text"] for b in request["system"]) == result.messages[0]["content"]
    assert [m["role"] for m in request["messages"]] == ["user", "assistant", "user"]
    breakpoints = result.metadata["cache_breakpoints"]
    assert [bp["reason"] for bp in breakpoints] == ["core", "history"]
    # Both prefixes reach the 512-token minimum: the system block and the last history block.
    assert request["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert request["messages"][1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert all("cache_control" not in b for b in request["messages"][-1]["content"])


# ---------------------------------------------------------------- Composing the stages


def test_composing_the_stages_example() -> None:
    layout = ContextLayoutEngine(core_content="You are a careful legal researcher.")
    retrieved = [
        (
            SemanticMemory(id="f1", subject="Case 12", predicate="decided in", object="2019"),
            TIER_SEMANTIC,
        ),
    ]
    middle, ref_map, ref_map_type = layout.build_middle(retrieved)
    assert ref_map == {1: "f1"} and ref_map_type == {1: "semantic"}
    middle.append(("[Mem:2] Earlier session: user read the appeal ruling.", TIER_EPISODIC))
    middle.append(("[Mem:3] Quote statutes by section number.", TIER_PROCEDURAL))
    ref_map.update({2: "ep-5", 3: "pr-2"})

    core = layout.build_core()
    end = layout.build_end(last_turn_content=None, user_message="When was case 12 decided?")

    firewall = PreFlightContextFirewall(max_tokens=4096)
    text, kept_refs, total, stats = firewall.run(
        core_text=core, end_text=end, middle_segments=middle, ref_map=ref_map
    )
    assert total == count_tokens(text) <= 4096
    assert (stats["segments_kept"], stats["segments_offered"]) == (3, 3)
    assert kept_refs == {1: "f1", 2: "ep-5", 3: "pr-2"}

    g = glaciate(text, max_cacheable_tokens=2000)
    assert g.cacheable_prefix + g.dynamic_tail == text
    assert g.dynamic_tail.startswith("[Mem:1]")
    assert g.cacheable_prefix.endswith("\n")
    assert g.use_caching is (g.prefix_tokens >= 256)

    openai_messages, cache_hint = build_system_messages(
        "openai/gpt-4o", g.cacheable_prefix, g.dynamic_tail
    )
    assert openai_messages == [{"role": "system", "content": text}]
    assert cache_hint["cache_mode"] == "automatic"
    anthropic_system = anthropic_system_blocks(g.cacheable_prefix, g.dynamic_tail)
    assert [b["text"] for b in anthropic_system] == [g.cacheable_prefix, g.dynamic_tail]
    assert anthropic_system[0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in anthropic_system[1]


def test_composing_the_stages_trims_by_tier_under_a_small_firewall_budget() -> None:
    layout = ContextLayoutEngine(core_content="Rules.", include_interrupt_instruction=False)
    middle = [
        ("[Mem:1] " + "episode text " * 30, TIER_EPISODIC),
        ("[Mem:2] A short fact.", TIER_SEMANTIC),
        ("[Mem:3] Always answer in French.", TIER_PROCEDURAL),
    ]
    end = layout.build_end(user_message="Bonjour?")
    firewall = PreFlightContextFirewall(max_tokens=60)
    text, kept_refs, total, stats = firewall.run(
        core_text=layout.build_core(),
        end_text=end,
        middle_segments=middle,
        ref_map={1: "e", 2: "s", 3: "p"},
    )
    assert total == count_tokens(text) <= 60
    assert kept_refs == {2: "s", 3: "p"}
    assert stats["segments_kept"] == 2 and stats["tokens_trimmed"] == count_tokens(middle[0][0])


# ---------------------------------------------------------------- Async usage


def test_compile_async_runs_the_compressor_only_over_the_threshold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[int, str]] = []

    async def compress(raw_middle: str, target_tokens: int, user_message: str) -> str:
        calls.append((target_tokens, user_message))
        return "Summary: the team meets on Mondays [Mem:2]."

    memories = [
        MemoryItem(id=f"n{i}", content=f"Meeting note {i}: the team discussed roadmap item {i}.")
        for i in range(6)
    ]

    async def run() -> tuple[CompileResult, CompileResult]:
        compiler = ContextCompiler(max_tokens=8192, model_id="openai/gpt-4o")
        small = await compiler.compile_async(
            memories=memories[:1], user_message="When do we meet?", compress_async=compress
        )
        monkeypatch.setenv("MEMORY_PREFLIGHT_TOKEN_THRESHOLD", "20")
        monkeypatch.setenv("MEMORY_PREFLIGHT_TARGET_TOKENS", "50")
        big = await compiler.compile_async(
            memories=memories, user_message="When do we meet?", compress_async=compress
        )
        return small, big

    small, big = asyncio.run(run())
    assert small.ref_map == {1: "n0"}
    assert calls == [(50, "When do we meet?")]
    tail = big.messages[-1]["content"]
    assert "Summary: the team meets on Mondays [Mem:2]." in tail
    assert big.ref_map == {2: "n1"}
    assert big.metadata["token_count"] == _content_tokens(big)


# ---------------------------------------------------------------- Cost estimates


def test_estimate_example_quotes_the_compiled_prompt() -> None:
    compiler = ContextCompiler(max_tokens=8192, model_id="openai/gpt-4o-mini")
    quote = compiler.estimate(
        memories=[MemoryItem(id="1", content="User prefers metric units.")],
        user_message="How tall is Everest?",
        price_per_1k_input_tokens=0.00015,
    )
    result = quote.compile_result
    md = result.metadata
    assert quote.total_tokens == md["token_count"] + md["message_framing_tokens"]
    assert quote.estimated_cost_usd == pytest.approx(quote.total_tokens / 1000 * 0.00015)
    assert quote.trimming_strategies == ()
    assert result.ref_map == {1: "1"}
    assert (
        result.messages
        == compiler.compile(
            [MemoryItem(id="1", content="User prefers metric units.")], "How tall is Everest?"
        ).messages
    )


# ---------------------------------------------------------------- Interrupt protocol


def test_interrupt_example() -> None:
    text = "Checking now. <SYSTEM_INTERRUPT_FETCH[customer's shipping address]> Back soon."
    assert contains_interrupt(text)
    before, query, after = parse_interrupt(text)
    assert before == "Checking now. "
    assert query == "customer's shipping address"
    assert after == " Back soon."
    assert strip_all_interrupts(text) == "Checking now. Back soon."
    assert not contains_interrupt(strip_all_interrupts(text))
