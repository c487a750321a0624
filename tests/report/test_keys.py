"""The metadata table: one declaration renders a report's dict and reads it back."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import membrane
from membrane import ContextCompiler, MemoryItem
from membrane.report import CACHE_KEYS, CompileReport
from membrane.stages import PreFlightContextFirewall

SRC = Path(membrane.__file__).resolve().parent


def _history(turns: int) -> list[dict[str, str]]:
    out = []
    for i in range(turns):
        out.append({"role": "user", "content": f"Question {i} about the amber ledger and tariffs."})
        out.append({"role": "assistant", "content": f"Answer {i}: the ledger holds entry {i}."})
    return out


def _compiles() -> list[tuple[str, membrane.CompileResult]]:
    memories = [MemoryItem(id=f"m{i}", content=f"Fact {i} about amber.") for i in range(6)]
    tools = [{"type": "function", "function": {"name": "look", "parameters": {"type": "object"}}}]
    end = ContextCompiler(400, model_id="claude-sonnet-4-5", core_content="Be brief.")
    system = ContextCompiler(300, memory_placement="system", core_content="Rules.")
    scaled = ContextCompiler(500, model_id="gpt-4o", token_scale=1.2)
    return [
        ("end", end.compile(memories, "Which entry?", conversation_messages=_history(30))),
        ("system", system.compile(memories, "Which entry?", conversation_messages=_history(3))),
        ("agent", scaled.compile(memories, "Look it up.", tools=tools, reserve_output_tokens=50)),
        ("bare", ContextCompiler(100).compile([], "Hi")),
    ]


@pytest.mark.parametrize(
    ("name", "result"), _compiles(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_metadata_round_trips_through_the_table(name: str, result: membrane.CompileResult) -> None:
    report = result.report
    assert report.metadata() == result.metadata
    assert list(report.metadata()) == list(result.metadata)  # the order too
    again = CompileReport.from_metadata(result.metadata)
    assert again == report, name
    assert list(again.metadata()) == list(result.metadata)


def test_a_hand_built_results_report_is_read_from_its_metadata() -> None:
    result = membrane.CompileResult([], {}, {}, {"token_count": 7, "tokens_budget": 9})
    assert result.report.token_count == 7
    assert result.report.tokens_budget_counted == 9  # a missing key takes the budget
    assert result.report.window is not None and result.report.window.messages_dropped == 0


def test_end_placement_keys_keep_the_documented_order() -> None:
    result = dict(_compiles())["end"]
    keys = list(result.metadata)
    head = ["model_id", "memory_placement", "token_count", "tokens_budget"]
    assert keys[:4] == head
    assert keys.index("stable_prefix_messages") < keys.index("retrieval_summary")
    assert keys.index("budget_exceeded") < keys.index(CACHE_KEYS[0])
    system = list(dict(_compiles())["system"].metadata)
    assert system.index("retrieval_summary") < system.index("stable_prefix_messages")
    assert system.index(CACHE_KEYS[0]) < system.index("token_scale")


def test_firewall_stats_come_from_the_same_declaration() -> None:
    firewall = PreFlightContextFirewall(max_tokens=60)
    _text, _refs, total, stats = firewall.run(
        core_text="Rules.",
        end_text="Question?",
        middle_segments=[(f"[Mem:{i}] fact {i} " * 5, 2) for i in range(1, 6)],
    )
    assert list(stats) == [
        "segments_offered",
        "segments_kept",
        "tokens_trimmed",
        "tokens_budget",
        "token_count",
        "budget_exceeded",
    ]
    assert stats["token_count"] == total and stats["segments_offered"] == 5


def _string_constants(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def test_only_the_table_spells_report_only_keys() -> None:
    # Keys no wire format shares (the stress record has its own history_messages_dropped):
    # no module but the table may write them as a string.
    own = {
        "history_index_lines",
        "segments_thinned",
        "tokens_budget_counted",
        "message_framing_tokens",
        "history_recall_reason",
        "query_label_effect",
        "state_store_fallback",
    }
    table = SRC / "report" / "_keys.py"
    assert own <= _string_constants(table)
    for path in SRC.rglob("*.py"):
        if path == table:
            continue
        leaked = own & _string_constants(path)
        assert not leaked, f"{path.relative_to(SRC)} spells {sorted(leaked)}"
