"""The ``membrane`` command: compile a prompt locally and show where its tokens went.

Nothing here calls a model. ``inspect`` prints the compiled messages region by region with
their token counts, the citation map and the trimming and caching evidence (``--json`` for
machines, ``--html`` for a picture); ``quote`` prices the same compile; ``profile explain``
describes a memory profile preset.

Exit codes: 0 on success, 2 for bad arguments or input, 1 for any other Membrane error.
"""

from __future__ import annotations

import argparse
import html
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from membrane.capabilities import get_cache_pricing
from membrane.compiler import CompileResult, ContextCompiler
from membrane.errors import InvalidInputError, MembraneError
from membrane.messages import Message, message_text
from membrane.prompt_text import CURRENT_MESSAGE_HEADER, LAST_REPLY_HEADER, RECALL_HEADER
from membrane.records import MemoryItem, MemoryKind
from membrane.stages.layout import ContextLayoutEngine
from membrane.tokenizers import TiktokenAdapter, TokenCounter

__all__ = ["main"]

# The compiler counts with cl100k_base unless it is given a counter or registry; the CLI never
# gives it one, so its region counts add up to metadata["token_count"].
_ENCODING = "cl100k_base"

_REGIONS: tuple[str, ...] = ("core", "index", "history", "memories", "recall", "current")
_REGION_LABELS: dict[str, str] = {
    "core": "system core",
    "index": "eviction index",
    "history": "history",
    "memories": "memories",
    "recall": "recall",
    "current": "current turn",
}
_KIND_BY_TIER: dict[str, MemoryKind] = {
    "1": "procedural",
    "2": "semantic",
    "3": "episodic",
    "procedural": "procedural",
    "semantic": "semantic",
    "episodic": "episodic",
}


class _UsageError(Exception):
    """A command-line value the user has to fix (exit code 2)."""


# ---------------------------------------------------------------------- prompt anatomy


@dataclass(frozen=True, slots=True)
class _Piece:
    """One region's text inside one message, with its share of the message's tokens."""

    region: str
    message_index: int
    text: str
    tokens: int


@dataclass(frozen=True, slots=True)
class _Anatomy:
    """A compiled prompt cut into regions; the pieces' tokens add up to the content count."""

    pieces: tuple[_Piece, ...]
    framing_per_message: int

    def totals(self) -> dict[str, int]:
        out = dict.fromkeys(_REGIONS, 0)
        for piece in self.pieces:
            out[piece.region] += piece.tokens
        return out

    @property
    def content_tokens(self) -> int:
        return sum(p.tokens for p in self.pieces)


def _cumulative(text: str, cuts: Sequence[int], count: TokenCounter) -> list[int]:
    # Counting growing prefixes makes the parts add up to the whole message exactly, even
    # where a token spans the boundary between two regions.
    out, before = [], 0
    for cut in [*cuts, len(text)]:
        now = count.count(text[:cut])
        out.append(now - before)
        before = now
    return out


def _pieces(
    regions: Sequence[tuple[str, int]], text: str, message_index: int, count: TokenCounter
) -> list[_Piece]:
    """Pieces for consecutive regions of ``text``; each ``(region, start)`` runs to the next."""
    starts = [start for _, start in regions]
    tokens = _cumulative(text, starts[1:], count)
    ends = [*starts[1:], len(text)]
    return [
        _Piece(name, message_index, text[start:end], n)
        for (name, start), end, n in zip(regions, ends, tokens, strict=True)
    ]


def _tail_regions(text: str, start: int, user_message: str) -> list[tuple[str, int]]:
    """Region starts for memories, recall and the current turn within ``text[start:]``."""
    marker = f"{CURRENT_MESSAGE_HEADER}\n{user_message}"
    if text.endswith(marker) and len(text) - len(marker) >= start:
        end_start = len(text) - len(marker)
    else:
        found = text.rfind(CURRENT_MESSAGE_HEADER, start)
        end_start = found if found >= 0 else len(text)
    reply = text.rfind(LAST_REPLY_HEADER, start, end_start)
    if reply >= 0:
        end_start = reply
    regions: list[tuple[str, int]] = []
    head = text[start:end_start]
    if head.startswith(RECALL_HEADER):
        regions.append(("recall", start))
    elif head:
        regions.append(("memories", start))
        # Memory lines never hold a newline, so no blank line can precede the recall block.
        gap = head.find("\n\n" + RECALL_HEADER)
        if gap >= 0:
            regions.append(("recall", start + gap))
    regions.append(("current", end_start))
    return regions


