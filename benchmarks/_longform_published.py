"""The search workload of ``longform_constant_budget``, shared by both sides of the run.

Imported by the benchmark for the row generator; run as a script by the interpreter of the
oracle environment (``.venv-oracle``, which holds the published ``longform-memory==0.1.1``
and nothing of ours) to time the published package on the same rows and query:

    .venv-oracle/bin/python -I benchmarks/_longform_published.py --sizes 1000,10000 ...

Only the standard library is imported at module level, so the same file serves both sides.
The script prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import random
import statistics
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

CLUSTERS = 50


def _centroids(dim: int, seed: int) -> list[tuple[int, ...]]:
    rng = random.Random(seed)
    return [struct.unpack(f"<{dim}b", rng.randbytes(dim)) for _ in range(CLUSTERS)]


def row_vectors(count: int, dim: int, seed: int) -> Iterator[list[int]]:
    """``count`` vectors in 50 clusters (integer components, normalised by the encoder).

    The stream is a prefix family: the first 1,000 rows are the same whatever ``count`` is.
    """
    centroids = _centroids(dim, seed)
    rng = random.Random(seed * 1_000 + 1)
    for index in range(count):
        noise = struct.unpack(f"<{dim}b", rng.randbytes(dim))
        centre = centroids[index % CLUSTERS]
        yield [2 * c + n for c, n in zip(centre, noise, strict=True)]


def query_vector(dim: int, seed: int) -> list[int]:
    """A query near cluster 3: its members score about 0.8, other rows about 0."""
    centre = _centroids(dim, seed)[3]
    rng = random.Random(seed + 7)
    noise = struct.unpack(f"<{dim}b", rng.randbytes(dim))
    return [2 * c + n for c, n in zip(centre, noise, strict=True)]


def digest(encoded: list[str]) -> str:
    """sha256 of the encoded rows: equal on both sides iff the wire bytes are identical."""
    h = hashlib.sha256()
    for text in encoded:
        h.update(text.encode("ascii"))
        h.update(b"\n")
    return h.hexdigest()


def timed_ms(run: Callable[[], Any]) -> tuple[float, Any]:
    """Wall-clock milliseconds of one call, and its result."""
    started = time.perf_counter_ns()
    result = run()
    return (time.perf_counter_ns() - started) / 1e6, result


def timed_both(run: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall-clock and CPU milliseconds of one call (CPU time of the whole process, so it is
    not inflated by other processes on a shared machine), and its result."""
    wall, cpu = time.perf_counter_ns(), time.process_time_ns()
    result = run()
    return (time.perf_counter_ns() - wall) / 1e6, (time.process_time_ns() - cpu) / 1e6, result


def corrupt_row_case(encode: Callable[..., str], search: Callable[..., Any]) -> list[str]:
    """Hits for one query over two good rows and one whose first component is a NaN, stored
    first: what one damaged row does to a recall."""
    damaged = base64.b64encode(struct.pack("<2f", float("nan"), 0.0)).decode("ascii")
    rows = [("damaged", damaged), ("good", encode([1.0, 0.0])), ("near", encode([1.0, 0.1]))]
    return [hit.row[0] for hit in search([1.0, 0.0], rows, lambda row: row[1])]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", required=True)
    parser.add_argument("--repeats", required=True, help="comma-separated, one per size")
    parser.add_argument("--dim", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--interleave-base", type=int, required=True)
    parser.add_argument("--interleave-steps", type=int, required=True)
    parser.add_argument("--interleave-every", type=int, required=True)
    args = parser.parse_args()

    import longform_memory
    from longform_memory import encode_vector, search_top_k

    sizes = [int(s) for s in args.sizes.split(",")]
    repeats = [int(r) for r in args.repeats.split(",")]
    largest = max(max(sizes), args.interleave_base + args.interleave_steps)
    started = time.perf_counter()
    encoded = [encode_vector(v) for v in row_vectors(largest, args.dim, args.seed)]
    encode_seconds = time.perf_counter() - started
    query = query_vector(args.dim, args.seed)

    def get(row: tuple[int, str]) -> str:
        return row[1]

    out: dict[str, Any] = {
        "package": longform_memory.__file__,
        "version": longform_memory.__version__,
        "encode_seconds": encode_seconds,
        "sizes": [],
    }
    for size, repeat in zip(sizes, repeats, strict=True):
        rows = [(i, encoded[i]) for i in range(size)]
        first_ms, _, hits = timed_both(lambda rows=rows: search_top_k(query, rows, get))
        runs = [timed_both(lambda rows=rows: search_top_k(query, rows, get)) for _ in range(repeat)]
        samples = [wall for wall, _, _ in runs]
        out["sizes"].append(
            {
                "rows": size,
                "digest": digest(encoded[:size]),
                "first_query_ms": first_ms,
                "query_ms": samples,
                "query_ms_median": statistics.median(samples),
                "query_cpu_ms_median": statistics.median(cpu for _, cpu, _ in runs),
                "hits": [[h.row[0], h.score.hex()] for h in hits],
            }
        )

    # Interleaved: the published package stores nothing, so a write is an append to the
    # caller's list; every ``every``-th write is followed by a query.
    rows = [(i, encoded[i]) for i in range(args.interleave_base)]
    queries: list[dict[str, Any]] = []
    for step in range(args.interleave_steps):
        index = args.interleave_base + step
        rows.append((index, encoded[index]))
        if step % args.interleave_every == 0:
            ms, hits = timed_ms(lambda: search_top_k(query, rows, get))
            queries.append(
                {"step": step, "ms": ms, "hits": [[h.row[0], h.score.hex()] for h in hits]}
            )
    out["interleaved"] = queries
    out["corrupt_row_case"] = corrupt_row_case(encode_vector, search_top_k)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
