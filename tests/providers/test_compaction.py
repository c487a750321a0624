"""A compaction block or item is a boundary: sent verbatim and first, nothing before it counted.

Anthropic's beta ``compaction`` block and OpenAI's ``compaction`` item each stand for the
conversation before them, which the provider ignores. Membrane starts the history at the last
one, pins the unit that holds it, and says where it was in ``metadata["compaction_boundary"]``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane import ContextCompiler, anthropic_request, openai_responses_request
from membrane.messages import message_text
from membrane.tokenizers import count_tokens
from tests.providers.sdk.routes import REPLY_TEXT, anthropic_beta_route
from tests.providers.sdk.stub import Stub, running_stub
from tests.strategies import BEFORE_BOUNDARY, compacted_histories, conversations, text

BLOCK = {
    "type": "compaction",
    "content": "Ada ordered A-1001 (shipped) and A-1002 (delayed by weather).",
    "encrypted_content": "EqQBCkgIARABGAIiQL1x",
    "signature": "sig-4b1d",
    "tool_changes": [
        {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "order_status"}}
    ],
}
OLD = [
    {"role": "user", "content": "Where is A-1001? (old question)"},
    {"role": "assistant", "content": "It shipped. (old answer)"},
]
BOUNDARY = {"role": "assistant", "content": [BLOCK, {"type": "text", "text": "Noted."}]}
AFTER = [{"role": "user", "content": "And A-1002?"}, {"role": "assistant", "content": "Delayed."}]


def _compile(history: list[dict[str, Any]], budget: int = 8000, **kw: Any) -> Any:
    model = "anthropic/claude-opus-5-5"
    compiler = ContextCompiler(budget, model_id=model, core_content="Be kind.")
    return compiler.compile([], "When will it arrive?", conversation_messages=history, **kw)


def test_the_block_goes_first_verbatim_and_nothing_before_it_is_sent() -> None:
    history = [*OLD, BOUNDARY, *AFTER]
    result = _compile(copy.deepcopy(history))
    assert result.metadata["compaction_boundary"] == 2
    assert "old" not in json.dumps(result.messages)
    request = anthropic_request(result, max_tokens=64)
    first = request["messages"][0]
    assert first["role"] == "assistant"
    assert json.dumps(first["content"][0]) == json.dumps(BLOCK)
    assert "(old" not in json.dumps(request)
    # Nothing before the boundary is counted either: the same count as a history that starts
    # at the boundary.
    alone = _compile([BOUNDARY, *AFTER], conversation_id="alone")
    assert result.metadata["token_count"] == alone.metadata["token_count"]
    assert count_tokens(BLOCK["content"]) < result.metadata["token_count"]


def test_only_the_last_block_is_kept_and_what_precedes_it_in_its_message_goes() -> None:
    older = {**BLOCK, "content": "An older summary.", "signature": "sig-old"}
    message = {"role": "assistant", "content": [older, {"type": "text", "text": "x"}, BLOCK]}
    result = _compile([*OLD, BOUNDARY, *AFTER, message, {"role": "user", "content": "Hi"}])
    assert result.metadata["compaction_boundary"] == 5
    request = anthropic_request(result, max_tokens=64)
    assert request["messages"][0]["content"] == [BLOCK]
    assert "older summary" not in json.dumps(request) and "Noted." not in json.dumps(request)


def test_a_failed_compaction_is_no_boundary() -> None:
    failed = {"role": "assistant", "content": [{"type": "compaction", "content": None}]}
    result = _compile([*OLD, failed, *AFTER])
    assert "compaction_boundary" not in result.metadata
    assert "(old question)" in json.dumps(result.messages)


def test_the_cut_never_drops_the_boundary() -> None:
    after = []
    for i in range(60):
        after += [
            {"role": "user", "content": f"Question {i}: " + "tell me about the parcel " * 10},
            {"role": "assistant", "content": f"Answer {i}: " + "it is on its way " * 10},
        ]
    result = _compile([*OLD, BOUNDARY, *after], budget=2500)
    md = result.metadata
    assert md["history_messages_dropped"] > 0 and not md["budget_exceeded"]
    assert result.messages[1] == BOUNDARY  # right after the system message
    assert "(old" not in json.dumps(result.messages)  # neither sent, indexed nor recalled


def test_a_boundary_arriving_mid_conversation_drops_the_old_index_and_cut() -> None:
    before = []
    for i in range(40):
        before += [
            {"role": "user", "content": f"Old question {i} about the zebra crate?"},
            {"role": "assistant", "content": f"Old answer {i}: the zebra crate is fine."},
        ]
    model = "anthropic/claude-opus-5-5"
    compiler = ContextCompiler(2000, model_id=model, core_content="Be kind.")
    first = compiler.compile([], "Zebra crate?", conversation_messages=before, conversation_id="c")
    assert first.metadata["history_index_lines"] > 0  # the old turns were cut and indexed
    later = compiler.compile(
        [], "Zebra crate?", conversation_messages=[*before, BOUNDARY, *AFTER], conversation_id="c"
    )
    assert later.metadata["compaction_boundary"] == len(before)
    assert later.metadata["history_index_lines"] == 0
    assert "zebra" not in json.dumps(later.messages[:-1]).lower()
    assert later.messages[1] == BOUNDARY


def test_an_openai_compaction_item_is_a_boundary_too() -> None:
    item = {"type": "compaction", "id": "cmp_7", "encrypted_content": "gAAAAABoQ3ByZXNzZWQ"}
    history = [*OLD, item, {"type": "message", "role": "user", "content": "Next?"}]
    compiler = ContextCompiler(8000, model_id="openai/gpt-5.1")
    result = compiler.compile([], "Go on.", conversation_messages=history)
    assert result.metadata["compaction_boundary"] == 2
    request = openai_responses_request(result)
    assert request["input"][1:-1] == history[2:]
    assert json.dumps(request["input"][1]) == json.dumps(item)


@given(case=compacted_histories(), budget=st.integers(500, 6000), question=text)
def test_nothing_from_before_the_boundary_reaches_the_request(
    case: tuple[list[dict[str, Any]], int, str], budget: int, question: str
) -> None:
    history, index, provider = case
    boundary = copy.deepcopy(history[index])
    model = "openai/gpt-5.1" if provider == "openai" else "anthropic/claude-opus-5-5"
    compiler = ContextCompiler(budget, model_id=model, core_content="Be kind.")
    result = compiler.compile([], question, conversation_messages=history)
    md = result.metadata
    assert md["compaction_boundary"] == index
    if provider == "openai":
        request = openai_responses_request(result)
        sent = json.dumps(request["input"][1])
        assert sent == json.dumps(boundary)
    else:
        request = anthropic_request(result, max_tokens=64)
        block = next(b for b in boundary["content"] if b["type"] == "compaction")
        assert json.dumps(request["messages"][0]["content"][0]) == json.dumps(block)
    assert BEFORE_BOUNDARY not in json.dumps(request)
    assert BEFORE_BOUNDARY not in json.dumps(result.messages)
    counted = sum(count_tokens(message_text(m)) + 3 for m in result.messages)
    assert counted == md["token_count"] + md["message_framing_tokens"]
    if not md["budget_exceeded"]:
        assert counted <= budget


@given(history=conversations(max_turns=6))
def test_a_history_without_a_boundary_reports_none(history: list[dict[str, Any]]) -> None:
    result = _compile(history)
    assert "compaction_boundary" not in result.metadata


# ---------------------------------------------------------------- through the beta SDK


@pytest.fixture(scope="module")
def stub() -> Iterator[Stub]:
    with running_stub([anthropic_beta_route()]) as server:
        yield server


def test_the_beta_sdk_takes_the_request(stub: Stub) -> None:
    from anthropic.types.beta import BetaCompactionBlock

    # The block as the SDK parses it from a reply, dumped the way a caller stores it.
    assert BetaCompactionBlock.model_validate(BLOCK).model_dump(exclude_none=True) == BLOCK
    result = _compile([*OLD, BOUNDARY, *AFTER])
    request = anthropic_request(result, max_tokens=64)
    edits = [{"type": "compact_20260112"}]
    with anthropic.Anthropic(base_url=stub.base_url, api_key="t", max_retries=0) as client:
        assert request["model"] == "claude-opus-5-5"  # named from the capability map
        reply = client.beta.messages.create(
            betas=["compact-2026-01-12"],
            context_management={"edits": edits},
            **request,
        )
    assert reply.content[0].type == "text" and reply.content[0].text == REPLY_TEXT
    assert stub.errors() == []
    (body,) = stub.bodies("/v1/messages")
    assert json.dumps(body["messages"][0]["content"][0]) == json.dumps(BLOCK)
    assert body["context_management"] == {"edits": edits}
