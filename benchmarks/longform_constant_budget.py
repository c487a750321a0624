"""Constant-size long-form memory against sending every summary, and recall speed, in one run.

    python -m benchmarks.longform_constant_budget [--quick]

(a) A synthetic 10,000-chapter book (about 60 tokens of summary per chapter, 400 entities,
    one 256-dimension embedding per chapter) is written to a SQLite file in a temporary
    directory. At chapters 10 ... 10,000 the memory block from ``LongformStore.memory_block``
    (total 6,000 tokens, retrieval on) is measured in cl100k_base tokens and by the built-in
    estimate, beside the naive alternative: every earlier summary concatenated.
(b) Search over 1,000 / 10,000 / 100,000 stored vectors of dimension 1,536: the published
    ``longform-memory`` 0.1.1 (in its own virtual environment, ``.venv-oracle``, run as a
    separate process) against our pure-Python ``search_top_k``, its NumPy path, and
    ``LongformStore.search`` with its cached matrix, cold (first query after opening the file,
    and first query after a write) and warm. Both processes generate the same rows and query
    from one seed and encode them with their own ``encode_vector``; the sha256 of the encoded
    rows and every returned hit (row and float bits of the score) must match across all paths.
    Then 1,000 writes interleaved with queries on a 1,000-row document.

Writes ``benchmarks/results/longform_constant_budget.json`` and ``.png`` and prints a table.
``--quick`` measures fewer chapters, sizes and runs; do not commit its output.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import _longform_published as workload
from benchmarks._report import RESULTS_DIR, machine, write_result
from membrane.longform import (
    DEFAULT_MEMORY_BUDGET,
    ChapterSummary,
    Entity,
    LongformStore,
    VectorCache,
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
SEARCH_SEED = 5
# (rows, repeated timings of the pure-Python paths after the first query). The published
# package and our pure path take seconds per query at 100,000 rows on this machine, so that
# size gets fewer repetitions; the NumPy and store paths always get WARM_RUNS.
SEARCH_SIZES = ((1_000, 7), (10_000, 3), (100_000, 1))
QUICK_SIZES = ((1_000, 2), (10_000, 1))
WARM_RUNS = 21
INTERLEAVE_BASE = 1_000
INTERLEAVE_STEPS = 1_000
# The published package and our pure path are queried after every 10th write (a query costs
# them a full decode and scan); the store path after every write.
INTERLEAVE_EVERY = 10
ROOT = Path(__file__).resolve().parents[1]

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


def _oracle_python() -> Path:
    configured = os.environ.get("LONGFORM_ORACLE_PYTHON")
    python = Path(configured) if configured else ROOT / ".venv-oracle" / "bin" / "python"
    if not python.exists():
        raise SystemExit(
            f"no published longform-memory environment at {python}: run `make oracle` first"
        )
    return python


def run_published(sizes: Sequence[tuple[int, int]], steps: int) -> dict[str, Any]:
    """The published package's timings, from a process of the oracle environment."""
    command = [
        str(_oracle_python()),
        "-I",
        str(Path(workload.__file__).resolve()),
        "--sizes",
        ",".join(str(rows) for rows, _ in sizes),
        "--repeats",
        ",".join(str(repeats) for _, repeats in sizes),
        "--dim",
        str(SEARCH_DIM),
        "--seed",
        str(SEARCH_SEED),
        "--interleave-base",
        str(INTERLEAVE_BASE),
        "--interleave-steps",
        str(steps),
        "--interleave-every",
        str(INTERLEAVE_EVERY),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd="/")
    result: dict[str, Any] = json.loads(done.stdout)
    if result["version"] != "0.1.1" or str(ROOT / "src") in result["package"]:
        raise SystemExit(f"the oracle process did not load the published package: {result}")
    return result


def _hits(pairs: Sequence[tuple[int, float]]) -> list[list[Any]]:
    return [[row, score.hex()] for row, score in pairs]


def _median(samples: Sequence[float]) -> float:
    return float(statistics.median(samples))


def _time_path(run: Callable[[], list[tuple[int, float]]], repeats: int) -> dict[str, Any]:
    first_ms, _, hits = workload.timed_both(run)
    runs = [workload.timed_both(run) for _ in range(repeats)]
    samples = [wall for wall, _, _ in runs]
    return {"first_query_ms": first_ms, "query_ms": samples, "query_ms_median": _median(samples),
            "query_cpu_ms_median": _median([cpu for _, cpu, _ in runs]),
            "hits": _hits(hits)}  # fmt: skip


def _store_search(store: LongformStore, query: Sequence[float]) -> list[tuple[int, float]]:
    # Chapter n holds row n - 1 of the workload.
    return [(hit.row.number - 1, hit.score) for hit in store.search(query)]


