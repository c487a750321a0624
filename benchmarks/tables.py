"""Markdown tables from the committed JSON results (what the README and docs paste in).

python -m benchmarks.tables            # every suite that has a results file
python -m benchmarks.tables hard_suite compile_speed
python -m benchmarks.tables --docs docs/benchmarks.md   # refill the page's table blocks

``--docs`` replaces the text between ``<!-- tables:NAME:start -->`` and
``<!-- tables:NAME:end -->`` with suite NAME's tables (``targets`` for the SPEC-NOTES table), so
each suite's tables sit in that suite's section of the page.
"""

from __future__ import annotations

import argparse
import contextlib
import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks._report import fmt_ms, fmt_num, fmt_pct, markdown_table, read_result
from benchmarks._server_tables import server_costs_tables, slow_inputs_tables

__all__ = [
    "ORDER",
    "SHORT",
    "cache_savings_tables",
    "compile_speed_tables",
    "hard_suite_tables",
    "main",
    "peer_comparison_tables",
    "targets_table",
]

ORDER = (
    "naive",
    "langchain",
    "llamaindex_buffer",
    "llamaindex_memory",
    "priompt",
    "membrane",
    "membrane_cheap",
    "membrane_cheap_wide",
    "membrane_system",
    "membrane-embed",
)
SHORT = {
    "naive": "Naive",
    "langchain": "LangChain",
    "llamaindex_buffer": "LI buffer",
    "llamaindex_memory": "LI Memory",
    "priompt": "Priompt",
    "membrane": "Membrane",
    "membrane_cheap": "M. cheap",
    "membrane_cheap_wide": "M. cheap, wide index",
    "membrane_system": "M. system",
    "membrane-embed": "M. + embedder",
}
PEERS = ("naive", "langchain", "llamaindex_buffer", "llamaindex_memory", "priompt")
KINDS = ("memory", "history", "tool", "paste")


def _ordered(names: Sequence[str] | Any) -> list[str]:
    names = list(names)
    return [n for n in ORDER if n in names] + [n for n in names if n not in ORDER]


def _label(payload: dict[str, Any], name: str) -> str:
    label = payload.get("strategies", {}).get(name, {}).get("label", name)
    return f"**{label}**" if name == "membrane" else str(label)


def _costs(row: dict[str, Any]) -> str:
    return f"{fmt_num(row.get('cost_05'))} / {fmt_num(row.get('cost_01'))}"


def _summary_table(payload: dict[str, Any]) -> str:
    rows = []
    for name in _ordered(payload["summary"]):
        s = payload["summary"][name]
        rows.append(
            [
                _label(payload, name),
                _costs(s),
                fmt_num(s.get("cost_anthropic")),
                fmt_pct(s.get("cached_share")),
                fmt_pct(s.get("recall"), 1),
                str(s.get("turns_over_budget")),
                str(s.get("invalid_tool_requests")),
                fmt_ms(s.get("compile_ms_median_of_scenarios")),
            ]
        )
    header = [
        "Strategy",
        "Cost, reads 0.5× / 0.1×",
        "Anthropic cost",
        "Cached",
        "Recall",
        "Turns over budget",
        "Invalid tool requests",
        "Median ms / turn",
    ]
    return markdown_table(header, rows)


def _kind_recall(row: dict[str, Any]) -> str:
    parts = [
        f"{k} {fmt_pct(row.get(f'recall_{k}'))}"
        for k in KINDS
        if row.get(f"recall_{k}") is not None
    ]
    return ", ".join(parts) or "–"


