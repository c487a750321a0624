"""The conversation runner: cache lifetimes, cut moves, and a reference that sees everything."""

from __future__ import annotations

import pytest

from benchmarks._chats import build_conversation
from benchmarks.conversations import (
    COST_KEYS,
    KNOWN,
    REFERENCE,
    STRATEGIES,
    Play,
    Request,
    SendEverything,
    _Caches,
    _cut_moves,
    _ExpiringSet,
    aggregate,
    play,
)


def test_expiring_set_forgets_after_its_ttl_and_use_refreshes() -> None:
    s = _ExpiringSet(300)
    s.now = 0
    s.add(1)
    s.now = 299
    assert 1 in s  # used at 299: lives until 599
    s.now = 599
    assert 1 in s
    s.now = 900
    assert 1 not in s


def _request(seed: int = 1) -> list[dict[str, str]]:
    words = " ".join(f"w{seed}x{i}" for i in range(700))
    return [{"role": "system", "content": words}, {"role": "user", "content": "hello there"}]


def test_caches_expire_by_ttl_and_bill_writes_by_lifetime() -> None:
    caches = _Caches()
    messages = _request()
    marked = {
        "system": [
            {"type": "text", "text": messages[0]["content"], "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hello there"}]}],
    }
    first = caches.bill(0.0, messages, marked)
    assert first["cached_tokens"] == 0 and first["cost_01"] == first["input_tokens"]
    # A 1,000-token write costs 1.25x with the 5-minute cache and 2x with the hour cache.
    assert first["cost_anthropic_1h"] > first["cost_anthropic"] > first["input_tokens"]
    soon = caches.bill(120.0, messages, marked)
    assert soon["cached_tokens"] > 1000 and soon["cached_tokens_1h"] == soon["cached_tokens"]
    later = caches.bill(120.0 + 1800.0, messages, marked)  # half an hour on
    assert later["cached_tokens"] == 0
    assert later["cached_tokens_1h"] == soon["cached_tokens"]
    assert later["cost_anthropic"] > later["cost_anthropic_1h"]
    next_day = caches.bill(120.0 + 86400.0, messages, marked)
    assert next_day["cached_tokens"] == next_day["cached_tokens_1h"] == 0


def _chat(session: int, dropped: int) -> Request:
    return Request("chat", "chat", session, 0, {}, dropped)


def test_cut_moves_count_changes_within_a_session_only() -> None:
    requests = [_chat(0, 0), _chat(0, 0), _chat(0, 4), _chat(1, 9), _chat(1, 9), _chat(1, 12)]
    requests.insert(3, Request("single", "next", 0, 0, {}, 2))
    assert _cut_moves(requests) == 2


@pytest.fixture(scope="module")
def reference_play() -> tuple[int, list[Request]]:
    conv = build_conversation(2)
    return len(conv.questions), play(conv, SendEverything(), 0)


def test_sending_everything_answers_every_question_verbatim(
    reference_play: tuple[int, list[Request]],
) -> None:
    n, requests = reference_play
    asked = [r for r in requests if r.mode != "chat"]
    assert len(asked) == 2 * n
    assert all(r.hit and r.verbatim for r in asked)
    assert all(r.dropped == 0 for r in requests)
    chats = [r for r in requests if r.mode == "chat"]
    assert len(chats) == sum(1 for m in build_conversation(2).messages if m.role == "user")


def test_reference_pays_full_price_when_each_session_opens(
    reference_play: tuple[int, list[Request]],
) -> None:
    _, requests = reference_play
    chats = [r for r in requests if r.mode == "chat"]
    openers = [r for i, r in enumerate(chats) if i and r.session != chats[i - 1].session]
    # Sessions days apart: nothing survives a 5-minute cache (nor, mostly, an hour's).
    days_apart = [r for r in openers if r.bill["cached_tokens_1h"] == 0]
    assert all(r.bill["cached_tokens"] == 0 for r in openers)
    assert days_apart
    inside = [r for i, r in enumerate(chats) if i and r.session == chats[i - 1].session]
    assert sum(r.bill["cached_tokens"] for r in inside) > 0.8 * sum(
        r.bill["input_tokens"] for r in inside if r.bill["input_tokens"] > 2048
    )


def test_aggregate_against_itself_is_the_reference(
    reference_play: tuple[int, list[Request]],
) -> None:
    _, requests = reference_play
    p = Play(2, "dev", REFERENCE, 0, requests)
    row = aggregate([p], {2: p}, "end")
    assert row["recall"] == 1.0 and row["cost_01"] == pytest.approx(100.0)
    assert row["mid_session_cut_moves"] == 0
    assert all(row["by_kind"][k]["recall"] == 1.0 for k in row["by_kind"])


def test_cpu_time_is_the_median_of_the_requests_that_measured_it() -> None:
    bill = {"input_tokens": 10.0, **{k: 10.0 for k in COST_KEYS}}
    chats = [
        Request("chat", "chat", 0, 1_000_000, bill, cpu_ns=ns) for ns in (2_000_000, 4_000_000)
    ]
    question = Request("single", "next", 0, 9_000_000, bill, cpu_ns=6_000_000)
    mine = Play(2, "dev", "membrane", 4000, [*chats, question])
    ref = Play(2, "dev", REFERENCE, 0, [Request("chat", "chat", 0, 0, bill)] * 2 + [question])
    row = aggregate([mine], {2: ref}, "next")
    assert row["chat_cpu_ms_median"] == pytest.approx(3.0)
    assert row["by_kind"]["single"]["cpu_ms_median"] == pytest.approx(6.0)
    # Strategies that do not measure CPU time (the peers) report none.
    assert aggregate([ref], {2: ref}, "next")["chat_cpu_ms_median"] is None


def test_the_embedder_row_is_known_but_not_run_by_default() -> None:
    assert "membrane-embed" in KNOWN and "membrane-embed" not in STRATEGIES


def test_membrane_sessions_marks_a_request_past_the_cache_lifetime() -> None:
    from benchmarks._strategies import membrane_sessions

    strategy = membrane_sessions()
    assert strategy.session_clock and "membrane_sessions" in KNOWN
    strategy.now = 1_000.0
    assert strategy._new_session([{"role": "user", "content": "a", "timestamp": 600.0}])
    assert not strategy._new_session([{"role": "user", "content": "a", "timestamp": 800.0}])
    assert not strategy._new_session([])


def test_only_a_session_clock_strategy_sees_timestamps() -> None:
    from benchmarks._strategies import membrane_sessions

    conv = build_conversation(1)
    seen: list[list[dict[str, object]]] = []
    for strategy in (SendEverything(), membrane_sessions()):
        build = strategy.build

        def spy(history, turn, build=build):  # type: ignore[no-untyped-def]
            seen.append(history)
            return build(history, turn)

        strategy.build = spy  # type: ignore[method-assign]
        play(conv, strategy, 4000)
    plain = next(h for h in seen if len(h) > 3)
    assert all("timestamp" not in m for m in plain)
    stamped = seen[-1]
    assert [m["timestamp"] for m in stamped] == [m.time for m in conv.messages[: len(stamped)]]
