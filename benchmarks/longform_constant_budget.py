"""Constant-size long-form memory against sending every summary, and recall speed, in one run.

    python -m benchmarks.longform_constant_budget [--quick]

(a) A synthetic 10,000-chapter book (about 60 tokens of summary per chapter, 400 entities,
    one 256-dimension embedding per chapter) is written to a SQLite file in a temporary
    directory. At chapters 10 ... 10,000 the memory block from ``LongformStore.memory_block``
    (total 6,000 tokens, retrieval on) is measured in cl100k_base tokens and by the built-in
    estimate, beside the naive alternative: every earlier summary concatenated.
(b) ``search_top_k`` over 1,000 and 10,000 stored vectors of dimension 1,536, pure Python
    against NumPy, median of several runs each; both paths must return the same hits.

Writes ``benchmarks/results/longform_constant_budget.json`` and ``.png`` and prints a table.
``--quick`` measures fewer chapters and runs; do not commit its output.
"""

from __future__ import annotations

import argparse
import base64
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks._report import RESULTS_DIR, machine, write_result
from membrane.longform import (
    DEFAULT_MEMORY_BUDGET,
    ChapterSummary,
    Entity,
    LongformStore,
    encode_vector,
    estimate_tokens,
    numpy_available,
    search_top_k,
)
from membrane.tokenizers import TiktokenAdapter

__all__ = ["main"]

NAME = "longform_constant_budget"
CHAPTERS = 10_000
TABLE_CHAPTERS = (10, 100, 1_000, 10_000)
PLOT_CHAPTERS = (10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000)
BOOK_DIM = 256
TOPICS = 40
SEARCH_DIM = 1_536
SEARCH_SIZES = (1_000, 10_000)

_NAMES = [
    f"{first} {last}"
    for first in ("Mara", "Ilse", "Tomas", "Lin", "Oren", "Sefa", "Bram", "Noor", "Kai", "Edda")
    for last in ("Vale", "Quist", "Harrow", "Okafor", "Lund", "Reyes", "Sato", "Byrne")
]
_PLACES = [
    "the harbour",
    "the lighthouse",
    "the salt market",
    "the north reef",
    "the archive",
    "the customs house",
    "the drowned chapel",
    "the shipyard",
    "the border fort",
]
_ACTS = [
    "argues with",
    "follows",
    "deceives",
    "rescues",
    "bargains with",
    "confronts",
    "hides from",
    "writes to",
    "betrays",
    "trains",
]
_THINGS = [
    "a forged letter",
    "the second map",
    "a stolen ledger",
    "the brass key",
    "a sealed crate",
    "the captain's log",
    "a debt marker",
    "the signal lamp",
]


def _summary(number: int, rng: random.Random) -> str:
    a, b, c = rng.sample(_NAMES, 3)
    return (
        f"{a} {rng.choice(_ACTS)} {b} at {rng.choice(_PLACES)} over {rng.choice(_THINGS)}. "
        f"Meanwhile {c} {rng.choice(_ACTS)} {a} near {rng.choice(_PLACES)}, and the crew learns "
        f"that {rng.choice(_THINGS)} was never where the old records said. The chapter ends "
        f"as {b} decides to {rng.choice(['leave', 'stay', 'confess', 'wait'])} before dawn."
    )


def _entity_names() -> list[str]:
    kin = ("", " the elder", " the younger", " of the reef", " of the fort")
    return [name + suffix for suffix in kin for name in _NAMES]


def _unit_gaussian(rng: random.Random, dim: int) -> list[float]:
    return [rng.gauss(0.0, 1.0) for _ in range(dim)]


def build_book(path: Path, chapters: int) -> dict[str, Any]:
    """Write the synthetic book; return its size and the topic centroids used for queries."""
    rng = random.Random(7)
    centroids = [_unit_gaussian(rng, BOOK_DIM) for _ in range(TOPICS)]

    def chapter_rows() -> Any:
        for number in range(1, chapters + 1):
            local = random.Random(number)
            topic = centroids[number % TOPICS]
            vec = [x + local.gauss(0.0, 1.2) for x in topic]
            yield ChapterSummary(number, _summary(number, local), "", encode_vector(vec))

    started = time.perf_counter()
    with LongformStore(path) as store:
        store.put_chapters(chapter_rows())
        entities = []
        for number, name in enumerate(_entity_names()):
            # The main cast (one in ten) is introduced in the first ten chapters; everyone else
            # appears at a random point of the book.
            first = rng.randint(1, 10) if number % 10 == 0 else rng.randint(1, chapters)
            entities.append(
                Entity(
                    name,
                    f"{rng.choice(['sailor', 'clerk', 'smuggler', 'officer'])} from "
                    f"{rng.choice(_PLACES)}; owes {rng.choice(_NAMES)} {rng.choice(_THINGS)}",
                    importance=rng.random(),
                    last_seen_chapter=rng.randint(first, chapters),
                    first_seen_chapter=first,
                )
            )
        store.put_entities(entities)
    return {
        "seconds": time.perf_counter() - started,
        "bytes": sum(p.stat().st_size for p in path.parent.glob(path.name + "*")),
        "centroids": centroids,
    }