def _anatomy(result: CompileResult, core: str, user_message: str, count: TokenCounter) -> _Anatomy:
    """Cut ``result.messages`` into the six regions.

    ``core`` is the system text the layout built (rules plus interrupt instruction); it is only
    needed for system placement, where everything shares one message.
    """
    md = result.metadata
    messages = result.messages
    framing = int(md.get("message_framing_tokens", 0)) // max(len(messages), 1)
    system = message_text(messages[0])
    pieces: list[_Piece] = []
    if md.get("memory_placement") == "system":
        core_len = len(core) if system.startswith(core) else 0
        regions = [("core", 0)] if core_len else []
        rest = core_len + 2 if core_len and system[core_len:].startswith("\n\n") else core_len
        regions += _tail_regions(system, rest, user_message)
        pieces += _pieces(regions, system, 0, count)
        return _Anatomy(tuple(p for p in pieces if p.text), framing)
    core_chars = int(md.get("core_chars", len(system)))
    regions = [("core", 0)]
    if core_chars < len(system):
        regions.append(("index", core_chars))
    pieces += _pieces(regions, system, 0, count)
    for i, message in enumerate(messages[1:-1], start=1):
        text = message_text(message)
        pieces.append(_Piece("history", i, text, count.count(text)))
    if len(messages) > 1:
        tail = message_text(messages[-1])
        pieces += _pieces(_tail_regions(tail, 0, user_message), tail, len(messages) - 1, count)
    return _Anatomy(tuple(p for p in pieces if p.text), framing)


def _breakpoint_positions(
    result: CompileResult, anatomy: _Anatomy
) -> list[tuple[int, dict[str, Any]]]:
    """Each cache breakpoint's place on the content-token axis the regions are drawn on."""
    out = []
    for bp in result.metadata.get("cache_breakpoints") or []:
        framing = anatomy.framing_per_message * (int(bp["message_index"]) + 1)
        out.append((int(bp["tokens"]) - framing, bp))
    return out


def _prefix_tokens(result: CompileResult) -> int:
    """Provider tokens (framing included) of the cache-stable prefix, 0 when there is none."""
    points = result.metadata.get("cache_breakpoints") or []
    return int(points[-1]["tokens"]) if points else 0


def _sent_tokens(result: CompileResult) -> int:
    md = result.metadata
    return int(md["token_count"]) + int(md.get("message_framing_tokens", 0))


# ---------------------------------------------------------------------- arguments


def _parse_memory(spec: str, position: int) -> MemoryItem:
    """``id|tier|content``; the content is everything after the second ``|``."""
    parts = spec.split("|", 2)
    where = f"--memory #{position} ({spec!r})"
    if len(parts) != 3:
        raise _UsageError(
            f"{where}: expected 'id|tier|content', for example 'policy-7|2|Refunds take 30 days.'"
        )
    memory_id, tier, content = (p.strip() for p in parts)
    if not memory_id:
        raise _UsageError(f"{where}: the id before the first '|' is empty")
    kind = _KIND_BY_TIER.get(tier.lower())
    if kind is None:
        raise _UsageError(
            f"{where}: tier must be 1 (procedural), 2 (semantic) or 3 (episodic), got {tier!r}"
        )
    if not content:
        raise _UsageError(f"{where}: the content after the second '|' is empty")
    return MemoryItem(id=memory_id, content=content, memory_type=kind)


def _load_history(path: str) -> list[Message]:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise _UsageError(f"--history-file {path}: cannot read it ({exc.strerror or exc})") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _UsageError(f"--history-file {path}: not valid UTF-8 JSON ({exc})") from exc
    if isinstance(raw, dict) and "messages" in raw:
        raw = raw["messages"]
    if not isinstance(raw, list):
        raise _UsageError(
            f"--history-file {path}: expected a JSON list of messages (or an object with a "
            "'messages' list)"
        )
    return raw


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
        "--history-file", default=None, metavar="FILE.json", help="prior messages as JSON"
    )
    common.add_argument(
        "--token-scale",
        type=_positive_float,
        default=None,
        help="provider tokens per counted token (default: from the capability map)",
    )
    common.add_argument("--json", action="store_true", help="print JSON instead of text")
    return common


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="membrane",
        description="Compile prompts locally with Membrane (no model is called).",
    )
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
    return parser


