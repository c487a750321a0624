"""The examples of docs/frameworks/llamaindex.md run, top-level ``await`` included."""

from __future__ import annotations

import ast
import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "llama_index.core",
    reason="llama-index-core is not installed: pip install -e '.[llamaindex]'",
)

from llama_index.core.memory import Memory

from benchmarks._agent_scenario import MEMORIES, RULES, TURNS
from benchmarks.runtimes.llamaindex import Recorder, in_memory_engine, lookup_tool, scripted_llm
from membrane import MemoryItem
from membrane.tokenizers import load_encoding

PAGE = Path(__file__).resolve().parents[3] / "docs" / "frameworks" / "llamaindex.md"

pytestmark = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")


async def test_the_examples_of_the_page_run_as_written() -> None:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 2
    recorder, engine = Recorder(turn=TURNS[0]), in_memory_engine()
    records = [MemoryItem(id=ref, content=text) for ref, text in MEMORIES]
    namespace: dict[str, Any] = {  # what the page's prose says the names are
        "llm": scripted_llm(recorder),
        "tools": [lookup_tool()],
        "RULES": RULES,
        "retrieve": lambda conversation: records,
        "memory": Memory.from_defaults(
            session_id="docs",
            tokenizer_fn=load_encoding("cl100k_base").encode,
            async_engine=engine,
        ),
    }
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            for i, block in enumerate(blocks):
                recorder.turn = TURNS[i]  # the page asks about atlas, then borealis
                name = f"{PAGE.name} (example {i + 1})"
                code = compile(block, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
                pending = eval(code, namespace)
                if pending is not None:
                    await pending
    finally:
        await engine.dispose()
    assert namespace["output"].membrane.ref_map == {1: "pref-7", 2: "team-2"}
    printed = out.getvalue().splitlines()
    assert len(printed) == 2  # one MembraneCompiled event per request of the streamed run
    assert all(line.endswith("{1: 'pref-7', 2: 'team-2'}") for line in printed)
