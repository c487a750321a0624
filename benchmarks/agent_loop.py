"""An agent loop with 20 tools and screenshots as tool results, all strategies at one budget.

    python -m benchmarks.agent_loop [--seeds N] [--tasks N]

Each task is a user request the agent works through in three tool calls; every tool result is a
line of text holding one fact (a confirmation code) and a screenshot. Every fifth task asks for
the code from an older task. Before each model call every strategy builds its request from the
same history, with the same 60,000-token budget for Claude Sonnet 4.5 (200,000-token window):

- ``membrane``: ``ContextCompiler(60_000, model).compile(..., tools=TOOLS)`` and
  ``anthropic_request``; its output cap is its reserve.
- ``langchain``: ``trim_messages(max_tokens=60_000, strategy="last", include_system=True,
  start_on="human", allow_partial=False)`` with a text token counter (cl100k plus 3 tokens a
  message; LangChain's counters do not see tool definitions, and count no image by its size),
  then the tools; output cap 4,096. ``langchain_approx`` is the same with LangChain's own
  ``count_tokens_approximately``, which charges each image a fixed 85 tokens.
- ``naive``: the whole history and the tools; output cap 4,096.

Every request is then judged the same way, independently of how any strategy counted:

- **tokens**: cl100k text plus 3 per message, each screenshot by Anthropic's documented
  ``width * height / 750`` after its resize (long edge 1568, about 1,600 tokens at most), the
  tools as the JSON Anthropic receives plus its 530-token tool-use system prompt;
- **over budget**: tokens > 60,000;
- **invalid**: rejected before the model runs: tokens + output cap > the window, a tool result
  without its call (or the reverse), or a body the Anthropic SDK's request types refuse
  (``benchmarks._sdk_types``, unknown keys forbidden); every strategy's messages are converted
  by the same ``anthropic_request``;
- **recall**: on question turns, the asked code is in the request (an invalid request recalls
  nothing);
- **cost**: input tokens of the valid requests at $3 per million (Sonnet 4.5 list price), no
  cache discount for anyone.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import random
import statistics
import struct
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from benchmarks._report import machine, write_result
from benchmarks._sdk_types import anthropic_messages
from benchmarks._tokens import count_message, count_text, encode_fresh
from membrane import ContextCompiler, anthropic_request
from membrane.errors import MembraneError
from membrane.report import CompileReport

__all__ = ["main", "run"]

MODEL = "anthropic/claude-sonnet-4.5"
WINDOW = 200_000
BUDGET = 60_000
PEER_OUTPUT_CAP = 4096
PRICE_PER_MILLION = 3.0
TOOL_PROMPT_TOKENS = 530  # Anthropic's tool-use system prompt (largest documented figure)
SYSTEM = (
    "You are a browser and back-office agent. Work through each task with the tools, one "
    "step at a time, and report what you did. Quote confirmation codes exactly."
)
SCREEN_SIZES = ((1280, 800), (1440, 900), (1920, 1080), (1024, 768))
_TOOL_NAMES = [
    "open_page",
    "click_element",
    "type_text",
    "scroll_page",
    "take_screenshot",
    "search_orders",
    "lookup_customer",
    "create_ticket",
    "update_ticket",
    "send_email",
    "book_shipment",
    "cancel_order",
    "refund_payment",
    "check_inventory",
    "schedule_meeting",
    "query_database",
    "read_file",
    "write_file",
    "run_report",
    "fetch_invoice",
]
_CITIES = "Lisbon Lagos Osaka Quito Tallinn Denver Nairobi Hobart Porto Kraków Recife Sapporo"
_THINGS = "warehouse slot|refund|courier pickup|invoice|support ticket|meeting room|license"


def _tool(name: str, rng: random.Random) -> dict[str, Any]:
    words = name.replace("_", " ")
    props = {
        "target": {"type": "string", "description": f"What to {words}: an id, URL or name."},
        "reason": {"type": "string", "description": "Why this step is needed, for the audit log."},
        "timeout_s": {"type": "integer", "description": "Seconds to wait before giving up."},
    }
    if rng.random() < 0.5:
        props["mode"] = {"type": "string", "enum": ["fast", "careful", "dry_run"]}
    description = (
        f"{words.capitalize()} in the company's systems. Returns a short text summary of the "
        "result and a screenshot of the screen afterwards. Use it only when the task needs "
        "it; every call is logged and rate-limited."
    )
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": ["target"]},
        },
    }


def _png(width: int, height: int, salt: int) -> str:
    head = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + head
    body = zlib.compress(bytes([salt % 256]) * 64)
    data = (
        b"\x89PNG\r\n\x1a\n"
        + struct.pack(">I", 13)
        + chunk
        + struct.pack(">I", zlib.crc32(chunk))
        + struct.pack(">I", len(body))
        + b"IDAT"
        + body
        + struct.pack(">I", zlib.crc32(b"IDAT" + body))
    )
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


@dataclass
class Call:
    """One model call: the history before it and, on a question turn, the question."""

    history: list[dict[str, Any]]
    user_message: str
    answer_code: str | None = None


@dataclass
class Scenario:
    tools: list[dict[str, Any]]
    calls: list[Call] = field(default_factory=list)
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)


def build_scenario(seed: int, tasks: int) -> Scenario:
    rng = random.Random(seed)
    scenario = Scenario([_tool(name, rng) for name in _TOOL_NAMES])
    cities, things = _CITIES.split(), _THINGS.split("|")
    history: list[dict[str, Any]] = []
    facts: list[tuple[str, str, str]] = []  # (city, thing, code)
    for task in range(tasks):
        if task % 5 == 4 and len(facts) > 12:
            city, thing, code = rng.choice(facts[: len(facts) - 9])
            question = f"What was the confirmation code for the {city} {thing}?"
            scenario.calls.append(Call(list(history), question, code))
            history += [
                {"role": "user", "content": question},
                {"role": "assistant", "content": f"It was {code}."},
            ]
            continue
        city, thing = rng.choice(cities), rng.choice(things)
        ask = f"Task {task + 1}: sort out the {thing} for {city} and confirm it."
        history.append({"role": "user", "content": ask})
        scenario.calls.append(Call(list(history[:-1]), ask))
        for step in range(3):
            name = rng.choice(_TOOL_NAMES)
            call_id = f"call_{task}_{step}"
            arguments = json.dumps({"target": f"{city.lower()}-{thing.split()[0]}", "reason": ask})
            history.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": arguments},
                        }
                    ],
                }
            )
            code = f"{city[:2].upper()}-{rng.randint(1000, 9999)}"
            w, h = rng.choice(SCREEN_SIZES)
            url = _png(w, h, seed * 10_000 + task * 10 + step)
            scenario.sizes[url] = (w, h)
            if step == 2:
                facts.append((city, thing, code))
                note = f"Done: the {city} {thing} is confirmed, confirmation code {code}."
            else:
                note = f"Step {step + 1} of the {city} {thing}: page loaded, reference {code}."
            history.append(
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "content": [
                        {"type": "text", "text": note},
                        {"type": "image_url", "image_url": {"url": url}},
                    ],
                }
            )
            scenario.calls.append(Call(list(history), ""))
        history.append({"role": "assistant", "content": f"The {city} {thing} is confirmed."})
    return scenario


# ---------------------------------------------------------------------- judging


def _claude_image_tokens(width: int, height: int) -> int:
    w, h = float(width), float(height)
    if max(w, h) > 1568:
        w, h = w * 1568 / max(w, h), h * 1568 / max(w, h)
    if w * h / 750 > 1600:
        ratio = math.sqrt(1600 * 750 / (w * h))
        w, h = w * ratio, h * ratio
    return math.ceil(int(w) * int(h) / 750)


def _images(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]


def _text(messages: Sequence[dict[str, Any]]) -> str:
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return "\n".join(out)


@dataclass
class Judged:
    tokens: int
    over_budget: bool
    invalid: str | None
    recalled: bool | None


def judge(
    scenario: Scenario, call: Call, messages: list[dict[str, Any]], output_cap: int
) -> Judged:
    anthropic_tools = [
        {
            "name": t["function"]["name"],
            "description": t["function"]["description"],
            "input_schema": t["function"]["parameters"],
        }
        for t in scenario.tools
    ]
    tokens = count_text(json.dumps(anthropic_tools)) + TOOL_PROMPT_TOKENS
    for m in messages:
        tokens += count_message(m)
        tokens += sum(_claude_image_tokens(*scenario.sizes[url]) for url in _images(m))
    invalid = None
    if tokens + output_cap > WINDOW:
        invalid = "prompt + output cap over the window"
    else:
        invalid = _sdk_check(scenario, messages, output_cap)
    recalled = None
    if call.answer_code is not None:
        recalled = invalid is None and call.answer_code in _text(messages)
    return Judged(tokens, tokens > BUDGET, invalid, recalled)


_CHECKED: dict[str, str | None] = {}


def _sdk_check(scenario: Scenario, messages: list[dict[str, Any]], output_cap: int) -> str | None:
    # Two strategies often send the same messages; each distinct request is checked once.
    key = hashlib.sha256(json.dumps([messages, output_cap]).encode()).hexdigest()
    if key not in _CHECKED:
        _CHECKED[key] = _sdk_verdict(scenario, messages, output_cap)
    return _CHECKED[key]


def _sdk_verdict(scenario: Scenario, messages: list[dict[str, Any]], output_cap: int) -> str | None:
    prompt = SimpleNamespace(
        messages=messages,
        metadata={"memory_placement": "end", "reserve_output_tokens": output_cap},
        tools=scenario.tools,
    )
    try:
        body = anthropic_request(prompt)
        anthropic_messages().validate_python({"model": "claude-sonnet-4-5", **body})
    except MembraneError as exc:
        return f"{type(exc).__name__}"
    except ValueError as exc:
        return f"SDK types: {str(exc).splitlines()[0]}"
    return None


# ---------------------------------------------------------------------- strategies


Builder = Callable[[Call], tuple[list[dict[str, Any]], int]]


def membrane(scenario: Scenario) -> Builder:
    compiler = ContextCompiler(BUDGET, MODEL, core_content=SYSTEM)

    def build(call: Call) -> tuple[list[dict[str, Any]], int]:
        result = compiler.compile(
            [], call.user_message, conversation_messages=call.history, tools=scenario.tools
        )
        agent = CompileReport.from_metadata(result.metadata).agent
        assert agent is not None and agent.reserve_output_tokens is not None
        return result.messages, agent.reserve_output_tokens

    return build


def naive(scenario: Scenario) -> Builder:
    def build(call: Call) -> tuple[list[dict[str, Any]], int]:
        tail = [{"role": "user", "content": call.user_message}] if call.user_message else []
        return [{"role": "system", "content": SYSTEM}, *call.history, *tail], PEER_OUTPUT_CAP

    return build


def langchain(scenario: Scenario, *, approximate: bool = False) -> Builder:
    from langchain_core.messages import (
        AIMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
        trim_messages,
    )
    from langchain_core.messages.utils import (
        convert_to_openai_messages,
        count_tokens_approximately,
    )

    converted: list[Any] = []
    counts: dict[int, int] = {}

    def convert(m: dict[str, Any]) -> Any:
        if m["role"] == "user":
            return HumanMessage(content=m["content"])
        if m["role"] == "tool":
            return ToolMessage(content=m["content"], tool_call_id=m["tool_call_id"])
        calls = [
            {
                "name": c["function"]["name"],
                "args": json.loads(c["function"]["arguments"]),
                "id": c["id"],
                "type": "tool_call",
            }
            for c in m.get("tool_calls") or ()
        ]
        return AIMessage(content=m.get("content") or "", tool_calls=calls)

    def counter(messages: list[Any]) -> int:
        total = 0
        for msg in messages:
            n = counts.get(id(msg))
            if n is None:
                text = msg.content if isinstance(msg.content, str) else _text([msg.model_dump()])
                n = 3 + len(encode_fresh(text))
                for call in getattr(msg, "tool_calls", None) or ():
                    n += len(encode_fresh(call["name"] + json.dumps(call["args"])))
                counts[id(msg)] = n
            total += n
        return total

    def build(call: Call) -> tuple[list[dict[str, Any]], int]:
        for m in call.history[len(converted) :]:
            converted.append(convert(m))
        tail = [HumanMessage(content=call.user_message)] if call.user_message else []
        trimmed = trim_messages(
            [SystemMessage(content=SYSTEM), *converted[: len(call.history)], *tail],
            max_tokens=BUDGET,
            token_counter=count_tokens_approximately if approximate else counter,
            strategy="last",
            include_system=True,
            start_on="human",
            allow_partial=False,
        )
        return _openai_shape(convert_to_openai_messages(trimmed)), PEER_OUTPUT_CAP

    return build


def _openai_shape(messages: Any) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        clean = {
            k: v for k, v in m.items() if k in ("role", "content", "tool_calls", "tool_call_id")
        }
        if clean.get("tool_calls"):
            clean["content"] = clean.get("content") or None
        out.append(clean)
    return out


STRATEGIES: dict[str, Callable[[Scenario], Builder]] = {
    "membrane": membrane,
    "langchain": langchain,
    "langchain_approx": lambda scenario: langchain(scenario, approximate=True),
    "naive": naive,
}


def run(seed: int, tasks: int) -> dict[str, Any]:
    scenario = build_scenario(seed, tasks)
    out: dict[str, Any] = {}
    for name, make in STRATEGIES.items():
        build = make(scenario)
        judged, times = [], []
        for call in scenario.calls:
            t0 = time.perf_counter_ns()
            messages, cap = build(call)
            times.append((time.perf_counter_ns() - t0) / 1e6)
            judged.append(judge(scenario, call, messages, cap))
        questions = [j for j in judged if j.recalled is not None]
        valid = [j for j in judged if j.invalid is None]
        reasons: dict[str, int] = {}
        for j in judged:
            if j.invalid is not None:
                reasons[j.invalid] = reasons.get(j.invalid, 0) + 1
        out[name] = {
            "requests": len(judged),
            "over_budget": sum(j.over_budget for j in judged),
            "invalid": len(judged) - len(valid),
            "invalid_reasons": reasons,
            "recall": sum(bool(j.recalled) for j in questions) / max(len(questions), 1),
            "questions": len(questions),
            "input_tokens": sum(j.tokens for j in valid),
            "cost_usd": round(sum(j.tokens for j in valid) * PRICE_PER_MILLION / 1e6, 4),
            "max_tokens": max(j.tokens for j in judged),
            "median_build_ms": round(statistics.median(times), 3),
        }
    return {"seed": seed, "requests": len(scenario.calls), "strategies": out}


def _total(runs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    rows = [r["strategies"][name] for r in runs]
    questions = sum(r["questions"] for r in rows)
    return {
        "requests": sum(r["requests"] for r in rows),
        "over_budget": sum(r["over_budget"] for r in rows),
        "invalid": sum(r["invalid"] for r in rows),
        "recall": round(sum(r["recall"] * r["questions"] for r in rows) / max(questions, 1), 3),
        "cost_usd": round(sum(r["cost_usd"] for r in rows), 4),
        "median_build_ms": round(statistics.median(r["median_build_ms"] for r in rows), 3),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.agent_loop", description=__doc__)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=60)
    parser.add_argument("--no-write", action="store_true", help="print only, write no JSON")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    runs = [run(seed, args.tasks) for seed in range(1, args.seeds + 1)]
    totals = {name: _total(runs, name) for name in STRATEGIES}
    payload = {
        "suite": "agent_loop",
        "command": "python -m benchmarks.agent_loop "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine(),
        "elapsed_seconds": round(time.perf_counter() - started, 1),
        "settings": {
            "model": MODEL,
            "window": WINDOW,
            "budget": BUDGET,
            "peer_output_cap": PEER_OUTPUT_CAP,
            "tools": len(_TOOL_NAMES),
            "tasks": args.tasks,
            "seeds": args.seeds,
            "price_per_million_input": PRICE_PER_MILLION,
        },
        "totals": totals,
        "runs": runs,
    }
    path = None if args.no_write else write_result("agent_loop", payload)
    print(
        f"{'strategy':<16} {'requests':>8} {'over':>6} {'invalid':>8} {'recall':>7} {'cost $':>8}"
    )
    for name, row in totals.items():
        print(
            f"{name:<16} {row['requests']:>8} {row['over_budget']:>6} {row['invalid']:>8} "
            f"{row['recall']:>7.0%} {row['cost_usd']:>8.2f}"
        )
    if path is not None:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
