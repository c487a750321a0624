"""Markdown tables for the server-cost suites (``server_costs`` and ``slow_inputs``).

Each suite's first table checks the figures against the targets of the issue that asked for
them; the others give the rows behind it.
"""

from __future__ import annotations

from typing import Any

from benchmarks._report import fmt_ms, fmt_num, markdown_table

__all__ = ["server_costs_tables", "slow_inputs_tables"]

MEMORY_OVER_TEXT = 3.0
RSS_OVER_BOUND = 1.25
IMPORT_RATIO = 2.0
FIRST_COMPILE_RATIO = 1.5
P99_OVER_MEDIAN = 10.0
JOIN_RATIO = 10.0
MEANING_P99_RATIO = 3.0
SLOW_INPUT_SECONDS = 5.0


def _met(ok: bool) -> str:
    return "yes" if ok else "**no**"


def _x(value: float) -> str:
    return f"{value:.2f}×"


def _target(what: str, ratio: float, limit: float) -> list[str]:
    """A row of the targets table: what, the limit, the measured ratio, whether it is met."""
    return [what, f"<= {limit:g}×", _x(ratio), _met(ratio <= limit)]


def _target_rows(payload: dict[str, Any]) -> list[list[str]]:
    rows: list[list[str]] = []
    for row in payload.get("memory", []):
        what = f"Kept per conversation, {row['messages']:,} messages, against its text"
        rows.append(_target(what, row["state_over_text"], MEMORY_OVER_TEXT))
    for row in payload.get("rss", []):
        what = (
            f"RSS growth over {row['conversations']} chats, `cache_bytes` "
            f"{row['cache_bytes'] / 2**20:g} MiB, against the bound"
        )
        rows.append(_target(what, row["rss_growth_over_bound"], RSS_OVER_BOUND))
    cold = payload.get("cold_start")
    if cold:
        what = "`import membrane` / `import tiktoken`"
        rows.append(_target(what, cold["import"]["ratio"], IMPORT_RATIO))
        what = "First compile / tiktoken loading `cl100k_base`"
        rows.append(_target(what, cold["first_compile"]["ratio"], FIRST_COMPILE_RATIO))
    for row in payload.get("tail", []):
        budget = f"{row['budget']:,} tokens"
        what = f"Per-turn p99 / median, {budget}"
        rows.append(_target(what, row["membrane"]["p99_over_median"], P99_OVER_MEDIAN))
        meaning = row.get("membrane_meaning")
        if meaning:
            what = f"Per-turn p99 with `local_embedder(executor=...)` / without, {budget}"
            ratio = meaning["p99_ms"] / row["membrane"]["p99_ms"]
            rows.append(_target(what, ratio, MEANING_P99_RATIO))
    join = payload.get("joining_worker")
    if join:
        what = (
            f"New compiler's first compile of {join['messages']:,} messages / "
            "`trim_messages` with fresh counts"
        )
        rows.append(_target(what, join["ratio_cpu"], JOIN_RATIO))
    return rows


def _memory_table(payload: dict[str, Any]) -> str:
    rows = [
        [
            fmt_num(row["messages"]),
            fmt_num(row["text_bytes"] / 1024),
            fmt_num(row["state_bytes"] / 1024),
            _x(row["state_over_text"]),
            fmt_num(row["total_bytes"] / 1024),
        ]
        for row in payload.get("memory", [])
    ]
    header = ["Messages", "Text KiB", "Kept KiB", "Kept / text", "With the shared memos, KiB"]
    return markdown_table(header, rows, "rrrrr")


def _tail_table(payload: dict[str, Any]) -> str:
    rows = []
    for row in payload.get("tail", []):
        m, memo, fresh = row["membrane"], row["memoised"], row["fresh"]
        rows.append(
            [
                fmt_num(row["budget"]),
                fmt_ms(m["median_ms"]),
                fmt_ms(m["p95_ms"]),
                fmt_ms(m["p99_ms"]),
                fmt_ms(m["max_ms"]),
                fmt_ms(memo["median_ms"]),
                fmt_ms(fresh["median_ms"]),
                fmt_ms(row["membrane_meaning"]["p99_ms"]) if "membrane_meaning" in row else "–",
            ]
        )
    header = [
        "Budget",
        "Median ms",
        "p95",
        "p99",
        "Max",
        "`trim_messages` memoised, median",
        "fresh counts, median",
        "p99 with meaning",
    ]
    return markdown_table(header, rows, "rrrrrrrr")


