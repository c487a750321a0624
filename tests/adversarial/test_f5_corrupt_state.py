"""Corrupt values in the state store (issue 11, point 6; reproducer f5_corrupt_state.py).

Every value a compile reads from a store is planted here as raw text, the way a Redis key holds
it: not JSON, JSON of the wrong shape, a scale out of range or not a number, a conversation state
whose fields are anything at all. Whatever the store holds, a compile returns (no internal
error), its counted tokens times its scale stay within ``max_tokens``, and a value it discarded
is named in ``metadata["state_discarded"]`` with a :class:`StateStoreWarning`; the messages are
then exactly those of a compile that found the store empty.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from membrane import CompileResult, ContextCompiler
from membrane.state import STATE_FORMAT_VERSION, StateStoreWarning
from membrane.state.keys import conversation_key, scale_key
from membrane.state.protocol import decode_state, encode_state
from membrane.tokenizers import load_encoding
from tests.redis_process import RedisProcess

MAX_TOKENS = 1200
SCALE_KEY = scale_key(None)
CONVERSATION = "c1"
CONVERSATION_KEY = conversation_key(CONVERSATION)
V = STATE_FORMAT_VERSION
HISTORY = [
    {
        "role": "user" if i % 2 == 0 else "assistant",
        "content": f"message {i} about the cobalt invoice " + "word " * 30,
    }
    for i in range(80)
]
REPRODUCER_VALUES = [
    "garbage",
    "{}",
    '{"scale": 0}',
    '{"scale": "nan"}',
    "[1]",
    '{"scale": 0.01}',
    '{"scale": -1}',
]


class RawStore:
    """A state store that keeps raw text per key, as Redis does, so a test can plant any bytes."""

    def __init__(self, raw: dict[str, str | bytes] | None = None) -> None:
        self.raw: dict[str, str | bytes] = dict(raw or {})

    def get(self, key: str) -> dict[str, Any] | None:
        raw = self.raw.get(key)
        return None if raw is None else decode_state(raw)

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.raw[key] = encode_state(value)


# -- what a store may hold --------------------------------------------------------------------

_ANY_NUMBER = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 0.5, 0.49999, 3.0, 3.0001, 1e-300, 2**53, -0.0]),
)
_JSON = st.recursive(
    st.none() | st.booleans() | _ANY_NUMBER | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
_FIELD = st.one_of(_ANY_NUMBER, _JSON)


def _dumps(value: object) -> str:
    return json.dumps(value)  # NaN and Infinity are written as JSON's non-standard literals


@st.composite
def _calibration_like(draw: st.DrawFn) -> str:
    value: dict[str, Any] = {}
    for name in ("scale", "samples", "mean", "variance"):
        if draw(st.booleans()):
            value[name] = draw(_FIELD)
    return _dumps(value)


@st.composite
def _conversation_like(draw: st.DrawFn) -> str:
    value: dict[str, Any] = {}
    if draw(st.integers(0, 5)):  # mostly this Membrane's version, sometimes another or junk
        value["version"] = draw(st.one_of(st.just(V), st.just(V), st.integers(-1, V + 2), _FIELD))
    for name in ("share", "events", "room"):
        if draw(st.booleans()):
            value[name] = draw(st.one_of(st.integers(-5, 10**7), _FIELD))
    if draw(st.integers(0, 3)) == 0:
        value["tools"] = draw(st.one_of(st.text(max_size=8), _FIELD))
    return _dumps(value)


def raw_values(shaped: st.SearchStrategy[str]) -> st.SearchStrategy[str | bytes]:
    """Raw text a key may hold: ``shaped`` objects, other JSON, non-JSON, bytes, deep nesting."""
    return st.one_of(
        shaped,
        shaped,
        _JSON.map(_dumps),
        st.text(max_size=30),
        st.binary(max_size=30),
        st.integers(1, 200_000).map(lambda depth: "[" * depth),
        st.sampled_from(REPRODUCER_VALUES),
    )


# -- the oracle (written from the contract, not from the implementation) ----------------------


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite(value: object) -> bool:
    if not _number(value):
        return False
    try:
        return math.isfinite(float(value))  # type: ignore[arg-type]
    except OverflowError:
        return False


def good_calibration(raw: str | bytes) -> dict[str, Any] | None:
    """The stored calibration if the contract says a compile must use it, else None."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or not _finite(value.get("scale")):
        return None
    if not 0.5 <= float(value["scale"]) <= 3.0:
        return None
    samples = value.get("samples", 0)
    if not _number(samples) or not isinstance(samples, int) or samples < 0:
        return None
    if not all(_finite(value.get(name, 0.0)) for name in ("mean", "variance")):
        return None
    if float(value.get("variance", 0.0)) < 0:
        return None
    return value