def _best_peer(results: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
    # A peer that sent more than the budget is not a fair "best": it saw more text.
    peers = [
        (n, r)
        for n, r in results.items()
        if n in PEERS and r.get("recall") is not None and r.get("turns_over_budget") == 0
    ]
    if not peers:
        return None, None
    return max(peers, key=lambda nr: (nr[1]["recall"], -nr[1].get("cost_05", 1e9)))


def hard_suite_tables(payload: dict[str, Any]) -> str:
    """Summary, recall and cost per scenario, and Membrane beside the best peer."""
    seeds = len(payload["settings"]["seeds"])
    out = [
        f"Mean over {len(payload['scenarios'])} scenarios, {seeds} seeds each "
        "(cost relative to the naive loop = 100):",
        "",
        _summary_table(payload),
        "",
    ]
    names = _ordered({n for sc in payload["scenarios"].values() for n in sc["results"]})
    rec_rows, cost_rows = [], []
    for sc in payload["scenarios"].values():
        res = sc["results"]
        rec_rows.append([sc["title"], *[fmt_pct(res.get(n, {}).get("recall")) for n in names]])
        cost_rows.append([sc["title"], *[_costs(res[n]) if n in res else "–" for n in names]])
    out += [
        "Recall per scenario (the fact was in the prompt):",
        "",
        markdown_table(["Scenario", *[SHORT.get(n, n) for n in names]], rec_rows),
        "",
    ]
    out += [
        "Cost per scenario, cache reads at 0.5× / 0.1× (naive = 100):",
        "",
        markdown_table(["Scenario", *[SHORT.get(n, n) for n in names]], cost_rows),
        "",
    ]

    rows = []
    for sc in payload["scenarios"].values():
        res = sc["results"]
        mine = res.get("membrane")
        cheap = res.get("membrane_cheap")
        peer_name, peer = _best_peer(res)
        rows.append(
            [
                sc["title"],
                _kind_recall(mine) if mine else "–",
                f"{_kind_recall(peer)} ({SHORT.get(peer_name or '', peer_name)})" if peer else "–",
                _costs(mine) if mine else "–",
                f"{_kind_recall(cheap)}; {_costs(cheap)}" if cheap else "–",
            ]
        )
    out += [
        "Membrane defaults beside the best peer that kept the budget (highest recall, then "
        "lowest cost):",
        "",
        markdown_table(
            [
                "Scenario",
                "Membrane recall",
                "Best peer recall",
                "Membrane cost",
                "Cheap mode recall; cost",
            ],
            rows,
            "lllrl",
        ),
        "",
    ]

    trouble = []
    for sc in payload["scenarios"].values():
        for n in names:
            r = sc["results"].get(n)
            if r and (r["turns_over_budget"] or r["invalid_tool_requests"] or r["errors"]):
                trouble.append(
                    [
                        sc["title"],
                        SHORT.get(n, n),
                        str(r["turns_over_budget"]),
                        str(r["max_over_budget_tokens"]),
                        str(r["invalid_tool_requests"]),
                        str(r["errors"]),
                    ]
                )
    if trouble:
        out += [
            "Turns over budget, invalid tool requests and errors, where not zero:",
            "",
            markdown_table(
                [
                    "Scenario",
                    "Strategy",
                    "Over budget",
                    "Max tokens over",
                    "Invalid tool requests",
                    "Errors",
                ],
                trouble,
                "llrrrr",
            ),
            "",
        ]
    skipped = {
        n: v["skip_reason"] for n, v in payload["strategies"].items() if not v.get("available")
    }
    for n, reason in skipped.items():
        out.append(f"Skipped `{n}`: {reason}")
    return "\n".join(out).rstrip() + "\n"


def peer_comparison_tables(payload: dict[str, Any]) -> str:
    out = []
    for config in payload["configs"]:
        title = (
            f"{config['budget']:,}-token budget, {config['memories']} memories per turn, "
            f"{len(payload['settings']['seeds'])} seeds"
        )
        rows = []
        res = config["results"]
        for name in _ordered(res):
            r = res[name]
            rows.append(
                [
                    _label(payload, name),
                    fmt_pct(r.get("cached_share")),
                    str(r.get("turns_over_budget")),
                    f"{fmt_pct(r.get('recall_memory'))} / {fmt_pct(r.get('recall_history'))}",
                    _costs(r),
                    fmt_num(r.get("cost_anthropic")),
                ]
            )
        out += [
            f"{title}:",
            "",
            markdown_table(
                [
                    "Strategy",
                    "Cached",
                    "Over budget",
                    "Recall (memory / history)",
                    "Cost, reads 0.5× / 0.1×",
                    "Anthropic cost",
                ],
                rows,
            ),
            "",
        ]
    return "\n".join(out).rstrip() + "\n"


def cache_savings_tables(payload: dict[str, Any]) -> str:
    rows = []
    res = payload["results"]
    for name in _ordered(res):
        r = res[name]
        rows.append(
            [
                _label(payload, name),
                fmt_num(r.get("input_tokens")),
                fmt_pct(r.get("cached_share")),
                fmt_num(r.get("cost_01")),
                fmt_num(r.get("cost_05")),
                fmt_num(r.get("cost_anthropic")),
            ]
        )
    head = (
        f"{payload['turns']}-turn chat on `{payload['settings']['openai_model']}`, "
        f"{payload['system_tokens']:,}-token system prompt, {payload['memories_per_turn']} "
        f"new memories a turn, {len(payload['settings']['seeds'])} seeds:"
    )
    return "\n".join(
        [
            head,
            "",
            markdown_table(
                [
                    "Setup",
                    "Input tokens",
                    "Served from cache",
                    "Cost, reads 0.1×",
                    "Cost, reads 0.5×",
                    "Anthropic cost (writes 1.25×, reads 0.1×)",
                ],
                rows,
            ),
            "",
        ]
    )


def compile_speed_tables(payload: dict[str, Any]) -> str:
    chat = payload["chat_80_turns"]
    out = [
        "Fresh inputs each call (a new compiler per call), with memories:",
        "",
        _by_history_size(payload["fresh"]),
        "",
        "80-turn chat, one reused compiler (per-turn compile time):",
        "",
        markdown_table(
            ["", "Median ms", "p95 ms", "Ratio to LangChain (median)"],
            [
                [
                    "Membrane",
                    fmt_ms(chat["membrane_ms_median"]),
                    fmt_ms(chat["membrane_ms_p95"]),
                    _ratio(chat.get("ratio_median")),
                ],
                [
                    "LangChain `trim_messages`",
                    fmt_ms(chat["langchain_ms_median"]),
                    fmt_ms(chat["langchain_ms_p95"]),
                    "1.0×",
                ],
            ],
        ),
        "",
        "Per-turn time as history grows (reused compiler, turns appended):",
        "",
        _by_history_size(payload["growing"]),
        "",
    ]
    return "\n".join(out).rstrip() + "\n"


def _by_history_size(results: list[dict[str, Any]]) -> str:
    """Membrane beside LangChain, one row per history size (the fresh and growing sections)."""
    header = [
        "History messages",
        "Membrane median ms",
        "p95",
        "LangChain median ms",
        "p95",
        "Ratio",
    ]
    rows = [
        [
            fmt_num(r["history_messages"]),
            fmt_ms(r["membrane_ms_median"]),
            fmt_ms(r["membrane_ms_p95"]),
            fmt_ms(r["langchain_ms_median"]),
            fmt_ms(r["langchain_ms_p95"]),
            _ratio(r.get("ratio_median")),
        ]
        for r in results
    ]
    return markdown_table(header, rows)


def _ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}×"


