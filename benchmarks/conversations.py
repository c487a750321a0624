"""Multi-session conversations between two people: can the prompt answer questions about them?

python -m benchmarks.conversations [--conversations 30] [--split dev|heldout|all]
                                   [--budgets 4000,8000] [--strategies a,b] [--jobs N]

Every strategy plays the same chats (``benchmarks/_chats.py``, frozen): a request for each of
person A's turns, with the history so far. Questions are asked in two modes, from the same
play: ``next``, each right after the session that follows its evidence, and ``end``, all after
the last session. A question counts when its evidence turns are in the prompt
(``benchmarks/_chat_scoring.py``). Costs come from simulated provider caches whose entries
expire 5 minutes (or, in the ``_1h`` columns, an hour) after their last use, so a cache
rarely survives from one session to the next; they are relative to sending the whole chat on
every request (= 100) under the same cache.

Held-out conversations (30%) run only with ``--split heldout`` or ``--split all``; the
committed result is the one run of ``--split all``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from benchmarks._chat_scoring import judge, scored_texts
from benchmarks._chats import CHITCHAT_VERSION, KINDS, Conversation, build_conversation
from benchmarks._chats import conversation_seeds as _seeds
from benchmarks._providers import AnthropicMarkedCache, OpenAIPrefixCache
from benchmarks._report import (
    RESULTS_DIR,
    fmt_ms,
    fmt_num,
    fmt_pct,
    machine,
    markdown_table,
    plot_bars,
    plot_lines,
    write_result,
)
from benchmarks._runner import progress
from benchmarks._scenarios import Scenario, Turn
from benchmarks._strategies import (
    ANTHROPIC_MODEL,
    OPENAI_MODEL,
    Built,
    LlamaMemory,
    Strategy,
    StrategyUnavailable,
    _from_llama,
    _to_llama,
    make_strategy,
    membrane_sessions,
    membrane_speakers,
    membrane_speakers_embed,
    membrane_speakers_static,
)
from benchmarks._suite import command_line
from benchmarks._tokens import ENCODING, FRAMING_TOKENS, count_messages, count_text

__all__ = [
    "KNOWN",
    "OPTIONAL_STRATEGIES",
    "STRATEGIES",
    "Request",
    "SendEverything",
    "conversations_tables",
    "main",
    "play",
]

STRATEGIES = ("naive", "langchain", "llamaindex_memory", "membrane", "membrane_cheap")
# Run only when named: Membrane with the bundled local embedder (needs the embed extra).
OPTIONAL_STRATEGIES = (
    "membrane-embed",
    "membrane-static",
    "membrane_sessions",
    "membrane_speakers",
    "membrane_speakers_embed",
    "membrane_speakers_static",
)
KNOWN = (*STRATEGIES, *OPTIONAL_STRATEGIES)
REFERENCE = "everything"
BUDGETS = (4000, 8000)
MODES = ("next", "end")
TTLS = {"5m": 300.0, "1h": 3600.0}
# Anthropic bills a cache write at 1.25x with the 5-minute lifetime and 2x with the 1-hour one.
WRITE_PRICE = {"5m": 1.25, "1h": 2.0}
READ_PRICES = (0.5, 0.1)
COST_KEYS = ("cost_05", "cost_01", "cost_01_1h", "cost_anthropic", "cost_anthropic_1h")
DEFAULT_CONVERSATIONS = 30
# Question requests are stamped this long after the session's last turn, and apart.
_ASK_DELAY = 60.0
_ASK_GAP = 20.0


# --------------------------------------------------------------------------- caches with a TTL


class _ExpiringSet:
    """A set of prefix hashes whose members lapse ``ttl`` seconds after their last use."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self.now = 0.0
        self._used: dict[int, float] = {}

    def __contains__(self, key: object) -> bool:
        last = self._used.get(key)  # type: ignore[call-overload]
        if last is None or self.now - last > self.ttl:
            return False
        self._used[key] = self.now  # type: ignore[index]
        return True

    def add(self, key: int) -> None:
        self._used[key] = self.now

    def update(self, keys: Iterable[int]) -> None:
        for key in keys:
            self._used[key] = self.now