def _count(value: object) -> bool:
    return _number(value) and isinstance(value, int) and 0 <= value < 2**53


def badly_typed_conversation(raw: str | bytes) -> bool:
    """True when the value cannot be a conversation's state whatever the budget.

    A value of another format version (another deploy's) is not bad: it is absent to us, and
    flagged as replaced (see :func:`other_version`).
    """
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return True
    if not isinstance(value, dict) or not _count(value.get("version")):
        return True
    if value["version"] != V:
        return False
    if not all(_count(value.get(name, 0)) for name in ("share", "events", "room")):
        return True
    if not isinstance(value.get("tools", ""), str):
        return True
    return not isinstance(value.get("tracker", {}), dict)


def other_version(raw: str | bytes) -> bool:
    """True when the value is a JSON object of a format version other than this Membrane's."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and _count(value.get("version")) and value["version"] != V


# -- helpers ----------------------------------------------------------------------------------


def sent_tokens(result: CompileResult) -> int:
    """Tokens of the emitted messages, counted here with the bundled cl100k encoding."""
    encoding = load_encoding("cl100k_base")
    overhead = result.metadata["message_framing_tokens"] // len(result.messages)
    return sum(len(encoding.encode_ordinary(m["content"])) + overhead for m in result.messages)


def compile_with(store: Any) -> tuple[CompileResult, list[warnings.WarningMessage]]:
    compiler = ContextCompiler(MAX_TOKENS, state_store=store)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = compiler.compile(
            [], "which invoice?", conversation_messages=HISTORY, conversation_id=CONVERSATION
        )
    return result, [w for w in caught if issubclass(w.category, StateStoreWarning)]


def assert_budget_holds(result: CompileResult) -> None:
    scale = result.metadata["token_scale"]
    assert 0.5 <= scale <= 3.0
    sent = sent_tokens(result)
    assert sent == result.metadata["token_count"] + result.metadata["message_framing_tokens"]
    assert sent * scale <= MAX_TOKENS
    assert result.metadata["budget_exceeded"] is False


def clean_compile() -> CompileResult:
    return compile_with(RawStore())[0]


CLEAN = clean_compile()


# -- the properties ---------------------------------------------------------------------------


@given(raw_values(_calibration_like()))
@example('{"scale": 0.01}')  # lifted the budget: 3,041 tokens for max_tokens=700
@example('{"scale": 2.5, "samples": 4, "mean": 2.4, "variance": 0.01}')
def test_a_corrupt_scale_never_raises_and_never_lifts_the_budget(raw: str | bytes) -> None:
    result, warned = compile_with(RawStore({SCALE_KEY: raw}))
    assert_budget_holds(result)
    good = good_calibration(raw)
    discarded = result.metadata.get("state_discarded", [])
    if good is None:
        assert "scale" in discarded
        assert any("scale" in str(w.message) for w in warned)
        assert result.metadata["token_scale"] == 1.0
        assert result.messages == CLEAN.messages
    else:
        assert "scale" not in discarded
        assert result.metadata["token_scale"] == float(good["scale"])


@given(raw_values(_conversation_like()))
@example(f'{{"version": {V}, "room": 100000000, "share": 1, "events": 1}}')
@example(f'{{"version": {V}, "room": -3}}')
@example(f'{{"version": {V}, "share": 5}}')  # a share without a room (no index yet) is fine
@example(f'{{"version": {V}, "share": 5, "tracker": [1]}}')
@example(f'{{"version": {V + 1}, "room": -3}}')  # a newer deploy's: absent, flagged, replaced
@example('{"room": 5}')  # no version
def test_a_corrupt_conversation_state_never_raises_and_never_lifts_the_budget(
    raw: str | bytes,
) -> None:
    store = RawStore({CONVERSATION_KEY: raw})
    result, warned = compile_with(store)
    assert_budget_holds(result)
    discarded = result.metadata.get("state_discarded", [])
    if badly_typed_conversation(raw):
        assert discarded == ["conversation"]
        assert warned
    if other_version(raw):  # another deploy's: read as absent, flagged, replaced (point 4)
        assert discarded == ["conversation"]
        assert warned
        assert result.messages == CLEAN.messages
    if discarded:
        # Rebuilt from the messages: what a compile that found nothing would send, and what it
        # would store.
        assert result.messages == CLEAN.messages
        rebuilt = store.get(CONVERSATION_KEY)
        assert rebuilt is not None
        assert set(rebuilt) == {"version", "share", "events", "room", "tracker"}


@given(raw_values(_calibration_like()), raw_values(_conversation_like()))
def test_both_corrupt_at_once(scale_raw: str | bytes, conversation_raw: str | bytes) -> None:
    result, _ = compile_with(RawStore({SCALE_KEY: scale_raw, CONVERSATION_KEY: conversation_raw}))
    assert_budget_holds(result)


@pytest.mark.parametrize("raw", REPRODUCER_VALUES)
def test_the_reproducer_values(raw: str) -> None:
    result, warned = compile_with(RawStore({SCALE_KEY: raw}))
    assert_budget_holds(result)
    assert result.metadata["state_discarded"] == ["scale"]
    assert len(warned) == 1
    assert result.messages == CLEAN.messages


def test_observe_replaces_a_corrupt_scale_with_a_valid_one() -> None:
    store = RawStore({SCALE_KEY: '{"scale": 0.01}'})
    compiler = ContextCompiler(MAX_TOKENS, state_store=store)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        result = compiler.compile([], "which invoice?", conversation_messages=HISTORY)
        scale = compiler.observe(result, result.metadata["token_count"] * 2)
    assert 0.5 <= scale <= 3.0
    assert json.loads(store.raw[SCALE_KEY])["scale"] == scale


def test_token_scale_for_ignores_a_corrupt_scale() -> None:
    compiler = ContextCompiler(MAX_TOKENS, state_store=RawStore({SCALE_KEY: '{"scale": 40}'}))
    with pytest.warns(StateStoreWarning, match="scale 40"):
        assert compiler.token_scale_for() == 1.0


# -- ref maps read back from Redis --------------------------------------------------------------


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisProcess]:
    with RedisProcess() as server:
        yield server


@given(raw_values(_calibration_like()), raw_values(_conversation_like()))
def test_the_same_through_a_real_redis(
    redis_server: RedisProcess, scale_raw: str | bytes, conversation_raw: str | bytes
) -> None:
    """The bytes sit in Redis and are read back by RedisStateStore, as in a fleet."""
    from membrane.state import RedisStateStore
    from membrane.state.redis import bounded_client

    client = bounded_client(redis_server.url, deadline_seconds=5.0)
    client.flushdb()
    client.set("membrane:state:" + SCALE_KEY, scale_raw)
    client.set("membrane:state:" + CONVERSATION_KEY, conversation_raw)
    store = RedisStateStore(client, deadline_seconds=5.0, outage_policy="raise")
    result, _ = compile_with(store)
    assert_budget_holds(result)
    if good_calibration(scale_raw) is None:
        assert "scale" in result.metadata["state_discarded"]
    if badly_typed_conversation(conversation_raw):
        assert "conversation" in result.metadata["state_discarded"]
    client.close()


@given(
    st.one_of(
        _JSON.map(_dumps),
        st.dictionaries(st.text(max_size=6), _JSON, max_size=4).map(_dumps),
        st.dictionaries(st.integers(-3, 2**40).map(str), _JSON, max_size=4).map(_dumps),
        st.text(max_size=20),
        st.binary(max_size=20),
        st.sampled_from(['{"1": "doc-1", "2": "doc-2"}', '{"1": 5}', '{"x": "a"}', "[]"]),
    )
)
def test_a_corrupt_ref_map_is_discarded_not_raised(
    redis_server: RedisProcess, raw: str | bytes
) -> None:
    from membrane.state.redis import bounded_client, get_ref_map_for_conversation

    client = bounded_client(redis_server.url, deadline_seconds=5.0)
    client.set("membrane:ref_map:{conv}", raw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = get_ref_map_for_conversation("conv", client=client, deadline_seconds=5.0)
    assert all(isinstance(k, int) and k >= 0 and isinstance(v, str) for k, v in got.items())
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        value = None
    well_formed = isinstance(value, dict) and all(
        k.isascii() and k.isdigit() and isinstance(v, str) for k, v in value.items()
    )
    if well_formed:
        assert got == {int(k): v for k, v in value.items()}
        assert not caught
    else:
        assert got == {}
        assert [w.category for w in caught] == [StateStoreWarning]
    client.close()
