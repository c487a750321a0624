"""The ``membrane`` command: output values against the compiler's own metadata."""

from __future__ import annotations

import html
import json
import math
import re
import subprocess
import sys
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from membrane.anatomy import REGIONS
from membrane.cli import main
from membrane.compiler import ContextCompiler
from membrane.messages import message_text
from membrane.profile import MembraneProfile
from membrane.records import MemoryItem
from membrane.tokenizers import TiktokenAdapter

MEMORIES = [
    "--memory",
    "policy|2|Retries use exponential backoff with jitter, capped at 30 seconds.",
    "--memory",
    "howto|1|Page the on-call engineer when retries exceed five. Log the incident id.",
    "--memory",
    "outage|3|(March) A retry storm took the queue down for an hour.",
]
QUESTION = "Explain the retry policy."


def _history(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(turns):
        out.append({"role": "user", "content": f"Question {i} about the retry queue and backoff."})
        out.append(
            {
                "role": "assistant",
                "content": f"Answer {i}: the worker retries with jitter; attempt {i} waited "
                f"{2**i} seconds before the next try, and the queue drained afterwards.",
            }
        )
    return out


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _inspect_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = _run(capsys, "inspect", "--user-message", QUESTION, *argv, "--json")
    assert code == 0, err
    payload: dict[str, Any] = json.loads(out)
    return payload


# ---------------------------------------------------------------------- inspect (text)


def test_inspect_text_region_counts_add_up_to_the_metadata(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _run(
        capsys,
        "inspect",
        "--user-message",
        QUESTION,
        *MEMORIES,
        "--max-tokens",
        "2048",
        "--model-id",
        "openai/gpt-4o",
        "--token-scale",
        "1",
    )
    assert code == 0, err
    md = _inspect_json(
        capsys,
        *MEMORIES,
        "--max-tokens",
        "2048",
        "--model-id",
        "openai/gpt-4o",
        "--token-scale",
        "1",
    )["metadata"]
    rows = dict(
        re.findall(
            r"^  (system core|eviction index|history|memories|recall|current "
            r"turn|total)\s+([\d,]+)",
            out,
            flags=re.M,
        )
    )
    numbers = {k: int(v.replace(",", "")) for k, v in rows.items()}
    assert numbers["total"] == md["token_count"]
    assert sum(v for k, v in numbers.items() if k != "total") == md["token_count"]
    sent = md["token_count"] + md["message_framing_tokens"]
    assert f"= {sent:,} sent of 2,048" in out


def test_inspect_text_prints_the_ref_map_and_each_message_piece(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "inspect", "--user-message", QUESTION, *MEMORIES)
    assert code == 0
    assert "  [Mem:1]  policy  (semantic)" in out
    assert "  [Mem:2]  howto  (procedural)" in out
    assert "  [Mem:3]  outage  (episodic)" in out
    headers = re.findall(r"^== \[(\d+)\] (\w+) \| ([a-z ]+) \| ([\d,]+) tokens? ==$", out, re.M)
    assert [(h[0], h[1], h[2]) for h in headers] == [
        ("0", "system", "system core"),
        ("1", "user", "memories"),
        ("1", "user", "current turn"),
    ]
    # Procedures come first in the tail, whatever their input number.
    mem_block = out.split("| memories |", 1)[1]
    assert mem_block.index("[Mem:2]") < mem_block.index("[Mem:1]") < mem_block.index("[Mem:3]")


def test_inspect_reports_breakpoints_and_cache_use(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys, "inspect", "--user-message", QUESTION, *MEMORIES, "--model-id", "openai/gpt-4o"
    )
    assert code == 0
    md = _inspect_json(capsys, *MEMORIES, "--model-id", "openai/gpt-4o")["metadata"]
    assert md["cache_mode"] == "automatic"
    assert not md["prompt_cache_used"]
    for bp in md["cache_breakpoints"]:
        assert f"breakpoint after message {bp['message_index']}: {bp['tokens']:,} tokens" in out
    prefix = md["cache_breakpoints"][-1]["tokens"]
    assert f"prompt cache used: no (prefix {prefix:,} tokens, model minimum 1,024)" in out


# ---------------------------------------------------------------------- inspect --json


def test_inspect_json_has_the_debug_dict_messages_and_regions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    payload = _inspect_json(capsys, *MEMORIES, "--max-tokens", "3000", "--core", "Be exact.")
    assert {"messages", "ref_map", "ref_map_type", "metadata", "debug_trace"} <= set(payload)
    assert payload["ref_map"] == {"1": "policy", "2": "howto", "3": "outage"}
    assert payload["ref_map_type"] == {"1": "semantic", "2": "procedural", "3": "episodic"}
    direct = ContextCompiler(3000, None, "Be exact.").compile(
        [
            MemoryItem("policy", MEMORIES[1].split("|", 2)[2]),
            MemoryItem("howto", MEMORIES[3].split("|", 2)[2], memory_type="procedural"),
            MemoryItem("outage", MEMORIES[5].split("|", 2)[2], memory_type="episodic"),
        ],
        QUESTION,
    )
    assert payload["compiled_messages"] == direct.messages
    assert payload["metadata"]["token_count"] == direct.metadata["token_count"]
    assert set(payload["regions"]) == set(REGIONS)
    assert sum(payload["regions"].values()) == payload["metadata"]["token_count"]
    assert [m["chars"] for m in payload["messages"]] == [
        len(message_text(m)) for m in direct.messages
    ]


def test_history_file_is_compiled_and_cut_with_an_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = _history(40)
    path = tmp_path / "history.json"
    path.write_text(json.dumps({"messages": history}), encoding="utf-8")
    payload = _inspect_json(capsys, *MEMORIES, "--max-tokens", "1500", "--history-file", str(path))
    md = payload["metadata"]
    assert md["history_messages_dropped"] > 0
    assert md["history_index_lines"] > 0
    assert payload["regions"]["index"] == md["history_index_tokens"]
    kept = payload["compiled_messages"][1:-1]
    assert kept == history[md["history_messages_dropped"] :]
    assert payload["regions"]["history"] == sum(
        TiktokenAdapter("cl100k_base").count(message_text(m)) for m in kept
    )
    assert sum(payload["regions"].values()) == md["token_count"]


def test_system_placement_has_no_history_or_index_region(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "h.json"
    path.write_text(json.dumps(_history(3)), encoding="utf-8")
    payload = _inspect_json(capsys, *MEMORIES, "--placement", "system", "--history-file", str(path))
    regions = payload["regions"]
    assert len(payload["compiled_messages"]) == 1
    assert regions["history"] == regions["index"] == regions["recall"] == 0
    assert regions["core"] > 0 and regions["memories"] > 0 and regions["current"] > 0
    assert sum(regions.values()) == payload["metadata"]["token_count"]


# ---------------------------------------------------------------------- inspect --html


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.regions: list[dict[str, str | None]] = []
        self.marks: list[dict[str, str | None]] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.tags.append((tag, found))
        if "data-region" in found:
            self.regions.append(found)
        if "data-breakpoint" in found:
            self.marks.append(found)


def test_html_has_one_bar_element_per_region_with_its_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = tmp_path / "h.json"
    history.write_text(json.dumps(_history(40)), encoding="utf-8")
    page = tmp_path / "prompt.html"
    args = [
        *MEMORIES,
        "--max-tokens",
        "2000",
        "--model-id",
        "openai/gpt-4o",
        "--history-file",
        str(history),
    ]
    code, _, err = _run(
        capsys, "inspect", "--user-message", "What did attempt 3 wait?", *args, "--html", str(page)
    )
    assert code == 0
    assert f"wrote {page}" in err
    code, out, _ = _run(
        capsys, "inspect", "--user-message", "What did attempt 3 wait?", *args, "--json"
    )
    payload = json.loads(out)
    parser = _Elements()
    parser.feed(page.read_text(encoding="utf-8"))
    assert [r["data-region"] for r in parser.regions] == list(REGIONS)
    assert {r["data-region"]: int(r["data-tokens"] or -1) for r in parser.regions} == payload[
        "regions"
    ]
    points = payload["metadata"]["cache_breakpoints"]
    assert len(points) == 3  # core, index, history
    assert [(m["data-breakpoint"], int(m["data-tokens"] or -1)) for m in parser.marks] == [
        (p["reason"], p["tokens"]) for p in points
    ]
    # Self-contained: no scripts, no stylesheets or images fetched from anywhere.
    assert not [t for t, a in parser.tags if t in ("script", "link", "img", "iframe")]
    assert not [a for _, a in parser.tags if "src" in a or "href" in a]


def test_html_escapes_every_value_from_the_prompt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "prompt.html"
    hostile = '<img src=x onerror="alert(1)">'
    content = '</pre><script>alert("x")</script> costs $5 & $title'
    code, _, err = _run(
        capsys,
        "inspect",
        "--user-message",
        "Is <b>this</b> & that $messages?",
        "--memory",
        f"{hostile}|2|{content}",
        "--core",
        "Rules </style><script>x()</script>",
        "--html",
        str(page),
    )
    assert code == 0, err
    written = page.read_text(encoding="utf-8")
    parser = _Elements()
    parser.feed(written)
    assert not [t for t, _ in parser.tags if t in ("script", "img")]
    assert html.escape("Is <b>this</b> & that") in written
    # The only <style> is the page's own, and it closes once.
    assert written.count("<style>") == written.count("</style>") == 1
    assert html.escape(hostile) in written
    assert html.escape(content) in written
    # Template placeholders in the prompt's text stay literal text.
    assert "that $messages?" in written


def test_html_fills_every_placeholder_of_the_page_template(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = resources.files("membrane.cli").joinpath("page.html").read_text(encoding="utf-8")
    names = set(re.findall(r"\$(\w+)", template))
    assert {"title", "segments", "messages", "metadata_rows"} <= names
    page = tmp_path / "prompt.html"
    code, _, err = _run(
        capsys, "inspect", "--user-message", QUESTION, *MEMORIES, "--html", str(page)
    )
    assert code == 0, err
    written = page.read_text(encoding="utf-8")
    assert "$" not in written
    assert written.startswith("<!DOCTYPE html>\n") and written.endswith("</body></html>\n")
    # The stylesheet comes from the template unchanged.
    style = template[template.index("<style>") : template.index("</style>")]
    assert style in written


# ---------------------------------------------------------------------- --memory parsing


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no-pipes-at-all", "expected 'id|tier|content'"),
        ("only|2", "expected 'id|tier|content'"),
        ("|2|content", "the id before the first '|' is empty"),
        ("id|7|content", "tier must be 1 (procedural), 2 (semantic) or 3 (episodic), got '7'"),
        ("id|high|content", "got 'high'"),
        ("id|2|   ", "the content after the second '|' is empty"),
    ],
)
def test_bad_memory_exits_2_with_a_clear_message(
    capsys: pytest.CaptureFixture[str], spec: str, message: str
) -> None:
    code, out, err = _run(capsys, "inspect", "--user-message", "hi", "--memory", spec)
    assert code == 2
    assert out == ""
    assert message in err
    assert "--memory #1" in err


def test_memory_content_keeps_its_pipes_and_tiers_map_to_kinds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    payload = _inspect_json(
        capsys,
        "--memory",
        "a|1|Step one | step two",
        "--memory",
        "b|2|fact",
        "--memory",
        "c|3|episode",
        "--memory",
        "d|episodic|named tier",
    )
    assert payload["ref_map_type"] == {
        "1": "procedural",
        "2": "semantic",
        "3": "episodic",
        "4": "episodic",
    }
    # the CLI keeps the content's own pipe; the memory line quotes the text field that holds it
    assert "text=`Step one | step two` | conf=" in payload["compiled_messages"][-1]["content"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read it"),
        ("{not json", "not valid UTF-8 JSON"),
        ('{"turns": []}', "expected a JSON list of messages"),
        ('[{"role": "tool", "tool_call_id": "x", "content": "r"}]', "no earlier assistant"),
        ('[{"role": "wizard", "content": "r"}]', "has role 'wizard'"),
    ],
)
def test_bad_history_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    path = tmp_path / "history.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    code, out, err = _run(capsys, "inspect", "--user-message", "hi", "--history-file", str(path))
    assert code == 2
    assert out == ""
    assert message in err


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["inspect"],
        ["inspect", "--user-message", "hi", "--max-tokens", "0"],
        ["inspect", "--user-message", "hi", "--placement", "middle"],
        ["quote", "--user-message", "hi"],
        ["quote", "--user-message", "hi", "--price-per-1k-input-tokens", "-1"],
        ["profile"],
    ],
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, err = _run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert "usage: membrane" in err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "inspect", "--help")
    assert code == 0
    assert "--history-file" in out and "--html" in out