class _Caches:
    """The four simulated caches one conversation's requests are billed through."""

    def __init__(self) -> None:
        self.openai: dict[str, OpenAIPrefixCache] = {}
        self.anthropic: dict[str, AnthropicMarkedCache] = {}
        self._clocks: list[_ExpiringSet] = []
        for name, ttl in TTLS.items():
            o, a = OpenAIPrefixCache(), AnthropicMarkedCache()
            o._seen = _ExpiringSet(ttl)  # type: ignore[assignment]
            a._written = _ExpiringSet(ttl)  # type: ignore[assignment]
            self._clocks += [o._seen, a._written]  # type: ignore[list-item]
            self.openai[name], self.anthropic[name] = o, a

    def bill(
        self, now: float, messages: list[dict[str, Any]], anthropic: dict[str, Any]
    ) -> dict[str, float]:
        for clock in self._clocks:
            clock.now = now
        out: dict[str, float] = {}
        for name, cache in self.openai.items():
            bill = cache.bill(messages)
            out["input_tokens"] = bill.input_tokens
            for price in READ_PRICES:
                key = f"cost_{f'{price:.1f}'.replace('.', '')}" + ("" if name == "5m" else "_1h")
                out[key] = bill.input_tokens - bill.cached_tokens + price * bill.cached_tokens
            out["cached_tokens" + ("" if name == "5m" else "_1h")] = bill.cached_tokens
        for name, acache in self.anthropic.items():
            abill = acache.bill(anthropic)
            out["cost_anthropic" + ("" if name == "5m" else "_1h")] = (
                abill.uncached_tokens
                + WRITE_PRICE[name] * abill.write_tokens
                + 0.1 * abill.read_tokens
            )
        return out


# --------------------------------------------------------------------------- strategies


class SendEverything(Strategy):
    """The reference: the system prompt, the whole history and the turn, with no budget."""

    name = REFERENCE
    label = "Send everything (reference = 100)"
    description = (
        "System prompt, every earlier message and the current turn; Anthropic requests carry "
        "the two usual cache markers (system prompt and the message before the turn)."
    )
    anthropic_markers = True

    def build(self, history: list[dict[str, Any]], turn: Turn) -> Built:
        t0 = time.perf_counter_ns()
        messages = [
            {"role": "system", "content": self.scenario.system_prompt},
            *history,
            {"role": "user", "content": turn.user_message},
        ]
        return Built(messages, time.perf_counter_ns() - t0)


def _probe_llama(strategy: LlamaMemory, history: list[dict[str, Any]], question: str) -> Built:
    """LlamaIndex ``Memory`` asked a question that must not join its stored chat."""
    t0 = time.perf_counter_ns()
    new = [_to_llama(strategy._chat_message, m) for m in history[strategy._seen :]]
    if new:
        strategy._memory.put_messages(new)
    strategy._seen = len(history)
    kept = strategy._memory.get()
    elapsed = time.perf_counter_ns() - t0
    messages = [
        {"role": "system", "content": strategy.scenario.system_prompt},
        *map(_from_llama, kept),
        {"role": "user", "content": question},
    ]
    return Built(messages, elapsed)


def _ask(strategy: Strategy, history: list[dict[str, Any]], question: str) -> Built:
    if isinstance(strategy, LlamaMemory):
        return _probe_llama(strategy, history, question)
    # The other strategies keep nothing of the turn they are given but what the history holds.
    return strategy.build(list(history), Turn((), question, (), ()))


def _make(name: str) -> Strategy:
    if name == "membrane_sessions":
        return membrane_sessions()
    if name == "membrane_speakers":
        return membrane_speakers()
    if name == "membrane_speakers_embed":
        return membrane_speakers_embed()
    if name == "membrane_speakers_static":
        return membrane_speakers_static()
    return SendEverything() if name == REFERENCE else make_strategy(name)


# --------------------------------------------------------------------------- one play


@dataclass(slots=True)
class Request:
    """One request a strategy sent: a chat turn (kind ``chat``) or a question."""

    kind: str
    mode: str  # "chat", "next" or "end"
    session: int
    compile_ns: int
    bill: dict[str, float]
    dropped: int = 0
    hit: bool = False
    verbatim: bool = False
    recalled_tokens: int = 0
    wasted_tokens: int = 0
    cpu_ns: int | None = None


