"""Typed errors: class, ``field`` and a message that says what to fix; failures lose nothing."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace
from typing import Any

import pytest

from membrane import (
    ContextCompiler,
    EmbedderUnavailable,
    InvalidInputError,
    MembraneError,
    MemoryCollisionError,
    MemoryItem,
    PreFlightContextFirewall,
    StoreUnavailable,
    TokenizerDataError,
    ToolPairingError,
    glaciate,
)
from membrane.errors import __all__ as error_names


def _call(call_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "stock", "arguments": "{}"}}
        ],
    }


def _tool_use(use_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": use_id, "name": "stock", "input": {"sku": "A1"}}],
    }


def _tool_result(use_id: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": use_id, "content": "3 in stock"}],
    }


# ---------------------------------------------------------------- the tree


def test_error_tree() -> None:
    assert issubclass(InvalidInputError, MembraneError)
    assert issubclass(InvalidInputError, ValueError)
    assert issubclass(ToolPairingError, InvalidInputError)
    for cls in (
        TokenizerDataError,
        EmbedderUnavailable,
        StoreUnavailable,
        MemoryCollisionError,
    ):
        assert issubclass(cls, MembraneError)
        assert not issubclass(cls, InvalidInputError)
    assert sorted(error_names) == sorted(
        [
            "EmbedderUnavailable",
            "InvalidInputError",
            "MembraneError",
            "MemoryCollisionError",
            "StoreUnavailable",
            "TokenizerDataError",
            "ToolPairingError",
        ]
    )


def test_errors_carry_their_context() -> None:
    err = ToolPairingError("no call", field="conversation_messages[2]", tool_call_id="c9")
    assert (err.field, err.tool_call_id, str(err)) == ("conversation_messages[2]", "c9", "no call")
    assert TokenizerDataError("bad", encoding="o200k_base").encoding == "o200k_base"
    assert StoreUnavailable("down", store="redis").store == "redis"
    assert InvalidInputError("x").field is None


# ---------------------------------------------------------------- constructor arguments


@pytest.mark.parametrize("budget", [0, -5, 10.5, "100", True, None, math.inf])
def test_bad_budget(budget: object) -> None:
    with pytest.raises(InvalidInputError, match="max_tokens must be a positive integer") as exc:
        ContextCompiler(budget)  # type: ignore[arg-type]
    assert exc.value.field == "max_tokens"
    assert repr(budget) in str(exc.value)


def test_unknown_placement() -> None:
    with pytest.raises(InvalidInputError, match="'end' or 'system'") as exc:
        ContextCompiler(1000, memory_placement="middle")  # type: ignore[arg-type]
    assert exc.value.field == "memory_placement"


@pytest.mark.parametrize("share", [0, 0.0, -0.5, 1.5, "half", True, math.nan])
def test_bad_history_share(share: object) -> None:
    with pytest.raises(InvalidInputError, match="history_share must be a number") as exc:
        ContextCompiler(1000, history_share=share)  # type: ignore[arg-type]
    assert exc.value.field == "history_share"


def test_history_share_of_one_is_allowed_and_index_share_may_be_zero() -> None:
    assert ContextCompiler(1000, history_share=1.0, index_share=0.0).history_share == 1.0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"index_share": -0.1}, "index_share"),
        ({"index_share": 2}, "index_share"),
        ({"message_overhead_tokens": -1}, "message_overhead_tokens"),
        ({"message_overhead_tokens": 1.5}, "message_overhead_tokens"),
        ({"keyframe_tokens": 2.5}, "keyframe_tokens"),
        ({"token_scale": 0}, "token_scale"),
        ({"token_scale": -1.2}, "token_scale"),
        ({"token_scale": math.inf}, "token_scale"),
        ({"token_scale": "1.5"}, "token_scale"),
    ],
)
def test_other_bad_options(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInputError, match=field) as exc:
        ContextCompiler(1000, **kwargs)
    assert exc.value.field == field


@pytest.mark.parametrize("bad", [0, -1, 2.5, "10"])
def test_firewall_budget(bad: object) -> None:
    with pytest.raises(InvalidInputError, match="positive integer") as exc:
        PreFlightContextFirewall(max_tokens=bad)  # type: ignore[arg-type]
    assert exc.value.field == "max_tokens"


def test_firewall_rejects_a_bool_budget_like_the_compiler() -> None:
    with pytest.raises(InvalidInputError, match="positive integer") as exc:
        PreFlightContextFirewall(max_tokens=True)
    assert exc.value.field == "max_tokens"


def test_glaciate_arguments() -> None:
    with pytest.raises(InvalidInputError) as g:
        glaciate("Rules.\n", max_cacheable_tokens=-1)
    assert g.value.field == "max_cacheable_tokens"
    with pytest.raises(TypeError, match="string"):
        glaciate(b"Rules.")  # type: ignore[arg-type]


# ---------------------------------------------------------------- compile arguments

COMPILER = ContextCompiler(2000, core_content="You run a bakery's order desk.")


@pytest.mark.parametrize(
    ("history", "field", "hint"),
    [
        ("hello", "conversation_messages", "must be a list of message dicts"),
        ({"role": "user", "content": "x"}, "conversation_messages", "must be a list"),
        (["hello"], "conversation_messages[0]", "must be a dict with 'role' and 'content'"),
        (
            [{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}],
            "conversation_messages[1]",
            "expected one of",
        ),
        ([{"content": "no role"}], "conversation_messages[0]", "has role None"),
        ([{"role": "user", "content": 42}], "conversation_messages[0]", "must be a string, a list"),
        ([{"role": "user"}], "conversation_messages[0]", "content is missing"),
    ],
)
def test_malformed_messages(history: object, field: str, hint: str) -> None:
    with pytest.raises(InvalidInputError, match=hint) as exc:
        COMPILER.compile([], "Two loaves?", conversation_messages=history)  # type: ignore[arg-type]
    assert exc.value.field == field
    assert not isinstance(exc.value, ToolPairingError)


def test_an_assistant_tool_call_message_may_have_no_content() -> None:
    history = [_call("c1"), {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
    result = COMPILER.compile([], "Thanks", conversation_messages=history)
    assert result.messages[1:3] == history


@pytest.mark.parametrize(
    ("memories", "field", "hint"),
    [
        ("just text", "memories", "must be a list of MemoryItem"),
        (["just text"], "memories[0]", "wrap plain text in MemoryItem"),
        (
            [
                MemoryItem(id="ok", content="Fine."),
                SimpleNamespace(content="x", memory_kind="semantic"),
            ],
            "memories[1]",
            "needs an `id`",
        ),
        ([SimpleNamespace(id="k", content="no kind")], "memories[0]", "memory_kind"),
        ([SimpleNamespace(id="", content="x", memory_kind="semantic")], "memories[0]", "no id"),
        ([SimpleNamespace(id=None, content="x", memory_kind="semantic")], "memories[0]", "no id"),
        ([SimpleNamespace(id="k", memory_kind="semantic")], "memories[0]", "no text to show"),
        (
            [SimpleNamespace(id="k", content=7, memory_kind="semantic")],
            "memories[0]",
            "`content` must be a string, got int",
        ),
    ],
)
def test_malformed_memories(memories: object, field: str, hint: str) -> None:
    with pytest.raises(InvalidInputError, match=hint) as exc:
        COMPILER.compile(memories, "Two loaves?")  # type: ignore[arg-type]
    assert exc.value.field == field


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"id": "", "content": "x"}, "id"),
        ({"id": 5, "content": "x"}, "id"),
        ({"id": "a", "content": None}, "content"),
        ({"id": "a", "content": "x", "memory_type": "fact"}, "memory_type"),
        ({"id": "a", "content": "x", "priority": 0}, "priority"),
        ({"id": "a", "content": "x", "priority": 4}, "priority"),
        ({"id": "a", "content": "x", "confidence": 1.5}, "confidence"),
        ({"id": "a", "content": "x", "confidence": math.nan}, "confidence"),
    ],
)
def test_bad_memory_items(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInputError) as exc:
        MemoryItem(**kwargs)
    assert exc.value.field == field
    assert f"MemoryItem.{field}" in str(exc.value)


def test_bad_user_message() -> None:
    for bad in (None, 5, ["hi"]):
        with pytest.raises(InvalidInputError, match="user_message must be a string") as exc:
            COMPILER.compile([], bad)  # type: ignore[arg-type]
        assert exc.value.field == "user_message"


@pytest.mark.parametrize(
    ("extras", "field"),
    [
        (["loose text"], "middle_extras[0]"),
        ([("ok", 2), ("bad tier", 4)], "middle_extras[1]"),
        ([("ok", 2, "extra")], "middle_extras[0]"),
        ([(5, 2)], "middle_extras[0]"),
        ([("bool tier", True)], "middle_extras[0]"),
        (5, "middle_extras"),
    ],
)
def test_bad_middle_extras(extras: object, field: str) -> None:
    with pytest.raises(InvalidInputError, match=r"\(text, tier\)") as exc:
        COMPILER.compile([], "Hi", middle_extras=extras)  # type: ignore[arg-type]
    assert exc.value.field == field


def test_bad_tier_override() -> None:
    memory = MemoryItem(id="m", content="Sourdough needs 24 hours.")
    with pytest.raises(InvalidInputError, match="tiers are 1, 2 or 3") as exc:
        COMPILER.compile([memory], "Hi", tier_by_memory_id={id(memory): 7})
    assert exc.value.field == "tier_by_memory_id"


def test_compressor_must_return_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_PREFLIGHT_TOKEN_THRESHOLD", "1")
    memory = MemoryItem(id="m", content="Rye bread is baked on Fridays.")
    with pytest.raises(InvalidInputError, match="must return a string"):
        COMPILER.compile([memory], "Hi", compress_sync=lambda raw, target, q: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="compress_sync must be a function"):
        COMPILER.compile([memory], "Hi", compress_sync="summarise")  # type: ignore[arg-type]


# ---------------------------------------------------------------- tool pairing


@pytest.mark.parametrize(
    ("history", "field", "call_id", "hint"),
    [
        (
            [
                {"role": "user", "content": "a"},
                {"role": "tool", "tool_call_id": "c1", "content": "r"},
            ],
            "conversation_messages[1]",
            "c1",
            "include the call or drop the result",
        ),
        (
            [_tool_result("toolu_1")],
            "conversation_messages[0]",
            "toolu_1",
            "include the call or drop the result",
        ),
        (
            [{"role": "user", "content": "a"}, _call("c2"), {"role": "user", "content": "b"}],
            "conversation_messages[1]",
            "c2",
            "add the result or drop the call",
        ),
        (
            [_tool_use("toolu_2")],
            "conversation_messages[0]",
            "toolu_2",
            "add the result or drop the call",
        ),
        (
            [
                _call("c3"),
                {"role": "tool", "tool_call_id": "c3", "content": "r"},
                {"role": "tool", "tool_call_id": "c3", "content": "again"},
            ],
            "conversation_messages[2]",
            "c3",
            "include the call or drop the result",
        ),
        (
            [_call("c4"), {"role": "tool", "tool_call_id": "other", "content": "r"}],
            "conversation_messages[1]",
            "other",
            "did not make",
        ),
    ],
)
def test_tool_pairing(history: list[dict[str, Any]], field: str, call_id: str, hint: str) -> None:
    with pytest.raises(ToolPairingError, match=hint) as exc:
        COMPILER.compile([], "Hi", conversation_messages=history)
    assert exc.value.field == field
    assert exc.value.tool_call_id == call_id
    assert isinstance(exc.value, InvalidInputError)


def test_price_must_be_a_finite_non_negative_number() -> None:
    for bad in (-0.01, math.nan, math.inf, "0.1", True):
        with pytest.raises(InvalidInputError) as exc:
            COMPILER.estimate([], "Hi", price_per_1k_input_tokens=bad)  # type: ignore[arg-type]
        assert exc.value.field == "price_per_1k_input_tokens"


def test_observe_needs_an_integer_count() -> None:
    result = COMPILER.compile([], "Hi")
    for bad in (1.5, "100", None, True):
        with pytest.raises(TypeError, match="actual_prompt_tokens must be an int"):
            COMPILER.observe(result, bad)  # type: ignore[arg-type]


# ---------------------------------------------------------------- a failure loses nothing


def _turns(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        out.append({"role": "user", "content": f"Order {i}: " + "croissant baguette " * 25})
        out.append({"role": "assistant", "content": f"Confirmed order {i}. " + "flour " * 25})
    return out


@pytest.mark.parametrize(
    "break_it",
    [
        lambda c, h: c.compile(
            [],
            "Q",
            conversation_messages=[*h, {"role": "tool", "tool_call_id": "x", "content": "r"}],
        ),
        lambda c, h: c.compile([], "Q", conversation_messages=[*h, _tool_use("t9")]),
        lambda c, h: c.compile([], "Q", conversation_messages=[*h, "oops"]),
        lambda c, h: c.compile(["oops"], "Q", conversation_messages=h),
        lambda c, h: c.compile([], "Q", conversation_messages=h, middle_extras=[("x", 9)]),
        lambda c, h: c.compile([], None, conversation_messages=h),
        lambda c, h: c.observe(c.compile([], "Q", conversation_messages=h), 2.5),
    ],
)
def test_a_failed_compile_leaves_the_compiler_as_it_was(break_it: Any) -> None:
    memories = [MemoryItem(id=f"m{i}", content=f"Customer {i} likes rye.") for i in range(5)]
    used = ContextCompiler(1200, model_id="anthropic/claude-opus-5-5", core_content="Bakery.")
    control = ContextCompiler(1200, model_id="anthropic/claude-opus-5-5", core_content="Bakery.")
    for turns in (4, 8):
        history = _turns(turns)
        used.compile(memories, "Q", conversation_messages=history)
        control.compile(memories, "Q", conversation_messages=history)
    history = _turns(12)
    with pytest.raises((InvalidInputError, TypeError)):
        break_it(used, history)
    after = used.compile(memories, "What did I order?", conversation_messages=history)
    expected = control.compile(memories, "What did I order?", conversation_messages=history)
    assert after.metadata["history_messages_dropped"] > 0
    assert json.dumps(after.messages) == json.dumps(expected.messages)
    assert after.metadata == expected.metadata
    assert after.ref_map == expected.ref_map
