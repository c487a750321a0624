"""memory_text_max_chars: the compiler's own per-memory text cap, over the process default."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane import CompileResult, ContextCompiler, InvalidInputError, MemoryItem

CHUNK = " ".join(f"word{i}" for i in range(300))  # a 1,500-character retrieval chunk
assert len(CHUNK) > 1500


def _texts(result: CompileResult) -> list[str]:
    return re.findall(r"text=(.*?) \| conf=", str(result.messages[-1]["content"]))


def test_the_default_cuts_a_retrieval_chunk_to_200_characters_and_says_so() -> None:
    result = ContextCompiler(8192).compile([MemoryItem(id="c", content=CHUNK)], "Q")
    (text,) = _texts(result)
    assert len(text) <= 200 and text.endswith("…")
    assert result.metadata["memories_truncated"] == 1


def test_zero_keeps_the_whole_chunk_even_when_the_environment_sets_a_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMBRANE_MEMORY_TEXT_MAX_CHARS", "50")
    compiler = ContextCompiler(8192, memory_text_max_chars=0)
    result = compiler.compile([MemoryItem(id="c", content=CHUNK)], "Q")
    assert _texts(result) == [CHUNK]
    assert result.metadata["memories_truncated"] == 0
    # Without the argument the environment is the process default.
    env_default = ContextCompiler(8192).compile([MemoryItem(id="c", content=CHUNK)], "Q")
    assert len(_texts(env_default)[0]) <= 50


def test_caps_by_kind_leave_other_kinds_at_their_default() -> None:
    compiler = ContextCompiler(8192, memory_text_max_chars={"semantic": 1000})
    result = compiler.compile(
        [
            MemoryItem(id="s", content=CHUNK),
            MemoryItem(id="e", content=CHUNK, memory_type="episodic"),
        ],
        "Q",
    )
    semantic, episodic = _texts(result)
    assert 900 < len(semantic) <= 1000
    assert len(episodic) <= 280
    assert result.metadata["memories_truncated"] == 2


@given(cap=st.integers(min_value=2, max_value=1600))
def test_no_memory_text_exceeds_the_cap(cap: int) -> None:
    result = ContextCompiler(8192, memory_text_max_chars=cap).compile(
        [MemoryItem(id="c", content=CHUNK)], "Q"
    )
    (text,) = _texts(result)
    assert len(text) <= cap
    assert result.metadata["memories_truncated"] == (len(CHUNK) > cap)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "200", {"semantic": -3}, {"fact": 10}])
def test_a_bad_cap_names_the_argument(bad: object) -> None:
    with pytest.raises(InvalidInputError) as info:
        ContextCompiler(8192, memory_text_max_chars=bad)  # type: ignore[arg-type]
    assert info.value.field == "memory_text_max_chars"


async def test_compile_prompt_async_passes_the_cap_to_its_compiler() -> None:
    from membrane import CompilerPool, compile_prompt_async

    result = await compile_prompt_async(
        "Q",
        [],
        max_tokens=8192,
        retrieved_objects=[(MemoryItem(id="c", content=CHUNK), 2)],
        memory_text_max_chars=0,
        pool=CompilerPool(),
    )
    assert _texts(result) == [CHUNK]