@dataclass(slots=True)
class Play:
    seed: int
    split: str
    strategy: str
    budget: int
    requests: list[Request] = field(default_factory=list)
    skipped: str | None = None


def _recall_block(strategy: Strategy, built: Built, question: str) -> str:
    """The recalled passages Membrane put before the question ("" when there are none)."""
    if not built.info.get("history_messages_recalled"):
        return ""
    from membrane.stages.history import RECALL_HEADER

    text = str(built.messages[-1].get("content") or "")
    head, sep, _ = text.rpartition(question)
    start = head.find(RECALL_HEADER)
    if not sep or start < 0:
        return ""
    return head[start:]


def _dropped(built: Built, history_len: int) -> int:
    if "history_messages_dropped" in built.info:
        return int(built.info["history_messages_dropped"] or 0)
    return history_len - max(0, len(built.messages) - 2)


def play(conv: Conversation, strategy: Strategy, budget: int) -> list[Request]:
    """Play ``conv`` through ``strategy``, asking every question in both modes."""
    scenario = Scenario(
        f"c{conv.seed}", f"conversation {conv.seed}", conv.seed, budget, conv.system_prompt, ()
    )
    strategy.speakers = {m.speaker: m.role for m in conv.messages}
    strategy.start(scenario)
    caches = _Caches()
    history: list[dict[str, Any]] = []
    requests: list[Request] = []
    asked_next: dict[int, list[int]] = defaultdict(list)
    for i, q in enumerate(conv.questions):
        asked_next[q.ask_after].append(i)
    texts = [m.text for m in conv.messages]

    def ask(index: int, mode: str, now: float) -> None:
        q = conv.questions[index]
        strategy.now = now
        built = _ask(strategy, history, q.text)
        bill = caches.bill(now, built.messages, strategy.anthropic_request(built))
        scored = scored_texts(built.messages, conv.system_prompt, q.text)
        evidence = [texts[e] for e in q.evidence]
        result = judge(scored, evidence)
        block = _recall_block(strategy, built, q.text)
        recalled = wasted = 0
        if block:
            recalled = sum(count_text(line) for line in block.splitlines()[2:] if line.strip())
            without = [*scored[:-1], scored[-1].replace(block, "", 1)]
            in_window = judge(without, evidence).hit
            # Recall added nothing when the window already held the answer, or when the
            # answer is still incomplete after it.
            if in_window or not result.hit:
                wasted = recalled
        requests.append(
            Request(
                q.kind,
                mode,
                len(conv.sessions) - 1 if mode == "end" else q.ask_after,
                built.compile_ns,
                bill,
                _dropped(built, len(history)),
                result.hit,
                result.verbatim,
                recalled,
                wasted,
                built.cpu_ns,
            )
        )

    for session in conv.sessions:
        for m in conv.messages[session.first : session.stop]:
            if m.role == "user":
                strategy.now = m.time
                built = strategy.build(list(history), Turn((), m.text, (), ()))
                bill = caches.bill(m.time, built.messages, strategy.anthropic_request(built))
                requests.append(
                    Request(
                        "chat",
                        "chat",
                        session.index,
                        built.compile_ns,
                        bill,
                        _dropped(built, len(history)),
                        cpu_ns=built.cpu_ns,
                    )
                )
            history.append({"role": m.role, "content": m.text})
            if strategy.session_clock:
                history[-1]["timestamp"] = m.time
        now = conv.messages[session.stop - 1].time + _ASK_DELAY
        for n, index in enumerate(asked_next.get(session.index, ())):
            ask(index, "next", now + n * _ASK_GAP)
    now = conv.messages[-1].time + _ASK_DELAY + len(conv.questions) * _ASK_GAP
    for index in range(len(conv.questions)):
        ask(index, "end", now + index * _ASK_GAP)
    return requests


# --------------------------------------------------------------------------- running


@dataclass(frozen=True, slots=True)
class _Unit:
    seed: int
    strategy: str
    budget: int


_WORKER: dict[str, Strategy | str] = {}


def _strategy(name: str) -> Strategy | str:
    if name not in _WORKER:
        try:
            _WORKER[name] = _make(name)
        except StrategyUnavailable as exc:
            _WORKER[name] = str(exc)
    return _WORKER[name]