def test_reserved_content_over_budget_is_reported_not_raised(
    capsys: pytest.CaptureFixture[str],
) -> None:
    payload = _inspect_json(capsys, "--max-tokens", "40", "--memory", "a|2|fact")
    assert payload["metadata"]["budget_exceeded"] is True
    code, out, _ = _run(capsys, "inspect", "--user-message", QUESTION, "--max-tokens", "40")
    assert code == 0
    assert "over budget: YES" in out


# ---------------------------------------------------------------------- quote


def test_quote_matches_estimate(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(
        capsys,
        "quote",
        "--user-message",
        QUESTION,
        *MEMORIES,
        "--model-id",
        "openai/gpt-4o-mini",
        "--price-per-1k-input-tokens",
        "0.00015",
        "--json",
    )
    assert code == 0, err
    payload = json.loads(out)
    md = payload["metadata"]
    expected = math.ceil((md["token_count"] + md["message_framing_tokens"]) * md["token_scale"])
    assert payload["total_tokens"] == expected
    assert payload["estimated_cost_usd"] == pytest.approx(expected / 1000 * 0.00015)
    assert payload["price_per_1k_input_tokens"] == 0.00015
    assert payload["trimming_strategies"] == []
    code, text_out, _ = _run(
        capsys,
        "quote",
        "--user-message",
        QUESTION,
        *MEMORIES,
        "--model-id",
        "openai/gpt-4o-mini",
        "--price-per-1k-input-tokens",
        "0.00015",
    )
    assert code == 0
    assert f"input tokens    {expected:,} " in text_out
    assert "trimming        none (everything fit)" in text_out


def test_quote_names_the_trimming_under_pressure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "h.json"
    path.write_text(json.dumps(_history(40)), encoding="utf-8")
    code, out, _ = _run(
        capsys,
        "quote",
        "--user-message",
        "How long did attempt 3 wait?",
        *MEMORIES,
        "--max-tokens",
        "1200",
        "--history-file",
        str(path),
        "--price-per-1k-input-tokens",
        "2.5",
        "--json",
    )
    assert code == 0
    payload = json.loads(out)
    assert "history_cut" in payload["trimming_strategies"]
    assert payload["total_tokens"] <= 1200
    assert payload["estimated_cost_usd"] == pytest.approx(payload["total_tokens"] / 1000 * 2.5)


# ---------------------------------------------------------------------- profile


@pytest.mark.parametrize("name", MembraneProfile.PRESETS)
def test_profile_explain_prints_the_preset(capsys: pytest.CaptureFixture[str], name: str) -> None:
    code, out, _ = _run(capsys, "profile", "explain", name)
    assert code == 0
    assert out == getattr(MembraneProfile, name)().explain() + "\n"


def test_unknown_profile_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "profile", "explain", "turbo")
    assert code == 2
    assert out == ""
    assert "unknown profile 'turbo'" in err
    assert "minimal, coding, conversational" in err