def measure_search(
    sizes: Sequence[tuple[int, int]], steps: int, published: dict[str, Any], tmp: Path
) -> dict[str, Any]:
    """Our paths on the rows and query the published process used; every hit list compared."""
    if not numpy_available():
        raise SystemExit("this benchmark times the NumPy and store paths: install numpy")
    largest = max(max(rows for rows, _ in sizes), INTERLEAVE_BASE + steps)
    started = time.perf_counter()
    encoded = [encode_vector(v) for v in workload.row_vectors(largest, SEARCH_DIM, SEARCH_SEED)]
    encode_seconds = time.perf_counter() - started
    query = [float(x) for x in workload.query_vector(SEARCH_DIM, SEARCH_SEED)]
    out: dict[str, Any] = {"encode_seconds": encode_seconds, "sizes": []}

    for (size, repeats), theirs in zip(sizes, published["sizes"], strict=True):
        if workload.digest(encoded[:size]) != theirs["digest"]:
            raise AssertionError(f"{size} rows: the encoded bytes differ from the published ones")
        rows = [(i, encoded[i]) for i in range(size)]

        def scan(use_numpy: bool, rows: list[tuple[int, str]] = rows) -> list[tuple[int, float]]:
            hits = search_top_k(query, rows, lambda r: r[1], use_numpy=use_numpy)
            return [(hit.row[0], hit.score) for hit in hits]

        entry: dict[str, Any] = {"rows": size, "dim": SEARCH_DIM, "k": 6, "digest_equal": True}
        kept = ("first_query_ms", "query_ms", "query_ms_median", "query_cpu_ms_median", "hits")
        entry["published"] = {key: theirs[key] for key in kept}
        entry["pure"] = _time_path(lambda: scan(False), repeats)
        entry["numpy"] = _time_path(lambda: scan(True), WARM_RUNS)

        path = tmp / f"search-{size}.db"
        with LongformStore(path) as store:
            write_ms, _ = workload.timed_ms(
                lambda size=size: store.put_chapters(
                    ChapterSummary(i + 1, "", "", encoded[i]) for i in range(size)
                )
            )
        cache = VectorCache(max_bytes=2 * 1024**3)
        with LongformStore(path, vector_cache=cache) as store:
            cold_ms, cold_hits = workload.timed_ms(lambda: _store_search(store, query))
            warm_runs = [
                workload.timed_both(lambda: _store_search(store, query)) for _ in range(WARM_RUNS)
            ]
            warm = [(wall, hits) for wall, _, hits in warm_runs]
            # One more chapter, then the next query: the matrix is patched, not reloaded.
            extra = encoded[largest - 1]
            put_ms, _ = workload.timed_ms(
                lambda size=size, extra=extra: store.put_chapter(size + 1, "", embedding=extra)
            )
            after_write_ms, after_hits = workload.timed_ms(lambda: _store_search(store, query))
            cache_bytes = cache.bytes_used
        entry["store"] = {
            "bulk_write_ms": write_ms,
            "cold_first_query_after_open_ms": cold_ms,
            "warm_query_ms": [ms for ms, _ in warm],
            "warm_query_ms_median": _median([ms for ms, _ in warm]),
            "warm_query_cpu_ms_median": _median([cpu for _, cpu, _ in warm_runs]),
            "write_one_chapter_ms": put_ms,
            "first_query_after_write_ms": after_write_ms,
            "cache_bytes": cache_bytes,
            "hits": _hits(cold_hits),
            "hits_after_write": _hits(after_hits),
        }
        paths = [entry["published"]["hits"], entry["pure"]["hits"], entry["numpy"]["hits"],
                 entry["store"]["hits"]] + [_hits(hits) for _, hits in warm]  # fmt: skip
        entry["identical_hits"] = all(hits == paths[0] for hits in paths)
        if not entry["identical_hits"]:
            raise AssertionError(f"{size} rows: the paths disagree on the hits")
        published_ms = entry["published"]["query_ms_median"]
        entry["speedup_vs_published"] = {
            "pure": published_ms / entry["pure"]["query_ms_median"],
            "numpy": published_ms / entry["numpy"]["query_ms_median"],
            "store_warm": published_ms / entry["store"]["warm_query_ms_median"],
            "store_cold_after_open": published_ms / cold_ms,
            "store_warm_cpu": entry["published"]["query_cpu_ms_median"]
            / entry["store"]["warm_query_cpu_ms_median"],
            "store_after_write": published_ms / after_write_ms,
        }
        out["sizes"].append(entry)
        print(f"search: {size:,} rows done", file=sys.stderr)

    out["interleaved"] = _interleave(encoded, query, steps, published["interleaved"], tmp)
    return out