def _run(unit: _Unit) -> Play:
    conv = build_conversation(unit.seed)
    out = Play(unit.seed, conv.split, unit.strategy, unit.budget)
    strategy = _strategy(unit.strategy)
    if isinstance(strategy, str):
        out.skipped = strategy
        return out
    out.requests = play(conv, strategy, unit.budget)
    return out


def _close() -> None:
    for s in _WORKER.values():
        if not isinstance(s, str):
            s.close()
    _WORKER.clear()


def _init_worker() -> None:
    import atexit

    atexit.register(_close)


def run(units: Sequence[_Unit], jobs: int) -> list[Play]:
    bar = progress(len(units), "conversations")
    plays: list[Play | None] = [None] * len(units)
    try:
        if jobs <= 1:
            for i, unit in enumerate(units):
                bar.set_postfix_str(f"c{unit.seed}/{unit.strategy}/{unit.budget}")
                plays[i] = _run(unit)
                bar.update(1)
            _close()
        else:
            with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker) as pool:
                futures = {pool.submit(_run, u): i for i, u in enumerate(units)}
                for future in as_completed(futures):
                    plays[futures[future]] = future.result()
                    bar.update(1)
    finally:
        bar.close()
    return [p for p in plays if p is not None]


# --------------------------------------------------------------------------- metrics


def _share(values: Sequence[bool]) -> float | None:
    return sum(values) / len(values) if values else None


def _median_ms(requests: Sequence[Request]) -> float | None:
    return statistics.median(r.compile_ns / 1e6 for r in requests) if requests else None


def _median_cpu_ms(requests: Sequence[Request]) -> float | None:
    cpu = [r.cpu_ns / 1e6 for r in requests if r.cpu_ns is not None]
    return statistics.median(cpu) if cpu else None


def _cut_moves(requests: Sequence[Request]) -> int:
    """Chat requests whose first kept message differs from the previous one's in the session."""
    moves = 0
    last: tuple[int, int] | None = None
    for r in requests:
        if r.mode != "chat":
            continue
        if last is not None and last[0] == r.session and last[1] != r.dropped:
            moves += 1
        last = (r.session, r.dropped)
    return moves


