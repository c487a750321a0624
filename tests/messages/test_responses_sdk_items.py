"""Every kind of Responses item the openai SDK defines, as history: read, counted, sent back.

The items are built from ``openai.types.responses`` models and dumped the way the Agents SDK
dumps them (``model_dump(exclude_unset=True)``); each is checked against the SDK's own
``ResponseInputItemParam`` before Membrane reads it.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest
from openai.types.responses import (
    ResponseCodeInterpreterToolCall,
    ResponseCompactionItem,
    ResponseComputerToolCall,
    ResponseCustomToolCall,
    ResponseFileSearchToolCall,
    ResponseFunctionToolCall,
    ResponseFunctionWebSearch,
    ResponseInputItemParam,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)
from openai.types.responses.response_output_item import (
    ImageGenerationCall,
    LocalShellCall,
    LocalShellCallAction,
    McpApprovalRequest,
    McpCall,
    McpListTools,
)
from pydantic import BaseModel, TypeAdapter

from membrane import ContextCompiler, openai_responses_request
from membrane.messages import ITEMS_KEY, read_history
from tests.image_samples import png

_INPUT_ITEM: TypeAdapter[Any] = TypeAdapter(ResponseInputItemParam)
SCREENSHOT = "data:image/png;base64," + base64.b64encode(png(1280, 800, b"\0" * 3000)).decode()
GENERATED = base64.b64encode(png(1024, 1024, b"\1" * 60_000)).decode()


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(exclude_unset=True)


def _answer(item_id: str, text: str) -> dict[str, Any]:
    part = ResponseOutputText(type="output_text", text=text, annotations=[])
    return _dump(
        ResponseOutputMessage(
            id=item_id, type="message", role="assistant", status="completed", content=[part]
        )
    )


def _reasoning(item_id: str) -> dict[str, Any]:
    return _dump(
        ResponseReasoningItem(
            id=item_id, type="reasoning", summary=[], encrypted_content="gAAAAB" + "x7Q" * 40
        )
    )


def _turn_items() -> list[dict[str, Any]]:
    """One of each item kind, in an order an agent could have produced them."""
    return [
        {"role": "user", "content": "Check the build, search the web and draw the logo."},
        _reasoning("rs_1"),
        _dump(
            ResponseFunctionToolCall(
                id="fc_1",
                call_id="call_build",
                type="function_call",
                name="build_status",
                arguments='{"branch": "main"}',
                status="completed",
            )
        ),
        {"type": "function_call_output", "call_id": "call_build", "output": "green"},
        _dump(
            ResponseFunctionWebSearch.model_validate(
                {
                    "id": "ws_1",
                    "type": "web_search_call",
                    "status": "completed",
                    "action": {"type": "search", "query": "release notes"},
                }
            )
        ),
        _dump(
            ResponseFileSearchToolCall(
                id="fs_1", type="file_search_call", status="completed", queries=["changelog"]
            )
        ),
        _dump(
            ResponseCodeInterpreterToolCall(
                id="ci_1",
                type="code_interpreter_call",
                status="completed",
                code="print(2 + 2)",
                container_id="cntr_1",
                outputs=[{"type": "logs", "logs": "4"}],  # type: ignore[list-item]
            )
        ),
        _dump(
            ImageGenerationCall(
                id="ig_1", type="image_generation_call", status="completed", result=GENERATED
            )
        ),
        _dump(McpListTools(id="ml_1", type="mcp_list_tools", server_label="docs", tools=[])),
        _dump(
            McpApprovalRequest(
                id="mr_1",
                type="mcp_approval_request",
                server_label="docs",
                name="fetch",
                arguments="{}",
            )
        ),
        {"type": "mcp_approval_response", "approval_request_id": "mr_1", "approve": True},
        _dump(
            McpCall(
                id="mc_1",
                type="mcp_call",
                server_label="docs",
                name="fetch",
                arguments="{}",
                output="two pages",
            )
        ),
        _answer("msg_1", "The build is green; here is the logo."),
        {"role": "user", "content": "Now click the deploy button and list the files."},
        _reasoning("rs_2"),
        _dump(
            ResponseComputerToolCall.model_validate(
                {
                    "id": "cu_1",
                    "call_id": "call_click",
                    "type": "computer_call",
                    "status": "completed",
                    "pending_safety_checks": [],
                    "action": {"type": "click", "button": "left", "x": 10, "y": 20},
                }
            )
        ),
        {
            "type": "computer_call_output",
            "call_id": "call_click",
            "output": {"type": "computer_screenshot", "image_url": SCREENSHOT},
        },
        _dump(
            LocalShellCall(
                id="ls_1",
                call_id="call_ls",
                type="local_shell_call",
                status="completed",
                action=LocalShellCallAction(type="exec", command=["ls"], env={}),
            )
        ),
        # The API names the call of a local shell output by ``id`` (the Agents SDK by call_id).
        {"type": "local_shell_call_output", "id": "call_ls", "output": '{"stdout": "a b"}'},
        _dump(
            ResponseCustomToolCall(
                id="ct_1", call_id="call_patch", type="custom_tool_call", name="patch", input="+x"
            )
        ),
        {"type": "custom_tool_call_output", "call_id": "call_patch", "output": "applied"},
        {"id": "msg_0"},  # an item reference, its optional type left out
        _answer("msg_2", "Deployed; the files are a and b."),
    ]


ITEMS = _turn_items()


@pytest.mark.parametrize("index", range(len(ITEMS)))
def test_the_fixture_items_are_valid_responses_input(index: int) -> None:
    _INPUT_ITEM.validate_python(ITEMS[index])


def test_every_item_goes_back_unchanged_when_nothing_is_cut() -> None:
    given = copy.deepcopy(ITEMS)
    compiler = ContextCompiler(40_000, model_id="openai/gpt-5.1", core_content="Be brief.")
    result = compiler.compile([], "Anything else?", conversation_messages=given)
    assert result.metadata["history_messages_dropped"] == 0
    sent = openai_responses_request(result)["input"]
    assert json.dumps(sent[1:-1]) == json.dumps(ITEMS)  # byte for byte, key order included
    assert given == ITEMS


def test_calls_pair_with_their_outputs_and_opaque_items_join_what_follows() -> None:
    read = read_history(ITEMS)
    messages = read.messages
    assert isinstance(messages, list)
    calls = {c["id"]: m for m in messages for c in m.get("tool_calls") or ()}
    results = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    assert set(calls) == results == {"call_build", "call_click", "call_ls", "call_patch"}
    # Each reasoning item rides in the message of the call it led to.
    assert calls["call_build"][ITEMS_KEY][0]["id"] == "rs_1"
    assert calls["call_click"][ITEMS_KEY][0]["id"] == "rs_2"
    # The hosted-tool items ride with the answer they led to, in order.
    answer = next(m for m in messages if m.get(ITEMS_KEY, [{}])[-1].get("id") == "msg_1")
    kinds = [i.get("type") for i in answer[ITEMS_KEY]]
    assert kinds[:-1] == [
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "mcp_call",
    ]
    reference = next(m for m in messages if m.get(ITEMS_KEY, [{}])[-1].get("id") == "msg_2")
    assert reference[ITEMS_KEY][0] == {"id": "msg_0"}


def _tokens(items: list[dict[str, Any]], conversation: str) -> int:
    compiler = ContextCompiler(200_000, model_id="openai/gpt-5.1")
    result = compiler.compile([], "Q", conversation_messages=items, conversation_id=conversation)
    return int(result.metadata["token_count"])


def test_pictures_count_as_images_not_as_base64_text() -> None:
    without = [i for i in ITEMS if i.get("type") != "image_generation_call"]
    added = _tokens(ITEMS, "with") - _tokens(without, "without")
    # A 1024 x 1024 image costs OpenAI 765 tokens; its ~80,000 base64 characters would
    # tokenize to tens of thousands. The item's other fields add a few dozen.
    assert 765 <= added <= 765 + 60
    screenshot_message = next(
        m
        for m in read_history(ITEMS).messages  # type: ignore[union-attr]
        if m.get("tool_call_id") == "call_click"
    )
    image = {"type": "image_url", "image_url": {"url": SCREENSHOT}}
    assert screenshot_message["content"] == [image]


def test_a_local_shell_output_named_by_id_stays_with_its_call_under_a_cut() -> None:
    start = next(i for i, item in enumerate(ITEMS) if item.get("type") == "local_shell_call")
    history: list[dict[str, Any]] = []
    for turn in range(25):
        history.append({"role": "user", "content": f"Turn {turn}: list the files again."})
        for item in copy.deepcopy(ITEMS[start : start + 2]):
            item["id" if item["type"] == "local_shell_call_output" else "call_id"] = f"c{turn}"
            history.append(item)
        history.append(_answer(f"msg_{turn}", "a " * 200))
    compiler = ContextCompiler(1200, model_id="openai/gpt-5.1")
    result = compiler.compile([], "And now?", conversation_messages=history)
    assert result.metadata["history_messages_dropped"] > 0
    sent = openai_responses_request(result)["input"][1:-1]
    assert sent == history[len(history) - len(sent) :]
    calls = [i["call_id"] for i in sent if i.get("type") == "local_shell_call"]
    outputs = [i["id"] for i in sent if i.get("type") == "local_shell_call_output"]
    assert calls == outputs and calls


def test_a_history_opening_with_a_compaction_item_starts_there() -> None:
    compaction = _dump(
        ResponseCompactionItem(id="cmp_1", type="compaction", encrypted_content="gAAAAB" + "k" * 80)
    )
    before = [{"role": "user", "content": "An old question nobody needs."}, _answer("m0", "Old.")]
    history = [*before, compaction, *ITEMS]
    compiler = ContextCompiler(40_000, model_id="openai/gpt-5.1")
    result = compiler.compile([], "Q", conversation_messages=history)
    assert result.metadata["compaction_boundary"] == len(before)
    sent = openai_responses_request(result)["input"][1:-1]
    assert sent == [compaction, *ITEMS]


def test_a_continued_turn_sends_the_items_back_around_its_question_message() -> None:
    question = next(i for i, item in enumerate(ITEMS) if i and item.get("role") == "user")
    history = ITEMS[: question + 6]  # the question, its reasoning, two calls and outputs
    compiler = ContextCompiler(40_000, model_id="openai/gpt-5.1", core_content="Be brief.")
    result = compiler.compile([], conversation_messages=history, continue_turn=True)
    sent = openai_responses_request(result)["input"]
    assert sent[0]["role"] == "system"
    assert json.dumps(sent[1 : question + 1]) == json.dumps(history[:question])
    assert sent[question + 1]["content"].endswith(history[question]["content"])
    assert json.dumps(sent[question + 2 :]) == json.dumps(history[question + 1 :])


def test_a_compaction_item_just_before_the_question_is_kept() -> None:
    compaction = _dump(
        ResponseCompactionItem(id="cmp_2", type="compaction", encrypted_content="gAAAAB" + "z" * 80)
    )
    history = [{"role": "user", "content": "Old."}, compaction, *ITEMS[:4]]
    compiler = ContextCompiler(40_000, model_id="openai/gpt-5.1")
    result = compiler.compile([], conversation_messages=history, continue_turn=True)
    assert result.metadata["compaction_boundary"] == 1
    sent = openai_responses_request(result)["input"]
    assert sent[1] == compaction
    assert sent[2]["role"] == "user" and sent[2]["content"].endswith(ITEMS[0]["content"])
    assert sent[3:] == ITEMS[1:4]
