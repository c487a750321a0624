"""``membrane inspect``'s text view: regions, messages, ref map, trimming and cache evidence."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from membrane.anatomy import REGION_LABELS, REGIONS, Anatomy, cacheable_prefix_tokens, sent_tokens
from membrane.capabilities import get_cache_pricing

if TYPE_CHECKING:
    from membrane.compiler import CompileResult

__all__ = ["plural", "render_text"]


def render_text(result: CompileResult, anatomy: Anatomy) -> str:
    """The report ``inspect`` prints without ``--json``."""
    md = result.metadata
    totals = anatomy.totals()
    content = int(md["token_count"])
    sent = sent_tokens(result)
    budget = int(md["tokens_budget"])
    lines = [
        f"membrane inspect: model {md.get('model_id') or '(none)'}, budget {budget:,} tokens, "
        f"placement {md.get('memory_placement')}, token scale {md.get('token_scale', 1.0):g}",
        "",
        "Regions (content tokens)",
        f"  {'region':<16}{'tokens':>8}{'share':>8}  messages",
    ]
    for region in REGIONS:
        where = sorted({p.message_index for p in anatomy.pieces if p.region == region})
        share = totals[region] / content * 100 if content else 0.0
        lines.append(
            f"  {REGION_LABELS[region]:<16}{totals[region]:>8,}{share:>7.1f}%  {_span(where)}"
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
            f"== [{piece.message_index}] {role} | {REGION_LABELS[piece.region]} | "
            f"{plural(piece.tokens, 'token')} =="
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
    prefix = cacheable_prefix_tokens(result)
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
    for point in points:
        where = f"after message {point['message_index']}"
        if "chars" in point:
            where = f"inside message {point['message_index']} at char {point['chars']:,}"
        out.append(f"breakpoint {where}: {point['tokens']:,} tokens ({point['reason']})")
    sent = sent_tokens(result)
    out.append(
        f"cacheable prefix: {prefix:,} of {sent:,} tokens sent "
        f"({prefix / sent * 100 if sent else 0.0:.1f}%)"
    )
    return out


def _span(indices: list[int]) -> str:
    """Message indices as ``-``, ``3``, ``1-4`` or ``0,2``."""
    if not indices:
        return "-"
    if len(indices) == 1:
        return str(indices[0])
    if indices == list(range(indices[0], indices[-1] + 1)):
        return f"{indices[0]}-{indices[-1]}"
    return ",".join(map(str, indices))


def plural(n: int, word: str) -> str:
    """``n`` with ``word``, an ``s`` added unless ``n`` is 1."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"