def _costs(mine: Sequence[Request], ref: Sequence[Request]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for key in COST_KEYS:
        base = sum(r.bill[key] for r in ref)
        out[key] = 100.0 * sum(r.bill[key] for r in mine) / base if base else None
    return out


def aggregate(plays: Sequence[Play], reference: dict[int, Play], mode: str) -> dict[str, Any]:
    """One strategy, budget, split and mode, pooled over conversations."""
    out: dict[str, Any] = {"conversations": len(plays)}
    chats = [r for p in plays for r in p.requests if r.mode == "chat"]
    ref_chats = [r for p in plays for r in reference[p.seed].requests if r.mode == "chat"]
    asked = [r for p in plays for r in p.requests if r.mode == mode]
    ref_asked = [r for p in plays for r in reference[p.seed].requests if r.mode == mode]
    out["questions"] = len(asked)
    out["recall"] = _share([r.hit for r in asked])
    out["recall_verbatim"] = _share([r.verbatim for r in asked])
    # The run's cost: every chat request plus this mode's questions.
    out.update(_costs([*chats, *asked], [*ref_chats, *ref_asked]))
    out["chat_ms_median"] = _median_ms(chats)
    out["chat_cpu_ms_median"] = _median_cpu_ms(chats)
    recalled = sum(r.recalled_tokens for r in asked)
    out["recalled_tokens"] = recalled
    out["recall_waste"] = sum(r.wasted_tokens for r in asked) / recalled if recalled else None
    out["mid_session_cut_moves"] = (
        statistics.fmean(_cut_moves(p.requests) for p in plays) if plays else None
    )
    out["chat_requests"] = len(chats) / len(plays) if plays else None
    out["input_tokens_per_chat_request"] = (
        statistics.fmean(r.bill["input_tokens"] for r in chats) if chats else None
    )
    out["by_kind"] = {}
    for kind in KINDS:
        of_kind = [r for r in asked if r.kind == kind]
        ref_kind = [r for r in ref_asked if r.kind == kind]
        k_recalled = sum(r.recalled_tokens for r in of_kind)
        out["by_kind"][kind] = {
            "questions": len(of_kind),
            "recall": _share([r.hit for r in of_kind]),
            "recall_verbatim": _share([r.verbatim for r in of_kind]),
            "cost_01": _costs(of_kind, ref_kind)["cost_01"],
            "ms_median": _median_ms(of_kind),
            "cpu_ms_median": _median_cpu_ms(of_kind),
            "recalled_tokens": k_recalled,
            "recall_waste": (
                sum(r.wasted_tokens for r in of_kind) / k_recalled if k_recalled else None
            ),
        }
    return out


def build_results(plays: Sequence[Play], budgets: Sequence[int]) -> dict[str, Any]:
    reference = {p.seed: p for p in plays if p.strategy == REFERENCE}
    results: dict[str, Any] = {}
    for split in ("dev", "heldout"):
        in_split = [p for p in plays if p.split == split and p.skipped is None]
        if not in_split:
            continue
        results[split] = {}
        for budget in budgets:
            results[split][str(budget)] = {}
            for mode in MODES:
                rows = {}
                for name in (REFERENCE, *KNOWN):
                    mine = [
                        p
                        for p in in_split
                        if p.strategy == name and (p.budget == budget or name == REFERENCE)
                    ]
                    if mine:
                        rows[name] = aggregate(mine, reference, mode)
                results[split][str(budget)][mode] = rows
    return results


def per_request_series(plays: Sequence[Play], seed: int, budget: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in plays:
        if p.seed != seed or p.skipped or (p.budget != budget and p.strategy != REFERENCE):
            continue
        chats = [r for r in p.requests if r.mode == "chat"]
        out[p.strategy] = {
            "session": [r.session for r in chats],
            "input_tokens": [r.bill["input_tokens"] for r in chats],
            "cost_01": [round(r.bill["cost_01"], 1) for r in chats],
            "cost_01_1h": [round(r.bill["cost_01_1h"], 1) for r in chats],
        }
    return out


# --------------------------------------------------------------------------- report

SHORT = {
    REFERENCE: "Everything",
    "naive": "Naive tail",
    "langchain": "LangChain trim",
    "llamaindex_memory": "LI Memory",
    "membrane": "**Membrane**",
    "membrane_cheap": "M. cheap",
    "membrane-embed": "M. + embedder",
    "membrane_sessions": "M. + sessions",
    "membrane_speakers": "M. + speakers",
    "membrane_speakers_embed": "M. + speakers + embedder",
    "membrane-static": "M. + static",
    "membrane_speakers_static": "M. + speakers + static",
}
_KIND_TITLES = {
    "single": "single fact, one turn",
    "when": "when did it happen",
    "spread": "spread over 2-6 turns in different sessions",
    "open": "open-ended, worded unlike the evidence",
}


def kind_table(rows: dict[str, Any]) -> str:
    """The issue's table: recall per kind, then all questions with their cost (reads 0.1x)."""
    names = [n for n in KNOWN if n in rows]
    header = ["question kind", *(SHORT[n] for n in names)]
    body = []
    for kind in KINDS:
        n_q = rows[names[0]]["by_kind"][kind]["questions"] if names else 0
        body.append(
            [f"{_KIND_TITLES[kind]} ({n_q})"]
            + [fmt_pct(rows[n]["by_kind"][kind]["recall"]) for n in names]
        )
    body.append(
        [f"all ({rows[names[0]]['questions'] if names else 0})"]
        + [f"{fmt_pct(rows[n]['recall'])} at cost {fmt_num(rows[n]['cost_01'])}" for n in names]
    )
    return markdown_table(header, body)


def detail_table(by_mode: dict[str, dict[str, Any]]) -> str:
    """Recall in both modes, then what the play cost (chat requests and next-session questions)."""
    nxt, end = by_mode["next"], by_mode["end"]
    names = [n for n in (*KNOWN, REFERENCE) if n in nxt and n in end]
    header = [
        "strategy",
        "recall next / end (verbatim)",
        "cost 0.5x / 0.1x",
        "0.1x, 1-h TTL",
        "Anthropic 5m / 1h",
        "ms per turn",
        "cut moves",
        "wasted recall next / end",
    ]
    body = []
    for n in names:
        r, e = nxt[n], end[n]
        waste = [fmt_pct(x["recall_waste"]) if x["recalled_tokens"] else "–" for x in (r, e)]
        body.append(
            [
                SHORT[n],
                f"{fmt_pct(r['recall'])} ({fmt_pct(r['recall_verbatim'])}) / "
                f"{fmt_pct(e['recall'])} ({fmt_pct(e['recall_verbatim'])})",
                f"{fmt_num(r['cost_05'])} / {fmt_num(r['cost_01'])}",
                fmt_num(r["cost_01_1h"]),
                f"{fmt_num(r['cost_anthropic'])} / {fmt_num(r['cost_anthropic_1h'])}",
                fmt_ms(r["chat_ms_median"]),
                fmt_num(r["mid_session_cut_moves"], 1),
                " / ".join(waste),
            ]
        )
    return markdown_table(header, body)


def kind_detail_table(rows: dict[str, Any]) -> str:
    names = [n for n in KNOWN if n in rows]
    header = ["strategy", *(f"{k}: recall / cost / ms" for k in KINDS)]
    body = []
    for n in names:
        cells = [SHORT[n]]
        for k in KINDS:
            c = rows[n]["by_kind"][k]
            waste = f", waste {fmt_pct(c['recall_waste'])}" if c["recalled_tokens"] else ""
            ms = fmt_ms(c["ms_median"])
            cells.append(f"{fmt_pct(c['recall'])} / {fmt_num(c['cost_01'])} / {ms}{waste}")
        body.append(cells)
    return markdown_table(header, body, "l" + "r" * len(KINDS))


def conversations_tables(payload: dict[str, Any]) -> str:
    """Per split (held-out first): the kind tables, the cost table per budget, kinds in detail."""
    parts = []
    results = payload["results"]
    for split in ("heldout", "dev"):
        if split not in results:
            continue
        n = len(payload["splits"][split])
        for budget, by_mode in results[split].items():
            for mode in MODES:
                when = (
                    "each question right after the session following its evidence"
                    if mode == "next"
                    else "every question after the last session"
                )
                parts.append(
                    f"**{split} split ({n} conversations), {int(budget):,} tokens, {when}**\n"
                )
                parts.append(kind_table(by_mode[mode]) + "\n")
            parts.append(f"**{split} split, {int(budget):,} tokens: cost, time, cut moves**\n")
            parts.append(detail_table(by_mode) + "\n")
        first = str(payload["settings"]["budgets"][0])
        for mode in MODES:
            parts.append(
                f"**{split} split, {int(first):,} tokens, {mode} mode: each kind's questions "
                "(recall / cost at reads 0.1x / median ms; Membrane's wasted recall)**\n"
            )
            parts.append(kind_detail_table(results[split][first][mode]) + "\n")
    return "\n".join(parts)


def make_plots(payload: dict[str, Any], stem: str) -> list[str]:
    files = []
    labels = {k: v.get("label", k) for k, v in payload["strategies"].items()}
    groups = [*KINDS, "all"]
    for split in ("heldout", "dev"):
        if split not in payload["results"]:
            continue
        for mode in MODES:
            rows = payload["results"][split][str(BUDGETS[0])].get(mode, {})
            bars = {
                labels.get(n, n): [
                    *(rows[n]["by_kind"][k]["recall"] for k in KINDS),
                    rows[n]["recall"],
                ]
                for n in KNOWN
                if n in rows
            }
            path = plot_bars(
                RESULTS_DIR / f"{stem}_{split}_{mode}_recall.png",
                f"Conversations ({split}), budget {BUDGETS[0]:,}, questions asked "
                + ("one session after the evidence" if mode == "next" else "after the whole chat"),
                groups,
                bars,
                "questions whose evidence is in the prompt",
            )
            if path:
                files.append(path.name)
    series = payload["series"]
    panels = [
        (
            "cost per request, reads 0.1x,\n5-minute cache",
            {labels.get(k, k): v["cost_01"] for k, v in series["strategies"].items()},
        ),
        (
            "cost per request, reads 0.1x,\n1-hour cache",
            {labels.get(k, k): v["cost_01_1h"] for k, v in series["strategies"].items()},
        ),
    ]
    path = plot_lines(
        RESULTS_DIR / f"{stem}_per_request.png",
        f"Conversation {series['seed']}, budget {series['budget']:,}: chat requests",
        panels,
        xlabel="request (person A's turns, all sessions)",
    )
    if path:
        files.append(path.name)
    return files


def _describe(names: Sequence[str]) -> dict[str, dict[str, Any]]:
    info: dict[str, dict[str, Any]] = {}
    for name in names:
        try:
            s = _make(name)
        except StrategyUnavailable as exc:
            info[name] = {"available": False, "skip_reason": str(exc)}
            print(f"skipping {name}: {exc}", file=sys.stderr)
            continue
        info[name] = {"available": True, "label": s.label, "description": s.description}
        s.close()
    return info


def _shape(conversations: Sequence[Conversation]) -> dict[str, Any]:
    tokens = [
        count_messages([{"role": m.role, "content": m.text} for m in c.messages])
        for c in conversations
    ]
    return {
        "sessions_median": statistics.median(len(c.sessions) for c in conversations),
        "messages_median": statistics.median(len(c.messages) for c in conversations),
        "tokens_median": statistics.median(tokens),
        "tokens_min": min(tokens),
        "tokens_max": max(tokens),
        "questions_per_conversation": len(conversations[0].questions),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.conversations", description=__doc__)
    parser.add_argument("--conversations", type=int, default=DEFAULT_CONVERSATIONS)
    parser.add_argument(
        "--split",
        choices=("dev", "heldout", "all"),
        default="dev",
        help="dev while developing; heldout or all only for the committed run",
    )
    parser.add_argument("--budgets", default=",".join(str(b) for b in BUDGETS))
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--out", default=None, help="results stem (default by split)")
    args = parser.parse_args(argv)

    budgets = [int(b) for b in args.budgets.split(",") if b.strip()]
    names = [n.strip() for n in args.strategies.split(",") if n.strip()]
    unknown = [n for n in names if n not in KNOWN]
    if unknown:
        parser.error(f"unknown strategy {', '.join(unknown)}; choose from {', '.join(KNOWN)}")
    seeds = _seeds(args.conversations, args.split)
    info = _describe([REFERENCE, *names])
    runnable = [n for n in names if info[n]["available"]]
    units = [_Unit(s, REFERENCE, 0) for s in seeds]
    units += [_Unit(s, n, b) for s in seeds for n in runnable for b in budgets]
    t0 = time.perf_counter()
    plays = run(units, max(1, args.jobs))
    elapsed = time.perf_counter() - t0

    convs = [build_conversation(s) for s in seeds]
    splits = {
        split: [c.seed for c in convs if c.split == split]
        for split in ("dev", "heldout")
        if any(c.split == split for c in convs)
    }
    payload: dict[str, Any] = {
        "suite": "conversations",
        "command": command_line(),
        "machine": machine(),
        "elapsed_seconds": round(elapsed, 1),
        "settings": {
            "conversations": args.conversations,
            "split": args.split,
            "budgets": budgets,
            "chitchat_dataset": CHITCHAT_VERSION,
            "token_count": f"offline {ENCODING} plus {FRAMING_TOKENS} framing tokens per message",
            "openai_model": OPENAI_MODEL,
            "anthropic_model": ANTHROPIC_MODEL,
            "cache_ttl_seconds": TTLS,
            "read_prices": list(READ_PRICES),
            "anthropic_write_price": WRITE_PRICE,
            "cost": "relative to sending the whole chat on every request = 100, same cache",
            "scoring": "every evidence turn verbatim, or >= 80% of its content words in order "
            "within one message; system prompt and question cut out",
        },
        "shape": _shape(convs),
        "splits": splits,
        "strategies": info,
        "results": build_results(plays, budgets),
        "series": {
            "seed": seeds[0],
            "budget": budgets[0],
            "strategies": per_request_series(plays, seeds[0], budgets[0]),
        },
    }
    stem = args.out or ("conversations" if args.split == "all" else f"conversations_{args.split}")
    if not args.no_plots and not args.no_write:
        payload["plots"] = make_plots(payload, stem)
    if not args.no_write:
        print(f"wrote {write_result(stem, payload)}", file=sys.stderr)
    print(conversations_tables(payload))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