# ---------------------------------------------------------------------- commands


@dataclass(frozen=True, slots=True)
class _Compiled:
    result: CompileResult
    core: str
    user_message: str


def _compiler(args: argparse.Namespace) -> ContextCompiler:
    return ContextCompiler(
        args.max_tokens,
        args.model_id,
        args.core,
        memory_placement=args.placement,
        token_scale=args.token_scale,
    )


def _inputs(args: argparse.Namespace) -> tuple[list[MemoryItem], list[Message] | None]:
    memories = [_parse_memory(spec, i) for i, spec in enumerate(args.memory, start=1)]
    history = _load_history(args.history_file) if args.history_file else None
    return memories, history


def _core_text(args: argparse.Namespace) -> str:
    return ContextLayoutEngine(args.core).build_core()


def _run_inspect(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    memories, history = _inputs(args)
    result = _compiler(args).compile(
        memories, args.user_message, conversation_messages=history, debug=True
    )
    compiled = _Compiled(result, _core_text(args), args.user_message)
    counter = TiktokenAdapter(_ENCODING)
    anatomy = _anatomy(result, compiled.core, compiled.user_message, counter)
    if args.html:
        page = _render_html(result, anatomy)
        try:
            Path(args.html).write_text(page, encoding="utf-8")
        except OSError as exc:
            raise _UsageError(
                f"--html {args.html}: cannot write it ({exc.strerror or exc})"
            ) from exc
    if args.json:
        payload = result.to_debug_dict()
        payload["compiled_messages"] = result.messages
        payload["regions"] = anatomy.totals()
        out.write(json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n")
    else:
        out.write(_render_text(result, anatomy))
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
    )
    md = quote.compile_result.metadata
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
        ("model", str(md.get("model_id") or "(none)")),
        ("budget", f"{md['tokens_budget']:,} tokens"),
        ("input tokens", f"{quote.total_tokens:,} (framing and token scale included)"),
        ("price", f"${_money(quote.price_per_1k_input_tokens)} per 1k input tokens"),
        ("estimated cost", f"${_money(quote.estimated_cost_usd)}"),
        ("trimming", ", ".join(quote.trimming_strategies) or "none (everything fit)"),
    ]
    out.write("membrane quote\n")
    out.writelines(f"  {name:<15} {value}\n" for name, value in rows)
    return 0


def _run_profile(args: argparse.Namespace, out: TextIO) -> int:
    from membrane.profile import MembraneProfile

    name = args.name.strip().lower()
    if name not in MembraneProfile.PRESETS:
        raise _UsageError(
            f"unknown profile {args.name!r}; choose one of {', '.join(MembraneProfile.PRESETS)}"
        )
    profile = getattr(MembraneProfile, name)()
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
    parser = _parser()
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
    except _UsageError as exc:
        err.write(f"membrane {args.command}: error: {exc}\n")
        return 2
    except InvalidInputError as exc:
        err.write(f"membrane {args.command}: error: {exc}\n")
        return 2
    except MembraneError as exc:
        err.write(f"membrane {args.command}: {type(exc).__name__}: {exc}\n")
        return 1


# ---------------------------------------------------------------------- text output


def _render_text(result: CompileResult, anatomy: _Anatomy) -> str:
    md = result.metadata
    totals = anatomy.totals()
    content = int(md["token_count"])
    sent = _sent_tokens(result)
    budget = int(md["tokens_budget"])
    lines = [
        f"membrane inspect: model {md.get('model_id') or '(none)'}, budget {budget:,} tokens, "
        f"placement {md.get('memory_placement')}, token scale {md.get('token_scale', 1.0):g}",
        "",
        "Regions (content tokens)",
        f"  {'region':<16}{'tokens':>8}{'share':>8}  messages",
    ]
    for region in _REGIONS:
        where = sorted({p.message_index for p in anatomy.pieces if p.region == region})
        share = totals[region] / content * 100 if content else 0.0
        lines.append(
            f"  {_REGION_LABELS[region]:<16}{totals[region]:>8,}{share:>7.1f}%  {_span(where)}"
        )
    lines.append(f"  {'total':<16}{content:>8,}")
    lines.append(
        f"  + framing {md.get('message_framing_tokens', 0)} = {sent:,} sent of {budget:,} "
        f"({sent / budget * 100:.1f}% of the budget)"
    )
    lines += ["", "Messages"]
    for piece in anatomy.pieces:
        role = result.messages[piece.message_index].get("role", "?")
        lines.append(
            f"== [{piece.message_index}] {role} | {_REGION_LABELS[piece.region]} | "
            f"{_plural(piece.tokens, 'token')} =="
        )
        lines.append(piece.text.strip("\n"))
    lines += ["", "Ref map ([Mem:N] -> your id)"]
    if result.ref_map:
        for number, ref in sorted(result.ref_map.items()):
            lines.append(f"  [Mem:{number}]  {ref}  ({result.ref_map_type.get(number, '?')})")
    else:
        lines.append("  (no memory reached the prompt)")
    lines += ["", "Trimming"] + [f"  {line}" for line in _trimming_lines(md)]
    lines += ["", "Cache"] + [f"  {line}" for line in _cache_lines(result)]
    return "\n".join(lines) + "\n"


