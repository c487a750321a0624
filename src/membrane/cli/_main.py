"""The ``membrane`` commands: compile with the library, then print one of the views."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import TextIO

from membrane import ContextLayoutEngine
from membrane.anatomy import prompt_anatomy
from membrane.cli._args import UsageError, build_parser, load_history, parse_memory
from membrane.cli._html import render_html
from membrane.cli._text import render_text
from membrane.compiler import ContextCompiler
from membrane.errors import InvalidInputError, MembraneError
from membrane.messages import Message
from membrane.profile import MembraneProfile
from membrane.records import MemoryItem
from membrane.tokenizers import TiktokenAdapter

__all__ = ["main"]

# The compiler counts with cl100k_base unless it is given a counter or registry; the CLI never
# gives it one, so its region counts add up to metadata["token_count"].
_ENCODING = "cl100k_base"


def _compiler(args: argparse.Namespace) -> ContextCompiler:
    return ContextCompiler(
        args.max_tokens,
        args.model_id,
        args.core,
        memory_placement=args.placement,
        token_scale=args.token_scale,
    )


def _inputs(args: argparse.Namespace) -> tuple[list[MemoryItem], list[Message] | None]:
    memories = [parse_memory(spec, i) for i, spec in enumerate(args.memory, start=1)]
    history = load_history(args.history_file) if args.history_file else None
    return memories, history


def _profile(args: argparse.Namespace) -> MembraneProfile | None:
    """The ``--profile`` preset, with the profiler on under ``--timings`` (None: neither)."""
    if args.profile is None and not args.timings:
        return None
    profile = _preset(args.profile or "minimal")
    return dataclasses.replace(profile, profiler=True) if args.timings else profile


def _preset(name: str) -> MembraneProfile:
    if name.strip().lower() not in MembraneProfile.PRESETS:
        raise UsageError(
            f"unknown profile {name!r}; choose one of {', '.join(MembraneProfile.PRESETS)}"
        )
    return MembraneProfile.preset(name)


def _core_text(args: argparse.Namespace) -> str:
    return ContextLayoutEngine(args.core).build_core()


def _run_inspect(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    memories, history = _inputs(args)
    result = _compiler(args).compile(
        memories,
        args.user_message,
        conversation_messages=history,
        debug=True,
        profile=_profile(args),
    )
    anatomy = prompt_anatomy(
        result,
        counter=TiktokenAdapter(_ENCODING),
    )
    if args.html:
        page = render_html(result, anatomy)
        try:
            Path(args.html).write_text(page, encoding="utf-8")
        except OSError as exc:
            raise UsageError(
                f"--html {args.html}: cannot write it ({exc.strerror or exc})"
            ) from exc
    if args.json:
        payload = result.to_debug_dict()
        payload["compiled_messages"] = result.messages
        payload["regions"] = anatomy.totals()
        out.write(json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n")
    else:
        out.write(render_text(result, anatomy))
    if args.html:
        err.write(f"membrane: wrote {args.html}\n")
    return 0


def _run_quote(args: argparse.Namespace, out: TextIO) -> int:
    memories, history = _inputs(args)
    quote = _compiler(args).estimate(
        memories,
        args.user_message,
        price_per_1k_input_tokens=args.price_per_1k_input_tokens,
        conversation_messages=history,
        profile=_profile(args),
    )
    md = quote.compile_result.metadata
    report = quote.compile_result.report
    if args.json:
        payload = {
            "total_tokens": quote.total_tokens,
            "estimated_cost_usd": quote.estimated_cost_usd,
            "price_per_1k_input_tokens": quote.price_per_1k_input_tokens,
            "trimming_strategies": list(quote.trimming_strategies),
            "metadata": md,
        }
        out.write(json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n")
        return 0
    rows = [
        ("model", str(report.model_id or "(none)")),
        ("budget", f"{report.tokens_budget:,} tokens"),
        ("input tokens", f"{quote.total_tokens:,} (framing and token scale included)"),
        ("price", f"${_money(quote.price_per_1k_input_tokens)} per 1k input tokens"),
        ("estimated cost", f"${_money(quote.estimated_cost_usd)}"),
        ("trimming", ", ".join(quote.trimming_strategies) or "none (everything fit)"),
    ]
    out.write("membrane quote\n")
    out.writelines(f"  {name:<15} {value}\n" for name, value in rows)
    return 0


def _run_profile(args: argparse.Namespace, out: TextIO) -> int:
    profile = _preset(args.name)
    if args.json:
        out.write(json.dumps(profile.to_dict(), indent=2) + "\n")
    else:
        out.write(profile.explain() + "\n")
    return 0


def _money(value: float) -> str:
    text = f"{value:.10f}".rstrip("0").rstrip(".")
    return text if text else "0"


def main(argv: list[str] | None = None) -> int:
    """Run the ``membrane`` command with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    >>> main(["profile", "explain", "minimal"])  # doctest: +ELLIPSIS
    Profile 'minimal'
    ...
    0
    """
    out, err = sys.stdout, sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        # argparse has printed usage or help already; hand back its code instead of exiting.
        return exc.code if isinstance(exc.code, int) else 2
    try:
        if args.command == "inspect":
            return _run_inspect(args, out, err)
        if args.command == "quote":
            return _run_quote(args, out)
        return _run_profile(args, out)
    except UsageError as exc:
        err.write(f"membrane {args.command}: error: {exc}\n")
        return 2
    except InvalidInputError as exc:
        err.write(f"membrane {args.command}: error: {exc}\n")
        return 2
    except MembraneError as exc:
        err.write(f"membrane {args.command}: {type(exc).__name__}: {exc}\n")
        return 1