def targets_table(hard: dict[str, Any] | None, speed: dict[str, Any] | None) -> str:
    """SPEC-NOTES targets against the committed results."""
    rows: list[list[str]] = []

    def add(what: str, target: str, measured: str, ok: bool | None) -> None:
        rows.append([what, target, measured, "–" if ok is None else ("yes" if ok else "**no**")])

    if hard:
        m = hard["summary"].get("membrane")
        c = hard["summary"].get("membrane_cheap")
        if m:
            add(
                "Hard suite mean recall, defaults",
                ">= 99.5%",
                fmt_pct(m["recall"], 1),
                m["recall"] >= 0.995,
            )
            add(
                "Cost vs naive, reads 0.5× / 0.1×",
                "<= 75 / 55",
                _costs(m),
                m["cost_05"] <= 75 and m["cost_01"] <= 55,
            )
        if c:
            add("Cheap mode recall", ">= 97%", fmt_pct(c["recall"], 1), c["recall"] >= 0.97)
            add(
                "Cheap mode cost, reads 0.5× / 0.1×",
                "<= 65 / 45",
                _costs(c),
                c["cost_05"] <= 65 and c["cost_01"] <= 45,
            )
        for name in ("membrane", "membrane_cheap", "membrane_cheap_wide", "membrane_system"):
            s = hard["summary"].get(name)
            if s:
                add(
                    f"Turns over budget / invalid tool requests, {SHORT[name]}",
                    "0 / 0",
                    f"{s['turns_over_budget']} / {s['invalid_tool_requests']}",
                    s["turns_over_budget"] == 0 and s["invalid_tool_requests"] == 0,
                )
    if speed:
        cpu = speed["turns"]["counted"]["cpu"]
        add(
            "Per-turn compile, 80-turn chat, median CPU time vs `trim_messages` memoised",
            "<= 3×",
            f"{cpu['ratio_median']:.2f}×",
            cpu["ratio_median"] <= 3,
        )
    return markdown_table(["What", "Target", "Measured", "Met"], rows, "llrl") + "\n"