def _other_rows(payload: dict[str, Any]) -> list[list[str]]:
    rows = []
    cold = payload.get("cold_start")
    if cold:
        imp, first = cold["import"], cold["first_compile"]
        rows.append(
            [
                "`import membrane` / `import tiktoken`",
                f"{fmt_ms(imp['import_membrane_ms_median'])} / "
                f"{fmt_ms(imp['import_tiktoken_ms_median'])} ms",
            ]
        )
        rows.append(
            [
                "First compile / loading `cl100k_base`",
                f"{fmt_ms(first['first_compile_ms_median'])} / "
                f"{fmt_ms(first['load_cl100k_ms_median'])} ms",
            ]
        )
    total = cold.get("total") if cold else None
    if total:
        rows.append(
            [
                "Cold start in all: import and first compile / import and load",
                f"{fmt_ms(total['membrane_ms'])} / {fmt_ms(total['tiktoken_ms'])} ms",
            ]
        )
    join = payload.get("joining_worker")
    if join:
        rows.append(
            [
                f"Joining worker, {join['messages']:,} messages / `trim_messages` fresh",
                f"{fmt_ms(join['membrane_cpu_ms_median'])} / "
                f"{fmt_ms(join['langchain_fresh_cpu_ms_median'])} ms CPU",
            ]
        )
    for row in payload.get("rss", []):
        rows.append(
            [
                f"RSS growth, {row['conversations']} chats, bound "
                f"{row['bound_bytes'] / 2**20:g} MiB",
                f"{row['rss_growth_bytes'] / 2**20:.1f} MiB",
            ]
        )
    loop = payload.get("event_loop")
    if loop:
        rows.append(
            [
                f"Event-loop lag, {loop['conversations']} conversations at once "
                "(median / p99 / max)",
                f"{fmt_ms(loop['lag_median_ms'])} / {fmt_ms(loop['lag_p99_ms'])} / "
                f"{fmt_ms(loop['lag_max_ms'])} ms",
            ]
        )
    return rows


def _provenance(payload: dict[str, Any]) -> str:
    """Which run made each part, when the parts come from more than one (``--merge``)."""
    runs: dict[tuple[str, str], list[str]] = {}
    for part, made in payload.get("parts_run", {}).items():
        runs.setdefault((made["command"], made["git_commit"]), []).append(part)
    if len(runs) < 2:
        return ""
    said = [
        f"{', '.join(parts)}: `{command}` at commit {commit}"
        for (command, commit), parts in runs.items()
    ]
    return "Parts from separate runs: " + "; ".join(said) + ".\n\n"


def server_costs_tables(payload: dict[str, Any]) -> str:
    parts = [
        markdown_table(["What", "Target", "Measured", "Met"], _target_rows(payload), "llrl"),
        _memory_table(payload),
        _tail_table(payload),
        markdown_table(["What", "Measured"], _other_rows(payload), "lr"),
    ]
    return _provenance(payload) + "\n\n".join(parts) + "\n"


def slow_inputs_tables(payload: dict[str, Any]) -> str:
    rows = []
    for name, case in payload["cases"].items():
        seconds = case["wall_s_median"]
        rows.append(
            [
                f"`{name}`",
                fmt_num(case["chars"] / 1e6, 1),
                f"{seconds:.2f}",
                f"< {SLOW_INPUT_SECONDS:g}",
                _met(seconds < SLOW_INPUT_SECONDS),
            ]
        )
    header = ["Case", "Million characters", "First compile, s (median)", "Target", "Met"]
    return markdown_table(header, rows, "lrrrl") + "\n"
