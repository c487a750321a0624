"""``python -m membrane.demo``: a 30-turn support chat compiled turn by turn under 2,900 tokens.

Each turn retrieves a few memories from a small store, compiles them with the whole history so
far, and prints one row: tokens per region, the total against the budget, what was trimmed or
recalled, and whether the cacheable prefix is byte-identical to the previous turn's. Everything
runs offline and prints the same output every time.

The chat, its memory store and system rules are data, ``demo_data.json`` beside this module: one
on-call morning at an online furniture shop (a nightly export killed for memory, duplicate
orders from retried payment webhooks, the fixes and the write-up), whose late questions ask for
details of early tool results that have left the history by then.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from membrane.anatomy import cacheable_prefix_tokens, prompt_anatomy, sent_tokens
from membrane.capabilities import get_cache_pricing
from membrane.compiler import CompileResult, ContextCompiler
from membrane.demo_sections import citations, legend, provider_request
from membrane.messages import Message
from membrane.records import MemoryItem
from membrane.report import CompileReport, WindowReport
from membrane.tokenizers import TiktokenAdapter

__all__ = [
    "DemoData",
    "DemoRun",
    "DemoTurn",
    "TurnReport",
    "load_demo_data",
    "main",
    "render_report",
    "run_demo",
]

DEFAULT_BUDGET = 2900
DEFAULT_MODEL = "openai/gpt-4o"
# Memories offered per turn besides the procedural ones, which are always offered.
_RETRIEVED_PER_TURN = 3
_CLIP = 52
_STOPWORD_TEXT = (
    "about after also and any are because been before but can could did does each every for "
    "from had has have how into its just like more most not now only our over should some "
    "than that the their them then there these they this those through was we were what when "
    "where which while who why will with would you your yesterday today last night morning"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@dataclass(frozen=True, slots=True)
class DemoTurn:
    """One user message and the messages that answered it (tool calls, results, the reply)."""

    user: str
    replies: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class DemoData:
    """The demo's inputs: the system rules, the memory store and the chat, turn by turn."""

    core_rules: str
    memories: tuple[MemoryItem, ...]
    turns: tuple[DemoTurn, ...]


@cache
def load_demo_data() -> DemoData:
    """Read ``demo_data.json``, shipped inside the package."""
    source = resources.files("membrane").joinpath("demo_data.json")
    raw = json.loads(source.read_text(encoding="utf-8"))
    return DemoData(
        core_rules=raw["core_rules"],
        memories=tuple(MemoryItem(**fields) for fields in raw["memories"]),
        turns=tuple(DemoTurn(t["user"], tuple(t["replies"])) for t in raw["turns"]),
    )


@dataclass(frozen=True, slots=True)
class TurnReport:
    """One compiled turn and the numbers the demo prints for it.

    ``prefix_same`` compares this turn's leading messages with the previous turn's cacheable
    prefix (``None`` on the first turn); ``reused_tokens`` is that prefix's size when it was
    byte-identical and large enough for the provider to cache, else 0.
    """

    turn: int
    user_message: str
    result: CompileResult
    regions: dict[str, int]
    prefix_same: bool | None
    reused_tokens: int

    @property
    def sent_tokens(self) -> int:
        return sent_tokens(self.result)

    @property
    def report(self) -> CompileReport:
        """The compile's numbers, typed."""
        return self.result.report


@dataclass(frozen=True, slots=True)
class DemoRun:
    """Every turn of one demo run, with the totals the summary prints."""

    budget: int
    model_id: str
    min_cacheable_tokens: int
    turns: tuple[TurnReport, ...]

    @property
    def total_sent(self) -> int:
        return sum(t.sent_tokens for t in self.turns)

    @property
    def total_reused(self) -> int:
        return sum(t.reused_tokens for t in self.turns)

    @property
    def turns_over_budget(self) -> int:
        return sum(1 for t in self.turns if t.sent_tokens > self.budget or t.report.budget_exceeded)

    @property
    def cut_turns(self) -> tuple[int, ...]:
        """Turns at which more history was dropped than on the turn before."""
        out, before = [], 0
        for t in self.turns:
            dropped = t.report.history_messages_dropped
            if dropped > before:
                out.append(t.turn)
            before = dropped
        return tuple(out)

    @property
    def recall_turns(self) -> tuple[int, ...]:
        return tuple(t.turn for t in self.turns if t.report.fit.messages_recalled)


