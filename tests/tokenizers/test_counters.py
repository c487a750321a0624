"""Token counters: exact tiktoken counts, the character estimate and the memo."""

from __future__ import annotations

import math
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from membrane.tokenizers import (
    CharacterEstimateCounter,
    MemoizedCounter,
    TiktokenAdapter,
    TokenCounter,
    count_tokens,
    load_encoding,
)

SPECIAL_SPELLINGS = [
    "<|endoftext|>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|endofprompt|>",
]


def test_count_tokens_pins() -> None:
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    assert count_tokens("hello world", encoding_name="o200k_base") == 2
    assert count_tokens("tiktoken is great!") == 6
    assert count_tokens("antidisestablishmentarianism", "o200k_base") == 6


@given(text=st.text(max_size=200), name=st.sampled_from(["cl100k_base", "o200k_base"]))
def test_adapter_and_function_agree_with_the_encoding(text: str, name: str) -> None:
    adapter = TiktokenAdapter(name)
    expected = len(load_encoding(name).encode_ordinary(text))
    assert adapter.count(text) == expected
    assert count_tokens(text, name) == expected
    assert adapter.decode(adapter.encode(text)) == text


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@pytest.mark.parametrize("spelling", SPECIAL_SPELLINGS)
def test_special_token_spellings_count_as_plain_text(name: str, spelling: str) -> None:
    enc = load_encoding(name)
    if spelling in enc.special_tokens_set:
        with pytest.raises(ValueError, match="disallowed special token"):
            enc.encode(f"before {spelling} after")  # what tiktoken's default would do
    ids = TiktokenAdapter(name).encode(spelling)
    # "<" and "|" are ranks 27 and 91 in both vocabularies, ">" is 29: read as text, not a special.
    assert ids[:2] == [27, 91]
    assert ids[-2:] == [91, 29]
    assert count_tokens(f"before {spelling} after", name) == len(
        enc.encode(f"before {spelling} after", disallowed_special=())
    )


def test_adapter_validates_its_encoding_name_up_front() -> None:
    with pytest.raises(ValueError, match="bundled encodings are: cl100k_base, o200k_base"):
        TiktokenAdapter("gpt2")
    assert TiktokenAdapter().name == "cl100k_base"
    assert repr(TiktokenAdapter("o200k_base")) == "TiktokenAdapter('o200k_base')"


@given(text=st.text(max_size=300), per=st.floats(min_value=0.5, max_value=10.0))
def test_character_estimate_rounds_up(text: str, per: float) -> None:
    counter = CharacterEstimateCounter(per)
    assert counter.count(text) == math.ceil(len(text) / per)


def test_character_estimate_values() -> None:
    counter = CharacterEstimateCounter()
    assert [counter.count(t) for t in ["", "a", "abcd", "abcde"]] == [0, 1, 1, 2]
    assert counter.name == "chars/4"
    assert CharacterEstimateCounter(2.5).name == "chars/2.5"
    for bad in (0, -1.0):
        with pytest.raises(ValueError, match="positive"):
            CharacterEstimateCounter(bad)


def test_every_counter_satisfies_the_protocol() -> None:
    counters = [
        TiktokenAdapter(),
        CharacterEstimateCounter(),
        MemoizedCounter(CharacterEstimateCounter()),
    ]
    assert all(isinstance(c, TokenCounter) for c in counters)
    assert not isinstance(object(), TokenCounter)


class _Spy:
    """A counter that records every text it is asked to count (one token per word)."""

    name = "spy"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def count(self, text: str) -> int:
        self.calls.append(text)
        return len(text.split())


@given(texts=st.lists(st.sampled_from(["a", "a b", "a b c", "", "x y", "a  b"]), max_size=40))
def test_memo_counts_each_distinct_text_once(texts: list[str]) -> None:
    spy = _Spy()
    memo = MemoizedCounter(spy)
    assert [memo.count(t) for t in texts] == [len(t.split()) for t in texts]
    assert sorted(spy.calls) == sorted(set(texts))


def test_memo_is_bounded_and_relearns_what_it_dropped() -> None:
    spy = _Spy()
    memo = MemoizedCounter(spy, max_entries=2)
    for text in ["a", "b", "a", "b", "c", "a", "c"]:
        memo.count(text)
    # One text a generation: "c" drops the generation that held "a" (used before "b"), so
    # "a" is counted again; "c", used since, is still remembered.
    assert spy.calls == ["a", "b", "c", "a"]
    assert memo.name == "spy"
    assert memo.inner is spy


def test_full_memo_forgets_the_oldest_half_only() -> None:
    spy = _Spy()
    memo = MemoizedCounter(spy, max_entries=100)
    for i in range(100):
        memo.count(f"t{i}")
    for i in range(90, 100):  # in use again: moved to the young generation
        memo.count(f"t{i}")
    for i in range(100, 140):  # overflow: the oldest half (t0 to t49) goes
        memo.count(f"n{i}")
    spy.calls.clear()
    # The recently used texts are still memoised; only older ones are counted again.
    for i in [*range(90, 100), *range(100, 140)]:
        memo.count(f"t{i}" if i < 100 else f"n{i}")
    assert spy.calls == []
    memo.count("t0")
    assert spy.calls == ["t0"]
    assert len(memo) <= 100


@settings(max_examples=200)
@given(
    texts=st.lists(st.integers(0, 60).map(str), max_size=300),
    bound=st.integers(1, 20),
)
def test_memo_never_exceeds_its_bound(texts: list[str], bound: int) -> None:
    spy = _Spy()
    memo = MemoizedCounter(spy, max_entries=bound)
    for text in texts:
        assert memo.count(text) == len(text.split())
        assert len(memo) <= bound
    # The last text counted is always remembered.
    if texts:
        calls = len(spy.calls)
        memo.count(texts[-1])
        assert len(spy.calls) == calls


def test_memo_shared_by_threads_stays_exact_and_bounded() -> None:
    memo = MemoizedCounter(TiktokenAdapter("cl100k_base"), max_entries=64)
    texts = [
        f"text number {i} about cobalt. And a second sentence {i}." * (i % 5 + 1)
        for i in range(400)
    ]
    expected = {t: TiktokenAdapter("cl100k_base").count(t) for t in texts}
    wrong: list[str] = []

    def work(offset: int) -> None:
        for j in range(2000):
            text = texts[(offset * 37 + j * 11) % len(texts)]
            if memo.count(text) != expected[text]:
                wrong.append(text)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []
    assert len(memo) <= 64


def test_memo_over_tiktoken_returns_exact_counts() -> None:
    memo = MemoizedCounter(TiktokenAdapter("o200k_base"))
    assert memo.count("hello world") == 2
    assert memo.count("hello world") == 2
    assert memo.name == "o200k_base"
