"""The seed's adapters build on one compiler per configuration, not one per call."""

from __future__ import annotations

from membrane import InMemoryStateStore
from membrane.adapters._common import shared_compiler


def test_one_compiler_per_configuration() -> None:
    store = InMemoryStateStore()
    first = shared_compiler(2048, {"core_content": "Be brief.", "state_store": store})
    again = shared_compiler(2048, {"state_store": store, "core_content": "Be brief."})
    assert first is again
    assert first.state_store is store
    assert shared_compiler(2048, {"core_content": "Be kind.", "state_store": store}) is not first
    assert shared_compiler(4096, {"core_content": "Be brief.", "state_store": store}) is not first
    other = InMemoryStateStore()
    assert shared_compiler(2048, {"core_content": "Be brief.", "state_store": other}) is not first


def test_a_shared_compiler_keeps_what_it_learned() -> None:
    compiler = shared_compiler(2048, {"model_id": "gpt-4o-mini"})
    result = compiler.compile([], "Hello")
    compiler.observe(result, result.report.sent_tokens + 5)
    assert shared_compiler(2048, {"model_id": "gpt-4o-mini"}).token_scale_for() > 1.0
