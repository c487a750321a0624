"""Command-line values: the ``membrane`` argument parser and the inputs it reads.

Anything the user has to fix raises :class:`UsageError`, which the command reports with exit
code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from membrane.messages import Message
from membrane.records import MemoryItem, MemoryKind

__all__ = ["UsageError", "build_parser", "load_history", "parse_memory"]

_KIND_BY_TIER: dict[str, MemoryKind] = {
    "1": "procedural",
    "2": "semantic",
    "3": "episodic",
    "procedural": "procedural",
    "semantic": "semantic",
    "episodic": "episodic",
}


class UsageError(Exception):
    """A command-line value the user has to fix (exit code 2)."""


def parse_memory(spec: str, position: int) -> MemoryItem:
    """``id|tier|content``; the content is everything after the second ``|``."""
    parts = spec.split("|", 2)
    where = f"--memory #{position} ({spec!r})"
    if len(parts) != 3:
        raise UsageError(
            f"{where}: expected 'id|tier|content', for example 'policy-7|2|Refunds take 30 days.'"
        )
    memory_id, tier, content = (p.strip() for p in parts)
    if not memory_id:
        raise UsageError(f"{where}: the id before the first '|' is empty")
    kind = _KIND_BY_TIER.get(tier.lower())
    if kind is None:
        raise UsageError(
            f"{where}: tier must be 1 (procedural), 2 (semantic) or 3 (episodic), got {tier!r}"
        )
    if not content:
        raise UsageError(f"{where}: the content after the second '|' is empty")
    return MemoryItem(id=memory_id, content=content, memory_type=kind)


def load_history(path: str) -> list[Message]:
    """The messages in ``path``; ``-`` reads them from standard input."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        raw = json.loads(text)
    except OSError as exc:
        raise UsageError(f"--history-file {path}: cannot read it ({exc.strerror or exc})") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"--history-file {path}: not valid UTF-8 JSON ({exc})") from exc
    if isinstance(raw, dict) and "messages" in raw:
        raw = raw["messages"]
    if not isinstance(raw, list):
        raise UsageError(
            f"--history-file {path}: expected a JSON list of messages (or an object with a "
            "'messages' list)"
        )
    return raw


def _version() -> str:
    import membrane

    return membrane.__version__


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text}")
    return value


def _price(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of 0 or more, got {text}")
    return value


def _compile_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--user-message", required=True, help="the current user turn")
    common.add_argument(
        "--memory",
        action="append",
        default=[],
        metavar="ID|TIER|CONTENT",
        help="a retrieved memory; tier 1 procedural, 2 semantic, 3 episodic (repeatable)",
    )
    common.add_argument(
        "--max-tokens", type=_positive_int, default=4096, help="token budget (default 4096)"
    )
    common.add_argument("--model-id", default=None, help="model id for the capability map")
    common.add_argument("--core", default="", help="system rules placed first")
    common.add_argument(
        "--placement", choices=("end", "system"), default="end", help="memory placement"
    )
    common.add_argument(
        "--history-file",
        default=None,
        metavar="FILE.json",
        help="prior messages as JSON ('-' reads standard input)",
    )
    common.add_argument(
        "--token-scale",
        type=_positive_float,
        default=None,
        help="provider tokens per counted token (default: from the capability map)",
    )
    common.add_argument(
        "--profile",
        default=None,
        metavar="NAME",
        help="compile with a profile preset: minimal, coding or conversational",
    )
    common.add_argument(
        "--timings",
        action="store_true",
        help="turn the profiler on: per-stage timings in the output (with --profile or alone)",
    )
    common.add_argument("--json", action="store_true", help="print JSON instead of text")
    return common


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="membrane",
        description="Compile prompts locally with Membrane (no model is called).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = _compile_options()
    inspect = commands.add_parser(
        "inspect",
        parents=[common],
        help="show the compiled messages, regions, citations and cache evidence",
    )
    inspect.add_argument(
        "--html", metavar="FILE", default=None, help="also write a picture of the prompt as HTML"
    )
    quote = commands.add_parser("quote", parents=[common], help="price the compiled prompt")
    quote.add_argument(
        "--price-per-1k-input-tokens",
        type=_price,
        required=True,
        metavar="USD",
        help="your provider's input price per 1,000 tokens",
    )
    profile = commands.add_parser("profile", help="memory profile presets")
    profile_commands = profile.add_subparsers(
        dest="profile_command", required=True, metavar="ACTION"
    )
    explain = profile_commands.add_parser("explain", help="describe what a preset does")
    explain.add_argument("name", help="preset name, e.g. minimal, coding, conversational")
    explain.add_argument("--json", action="store_true", help="print every setting as JSON")
    return parser
