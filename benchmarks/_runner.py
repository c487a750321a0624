"""Runs strategies over scenarios and turns what they sent into metrics."""

from __future__ import annotations

import os
import statistics
import sys
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from benchmarks._providers import (
    ANTHROPIC_READ,
    ANTHROPIC_WRITE,
    AnthropicMarkedCache,
    OpenAIPrefixCache,
)
from benchmarks._scenarios import PROBE_KINDS, Scenario, ScenarioSpec, build_scenario
from benchmarks._strategies import Strategy, StrategyUnavailable, make_strategy
from benchmarks._tokens import count_messages, prompt_text

__all__ = [
    "READ_PRICES",
    "Run",
    "TurnRecord",
    "Unit",
    "aggregate",
    "invalid_tool_sequence",
    "percentile",
    "progress",
    "run_conversation",
    "run_units",
    "summarise",
]

READ_PRICES = (0.5, 0.1)


@dataclass(slots=True)
class TurnRecord:
    """Everything measured about one request."""

    input_tokens: int
    cached_tokens: int
    anthropic_input: int
    anthropic_uncached: int
    anthropic_write: int
    anthropic_read: int
    over_by: int
    invalid_tools: bool
    probes: list[tuple[str, bool]]
    compile_ns: int
    error: str | None = None

    def openai_cost(self, read_price: float) -> float:
        return self.input_tokens - self.cached_tokens + read_price * self.cached_tokens

    def anthropic_cost(self) -> float:
        return (
            self.anthropic_uncached
            + ANTHROPIC_WRITE * self.anthropic_write
            + ANTHROPIC_READ * self.anthropic_read
        )


@dataclass(slots=True)
class Run:
    """One strategy over one scenario and seed."""

    scenario: str
    seed: int
    strategy: str
    budget: int
    turns: list[TurnRecord] = field(default_factory=list)
    skipped: str | None = None


@dataclass(frozen=True, slots=True)
class Unit:
    """A unit of work for a worker process."""

    spec: ScenarioSpec
    seed: int
    strategy: str


def invalid_tool_sequence(messages: Sequence[dict[str, Any]]) -> bool:
    """True when a tool result lacks its call, or a call lacks its result, as OpenAI checks."""
    pending: set[str] = set()
    in_block = False
    for m in messages:
        role = m.get("role")
        if role == "tool":
            call_id = str(m.get("tool_call_id"))
            if not in_block or call_id not in pending:
                return True
            pending.discard(call_id)
            continue
        if pending:
            return True
        in_block = False
        if role == "assistant" and m.get("tool_calls"):
            pending = {str(c.get("id")) for c in m["tool_calls"]}
            in_block = True
    return bool(pending)


def run_conversation(scenario: Scenario, strategy: Strategy) -> list[TurnRecord]:
    """Play ``scenario`` through ``strategy`` and bill every request."""
    strategy.start(scenario)
    openai = OpenAIPrefixCache()
    anthropic = AnthropicMarkedCache()
    history: list[dict[str, Any]] = []
    records: list[TurnRecord] = []
    for turn in scenario.turns:
        built = strategy.build(list(history), turn)
        text = prompt_text(built.messages)
        bill = openai.bill(built.messages)
        abill = anthropic.bill(strategy.anthropic_request(built))
        size = count_messages(built.messages)
        records.append(
            TurnRecord(
                input_tokens=bill.input_tokens,
                cached_tokens=bill.cached_tokens,
                anthropic_input=abill.input_tokens,
                anthropic_uncached=abill.uncached_tokens,
                anthropic_write=abill.write_tokens,
                anthropic_read=abill.read_tokens,
                over_by=max(0, size - scenario.budget),
                invalid_tools=invalid_tool_sequence(built.messages),
                probes=[(p.kind, p.code in text) for p in turn.probes],
                compile_ns=built.compile_ns,
                error=built.error,
            )
        )
        history.append({"role": "user", "content": turn.user_message})
        history.extend(dict(m) for m in turn.reply)
    return records


_WORKER_STRATEGIES: dict[str, Strategy | str] = {}


def _strategy_for(name: str) -> Strategy | str:
    # One adapter per worker process: imports and the Node process are paid once.
    if name not in _WORKER_STRATEGIES:
        try:
            _WORKER_STRATEGIES[name] = make_strategy(name)
        except StrategyUnavailable as exc:
            _WORKER_STRATEGIES[name] = str(exc)
    return _WORKER_STRATEGIES[name]


def _run_unit(unit: Unit) -> Run:
    scenario = build_scenario(unit.spec, unit.seed)
    run = Run(unit.spec.name, unit.seed, unit.strategy, unit.spec.budget)
    strategy = _strategy_for(unit.strategy)
    if isinstance(strategy, str):
        run.skipped = strategy
        return run
    run.turns = run_conversation(scenario, strategy)
    return run


def _close_workers() -> None:
    for strategy in _WORKER_STRATEGIES.values():
        if not isinstance(strategy, str):
            strategy.close()
    _WORKER_STRATEGIES.clear()