def _words(text: str) -> set[str]:
    return {
        w
        for w in re.findall(r"[a-z0-9][a-z0-9_.-]*[a-z0-9]", text.lower())
        if len(w) > 3 and w not in _STOPWORDS
    }


def _retrieve(question: str, store: Sequence[MemoryItem]) -> list[MemoryItem]:
    """A stand-in retriever: every procedure, then the facts and episodes sharing most words."""
    asked = _words(question)
    rules = [m for m in store if m.memory_type == "procedural"]
    scored = [
        (len(asked & _words(m.content)), i)
        for i, m in enumerate(store)
        if m.memory_type != "procedural"
    ]
    best = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))
    chosen = sorted(i for _, i in best[:_RETRIEVED_PER_TURN])
    return rules + [store[i] for i in chosen]


def _same_messages(a: Sequence[Message], b: Sequence[Message]) -> bool:
    def wire(messages: Sequence[Message]) -> bytes:
        return json.dumps(list(messages), sort_keys=True, ensure_ascii=False).encode()

    return wire(a) == wire(b)


def run_demo(
    *,
    budget: int = DEFAULT_BUDGET,
    model_id: str = DEFAULT_MODEL,
    turns: Sequence[DemoTurn] | None = None,
    memories: Sequence[MemoryItem] | None = None,
) -> DemoRun:
    """Compile every turn of the chat and collect the per-turn evidence.

    ``turns`` and ``memories`` default to the shipped chat and store (:func:`load_demo_data`).
    """
    data = load_demo_data()
    turns = data.turns if turns is None else turns
    memories = data.memories if memories is None else memories
    compiler = ContextCompiler(budget, model_id, data.core_rules, token_scale=1.0)
    counter = TiktokenAdapter("cl100k_base")
    pricing = get_cache_pricing(model_id)
    min_cacheable = pricing.min_tokens if pricing else 1024
    history: list[Message] = []
    reports: list[TurnReport] = []
    previous: CompileResult | None = None
    for number, turn in enumerate(turns, start=1):
        result = compiler.compile(
            _retrieve(turn.user, memories), turn.user, conversation_messages=list(history)
        )
        parts = prompt_anatomy(result, counter=counter)
        same: bool | None = None
        reused = 0
        if previous is not None:
            stable = previous.report.stable_prefix_messages
            same = _same_messages(previous.messages[:stable], result.messages[:stable])
            prefix = cacheable_prefix_tokens(previous)
            reused = prefix if same and prefix >= min_cacheable else 0
        reports.append(TurnReport(number, turn.user, result, parts.totals(), same, reused))
        history.append({"role": "user", "content": turn.user})
        history.extend(dict(m) for m in turn.replies)
        previous = result
    return DemoRun(budget, model_id, min_cacheable, tuple(reports))


# ---------------------------------------------------------------------- report

_HEAD = (
    f"{'':5}{'tokens per region (content)':^37}   {'sent':>13}  {'memories':^10} "
    f"{'history':^9} {'prefix':>6}  {'prefix vs':<9}\n"
    f"{'turn':>4} {'core':>6}{'index':>6}{'hist':>6}{'mem':>6}{'recall':>7}{'turn':>6}   "
    f"{'total/budget':>13}  {'kept/th/dr':^10} {'drop/rec':^9} {'share':>6}  "
    f"{'last turn':<9}"
)


def _cache_word(report: TurnReport, min_cacheable: int) -> str:
    if report.prefix_same is None:
        return "first"
    if not report.prefix_same:
        return "changed"
    return "hit" if report.reused_tokens else "too small"


def _row(report: TurnReport, run: DemoRun) -> str:
    md = report.report
    r = report.regions
    tail = md.fit
    offered, kept, thinned = tail.segments_offered, tail.segments_kept, tail.segments_thinned
    sent = report.sent_tokens
    prefix = cacheable_prefix_tokens(report.result)
    memories = f"{kept - thinned}/{thinned}/{offered - kept}"
    history = f"{md.history_messages_dropped}/{md.fit.messages_recalled}"
    return (
        f"{report.turn:>4} {r['core']:>6}{r['index']:>6}{r['history']:>6}{r['memories']:>6}"
        f"{r['recall']:>7}{r['current']:>6}   {f'{sent:,}/{run.budget:,}':>13}  "
        f"{memories:^10} {history:^9} {prefix / sent * 100:>5.0f}%  "
        f"{_cache_word(report, run.min_cacheable_tokens):<9}"
    )