def _interleave(
    encoded: list[str],
    query: list[float],
    steps: int,
    theirs: list[dict[str, Any]],
    tmp: Path,
) -> dict[str, Any]:
    """``steps`` one-chapter writes, each followed by a store query, on a 1,000-row document;
    the published package and our pure path answer the same query every 10th write."""
    path = tmp / "interleaved.db"
    with LongformStore(path) as store:
        store.put_chapters(
            ChapterSummary(i + 1, "", "", encoded[i]) for i in range(INTERLEAVE_BASE)
        )
    writes: list[float] = []
    store_queries: list[float] = []
    pure_queries: list[float] = []
    compared = 0
    published_by_step = {q["step"]: q for q in theirs}
    with LongformStore(path) as store:
        _store_search(store, query)  # load the matrix once
        for step in range(steps):
            index = INTERLEAVE_BASE + step
            write_ms, _ = workload.timed_ms(
                lambda index=index: store.put_chapter(index + 1, "", embedding=encoded[index])
            )
            query_ms, hits = workload.timed_ms(lambda: _store_search(store, query))
            writes.append(write_ms)
            store_queries.append(query_ms)
            if step in published_by_step:
                rows = [(i, encoded[i]) for i in range(index + 1)]
                pure_ms, pure_hits = workload.timed_ms(
                    lambda rows=rows: [
                        (h.row[0], h.score)
                        for h in search_top_k(query, rows, lambda r: r[1], use_numpy=False)
                    ]
                )
                pure_queries.append(pure_ms)
                if not (_hits(hits) == _hits(pure_hits) == published_by_step[step]["hits"]):
                    raise AssertionError(f"interleaved step {step}: the paths disagree")
                compared += 1
    published_ms = [q["ms"] for q in theirs]
    return {
        "base_rows": INTERLEAVE_BASE,
        "writes": steps,
        "published_queried_every": INTERLEAVE_EVERY,
        "store_write_ms_median": _median(writes),
        "store_query_ms_median": _median(store_queries),
        "store_total_seconds": (sum(writes) + sum(store_queries)) / 1e3,
        "published_query_ms_median": _median(published_ms),
        "pure_query_ms_median": _median(pure_queries),
        "published_seconds_if_queried_every_write": _median(published_ms) * steps / 1e3,
        "identical_hits_at_compared_steps": compared,
        "speedup_store_query_vs_published": _median(published_ms) / _median(store_queries),
    }


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


def _print_tables(blocks: list[dict[str, Any]], search: dict[str, Any]) -> None:
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
    print(
        f"\nsearch over {SEARCH_DIM:,}-dimension vectors, median ms (identical hits on all paths)"
    )
    print(
        f"{'rows':>8} {'published':>10} {'pure':>9} {'numpy':>8} {'store warm':>11} "
        f"{'store cold':>11} {'after write':>12} {'warm speedup':>13}"
    )
    for entry in search["sizes"]:
        store = entry["store"]
        print(
            f"{entry['rows']:>8,} {entry['published']['query_ms_median']:>10.1f} "
            f"{entry['pure']['query_ms_median']:>9.1f} {entry['numpy']['query_ms_median']:>8.1f} "
            f"{store['warm_query_ms_median']:>11.2f} "
            f"{store['cold_first_query_after_open_ms']:>11.1f} "
            f"{store['first_query_after_write_ms']:>12.2f} "
            f"{entry['speedup_vs_published']['store_warm']:>12.0f}x"
        )
    inter = search["interleaved"]
    print(
        f"\ninterleaved: {inter['writes']:,} writes + queries on {inter['base_rows']:,} rows: "
        f"store write {inter['store_write_ms_median']:.2f} ms, query "
        f"{inter['store_query_ms_median']:.2f} ms (published "
        f"{inter['published_query_ms_median']:.1f} ms, pure {inter['pure_query_ms_median']:.1f} "
        "ms per query)"
    )
    print(f"one damaged row first: published {search['corrupt_row_case']['published']}, "
          f"ours {search['corrupt_row_case']['ours']}")  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{NAME}", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer chapters and runs")
    args = parser.parse_args(argv)
    # One BLAS thread, set before NumPy loads: the published package and our pure path run on
    # one core, and on this shared two-core machine OpenBLAS's worker threads spin against the
    # other tenants (a 1,000 x 1,536 float32 product measured 0.4 ms on one thread, 7.9 ms on
    # the default two).
    if "numpy" in sys.modules:
        raise SystemExit("NumPy was imported before the BLAS thread count could be set")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    chapters = TABLE_CHAPTERS if args.quick else PLOT_CHAPTERS
    repeats = 2 if args.quick else 5
    sizes = QUICK_SIZES if args.quick else SEARCH_SIZES
    steps = 100 if args.quick else INTERLEAVE_STEPS

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
        published = run_published(sizes, steps)
        print("published package timed", file=sys.stderr)
        search = measure_search(sizes, steps, published, Path(tmp))
    search["blas_threads"] = os.environ["OPENBLAS_NUM_THREADS"]
    search["published_process"] = {
        "package": published["package"],
        "version": published["version"],
        "encode_seconds": published["encode_seconds"],
    }
    search["corrupt_row_case"] = {
        "published": published["corrupt_row_case"],
        "ours": workload.corrupt_row_case(encode_vector, search_top_k),
    }

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