def progress(total: int, desc: str) -> Any:
    """A tqdm bar on stderr, or a silent stand-in when tqdm is not installed."""
    try:
        from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        return _NoBar()
    disable = os.environ.get("MEMBRANE_BENCH_NO_PROGRESS") == "1"
    return tqdm(
        total=total, desc=desc, unit="run", file=sys.stderr, disable=disable, dynamic_ncols=True
    )


class _NoBar:
    def update(self, n: int = 1) -> None:
        del n

    def set_postfix_str(self, s: str) -> None:
        del s

    def close(self) -> None:
        pass


def run_units(units: Sequence[Unit], jobs: int = 1, desc: str = "runs") -> list[Run]:
    """Run every unit, in ``jobs`` worker processes when more than one; order is preserved."""
    bar = progress(len(units), desc)
    results: list[Run | None] = [None] * len(units)
    try:
        if jobs <= 1:
            for i, unit in enumerate(units):
                bar.set_postfix_str(f"{unit.spec.name}/{unit.strategy}/seed {unit.seed}")
                results[i] = _run_unit(unit)
                bar.update(1)
            _close_workers()
        else:
            with ProcessPoolExecutor(max_workers=jobs, initializer=_worker_init) as pool:
                futures = {pool.submit(_run_unit, unit): i for i, unit in enumerate(units)}
                for future in as_completed(futures):
                    results[futures[future]] = future.result()
                    bar.update(1)
    finally:
        bar.close()
    return [r for r in results if r is not None]


def _worker_init() -> None:
    import atexit

    atexit.register(_close_workers)


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def aggregate(runs: Iterable[Run], naive: Iterable[Run]) -> dict[str, Any]:
    """Metrics of one strategy on one scenario, pooled over seeds, relative to the naive runs."""
    runs = list(runs)
    turns = [t for r in runs for t in r.turns]
    naive_turns = [t for r in naive for t in r.turns]
    out: dict[str, Any] = {"seeds": sorted(r.seed for r in runs), "turns": len(turns)}
    probes = [p for t in turns for p in t.probes]
    out["probes"] = len(probes)
    out["recall"] = _share(hit for _, hit in probes)
    for kind in PROBE_KINDS:
        of_kind = [hit for k, hit in probes if k == kind]
        out[f"recall_{kind}"] = _share(of_kind)
        out[f"probes_{kind}"] = len(of_kind)
    answered = [all(hit for _, hit in t.probes) for t in turns if t.probes]
    out["answer_recall"] = _share(answered)
    for price in READ_PRICES:
        mine = sum(t.openai_cost(price) for t in turns)
        base = sum(t.openai_cost(price) for t in naive_turns)
        out[f"cost_{_price_key(price)}"] = 100.0 * mine / base if base else float("nan")
    mine_a = sum(t.anthropic_cost() for t in turns)
    base_a = sum(t.anthropic_cost() for t in naive_turns)
    out["cost_anthropic"] = 100.0 * mine_a / base_a if base_a else float("nan")
    total_in = sum(t.input_tokens for t in turns)
    out["input_tokens"] = total_in
    out["cached_tokens"] = sum(t.cached_tokens for t in turns)
    out["cached_share"] = out["cached_tokens"] / total_in if total_in else 0.0
    a_in = sum(t.anthropic_input for t in turns)
    out["anthropic_read_share"] = sum(t.anthropic_read for t in turns) / a_in if a_in else 0.0
    out["anthropic_write_share"] = sum(t.anthropic_write for t in turns) / a_in if a_in else 0.0
    out["turns_over_budget"] = sum(1 for t in turns if t.over_by > 0)
    out["max_over_budget_tokens"] = max((t.over_by for t in turns), default=0)
    out["invalid_tool_requests"] = sum(1 for t in turns if t.invalid_tools)
    out["errors"] = sum(1 for t in turns if t.error)
    first_error = next((t.error for t in turns if t.error), None)
    if first_error:
        out["first_error"] = first_error
    times = [t.compile_ns / 1e6 for t in turns]
    out["compile_ms_median"] = statistics.median(times) if times else float("nan")
    out["compile_ms_p95"] = percentile(times, 0.95)
    return out


def summarise(per_scenario: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Mean over scenarios (each scenario weighs the same), counts summed."""
    rows = list(per_scenario.values())
    out: dict[str, Any] = {"scenarios": len(rows)}
    for key in (
        "recall",
        "answer_recall",
        "cost_05",
        "cost_01",
        "cost_anthropic",
        "cached_share",
        "anthropic_read_share",
        *(f"recall_{k}" for k in PROBE_KINDS),
    ):
        values = [r[key] for r in rows if r.get(key) is not None]
        out[key] = statistics.fmean(values) if values else None
    for key in ("turns", "probes", "turns_over_budget", "invalid_tool_requests", "errors"):
        out[key] = sum(r[key] for r in rows)
    out["max_over_budget_tokens"] = max((r["max_over_budget_tokens"] for r in rows), default=0)
    medians = [r["compile_ms_median"] for r in rows]
    out["compile_ms_median_of_scenarios"] = statistics.median(medians) if medians else None
    return out


def _share(values: Iterable[bool]) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def _price_key(price: float) -> str:
    return f"{price:.1f}".replace(".", "")