def _clip(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3].rstrip() + "..."


def _final_messages(report: TurnReport) -> list[str]:
    """The last compiled prompt, one or a few clipped lines per region."""
    counter = TiktokenAdapter("cl100k_base")
    parts = prompt_anatomy(report.result, counter=counter)
    labels = {
        "core": "core",
        "index": "eviction index",
        "history": "history",
        "memories": "memories",
        "recall": "recall",
        "current": "current turn",
    }
    out = []
    for piece in parts.pieces:
        message = report.result.messages[piece.message_index]
        role = str(message.get("role"))
        if message.get("tool_calls"):
            role += " (tool)"
        head = (
            f"  [{piece.message_index:>2}] {role:<16} {labels[piece.region]:<14}{piece.tokens:>5}  "
        )
        lines = [ln for ln in piece.text.strip().splitlines() if ln.strip()]
        if piece.region in ("index", "memories", "recall") and len(lines) > 1:
            out.append(head + _clip(lines[0], _CLIP))
            out.extend(f"{'':{len(head)}}{_clip(ln, _CLIP)}" for ln in lines[1:4])
            if len(lines) > 4:
                more = len(lines) - 4
                out.append(f"{'':{len(head)}}... {more} more line{'s' if more > 1 else ''}")
        else:
            out.append(head + _clip(piece.text, _CLIP))
    return out


def render_report(run: DemoRun) -> str:
    """The per-turn table, the summary and the final prompt, as printed by :func:`main`."""
    store = load_demo_data().memories
    kinds = {
        k: sum(1 for m in store if m.memory_type == k)
        for k in ("procedural", "semantic", "episodic")
    }
    lines = [
        f"Membrane demo: a {len(run.turns)}-turn engineering support chat, compiled turn by turn",
        *textwrap.wrap(
            f"model {run.model_id}, budget {run.budget:,} tokens, token scale 1.0 (fixed). "
            f"{len(store)} memories in the store ({kinds['procedural']} procedural, "
            f"{kinds['semantic']} semantic, {kinds['episodic']} episodic); each turn offers the "
            f"procedures and up to {_RETRIEVED_PER_TURN} others that share words with the "
            "question.",
            width=100,
        ),
        "",
        *(line.rstrip() for line in _HEAD.splitlines()),
    ]
    lines += [_row(t, run).rstrip() for t in run.turns]
    lines += ["", *legend(run.min_cacheable_tokens), ""]
    sent = run.total_sent
    reused = run.total_reused
    largest = max(run.turns, key=lambda t: t.sent_tokens)
    same = sum(1 for t in run.turns if t.prefix_same)
    final = run.turns[-1].report.window or WindowReport()
    cuts = ", ".join(map(str, run.cut_turns)) or "none"
    lines += [
        "Summary",
        f"  tokens sent              {sent:,} over {len(run.turns)} turns "
        "(content plus message framing)",
        f"  turns over budget        {run.turns_over_budget} (largest turn "
        f"{largest.sent_tokens:,} of {run.budget:,}, turn {largest.turn})",
        f"  history cuts             {len(run.cut_turns)} (turns {cuts}); "
        f"{final.messages_dropped} messages dropped by the end, "
        f"{final.index_lines} index lines",
        f"  recall                   {len(run.recall_turns)} turns brought back "
        f"{sum(t.report.fit.messages_recalled for t in run.turns)} "
        "passages of dropped history",
        f"  prefix repeated          {same} of {len(run.turns) - 1} turns began with the "
        "previous turn's prefix, byte for byte",
        f"  served from that prefix  {reused:,} of {sent:,} tokens sent "
        f"({reused / sent * 100:.1f}%)",
        "",
        f"Final turn ({run.turns[-1].turn}), compiled messages (abbreviated; "
        "tokens are content tokens)",
    ]
    lines += _final_messages(run.turns[-1])
    final_result = run.turns[-1].result
    lines += ["", *citations(final_result, store), ""]
    lines += provider_request(final_result, "demo-chat")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the demo and print its report; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m membrane.demo",
        description="Compile an embedded 30-turn support chat under a small token budget.",
    )
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="token budget")
    args = parser.parse_args(argv)
    sys.stdout.write(render_report(run_demo(budget=args.budget)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
