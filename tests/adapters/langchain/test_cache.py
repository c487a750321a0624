"""Membrane's cache markers reach Claude through ``ChatAnthropic`` where ``anthropic_request``
puts them: the payloads are the same requests, and the simulated cache reads agree."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_anthropic", reason="needs the dev extra: pip install -e '.[dev]'")

from benchmarks.runtimes._claude import CLAUDE_MODEL, ScriptedClaude, cache_form, cache_reads
from benchmarks.runtimes.langchain import memory_items
from membrane import anthropic_request
from membrane.adapters.langchain import MembraneMiddleware
from tests.adapters.langchain._agent import agent_with, new_compiler, run_turns


def _share(rows: list[tuple[int, int]]) -> float:
    return sum(read for read, _ in rows) / sum(size for _, size in rows)


def _run(**compiler_options: object) -> tuple[ScriptedClaude, list[object]]:
    compiler = new_compiler(**compiler_options)
    model = ScriptedClaude(think_before_calls=True)
    middleware = MembraneMiddleware(compiler, memories=memory_items())
    run_turns(agent_with(model, [middleware]), "invoke")
    return model, list(compiler.results)


def test_each_payload_is_the_anthropic_request_of_its_compile() -> None:
    model, results = _run(model_id=f"anthropic/{CLAUDE_MODEL}")
    assert len(model.payloads) == len(results) == 24
    markers = 0
    for payload, result in zip(model.payloads, results, strict=True):
        # Equal up to spelling: a string is one text block, is_error=false is no is_error.
        assert cache_form(payload) == cache_form(anthropic_request(result))
        markers += str(cache_form(payload)).count("cache_control")
    assert markers > 0


def test_the_cache_read_share_matches_anthropic_request() -> None:
    model, results = _run(model_id=f"anthropic/{CLAUDE_MODEL}")
    through_langchain = _share(cache_reads(model.payloads))
    through_builder = _share(cache_reads([anthropic_request(r) for r in results]))
    assert abs(through_langchain - through_builder) <= 0.05


def test_a_compiler_without_a_model_takes_the_cache_minimum_from_chat_anthropic() -> None:
    plain, _ = _run()
    named, _ = _run(model_id=f"anthropic/{CLAUDE_MODEL}")
    marked = [str(cache_form(p)).count("cache_control") for p in plain.payloads]
    assert marked == [str(cache_form(p)).count("cache_control") for p in named.payloads]
