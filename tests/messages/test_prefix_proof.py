"""The history proof keeps the last partial chunk's bytes and the whole chunks' marks: an edit
anywhere is still caught, with marks and with SHA-256 alone (no hash randomization)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from membrane.messages import _digest, check_history, prefix_digest


@pytest.fixture(autouse=True, params=[True, False], ids=["marks", "sha256"])
def _marks(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_digest, "_MARKS", request.param)


def _chat(n: int, size: int) -> list[dict[str, Any]]:
    roles = ("user", "assistant")
    return [{"role": roles[i % 2], "content": f"m{i} " + "x" * size} for i in range(n)]


# Short messages keep the partial chunk's bytes; long ones keep only the prefix's digest.
@pytest.mark.parametrize("size", [10, 2000])
@pytest.mark.parametrize("length", [3, 127, 128, 129, 300])
def test_each_turns_proof_carries_the_digest_of_the_messages_it_read(
    size: int, length: int
) -> None:
    history = _chat(length + 4, size)
    _, first, _ = check_history(history[:length], None)
    assert first is not None and first.digest == prefix_digest(history, length)
    _, second, _ = check_history(history, first)
    assert second is not None and second.proves == first.serial
    assert second.digest == prefix_digest(history, len(history))
    _, third, _ = check_history(list(history), second)
    assert third is not None and third.proves == second.serial


@pytest.mark.parametrize("size", [10, 2000])
@pytest.mark.parametrize(
    ("length", "edit"), [(100, 0), (100, 99), (300, 5), (300, 260), (300, 299)]
)
def test_an_edit_anywhere_in_the_proved_prefix_is_no_proof(
    size: int, length: int, edit: int
) -> None:
    history = _chat(length, size)
    _, first, _ = check_history(history, None)
    edited = [dict(m) for m in history] + _chat(2, size)
    edited[edit]["content"] += "!"
    _, second, _ = check_history(edited, first)
    assert second is not None and second.proves is None
    assert second.digest == prefix_digest(edited, len(edited))
    # The same edit made in place on the caller's own list is caught as well.
    history[edit]["content"] += "!"
    _, third, _ = check_history(history, first)
    assert third is not None and third.proves is None


def test_a_message_that_no_longer_pickles_gives_no_proof() -> None:
    history = _chat(5, 10)
    _, first, _ = check_history(history, None)
    history[2] = {"role": "user", "content": "hi", "extra": lambda: 0}
    _, second, _ = check_history(history, first)
    assert second is not None and second.proves is None and second.digest is None
    _, third, _ = check_history(history, second)  # nothing proved: validated in full again
    assert third is not None and third.proves is None


def test_a_proof_grown_turn_by_turn_across_chunks_stays_the_digest() -> None:
    """Turn after turn across whole chunks: each proof proves the last and digests as a fresh
    one would; an edit in the first chunk after several turns is caught."""
    history = _chat(400, 40)
    proof = None
    for length in range(3, 400, 37):
        _, checked, _ = check_history(history[:length], proof)
        assert checked is not None and checked.digest == prefix_digest(history, length)
        assert proof is None or checked.proves == proof.serial
        proof = checked
    history[1]["content"] += "!"
    _, checked, _ = check_history(history, proof)
    assert checked is not None and checked.proves is None


_SIZES = st.sampled_from([5, 60, 700, 3_000, 20_000, 70_000])


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(_SIZES, min_size=2, max_size=140),
    steps=st.lists(st.integers(1, 40), min_size=1, max_size=6),
    edit=st.none() | st.tuples(st.integers(0, 10_000), st.sampled_from(["append", "same", "role"])),
)
def test_each_proof_proves_exactly_the_unchanged_prefix(
    sizes: list[int], steps: list[int], edit: tuple[int, str] | None
) -> None:
    """Grown turn by turn (one pickle proves the partial chunk and extends it, or, where its
    frames fall otherwise, two), a proof proves the last one unless a message it covered was
    edited, and always digests as a fresh proof would."""
    roles = ("user", "assistant")
    history = [{"role": roles[i % 2], "content": f"m{i}" + "x" * n} for i, n in enumerate(sizes)]
    length, proof = 1, None
    for step in steps:
        length = min(length + step, len(history))
        _, checked, _ = check_history(history[:length], proof)
        assert checked is not None and checked.digest == prefix_digest(history, length)
        assert proof is None or checked.proves == proof.serial
        proof = checked
    assert proof is not None
    edited = [dict(m) for m in history]
    if edit is not None:
        at, how = edit[0] % proof.length, edit[1]
        message = edited[at]
        if how == "append":
            message["content"] += "!"
        elif how == "same":  # the same length, one character changed
            message["content"] = "M" + message["content"][1:]
        else:
            message["role"] = roles[(roles.index(message["role"]) + 1) % 2]
    _, checked, _ = check_history(edited, proof)
    assert checked is not None and checked.digest == prefix_digest(edited, len(edited))
    assert (checked.proves == proof.serial) is (edit is None)


@given(sizes=st.lists(st.sampled_from([5, 60, 700, 3_000, 20_000]), min_size=2, max_size=140))
def test_the_opening_items_pickle_is_rebuilt_from_the_grown_list(sizes: list[int]) -> None:
    """Without a string too long for a frame, the pickle of the first items (two or more) is
    read from the whole list's pickle: no second pickle on an ordinary turn."""
    history = [{"role": "user", "content": "x" * n} for n in sizes]
    grown = pickle.dumps(history, protocol=5)
    for k in range(2, len(history) + 1, 7):
        opening = pickle.dumps(history[:k], protocol=5)
        assert b"".join(_digest._opening(grown, len(opening))) == opening


@given(grown=st.binary(max_size=64), length=st.integers(0, 80))
def test_the_opening_of_any_bytes_is_some_bytes(grown: bytes, length: int) -> None:
    """Whatever the bytes, rebuilding an opening gives bytes to compare, never an error."""
    parts = _digest._opening(b"\x80\x05\x95" + grown, length)
    assert isinstance(b"".join(parts), bytes)
