"""What the live benchmarks share: API keys, the official SDK clients, one request, scoring.

Every live entry point reads its key from the environment (``ANTHROPIC_API_KEY`` or
``OPENAI_API_KEY``) and stops with a clear message, before any work, when it is missing. The
clients are the official ``anthropic`` and ``openai`` SDKs; ``--base-url`` (or the SDKs' own
``ANTHROPIC_BASE_URL`` / ``OPENAI_BASE_URL``) points them at a gateway or at a test stub.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchmarks._scenarios import Scenario
    from benchmarks._strategies import Built, Strategy

__all__ = [
    "KEYS",
    "Answer",
    "LiveKeyMissing",
    "LiveTurn",
    "add_live_args",
    "anthropic_client",
    "ask_anthropic",
    "ask_openai",
    "codes_in",
    "judge",
    "live_conversation",
    "openai_client",
    "require_key",
    "summarise_live",
]

KEYS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
_SDK = {"anthropic": "llm-anthropic", "openai": "llm-openai"}
# The suites' facts are codes like K7Q-42 or AB-2345: letters and digits 2-9, with a digit.
_CODE = re.compile(
    r"(?<![\w-])(?=[A-Z2-9-]*[2-9])(?=[A-Z2-9-]*[A-Z])[A-Z2-9]+(?:-[A-Z2-9]+)*(?![\w-])"
)


class LiveKeyMissing(SystemExit):
    """Raised (as a clean exit, status 2) when the provider's API key is not set."""


def require_key(provider: str, purpose: str) -> str:
    """The provider's API key from the environment, or a clear refusal that names it."""
    var = KEYS[provider]
    key = os.environ.get(var, "").strip()
    if not key:
        print(
            f"{purpose} calls the {provider.title()} API and needs an API key: set {var} "
            f"(nothing was sent; a live run costs API credits).",
            file=sys.stderr,
        )
        raise LiveKeyMissing(2)
    return key


def add_live_args(parser: argparse.ArgumentParser, model: str) -> None:
    parser.add_argument("--model", default=model, help="provider model name (%(default)s)")
    parser.add_argument(
        "--base-url", default=None, help="API base URL (a gateway, or a local stub in tests)"
    )
    parser.add_argument("--max-tokens", type=int, default=64, help="reply length cap")


def anthropic_client(key: str, base_url: str | None) -> Any:
    try:
        import anthropic
    except ImportError as exc:
        raise SystemExit(f"install the {_SDK['anthropic']} extra: {exc}") from None
    return anthropic.Anthropic(api_key=key, base_url=base_url, max_retries=4)


def openai_client(key: str, base_url: str | None) -> Any:
    try:
        import openai
    except ImportError as exc:
        raise SystemExit(f"install the {_SDK['openai']} extra: {exc}") from None
    return openai.OpenAI(api_key=key, base_url=base_url, max_retries=4)


@dataclass(frozen=True, slots=True)
class Answer:
    """A reply and what the provider billed for its prompt."""

    text: str
    input_tokens: int  # every prompt token: uncached + written + read
    cache_read: int
    cache_write: int
    output_tokens: int


def ask_anthropic(client: Any, request: Mapping[str, Any], model: str, max_tokens: int) -> Answer:
    """Send a Messages API request built by ``anthropic_request`` (or a peer's equivalent)."""
    # The live model and reply cap win over whatever the request carried.
    response = client.messages.create(**{**request, "model": model, "max_tokens": max_tokens})
    usage = response.usage
    read = usage.cache_read_input_tokens or 0
    write = usage.cache_creation_input_tokens or 0
    text = "".join(getattr(b, "text", "") for b in response.content)
    return Answer(text, usage.input_tokens + read + write, read, write, usage.output_tokens)


def ask_openai(
    client: Any, messages: Iterable[Mapping[str, Any]], model: str, max_tokens: int
) -> Answer:
    """Send compiled messages to Chat Completions."""
    response = client.chat.completions.create(
        model=model, messages=list(messages), max_completion_tokens=max_tokens
    )
    usage = response.usage
    details = getattr(usage, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    text = response.choices[0].message.content or ""
    return Answer(text, usage.prompt_tokens, cached, 0, usage.completion_tokens)


def codes_in(text: str) -> set[str]:
    """Code-shaped tokens in a reply."""
    return {m.group(0) for m in _CODE.finditer(text) if 5 <= len(m.group(0)) <= 9}


def judge(reply: str, expected: Iterable[str]) -> tuple[bool, bool]:
    """(correct, wrong): every expected code is in the reply; or it states some other code."""
    wanted = set(expected)
    correct = all(code in reply for code in wanted)
    stated = codes_in(reply)
    wrong = not correct and bool(stated - wanted)
    return correct, wrong


@dataclass(frozen=True, slots=True)
class LiveTurn:
    """One live request: what was billed, and how the reply did on the turn's questions."""

    answer: Answer
    asked: bool
    correct: bool
    wrong: bool


def live_conversation(
    scenario: Scenario,
    strategy: Strategy,
    send: Callable[[Built], Answer],
    *,
    max_turns: int = 0,
    ignore_kinds: tuple[str, ...] = (),
) -> list[LiveTurn]:
    """Play ``scenario`` through ``strategy``, sending every turn's request with ``send``.

    The history is the scenario's scripted one (the model's replies are scored, never fed
    back), so every strategy is asked the same questions after the same conversation.
    ``ignore_kinds`` leaves probes of those kinds out of the score.
    """
    strategy.start(scenario)
    history: list[dict[str, Any]] = []
    out: list[LiveTurn] = []
    for i, turn in enumerate(scenario.turns):
        if max_turns and i >= max_turns:
            break
        built = strategy.build(list(history), turn)
        answer = send(built)
        codes = [p.code for p in turn.probes if p.kind not in ignore_kinds]
        correct, wrong = judge(answer.text, codes) if codes else (False, False)
        out.append(LiveTurn(answer, bool(codes), correct, wrong))
        history.append({"role": "user", "content": turn.user_message})
        history.extend(dict(m) for m in turn.reply)
    return out


def summarise_live(turns: list[LiveTurn], write: float, read: float) -> dict[str, Any]:
    """Accuracy, confident wrong answers, cache shares and input cost in token-equivalents."""
    asked = [t for t in turns if t.asked]
    total = sum(t.answer.input_tokens for t in turns)
    reads = sum(t.answer.cache_read for t in turns)
    writes = sum(t.answer.cache_write for t in turns)
    uncached = total - reads - writes
    return {
        "requests": len(turns),
        "questions": len(asked),
        "accuracy": sum(t.correct for t in asked) / len(asked) if asked else None,
        "wrong": sum(t.wrong for t in asked),
        "input_tokens": total,
        "cache_read_tokens": reads,
        "cache_write_tokens": writes,
        "read_share": reads / total if total else 0.0,
        "output_tokens": sum(t.answer.output_tokens for t in turns),
        "cost": uncached + write * writes + read * reads,
    }
