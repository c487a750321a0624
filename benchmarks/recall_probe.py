"""Recall of dropped history on the conversation benchmark's questions only: a fast probe.

python -m benchmarks.recall_probe [--split dev] [--out NAME]

Plays the same chats as ``benchmarks.conversations`` through one Membrane compiler per
conversation and budget, but compiles only the questions (next and end mode), not the chat
turns, and bills nothing. The cut is a replay of the history, so skipping the chat turns
leaves every question's prompt as the full benchmark builds it: recall, recalled tokens and
the wasted share per kind come out the same, in about a tenth of the time. Costs need the
full benchmark. Used to screen recall variants before a full run (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from typing import Any

from benchmarks._chat_scoring import judge, scored_texts
from benchmarks._chats import KINDS, Conversation, build_conversation, conversation_seeds
from benchmarks._report import machine, write_result
from benchmarks._suite import command_line
from benchmarks._tokens import count_text
from benchmarks.conversations import BUDGETS, MODES

__all__ = ["main", "probe"]


def _recall_block(messages: list[dict[str, Any]], question: str) -> str:
    from membrane.stages.history import RECALL_HEADER

    text = str(messages[-1].get("content") or "")
    head, sep, _ = text.rpartition(question)
    start = head.find(RECALL_HEADER)
    return head[start:] if sep and start >= 0 else ""


def probe(
    seeds: list[int], budget: int, speakers: bool = False, embedder: Any = None
) -> dict[str, dict[str, dict[str, Any]]]:
    """Per mode and kind: questions, hits, recalled and wasted tokens, and recall reasons.

    ``speakers``: every compile passes who is who (``speakers=``, each person's name and role).
    ``embedder``: passed to every compiler (``embedder=``), e.g. ``local_embedder()``.
    """
    out: dict[str, dict[str, dict[str, Any]]] = {
        mode: {kind: defaultdict(int) for kind in (*KINDS, "all")} for mode in MODES
    }
    for seed in seeds:
        _play(build_conversation(seed), budget, out, speakers, embedder)
    return {mode: {k: dict(v) for k, v in kinds.items()} for mode, kinds in out.items()}


def _play(
    conv: Conversation,
    budget: int,
    out: dict[str, dict[str, dict[str, Any]]],
    speakers: bool,
    embedder: Any,
) -> None:
    from membrane import ContextCompiler

    compiler = ContextCompiler(
        model_id="openai/gpt-4o",
        max_tokens=budget,
        core_content=conv.system_prompt,
        token_scale=1.0,
        embedder=embedder,
    )
    texts = [m.text for m in conv.messages]
    who = {m.speaker: m.role for m in conv.messages} if speakers else None
    history: list[dict[str, Any]] = []
    asked: dict[int, list[int]] = defaultdict(list)
    for i, q in enumerate(conv.questions):
        asked[q.ask_after].append(i)

    def ask(index: int, mode: str) -> None:
        q = conv.questions[index]
        result = compiler.compile(
            memories=[], conversation_messages=list(history), user_message=q.text, speakers=who
        )
        messages = list(result.messages)
        scored = scored_texts(messages, conv.system_prompt, q.text)
        evidence = [texts[e] for e in q.evidence]
        hit = judge(scored, evidence).hit
        recalled_any = result.metadata.get("history_messages_recalled")
        block = _recall_block(messages, q.text) if recalled_any else ""
        recalled = wasted = 0
        if block:
            recalled = sum(count_text(line) for line in block.splitlines()[2:] if line.strip())
            without = [*scored[:-1], scored[-1].replace(block, "", 1)]
            # Wasted: the window already held the answer, or it is incomplete even so.
            if judge(without, evidence).hit or not hit:
                wasted = recalled
        reason = str(result.metadata.get("history_recall_reason"))
        for kind in (q.kind, "all"):
            row = out[mode][kind]
            row["questions"] += 1
            row["hits"] += hit
            row["recalled_tokens"] += recalled
            row["wasted_tokens"] += wasted
            row[f"reason_{reason}"] += 1

    for session in conv.sessions:
        for m in conv.messages[session.first : session.stop]:
            history.append({"role": m.role, "content": m.text})
        for index in asked.get(session.index, ()):
            ask(index, "next")
    for index in range(len(conv.questions)):
        ask(index, "end")


def _line(row: dict[str, Any]) -> str:
    recalled = row["recalled_tokens"]
    waste = f"{row['wasted_tokens'] / recalled:.0%}" if recalled else "-"
    return f"{row['hits'] / row['questions']:.1%}, {recalled:,} recalled, {waste} wasted"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=30)
    parser.add_argument("--split", default="dev", choices=("dev", "heldout", "all"))
    parser.add_argument("--out", default="recall_probe")
    parser.add_argument("--note", default="", help="what the measured code changes (recorded)")
    parser.add_argument(
        "--speakers", action="store_true", help="pass each chat's speakers map to Membrane"
    )
    parser.add_argument(
        "--embedder",
        action="store_true",
        help="pass membrane.lod.local_embedder() to Membrane (needs the embed extra)",
    )
    parser.add_argument(
        "--static",
        action="store_true",
        help="pass membrane.lod.static_embedder() instead (needs the static extra)",
    )
    args = parser.parse_args(argv)
    embedder = None
    if args.embedder or args.static:
        from membrane.lod import local_embedder, static_embedder

        embedder = static_embedder() if args.static else local_embedder()
    seeds = conversation_seeds(args.conversations, args.split)
    started = time.perf_counter()
    results = {str(budget): probe(seeds, budget, args.speakers, embedder) for budget in BUDGETS}
    for budget, modes in results.items():
        for mode, kinds in modes.items():
            parts = "; ".join(f"{kind} {_line(kinds[kind])}" for kind in (*KINDS, "all"))
            print(f"{budget} {mode}: {parts}")
    write_result(
        args.out,
        {
            "suite": "recall_probe",
            "command": command_line(),
            "machine": machine(),
            "elapsed_seconds": round(time.perf_counter() - started, 1),
            "settings": {
                "conversations": args.conversations,
                "split": args.split,
                "speakers": args.speakers,
                "embedder": (
                    "static_embedder()"
                    if args.static
                    else "local_embedder()"
                    if args.embedder
                    else None
                ),
            },
            "variant": args.note,
            "results": results,
        },
    )


if __name__ == "__main__":
    main()