def _trimming_lines(md: dict[str, Any]) -> list[str]:
    offered = int(md.get("segments_offered", 0))
    kept = int(md.get("segments_kept", 0))
    thinned = int(md.get("segments_thinned", 0))
    out = [
        f"memories: {offered} offered, {kept - thinned} in full, {thinned} thinned, "
        f"{offered - kept} dropped; {md.get('memories_truncated', 0)} capped in length",
    ]
    if md.get("memory_placement") == "end":
        out.append(
            f"history: {md.get('history_messages_dropped', 0)} messages dropped, "
            f"{md.get('history_messages_recalled', 0)} passages recalled, index "
            f"{md.get('history_index_lines', 0)} lines / {md.get('history_index_tokens', 0)} "
            "tokens"
        )
    out.append(f"tokens trimmed: {md.get('tokens_trimmed', 0):,}")
    exceeded = bool(md.get("budget_exceeded"))
    out.append(
        "over budget: YES (the content that is never cut does not fit)"
        if exceeded
        else "over budget: no"
    )
    return out


def _cache_lines(result: CompileResult) -> list[str]:
    md = result.metadata
    points = md.get("cache_breakpoints") or []
    pricing = get_cache_pricing(md["model_id"]) if md.get("model_id") else None
    prefix = _prefix_tokens(result)
    used = "yes" if md.get("prompt_cache_used") else "no"
    reason = ""
    if not md.get("prompt_cache_used"):
        if not md.get("model_id"):
            reason = " (no --model-id given)"
        elif md.get("cache_mode") is None:
            reason = " (the capability map lists no prompt caching for this model)"
        elif pricing is not None:
            reason = f" (prefix {prefix:,} tokens, model minimum {pricing.min_tokens:,})"
    out = [f"mode: {md.get('cache_mode') or 'none'}; prompt cache used: {used}{reason}"]
    for bp in points:
        where = f"after message {bp['message_index']}"
        if "chars" in bp:
            where = f"inside message {bp['message_index']} at char {bp['chars']:,}"
        out.append(f"breakpoint {where}: {bp['tokens']:,} tokens ({bp['reason']})")
    sent = _sent_tokens(result)
    out.append(
        f"cacheable prefix: {prefix:,} of {sent:,} tokens sent "
        f"({prefix / sent * 100 if sent else 0.0:.1f}%)"
    )
    return out


def _span(indices: list[int]) -> str:
    if not indices:
        return "-"
    if len(indices) == 1:
        return str(indices[0])
    if indices == list(range(indices[0], indices[-1] + 1)):
        return f"{indices[0]}-{indices[-1]}"
    return ",".join(map(str, indices))


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


# ---------------------------------------------------------------------- HTML picture

_COLOURS: dict[str, str] = {
    "core": "#3b5b92",
    "index": "#7a8fb8",
    "history": "#4f9a8c",
    "memories": "#d08a2e",
    "recall": "#b35d8c",
    "current": "#c4473a",
}

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2330;
  background:#f6f7f9;margin:0;padding:28px 36px;max-width:1180px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:15px;margin:28px 0 10px}