@pytest.mark.parametrize("name", MembraneProfile.PRESETS)
def test_profile_explain_json_has_every_setting(
    capsys: pytest.CaptureFixture[str], name: str
) -> None:
    code, out, _ = _run(capsys, "profile", "explain", name, "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload == MembraneProfile.preset(name).to_dict()
    assert {"classifier", "label_effects", "policies", "must_include", "profiler"} <= set(payload)


def test_inspect_with_a_profile_reports_its_label_and_policies(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(
        capsys,
        "inspect",
        "--user-message",
        "Fix the bug in utils.py",
        "--memory",
        "p|1|Run the tests before you commit.",
        "--profile",
        "coding",
        "--json",
    )
    assert code == 0
    metadata = json.loads(out)["metadata"]
    assert metadata["query_label"] == "code"
    assert metadata["policy_report"]["never_thin_sent"] == 1
    assert "profile_timings" not in metadata
    code, _, err = _run(capsys, "inspect", "--user-message", "x", "--profile", "turbo")
    assert code == 2
    assert "unknown profile 'turbo'" in err


# ---------------------------------------------------------------------- as a program


def test_module_entry_point_returns_the_exit_code() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "membrane.cli",
            "inspect",
            "--user-message",
            "hi",
            "--memory",
            "broken",
        ],
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(Path(__file__).parents[1] / "src"), "PATH": ""},
    )
    assert done.returncode == 2
    assert "expected 'id|tier|content'" in done.stderr


