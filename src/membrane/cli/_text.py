"""``membrane inspect``'s text view: regions, messages, ref map, trimming and cache evidence."""

from __future__ import annotations

from typing import TYPE_CHECKING

from membrane.anatomy import REGION_LABELS, REGIONS, Anatomy, cacheable_prefix_tokens, sent_tokens
from membrane.capabilities import get_cache_pricing
from membrane.report import CompileReport

if TYPE_CHECKING:
    from membrane.compiler import CompileResult

__all__ = ["plural", "render_text"]


def render_text(result: CompileResult, anatomy: Anatomy) -> str:
    """The report ``inspect`` prints without ``--json``."""
    report = result.report
    totals = anatomy.totals()
    content = report.token_count
    sent = sent_tokens(result)
    budget = report.tokens_budget
    lines = [
        f"membrane inspect: model {report.model_id or '(none)'}, budget {budget:,} tokens, "
        f"placement {report.placement}, token scale {report.token_scale:g}",
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
        f"  + framing {report.message_framing_tokens} = {sent:,} sent of {budget:,} "
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
    lines += ["", "Trimming"] + [f"  {line}" for line in _trimming_lines(report)]
    lines += ["", "Cache"] + [f"  {line}" for line in _cache_lines(result, report)]
    profile = _profile_lines(report)
    if profile:
        lines += ["", "Profile"] + [f"  {line}" for line in profile]
    return "\n".join(lines) + "\n"


def _profile_lines(report: CompileReport) -> list[str]:
    """The classifier's label, what the policies did and the stage timings, when present."""
    out = []
    label = report.label
    if label is not None:
        if label.tier_order is None:
            out.append(f"label: {label.name} (no effect in this profile)")
        else:
            order = ", ".join(str(t) for t in label.tier_order)
            share = label.memory_share
            share_text = "no memory share" if share is None else f"memory share {share:.0%}"
            out.append(f"label: {label.name} (tier order {order}; {share_text})")
    policy = report.policy_report
    if policy is not None:
        out.append(f"must include sent: {', '.join(policy.must_include_sent) or 'none'}")
        for name, limit, offered, sent in policy.max_items:
            out.append(f"max items {name}: {sent} of {offered} sent (limit {limit})")
        for rule, memory, winner in policy.conflicts:
            out.append(f"conflict: {rule} {memory or '-'} yielded to {winner}")
    if report.profile_timings:
        out.append(f"{'stage':<14}{'ms':>10}{'items':>8}")
        for stage, ms, items in report.profile_timings:
            out.append(f"{stage:<14}{ms:>10.3f}{items:>8}")
    return out


def _trimming_lines(report: CompileReport) -> list[str]:
    offered, kept = report.tail.segments_offered, report.tail.segments_kept
    thinned = report.tail.segments_thinned
    out = [
        f"memories: {offered} offered, {kept - thinned} in full, {thinned} thinned, "
        f"{offered - kept} dropped; {report.memories_truncated} capped in length",
    ]
    if (window := report.window) is not None:
        out.append(
            f"history: {window.messages_dropped} messages dropped, "
            f"{report.tail.messages_recalled} passages recalled, index "
            f"{window.index_lines} lines / {window.index_tokens} tokens"
        )
    out.append(f"tokens trimmed: {report.tokens_trimmed:,}")
    out.append(
        "over budget: YES (the content that is never cut does not fit)"
        if report.budget_exceeded
        else "over budget: no"
    )
    return out


def _cache_lines(result: CompileResult, report: CompileReport) -> list[str]:
    points = report.cache_breakpoints
    pricing = get_cache_pricing(report.model_id) if report.model_id else None
    prefix = cacheable_prefix_tokens(result)
    used = "yes" if report.prompt_cache_used else "no"
    reason = ""
    if not report.prompt_cache_used:
        if not report.model_id:
            reason = " (no --model-id given)"
        elif report.cache_mode is None:
            reason = " (the capability map lists no prompt caching for this model)"
        elif pricing is not None:
            reason = f" (prefix {prefix:,} tokens, model minimum {pricing.min_tokens:,})"
    out = [f"mode: {report.cache_mode or 'none'}; prompt cache used: {used}{reason}"]
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
