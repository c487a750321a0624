"""glaciate: line-boundary split into a cacheable prefix and a dynamic tail."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.errors import InvalidInputError
from membrane.stages.glaciator import (
    MIN_GLACIATE_CACHE_TOKENS,
    GlaciatedPrompt,
    cache_metadata,
    glaciate,
)
from membrane.tokenizers import count_tokens


class WordCounter:
    """One token per whitespace-separated word: exact and monotonic, for tests of the cut."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


WORDS = WordCounter()

_static_line = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60
).filter(lambda s: not s.startswith("[Mem:") and s.strip() != "--- Current user message ---")
_line = st.one_of(
    _static_line,
    _static_line,
    st.builds(lambda s: f"[Mem:{s}", st.text(max_size=20)),
    st.just("--- Current user message ---"),
)
_ending = st.sampled_from(["\n", "\r\n", "\n\n"])


@st.composite
def prompts(draw: st.DrawFn) -> str:
    lines = draw(st.lists(st.tuples(_line, _ending), max_size=30))
    text = "".join(a + b for a, b in lines)
    if draw(st.booleans()):
        text += draw(_static_line)  # last line without a newline
    return text


def _first_dynamic(lines: list[str]) -> int:
    for i, line in enumerate(lines):
        if line.startswith("[Mem:") or line.rstrip("\r\n") == "--- Current user message ---":
            return i
    return len(lines)


def test_splits_before_the_first_memory_line() -> None:
    text = "You are helpful.\nBe brief.\n[Mem:1] User is in Lagos.\nQ\n"
    g = glaciate(text, counter=WORDS)
    assert g == GlaciatedPrompt(
        cacheable_prefix="You are helpful.\nBe brief.\n",
        dynamic_tail="[Mem:1] User is in Lagos.\nQ\n",
        prefix_tokens=5,
        tail_tokens=6,
        use_caching=False,
    )


def test_current_turn_line_ends_the_prefix_too() -> None:
    text = "Rules.\r\n--- Current user message ---\r\nHi"
    g = glaciate(text, counter=WORDS)
    assert g.cacheable_prefix == "Rules.\r\n"
    assert g.dynamic_tail == "--- Current user message ---\r\nHi"


def test_cap_cuts_back_by_whole_lines() -> None:
    text = "a b c\nd e f\ng h i\n[Mem:1] x\n"
    assert glaciate(text, 7, counter=WORDS).cacheable_prefix == "a b c\nd e f\n"
    assert glaciate(text, 5, counter=WORDS).cacheable_prefix == "a b c\n"
    assert glaciate(text, 2, counter=WORDS).cacheable_prefix == ""
    assert glaciate(text, 0, counter=WORDS).dynamic_tail == text


def test_use_caching_threshold() -> None:
    assert MIN_GLACIATE_CACHE_TOKENS == 256
    at = "w " * 256 + "\n[Mem:1] x"
    below = "w " * 255 + "\n[Mem:1] x"
    assert glaciate(at, 10_000, counter=WORDS).use_caching
    assert not glaciate(below, 10_000, counter=WORDS).use_caching


def test_default_cap_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "one two\nthree four\nfive six\n"
    monkeypatch.setenv("MAX_CACHEABLE_PREFIX_TOKENS", "4")
    assert glaciate(text, counter=WORDS).cacheable_prefix == "one two\nthree four\n"
    monkeypatch.delenv("MAX_CACHEABLE_PREFIX_TOKENS")
    assert glaciate(text, counter=WORDS).cacheable_prefix == text


def test_default_counter_is_cl100k() -> None:
    text = "System rules for the assistant.\n" * 50 + "[Mem:1] fact\n"
    g = glaciate(text)
    assert g.prefix_tokens == count_tokens(g.cacheable_prefix)
    assert g.tail_tokens == count_tokens(g.dynamic_tail)
    assert g.prefix_tokens > 0


@pytest.mark.parametrize("cap", [-1, 1.5, True, "10"])
def test_bad_cap(cap: object) -> None:
    with pytest.raises(InvalidInputError) as err:
        glaciate("x\n", cap)  # type: ignore[arg-type]
    assert err.value.field == "max_cacheable_tokens"


def test_text_must_be_a_string() -> None:
    with pytest.raises(TypeError):
        glaciate(b"bytes")  # type: ignore[arg-type]


@given(text=prompts(), cap=st.integers(0, 400))
def test_split_properties_exact_counter(text: str, cap: int) -> None:
    g = glaciate(text, cap, counter=WORDS)
    lines = text.splitlines(keepends=True)
    k = len(g.cacheable_prefix.splitlines(keepends=True))
    assert g.cacheable_prefix + g.dynamic_tail == text
    assert "".join(lines[:k]) == g.cacheable_prefix  # whole lines only
    assert k <= _first_dynamic(lines)
    assert g.prefix_tokens == WORDS.count(g.cacheable_prefix) <= cap
    assert g.tail_tokens == WORDS.count(g.dynamic_tail)
    assert g.use_caching == (g.prefix_tokens >= MIN_GLACIATE_CACHE_TOKENS)
    # Maximal: one more static line would not fit.
    if k < _first_dynamic(lines):
        assert WORDS.count("".join(lines[: k + 1])) > cap


@given(text=prompts(), cap=st.integers(0, 300))
def test_split_properties_real_tokenizer(text: str, cap: int) -> None:
    g = glaciate(text, cap)
    lines = text.splitlines(keepends=True)
    k = len(g.cacheable_prefix.splitlines(keepends=True))
    assert g.cacheable_prefix + g.dynamic_tail == text
    assert "".join(lines[:k]) == g.cacheable_prefix
    assert k <= _first_dynamic(lines)
    assert g.prefix_tokens == count_tokens(g.cacheable_prefix) <= cap


def test_cache_metadata_breakpoints_with_an_index() -> None:
    md = cache_metadata(
        "anthropic/claude-opus-5-5",
        enabled=True,
        core_tokens=300,
        core_chars=1200,
        system_tokens=360,
        history_messages=4,
        prefix_tokens=900,
        tail_tokens=80,
        token_scale=1.51,
    )
    assert md == {
        "cache_mode": "marked",
        "cache_breakpoints": [
            {"message_index": 0, "tokens": 300, "reason": "core", "chars": 1200},
            {"message_index": 0, "tokens": 360, "reason": "index"},
            {"message_index": 4, "tokens": 900, "reason": "history"},
        ],
        "prompt_cache_used": True,
        "cacheable_prefix_tokens": 900,
        "dynamic_tail_tokens": 80,
    }


def test_cache_metadata_below_the_minimum_and_switched_off() -> None:
    args = {
        "core_tokens": 0,
        "core_chars": None,
        "system_tokens": 200,
        "history_messages": 0,
        "prefix_tokens": 200,
        "tail_tokens": 10,
        "token_scale": 1.0,
    }
    md = cache_metadata("gpt-4o", enabled=True, **args)
    assert md == {
        "cache_mode": "automatic",
        "cache_breakpoints": [{"message_index": 0, "tokens": 200, "reason": "core"}],
        "prompt_cache_used": False,
    }
    assert cache_metadata("gpt-4o", enabled=False, **args) == {
        "cache_mode": None,
        "cache_breakpoints": [],
        "prompt_cache_used": False,
    }
    local = cache_metadata("llama3.1:8b", enabled=True, **args)
    assert local["cache_mode"] is None
    assert local["prompt_cache_used"] is False
