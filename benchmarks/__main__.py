"""Run every benchmark suite in turn (``make bench``), then print the tables.

    python -m benchmarks [--quick] [--jobs N]

``--quick`` runs one seed of everything and the short compile-speed run; results still go to
``benchmarks/results/``, so do not commit a quick run.
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import time
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="one seed, short timing runs")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes for the suites")
    args = parser.parse_args(argv)
    seeds = ["--seeds", "1" if args.quick else "5", "--jobs", str(args.jobs)]
    steps: list[tuple[str, list[str]]] = [
        ("benchmarks.cache_savings", seeds),
        ("benchmarks.peer_comparison", seeds),
        ("benchmarks.hard_suite", [*seeds, "--scenarios", "all"]),
        ("benchmarks.compile_speed", ["--quick"] if args.quick else []),
        (
            "benchmarks.agent_loop",
            ["--seeds", "1", "--tasks", "20", "--no-write"] if args.quick else [],
        ),
        (
            "benchmarks.conversations",
            ["--conversations", "10", "--no-write"]
            if args.quick
            else ["--split", "all", "--jobs", str(args.jobs)],
        ),
    ]
    # Suites owned elsewhere join the run when they exist in this checkout.
    try:
        importlib.import_module("benchmarks.longform_constant_budget")
    except ImportError:
        pass
    else:
        steps.append(("benchmarks.longform_constant_budget", []))

    failed = []
    for module, module_args in steps:
        print(f"\n=== python -m {module} {' '.join(module_args)}", file=sys.stderr)
        t0 = time.perf_counter()
        # Each suite in a process of its own, as when it is run alone: timings must not depend
        # on the caches and heap an earlier suite left behind.
        code = subprocess.run([sys.executable, "-m", module, *module_args], check=False).returncode
        print(
            f"=== {module} finished in {time.perf_counter() - t0:.0f} s (exit {code})",
            file=sys.stderr,
        )
        if code:
            failed.append(module)

    from benchmarks import tables

    print("\n\n# Tables from benchmarks/results/\n")
    tables.main([])
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