.sub{color:#5b6474;margin-bottom:18px}
.stats{display:flex;gap:14px;flex-wrap:wrap}
.stat{background:#fff;border:1px solid #dde1e8;border-radius:8px;padding:8px 14px;min-width:120px}
.stat b{display:block;font-size:18px}.stat span{color:#5b6474;font-size:12px}
.barwrap{position:relative;margin:78px 0 58px}
.bar{display:flex;height:54px;border-radius:6px;overflow:hidden;border:1px solid #c9ced8;
  background:repeating-linear-gradient(45deg,#fff,#fff 6px,#eef0f4 6px,#eef0f4 12px)}
.region{color:#fff;font-size:12px;padding:4px 6px;box-sizing:border-box;overflow:hidden;
  white-space:nowrap;border-right:1px solid rgba(255,255,255,.6)}
.region b{display:block;font-size:13px}
.framing{background:#9aa1ad}
.mark{position:absolute;bottom:-8px;border-left:2px dashed #111}
.mark span{position:absolute;top:0;white-space:nowrap;font-size:11px;background:#111;color:#fff;
  padding:1px 5px;border-radius:0 3px 3px 0}
.mark.flip span{right:0;border-radius:3px 0 0 3px}
.brace{position:absolute;top:64px;height:8px;border:2px solid #555;border-top:0;
  font-size:12px;color:#333;text-align:center;box-sizing:border-box}
.brace span{position:relative;top:10px;background:#f6f7f9;padding:0 4px}
table{border-collapse:collapse;background:#fff;border:1px solid #dde1e8}
td,th{padding:5px 12px;border-bottom:1px solid #eceef2;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.sw{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:6px}
.msg{background:#fff;border:1px solid #dde1e8;border-radius:8px;margin:10px 0;overflow:hidden}
.msg header{padding:6px 12px;background:#eef0f4;font-weight:600;font-size:13px}
.piece{border-left:6px solid;padding:6px 12px;margin:0}
.piece small{color:#5b6474}
.piece pre{margin:4px 0 2px;white-space:pre-wrap;word-break:break-word;
  font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;max-height:180px;overflow:auto}
code{font:12px ui-monospace,Menlo,Consolas,monospace}
"""


def _pct(part: float, whole: float) -> str:
    return f"{part / whole * 100:.4f}%" if whole else "0%"


def _render_html(result: CompileResult, anatomy: _Anatomy) -> str:
    md = result.metadata
    totals = anatomy.totals()
    content = int(md["token_count"])
    framing = int(md.get("message_framing_tokens", 0))
    sent = content + framing
    budget_counted = int(md.get("tokens_budget_counted", md["tokens_budget"]))
    axis = max(budget_counted, sent, 1)
    esc = html.escape
    segments = []
    for region in _REGIONS:
        n = totals[region]
        # Narrow segments keep only what fits; the table below has every number.
        label = f"<b>{n:,}</b>" if n / axis >= 0.025 else ""
        if n / axis >= 0.08:
            label += esc(_REGION_LABELS[region])
        segments.append(
            f'<div class="region" data-region="{region}" data-tokens="{n}" '
            f'title="{esc(_REGION_LABELS[region])}: {n:,} tokens" '
            f'style="width:{_pct(n, axis)};background:{_COLOURS[region]}">{label}</div>'
        )
    segments.append(
        f'<div class="region framing" data-part="framing" data-tokens="{framing}" '
        f'title="message framing: {framing} tokens" style="width:{_pct(framing, axis)}"></div>'
    )
    marks = []
    positions = _breakpoint_positions(result, anatomy)
    for k, (position, bp) in enumerate(positions):
        # The leftmost label sits highest so no dashed line crosses a label; labels near the
        # right edge open to the left.
        flip = " flip" if position / axis > 0.7 else ""
        marks.append(
            f'<div class="mark{flip}" data-breakpoint="{esc(str(bp["reason"]))}" '
            f'data-tokens="{bp["tokens"]}" '
            f'style="left:{_pct(position, axis)};top:{-8 - 20 * (len(positions) - k)}px">'
            f"<span>cache breakpoint: {esc(str(bp['reason']))} "
            f"({int(bp['tokens']):,} tok)</span></div>"
        )
    prefix_content = totals["core"] + totals["index"] + totals["history"]
    braces = ""
    if md.get("memory_placement") == "end" and md.get("cache_breakpoints"):
        braces = (
            f'<div class="brace" style="left:0;width:{_pct(prefix_content, axis)}">'
            "<span>stable prefix (byte-identical while nothing is cut)</span></div>"
            f'<div class="brace" style="left:{_pct(prefix_content, axis)};'
            f'width:{_pct(content - prefix_content, axis)}"><span>dynamic tail</span></div>'
        )
    prefix = _prefix_tokens(result)
    offered = int(md.get("segments_offered", 0))
    kept = int(md.get("segments_kept", 0))
    stats = [
        (f"{sent:,} / {md['tokens_budget']:,}", "tokens sent / budget"),
        (f"{prefix / sent * 100 if sent else 0:.0f}%", "cacheable prefix"),
        (f"{kept} / {offered}", "memories kept / offered"),
        (
            f"{md.get('history_messages_dropped', 0)} / {md.get('history_messages_recalled', 0)}",
            "history dropped / recalled",
        ),
        ("yes" if md.get("prompt_cache_used") else "no", "prompt cache used"),
    ]
    stat_html = "".join(
        f'<div class="stat"><b>{esc(value)}</b><span>{esc(label)}</span></div>'
        for value, label in stats
    )
    legend_rows = "".join(
        f'<tr><td><span class="sw" style="background:{_COLOURS[r]}"></span>'
        f"{esc(_REGION_LABELS[r])}</td><td class=n>{totals[r]:,}</td>"
        f"<td class=n>{totals[r] / axis * 100:.1f}%</td></tr>"
        for r in _REGIONS
    )
    legend_rows += (
        f"<tr><td>message framing</td><td class=n>{framing:,}</td>"
        f"<td class=n>{framing / axis * 100:.1f}%</td></tr>"
        f"<tr><td>unused budget</td><td class=n>{max(budget_counted - sent, 0):,}</td>"
        f"<td class=n>{max(budget_counted - sent, 0) / axis * 100:.1f}%</td></tr>"
    )
    message_html = _messages_html(result, anatomy)
    ref_rows = (
        "".join(
            f"<tr><td><code>[Mem:{n}]</code></td><td>{esc(ref)}</td>"
            f"<td>{esc(result.ref_map_type.get(n, ''))}</td></tr>"
            for n, ref in sorted(result.ref_map.items())
        )
        or '<tr><td colspan="3">no memory reached the prompt</td></tr>'
    )
    md_rows = "".join(
        f"<tr><td><code>{esc(key)}</code></td><td><code>"
        f"{esc(json.dumps(value, ensure_ascii=False, default=str))}</code></td></tr>"
        for key, value in md.items()
    )
    title = f"Membrane: compiled prompt for {md.get('model_id') or 'no model'}"
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
        f"<style>{_CSS}</style></head><body>"
        f"<h1>{esc(title)}</h1>"
        f'<div class="sub">placement {esc(str(md.get("memory_placement")))}, budget '
        f"{md['tokens_budget']:,} tokens ({budget_counted:,} counted at token scale "
        f"{md.get('token_scale', 1.0):g}); the bar spans the budget, hatched where unused</div>"
        f'<div class="stats">{stat_html}</div>'
        f'<div class="barwrap"><div class="bar">{"".join(segments)}</div>'
        f"{''.join(marks)}{braces}</div>"
        f"<h2>Regions</h2><table><tr><th>region</th><th class=n>tokens</th>"
        f"<th class=n>of budget</th></tr>{legend_rows}</table>"
        f"<h2>Messages</h2>{message_html}"
        f"<h2>Citations</h2><table><tr><th>tag</th><th>your id</th><th>kind</th></tr>"
        f"{ref_rows}</table>"
        f"<h2>Metadata</h2><table>{md_rows}</table>"
        "</body></html>\n"
    )


def _messages_html(result: CompileResult, anatomy: _Anatomy) -> str:
    esc = html.escape
    by_message: dict[int, list[_Piece]] = {}
    for piece in anatomy.pieces:
        by_message.setdefault(piece.message_index, []).append(piece)
    out = []
    for index, message in enumerate(result.messages):
        pieces = by_message.get(index, [])
        total = sum(p.tokens for p in pieces)
        body = "".join(
            f'<div class="piece" style="border-color:{_COLOURS[p.region]}">'
            f"<small>{esc(_REGION_LABELS[p.region])}: {_plural(p.tokens, 'token')}</small>"
            f"<pre>{esc(_abbreviate(p.text.strip(), 20_000))}</pre></div>"
            for p in pieces
        )
        out.append(
            f'<section class="msg"><header>[{index}] {esc(str(message.get("role")))} '
            f"&middot; {_plural(total, 'token')}</header>{body}</section>"
        )
    return "".join(out)


def _abbreviate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    keep = limit // 2
    return f"{text[:keep]}\n[... {len(text) - 2 * keep:,} characters not shown ...]\n{text[-keep:]}"


if __name__ == "__main__":
    sys.exit(main())