def _median_ms(run: Callable[[], object], repeats: int) -> float:
    run()  # warm-up: first-use caches and imports
    samples = []
    for _ in range(repeats):
        started = time.perf_counter_ns()
        run()
        samples.append((time.perf_counter_ns() - started) / 1e6)
    return statistics.median(samples)


def measure_blocks(
    path: Path, centroids: list[list[float]], chapters: Sequence[int], repeats: int
) -> list[dict[str, Any]]:
    cl100k = TiktokenAdapter("cl100k_base")
    rows: list[dict[str, Any]] = []
    with LongformStore(path) as store:
        everything = list(store.iter_chapters())
        for chapter in chapters:
            rng = random.Random(chapter)
            query = [x + rng.gauss(0.0, 0.6) for x in centroids[chapter % TOPICS]]

            def build(
                chapter: int = chapter, query: list[float] = query, counter: Any = None
            ) -> Any:
                return store.memory_block(
                    chapter, total=DEFAULT_MEMORY_BUDGET, query_embedding=query, counter=counter
                )

            block = build()
            text = block.render()
            exact_text = build(counter=cl100k).render()
            naive = "".join(f"Ch.{c.number}: {c.summary}\n" for c in everything[: chapter - 1])
            result = block.result
            rows.append(
                {
                    "chapter": chapter,
                    "block_tokens_cl100k": cl100k.count(text),
                    "block_tokens_estimate": estimate_tokens(text),
                    "block_used_tokens": block.used_tokens,
                    "block_reserved_tokens": block.reserved_tokens,
                    "exact_counter_block_tokens_cl100k": cl100k.count(exact_text),
                    "naive_tokens_cl100k": cl100k.count(naive),
                    "naive_tokens_estimate": estimate_tokens(naive),
                    "sections": {
                        name: {
                            "kept": len(fitted.kept),
                            "dropped": fitted.dropped,
                            "tokens": fitted.used_tokens,
                        }
                        for name, fitted in result.sections.items()
                    },
                    "build_ms_median": _median_ms(build, repeats),
                    "exact_counter_build_ms_median": _median_ms(
                        lambda build=build: build(counter=cl100k), repeats
                    ),
                }
            )
    return rows


def measure_search(sizes: Sequence[int], repeats: int) -> list[dict[str, Any]]:
    if not numpy_available():
        print("NumPy is not installed: timing the pure path only", file=sys.stderr)
    rng = random.Random(11)
    centroids = [_unit_gaussian(rng, SEARCH_DIM) for _ in range(50)]
    largest = max(sizes)
    stored = []
    for i in range(largest):
        topic = centroids[i % 50]
        stored.append((i, encode_vector([x + rng.gauss(0.0, 1.5) for x in topic])))
    query = [x + rng.gauss(0.0, 1.0) for x in centroids[3]]
    out: list[dict[str, Any]] = []
    for size in sizes:
        rows = stored[:size]

        def pure(rows: list[tuple[int, str]] = rows) -> Any:
            return search_top_k(query, rows, lambda r: r[1], use_numpy=False)

        def decode_only(rows: list[tuple[int, str]] = rows) -> Any:
            return [base64.b64decode(r[1], validate=True) for r in rows]

        entry: dict[str, Any] = {"rows": size, "dim": SEARCH_DIM, "k": 6, "runs": repeats}
        # Both paths first turn every TEXT value back into bytes; this is that share alone.
        entry["base64_decode_ms_median"] = _median_ms(decode_only, repeats)
        entry["pure_ms_median"] = _median_ms(pure, repeats)
        hits = pure()
        entry["hits"] = len(hits)
        if numpy_available():

            def vectorised(rows: list[tuple[int, str]] = rows) -> Any:
                return search_top_k(query, rows, lambda r: r[1], use_numpy=True)

            fast_hits = vectorised()
            entry["same_hits"] = [(h.row[0], h.score) for h in fast_hits] == [
                (h.row[0], h.score) for h in hits
            ]
            if not entry["same_hits"]:
                raise AssertionError("NumPy and pure search disagree; see test_vector.py")
            entry["numpy_ms_median"] = _median_ms(vectorised, repeats)
            entry["speedup"] = entry["pure_ms_median"] / entry["numpy_ms_median"]
        out.append(entry)
    return out