def test_marked_cache_mode_shows_the_breakpoint_inside_the_system_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "h.json"
    path.write_text(json.dumps(_history(60)), encoding="utf-8")
    args = [
        "--max-tokens",
        "3000",
        "--model-id",
        "anthropic/claude-sonnet-4-5",
        "--history-file",
        str(path),
    ]
    code, out, _ = _run(capsys, "inspect", "--user-message", QUESTION, *args)
    assert code == 0
    md = _inspect_json(capsys, *args)["metadata"]
    assert md["cache_mode"] == "marked"
    core_point = md["cache_breakpoints"][0]
    assert core_point["reason"] == "core" and core_point["chars"] == md["core_chars"]
    expected = (
        f"breakpoint inside message 0 at char {core_point['chars']:,}: "
        f"{core_point['tokens']:,} tokens (core)"
    )
    assert expected in out


def test_token_scale_shrinks_the_counted_budget(capsys: pytest.CaptureFixture[str]) -> None:
    payload = _inspect_json(capsys, *MEMORIES, "--max-tokens", "2000", "--token-scale", "2")
    md = payload["metadata"]
    assert md["token_scale"] == 2.0
    assert md["tokens_budget_counted"] == 1000
    assert md["token_count"] + md["message_framing_tokens"] <= 1000
