"""Reading a capability map: each section checked, with a message that names the bad entry."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Literal

from membrane.errors import InvalidInputError

__all__ = [
    "CLAUDE_NEW",
    "CLAUDE_OLD",
    "SNAPSHOT_SUFFIXES",
    "CachePricing",
    "Match",
    "ParsedMap",
    "claude_version",
    "map_error",
    "parse_map",
]

_CACHE_MODES = ("automatic", "marked")

# Suffixes that name a snapshot of a model rather than a different model.
SNAPSHOT_SUFFIXES = (
    re.compile(r"@\d{8}$"),  # Vertex AI: claude-sonnet-4-5@20250929
    re.compile(r"-v\d+(?::\d+)?$"),  # Bedrock: ...-20250929-v1:0
    re.compile(r"-\d{4}-\d{2}-\d{2}$"),  # OpenAI: gpt-4o-2024-08-06
    re.compile(r"-\d{8}$"),  # Anthropic: claude-3-5-haiku-20241022
    re.compile(r":latest$"),  # Ollama's default tag
)
# claude-opus-4-6, claude-opus-4.6, claude-opus-5, claude-fable (any region/vendor prefix).
CLAUDE_NEW = re.compile(
    r"(?:^|[./])claude-(opus|sonnet|haiku|fable)(?:-(\d{1,2})(?:[-.](\d{1,2}))?)?(?::[\w-]+)?$"
)
# The older naming: claude-3-5-haiku, claude-3.5-sonnet.
CLAUDE_OLD = re.compile(
    r"(?:^|[./])claude-(\d{1,2})(?:[-.](\d{1,2}))?-(opus|sonnet|haiku|fable)(?::[\w-]+)?$"
)


@dataclass(frozen=True, slots=True)
class CachePricing:
    """How a model's provider caches prompt prefixes and what it charges for them.

    ``write`` and ``read`` are multiples of the plain input price; ``min_tokens`` is the shortest
    prefix the provider will cache. ``mode`` is ``"automatic"`` when the provider caches on its
    own and ``"marked"`` when the request must mark the prefix (Anthropic's ``cache_control``).
    """

    mode: Literal["automatic", "marked"]
    write: float
    read: float
    min_tokens: int


@dataclass(frozen=True, slots=True)
class Match:
    key: str
    # Set when a Claude id matched a listed model of its family but not its exact version.
    family: str | None = None
    version: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class ParsedMap:
    raw: dict[str, Any]
    known: frozenset[str]
    by_bare: dict[str, str]
    claude_versions: dict[str, tuple[tuple[tuple[int, int], str], ...]]
    pricing: dict[str, CachePricing]
    caching: dict[str, bool]
    caps: dict[str, int | None]
    scales: dict[str, float]
    max_outputs: dict[str, int]
    long_context_cap: int | None
    long_context_from: dict[str, tuple[int, int]]
    scale_from: tuple[tuple[tuple[int, int], float], ...]
    # Model ids already resolved against this map (a compile asks several times).
    resolved: dict[str, Match | None] = dataclasses.field(
        default_factory=dict, compare=False, repr=False
    )


def map_error(where: str, problem: str) -> InvalidInputError:
    return InvalidInputError(f"capability map {where}: {problem}", field="LLM_CAPABILITY_MAP_PATH")


def claude_version(name: str) -> tuple[str, tuple[int, int] | None, bool] | None:
    """Family, (major, minor) and whether the name uses the current naming, for a Claude id."""
    m = CLAUDE_NEW.search(name)
    if m:
        family, major, minor, current = m.group(1), m.group(2), m.group(3), True
    else:
        m = CLAUDE_OLD.search(name)
        if not m:
            return None
        major, minor, family, current = m.group(1), m.group(2), m.group(3), False
    if major is None:
        return family, None, current
    return family, (int(major), int(minor or 0)), current


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _version(text: object, where: str, field: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d{1,2})(?:\.(\d{1,2}))?", str(text))
    if not m:
        raise map_error(where, f"{field} must be a version like '4.6', got {text!r}")
    return int(m.group(1)), int(m.group(2) or 0)


def parse_map(raw: object, where: str) -> ParsedMap:
    sections = _sections(raw, where)
    assert isinstance(raw, dict)
    caching = _parse_caching(sections["capabilities"], where)
    caps = _parse_caps(sections["context_caps"], where)
    pricing = {
        key: _parse_pricing(key, entry, where) for key, entry in sections["cache_pricing"].items()
    }
    scales = _parse_scales(sections["token_scale"], where)
    max_outputs = _parse_max_outputs(sections["max_output_tokens"], where)
    long_cap, long_from, scale_from = _parse_claude_rules(raw.get("claude_families", {}), where)
    known = frozenset(caching) | frozenset(caps)
    by_bare: dict[str, str] = {}
    families: dict[str, list[tuple[tuple[int, int], str]]] = {}
    for key in sorted(known):
        by_bare.setdefault(key.rsplit("/", 1)[-1], key)
        claude = claude_version(key)
        if claude is not None and claude[1] is not None:
            families.setdefault(claude[0], []).append((claude[1], key))
    return ParsedMap(
        raw=raw,
        known=known,
        by_bare=by_bare,
        claude_versions={f: tuple(sorted(v)) for f, v in families.items()},
        pricing=pricing,
        caching=caching,
        caps=caps,
        scales=scales,
        max_outputs=max_outputs,
        long_context_cap=long_cap,
        long_context_from=long_from,
        scale_from=scale_from,
    )


def _sections(raw: object, where: str) -> dict[str, dict[str, Any]]:
    if not isinstance(raw, dict):
        raise map_error(where, "the top level must be a JSON object")
    missing = [k for k in ("capabilities", "context_caps") if k not in raw]
    if missing:
        raise map_error(
            where,
            f"missing required section(s) {', '.join(repr(k) for k in missing)}; a map needs "
            "'capabilities' and 'context_caps' ('cache_pricing' and 'token_scale' are optional)",
        )
    sections: dict[str, dict[str, Any]] = {}
    optional = ("cache_pricing", "token_scale", "max_output_tokens")
    for name in ("capabilities", "context_caps", *optional):
        section = raw.get(name, {})
        if not isinstance(section, dict):
            raise map_error(where, f"section {name!r} must be an object keyed by model id")
        sections[name] = {str(k).lower(): v for k, v in section.items()}
    return sections


def _parse_caching(section: dict[str, Any], where: str) -> dict[str, bool]:
    caching: dict[str, bool] = {}
    for key, entry in section.items():
        flag = entry.get("prompt_caching", False) if isinstance(entry, dict) else entry
        if not isinstance(flag, bool):
            raise map_error(
                where,
                f'capabilities[{key!r}] must be an object like {{"prompt_caching": true}}',
            )
        caching[key] = flag
    return caching


def _parse_caps(section: dict[str, Any], where: str) -> dict[str, int | None]:
    caps: dict[str, int | None] = {}
    for key, cap in section.items():
        if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap <= 0):
            raise map_error(where, f"context_caps[{key!r}] must be a positive integer or null")
        caps[key] = cap
    return caps


def _parse_pricing(key: str, entry: object, where: str) -> CachePricing:
    if not isinstance(entry, dict):
        raise map_error(where, f"cache_pricing[{key!r}] must be an object")
    mode = entry.get("mode")
    if mode not in _CACHE_MODES:
        raise map_error(where, f"cache_pricing[{key!r}].mode must be 'automatic' or 'marked'")
    for field in ("write", "read"):
        if not _is_number(entry.get(field)) or entry[field] < 0:
            raise map_error(where, f"cache_pricing[{key!r}].{field} must be a number >= 0")
    min_tokens = entry.get("min_tokens")
    if not isinstance(min_tokens, int) or isinstance(min_tokens, bool) or min_tokens < 0:
        raise map_error(where, f"cache_pricing[{key!r}].min_tokens must be an integer >= 0")
    return CachePricing(
        mode=mode, write=float(entry["write"]), read=float(entry["read"]), min_tokens=min_tokens
    )


def _parse_scales(section: dict[str, Any], where: str) -> dict[str, float]:
    scales: dict[str, float] = {}
    for key, scale in section.items():
        if not _is_number(scale) or scale <= 0:
            raise map_error(where, f"token_scale[{key!r}] must be a number > 0")
        scales[key] = float(scale)
    return scales


def _parse_max_outputs(section: dict[str, Any], where: str) -> dict[str, int]:
    outputs: dict[str, int] = {}
    for key, tokens in section.items():
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens <= 0:
            raise map_error(where, f"max_output_tokens[{key!r}] must be a positive integer")
        outputs[key] = tokens
    return outputs


def _parse_claude_rules(
    rules: object, where: str
) -> tuple[int | None, dict[str, tuple[int, int]], tuple[tuple[tuple[int, int], float], ...]]:
    """``claude_families``: the long-context cap, from which versions, and scale seeds."""
    if not isinstance(rules, dict):
        raise map_error(where, "section 'claude_families' must be an object")
    long_cap = rules.get("long_context_cap")
    if long_cap is not None and (not isinstance(long_cap, int) or long_cap <= 0):
        raise map_error(where, "claude_families.long_context_cap must be a positive integer")
    long_from_raw = rules.get("long_context_from", {})
    scale_from_raw = rules.get("token_scale_from", {})
    if not isinstance(long_from_raw, dict) or not isinstance(scale_from_raw, dict):
        raise map_error(
            where, "claude_families.long_context_from and .token_scale_from must be objects"
        )
    long_from = {
        str(f).lower(): _version(v, where, f"claude_families.long_context_from[{f!r}]")
        for f, v in long_from_raw.items()
    }
    scale_from = []
    for v, scale in scale_from_raw.items():
        if not _is_number(scale) or scale <= 0:
            raise map_error(where, f"claude_families.token_scale_from[{v!r}] must be a number > 0")
        scale_from.append((_version(v, where, "claude_families.token_scale_from"), float(scale)))
    return long_cap, long_from, tuple(sorted(scale_from))