def plot(path: Path, blocks: list[dict[str, Any]], budget: int) -> Path | None:
    """Tokens against chapter, both axes logarithmic; None when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    chapters = [row["chapter"] for row in blocks]
    fig, ax = plt.subplots(figsize=(8, 4.6))
    ax.plot(
        chapters,
        [r["naive_tokens_cl100k"] for r in blocks],
        marker="o",
        label="every earlier summary concatenated",
    )
    ax.plot(
        chapters,
        [r["block_tokens_cl100k"] for r in blocks],
        marker="o",
        label="membrane.longform memory block",
    )
    ax.plot(
        chapters,
        [r["exact_counter_block_tokens_cl100k"] for r in blocks],
        linestyle=":",
        label="memory block, counted with cl100k_base (counter=)",
    )
    ax.axhline(budget, color="grey", linestyle="--", linewidth=1, label=f"budget ({budget:,})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("chapter being written")
    ax.set_ylabel("memory tokens (cl100k_base)")
    ax.set_title("Memory for a synthetic 10,000-chapter book")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _print_tables(blocks: list[dict[str, Any]], search: list[dict[str, Any]]) -> None:
    print(f"\nMemory block (total {DEFAULT_MEMORY_BUDGET:,}) vs all summaries, cl100k_base tokens")
    print(
        f"{'chapter':>8} {'block':>7} {'estimate':>9} {'exact mode':>11} {'naive':>10} "
        f"{'naive/block':>12} {'build ms':>9}"
    )
    for row in blocks:
        if row["chapter"] not in TABLE_CHAPTERS:
            continue
        ratio = row["naive_tokens_cl100k"] / max(1, row["block_tokens_cl100k"])
        print(
            f"{row['chapter']:>8,} {row['block_tokens_cl100k']:>7,} "
            f"{row['block_tokens_estimate']:>9,} "
            f"{row['exact_counter_block_tokens_cl100k']:>11,} {row['naive_tokens_cl100k']:>10,} "
            f"{ratio:>11.1f}x {row['build_ms_median']:>9.1f}"
        )
    print(f"\nsearch_top_k, dimension {SEARCH_DIM:,}, median ms")
    print(
        f"{'rows':>8} {'base64 only':>12} {'pure':>9} {'numpy':>9} {'speedup':>8} {'same hits':>10}"
    )
    for entry in search:
        numpy_ms = entry.get("numpy_ms_median")
        speed = entry.get("speedup")
        print(
            f"{entry['rows']:>8,} {entry['base64_decode_ms_median']:>12.1f} "
            f"{entry['pure_ms_median']:>9.1f} "
            f"{numpy_ms if numpy_ms is None else format(numpy_ms, '.1f'):>9} "
            f"{'' if speed is None else format(speed, '.1f') + 'x':>8} "
            f"{entry.get('same_hits', '-')!s:>10}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer chapters and runs")
    args = parser.parse_args(argv)
    chapters = TABLE_CHAPTERS if args.quick else PLOT_CHAPTERS
    repeats = 2 if args.quick else 5

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="longform-bench-") as tmp:
        path = Path(tmp) / "book.db"
        book = build_book(path, CHAPTERS)
        print(
            f"wrote {CHAPTERS:,} chapters in {book['seconds']:.1f} s "
            f"({book['bytes'] / 1e6:.1f} MB)",
            file=sys.stderr,
        )
        blocks = measure_blocks(path, book["centroids"], chapters, repeats)
    search = measure_search(SEARCH_SIZES, repeats)

    by_chapter = {row["chapter"]: row for row in blocks}
    payload = {
        "command": f"python -m benchmarks.{NAME}" + (" --quick" if args.quick else ""),
        "machine": machine(),
        "book": {
            "chapters": CHAPTERS,
            "entities": len(_entity_names()),
            "embedding_dim": BOOK_DIM,
            "write_seconds": book["seconds"],
            "sqlite_bytes": book["bytes"],
        },
        "budget": DEFAULT_MEMORY_BUDGET,
        "blocks": blocks,
        "growth_1000_to_10000_tokens": by_chapter[10_000]["block_tokens_cl100k"]
        - by_chapter[1_000]["block_tokens_cl100k"],
        "growth_5000_to_10000_tokens": (
            by_chapter[10_000]["block_tokens_cl100k"] - by_chapter[5_000]["block_tokens_cl100k"]
            if 5_000 in by_chapter
            else None
        ),
        "search": search,
        "seconds": time.perf_counter() - started,
    }
    json_path = write_result(NAME, payload)
    png_path = plot(RESULTS_DIR / f"{NAME}.png", blocks, DEFAULT_MEMORY_BUDGET)
    _print_tables(blocks, search)
    print(f"\nwrote {json_path}" + (f" and {png_path}" if png_path else " (no matplotlib)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
