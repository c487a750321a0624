"""Token savings from trimming and from pre-flight compression, with the answers checked live.

    OPENAI_API_KEY=... python -m benchmarks.token_savings_bench [--model gpt-4.1-mini]
        [--seeds 5] [--chunks 24] [--budget 4000] [--base-url URL] [--out PATH]

Each seed is one retrieval turn: ``--chunks`` document chunks of about 450 tokens (one of them
holds the code the question asks for) and a question. Three prompts are built for it:

- naive: the system prompt, every chunk, the question (no budget);
- trimmed: Membrane under ``--budget`` tokens, the chunks offered as ``middle_extras``;
- compressed: the same, with ``compress_sync`` calling the model to shrink the middle to
  ``MEMORY_PREFLIGHT_TARGET_TOKENS`` first (the middle is above the pre-flight threshold).

Each prompt is sent to OpenAI Chat Completions through the official ``openai`` SDK. The result
gives prompt tokens and savings against naive (the compressor's own tokens counted separately),
and whether each reply stated the code. Needs ``OPENAI_API_KEY``; costs API credits.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._live import Answer, add_live_args, ask_openai, judge, openai_client, require_key

__all__ = ["build_turn", "main"]

SYSTEM = "Answer from the notes. Quote codes exactly; say so when the notes lack the answer."
COMPRESS = (
    "Shorten the notes below to at most {target} tokens for answering this question: "
    "{question}\nKeep every code, name and [Mem:N] tag exactly as written. Reply with the "
    "shortened notes only.\n\n{notes}"
)


def build_turn(seed: int, chunks: int) -> tuple[list[str], str, str]:
    """(chunks, question, code): filler chunks, one holding the asked-for code (seeded)."""
    from benchmarks._text import TextFactory
    from benchmarks._tokens import count_text

    factory = TextFactory(random.Random(seed))
    fact = factory.fact()
    docs = []
    for _ in range(chunks):
        text = ""
        while count_text(text) < 450:
            text += " ".join(factory.filler(6)) + "\n"
        docs.append(text.strip())
    where = random.Random(seed).randrange(chunks)
    lines = docs[where].split("\n")
    lines.insert(len(lines) // 2, factory.statement(fact))
    docs[where] = "\n".join(lines)
    return docs, factory.question(fact), fact.code


def _prompts(
    docs: list[str], question: str, budget: int, compressor: Any
) -> dict[str, list[dict[str, Any]]]:
    from membrane import ContextCompiler

    naive = [
        {"role": "system", "content": SYSTEM + "\n\n" + "\n\n".join(docs)},
        {"role": "user", "content": question},
    ]
    out = {"naive": naive}
    for mode, compress in (("trimmed", None), ("compressed", compressor)):
        compiler = ContextCompiler(max_tokens=budget, core_content=SYSTEM, token_scale=1.0)
        result = compiler.compile(
            user_message=question,
            middle_extras=[(doc, 2) for doc in docs],
            compress_sync=compress,
        )
        out[mode] = list(result.messages)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.token_savings_bench", description=__doc__
    )
    add_live_args(parser, "gpt-4.1-mini")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--chunks", type=int, default=24)
    parser.add_argument("--budget", type=int, default=4000)
    parser.add_argument("--out", type=Path, default=None, help="results JSON path")
    args = parser.parse_args(argv)
    key = require_key("openai", "token_savings_bench")
    from benchmarks._report import RESULTS_DIR
    from benchmarks._tokens import count_messages

    client = openai_client(key, args.base_url)
    compressor_usage: list[Answer] = []

    def compress(raw: str, target: int, question: str) -> str:
        prompt = COMPRESS.format(target=target, question=question, notes=raw)
        answer = ask_openai(client, [{"role": "user", "content": prompt}], args.model, 2 * target)
        compressor_usage.append(answer)
        return answer.text

    rows: dict[str, dict[str, Any]] = {m: {"tokens": 0, "correct": 0} for m in _MODES}
    for seed in range(1, args.seeds + 1):
        docs, question, code = build_turn(seed, args.chunks)
        for mode, messages in _prompts(docs, question, args.budget, compress).items():
            answer = ask_openai(client, messages, args.model, args.max_tokens)
            rows[mode]["tokens"] += count_messages(messages)
            rows[mode]["correct"] += judge(answer.text, [code])[0]
    naive_tokens = rows["naive"]["tokens"]
    for row in rows.values():
        row["accuracy"] = row.pop("correct") / args.seeds
        row["saving_vs_naive"] = 1 - row["tokens"] / naive_tokens if naive_tokens else None
    payload = {
        "suite": "token_savings_bench",
        "date": datetime.date.today().isoformat(),
        "model": args.model,
        "seeds": args.seeds,
        "chunks": args.chunks,
        "budget": args.budget,
        "modes": rows,
        "compressor": {
            "calls": len(compressor_usage),
            "input_tokens": sum(a.input_tokens for a in compressor_usage),
            "output_tokens": sum(a.output_tokens for a in compressor_usage),
        },
    }
    print(json.dumps(payload["modes"], indent=2), file=sys.stderr)
    out = args.out or RESULTS_DIR / "token_savings.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


_MODES = ("naive", "trimmed", "compressed")

if __name__ == "__main__":
    sys.exit(main())