def _conversations_tables(payload: dict[str, Any]) -> str:
    from benchmarks.conversations import conversations_tables

    return conversations_tables(payload)


_TITLES = {
    "hard_suite": "Hard suite",
    "peer_comparison": "Peer comparison",
    "cache_savings": "Prompt-cache savings",
    "compile_speed": "Compile time",
    "conversations": "Multi-session conversations",
    "server_costs": "Server costs",
    "slow_inputs": "Large inputs",
}

_SUITES: dict[str, Callable[[dict[str, Any]], str]] = {
    "hard_suite": hard_suite_tables,
    "peer_comparison": peer_comparison_tables,
    "cache_savings": cache_savings_tables,
    "compile_speed": compile_speed_tables,
    "conversations": _conversations_tables,
    "server_costs": server_costs_tables,
    "slow_inputs": slow_inputs_tables,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tables", description=__doc__)
    parser.add_argument("suites", nargs="*", help=f"any of {', '.join(_SUITES)} (default: all)")
    parser.add_argument(
        "--docs",
        metavar="PATH",
        help="also write each suite's tables between its tables:NAME markers in this file",
    )
    args = parser.parse_args(argv)
    wanted = args.suites or [*_SUITES, "targets"]
    for name in wanted:
        if name != "targets" and name not in _SUITES:
            parser.error(f"unknown suite {name!r}")
    for name in wanted:
        print(_suite_text(name, heading=True) or f"(no results for {name} yet)\n")
    if args.docs:
        _splice(Path(args.docs), {name: _suite_text(name, heading=False) for name in wanted})
    return 0


def _splice(path: Path, blocks: dict[str, str | None]) -> None:
    doc = path.read_text()
    for name, text in blocks.items():
        start, end = f"<!-- tables:{name}:start -->", f"<!-- tables:{name}:end -->"
        if text is None or start not in doc:
            continue
        if end not in doc:
            raise SystemExit(f"{path} has {start} without {end}")
        head, rest = doc.split(start, 1)
        _, tail = rest.split(end, 1)
        doc = f"{head}{start}\n\n{text.strip()}\n\n{end}{tail}"
    path.write_text(doc)


def _suite_text(name: str, *, heading: bool) -> str | None:
    """One suite's tables as markdown, or None when it has no results file."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        if name == "targets":
            hard, speed = read_result("hard_suite"), read_result("compile_speed_turns")
            if not (hard or speed):
                return None
            if heading:
                print("### Targets (SPEC-NOTES)\n")
            print(targets_table(hard, speed))
            return out.getvalue()
        payload = read_result(name)
        if payload is None:
            return None
        machine = payload["machine"]
        if heading:
            print(f"### {_TITLES[name]}\n")
        print(
            f"`{payload['command']}` on {machine['cpu']} ({machine['cpu_count']} CPUs), "
            f"Python {machine['python']}, commit {machine['git_commit']}, {machine['date']}\n"
        )
        print(_SUITES[name](payload))
    return out.getvalue()


if __name__ == "__main__":
    raise SystemExit(main())
