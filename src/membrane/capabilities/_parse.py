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
    "MODEL_SECTIONS",
    "SNAPSHOT_SUFFIXES",
    "CachePricing",
    "Match",
    "ModelInfo",
    "ParsedMap",
    "claude_version",
    "family_of",
    "map_error",
    "merge_maps",
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
    r"(?:^|[./])claude-(opus|sonnet|haiku|fable|mythos)"
    r"(?:-(\d{1,2})(?:[-.](\d{1,2}))?)?(?::[\w-]+)?$"
)
# The older naming: claude-3-5-haiku, claude-3.5-sonnet.
CLAUDE_OLD = re.compile(
    r"(?:^|[./])claude-(\d{1,2})(?:[-.](\d{1,2}))?-(opus|sonnet|haiku|fable|mythos)(?::[\w-]+)?$"
)
# gpt-5.4-mini, gpt-6.1-sol, gpt-5 (not gpt-4o, whose "o" is part of the name, nor gpt-oss).
_GPT = re.compile(r"gpt-(\d{1,2})(?:\.(\d{1,2}))?(?:-([a-z][a-z-]*))?")
# o3, o4-mini, o1-preview.
_O_SERIES = re.compile(r"o(\d{1,2})(?:-([a-z][a-z-]*))?")
# gemini-3.1-pro-preview, gemini-2.5-flash-lite, gemini-4-argon; the rest is checked below.
_GEMINI = re.compile(r"gemini-(\d{1,2})(?:\.(\d{1,2}))?-(flash-lite|[a-z]+)((?:-[a-z0-9]+)*)")
_GEMINI_ALIAS = re.compile(r"gemini-(flash-lite|flash|pro)-latest")
# Name parts that mark a release of the same model (a preview, a numbered snapshot), as opposed
# to a different model (an image, speech or live variant, which must be listed to resolve).
_GEMINI_RELEASE_PARTS = frozenset({"preview", "exp", "latest", "customtools"})

#: Sections keyed by model id. A model named in any of them in a user map replaces the bundled
#: model of that id whole.
MODEL_SECTIONS = (
    "capabilities",
    "context_caps",
    "cache_pricing",
    "token_scale",
    "max_output_tokens",
    "max_input_tokens",
    "models",
    "notes",
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
class ModelInfo:
    """The ``models`` entry of one model: where its figures come from, and its API ids."""

    source: str
    source_updated: str
    # provider ("openai", "anthropic", "gemini", ...) -> the model name that API takes
    api_ids: tuple[tuple[str, str], ...] = ()
    # True when ``source`` is not the provider's own page (a gateway or catalogue).
    secondary: bool = False


@dataclass(frozen=True, slots=True)
class Match:
    key: str
    # Set when an id matched a listed model of its family but not by name: the family
    # ("opus", "gpt-mini", "gemini-flash"), the version asked for, and the naming scheme.
    family: str | None = None
    version: tuple[int, int] | None = None
    kind: str | None = None


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
    models: dict[str, ModelInfo] = dataclasses.field(default_factory=dict)
    max_inputs: dict[str, int] = dataclasses.field(default_factory=dict)
    # Models that reason (think) before answering by default, and the reserve per provider.
    reasoning: frozenset[str] = frozenset()
    reasoning_reserve: dict[str, int] = dataclasses.field(default_factory=dict)
    # Models that take explicit cache breakpoints in the request (OpenAI's GPT-5.6 and later).
    cache_breakpoints: frozenset[str] = frozenset()
    # family -> ((version, key), ...) oldest first, for GPT, o-series and Gemini ids.
    families: dict[str, tuple[tuple[tuple[int, int], str], ...]] = dataclasses.field(
        default_factory=dict
    )
    # Model ids resolved against this map, and their capabilities (every compile asks).
    resolved: dict[str, Match | None] = dataclasses.field(default_factory=dict, compare=False)
    found: dict[str | None, Any] = dataclasses.field(default_factory=dict, compare=False)


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


def family_of(name: str) -> tuple[str, tuple[int, int] | None, str] | None:
    """Family, version and naming scheme of a GPT, o-series or Gemini id (a bare name).

    ``gpt-5.4-mini`` -> ``("gpt-mini", (5, 4), "gpt")``; ``gemini-flash-latest`` ->
    ``("gemini-flash", None, "gemini")``. None for names of another kind, and for Gemini
    variants that are other models (image, speech, live).
    """
    m = _GPT.fullmatch(name)
    if m:
        variant = m.group(3)
        family = "gpt" if variant is None else f"gpt-{variant}"
        return family, (int(m.group(1)), int(m.group(2) or 0)), "gpt"
    m = _O_SERIES.fullmatch(name)
    if m:
        family = "o" if m.group(2) is None else f"o-{m.group(2)}"
        return family, (int(m.group(1)), 0), "o"
    m = _GEMINI_ALIAS.fullmatch(name)
    if m:
        return f"gemini-{m.group(1)}", None, "gemini"
    m = _GEMINI.fullmatch(name)
    if m:
        tier, rest = m.group(3), m.group(4)
        parts = [p for p in rest.split("-") if p]
        if tier == "flash" and parts[:1] == ["lite"]:
            tier, parts = "flash-lite", parts[1:]
        if all(p in _GEMINI_RELEASE_PARTS or p.isdigit() for p in parts):
            return f"gemini-{tier}", (int(m.group(1)), int(m.group(2) or 0)), "gemini"
    return None


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
    max_inputs = _parse_max_outputs(sections["max_input_tokens"], where, "max_input_tokens")
    long_cap, long_from, scale_from = _parse_claude_rules(raw.get("claude_families", {}), where)
    known = frozenset(caching) | frozenset(caps)
    by_bare: dict[str, str] = {}
    families: dict[str, list[tuple[tuple[int, int], str]]] = {}
    others: dict[str, list[tuple[tuple[int, int], str]]] = {}
    for key in sorted(known):
        bare = key.rsplit("/", 1)[-1]
        by_bare.setdefault(bare, key)
        claude = claude_version(key)
        if claude is not None and claude[1] is not None:
            families.setdefault(claude[0], []).append((claude[1], key))
        found = family_of(bare)
        if found is not None and found[1] is not None:
            others.setdefault(found[0], []).append((found[1], key))
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
        models=_parse_models(raw.get("models", {}), where),
        max_inputs=max_inputs,
        reasoning=_flagged(sections["capabilities"], "reasoning"),
        cache_breakpoints=_flagged(sections["capabilities"], "cache_breakpoints"),
        reasoning_reserve=_parse_reasoning(raw.get("reasoning", {}), where),
        families={f: tuple(sorted(v)) for f, v in others.items()},
    )


def _flagged(entries: dict[str, Any], flag: str) -> frozenset[str]:
    return frozenset(k for k, e in entries.items() if isinstance(e, dict) and e.get(flag) is True)


def _parse_reasoning(section: object, where: str) -> dict[str, int]:
    """``reasoning``: per provider, the default output reserve of a model that thinks."""
    if not isinstance(section, dict):
        raise map_error(where, "section 'reasoning' must be an object keyed by provider")
    out: dict[str, int] = {}
    for provider, rule in section.items():
        reserve = rule.get("reserve") if isinstance(rule, dict) else None
        if not isinstance(reserve, int) or isinstance(reserve, bool) or reserve <= 0:
            raise map_error(where, f"reasoning[{provider!r}].reserve must be a positive integer")
        out[str(provider).lower()] = reserve
    return out


def merge_maps(bundled: dict[str, Any], user: object, where: str) -> dict[str, Any]:
    """The bundled map with a user map laid over it, one model at a time.

    A model the user map names in any model section replaces the bundled model of that id
    (all of its sections); ``remove`` lists ids to drop; ``claude_families`` and ``reasoning``
    rules are merged key by key; ``"replace_bundled": true`` keeps the user map alone.
    """
    if not isinstance(user, dict):
        raise map_error(where, "the top level must be a JSON object")
    if user.get("replace_bundled") is True:
        return user
    if "replace_bundled" in user and user["replace_bundled"] is not False:
        raise map_error(where, "replace_bundled must be true or false")
    remove = user.get("remove", [])
    if not isinstance(remove, list) or not all(isinstance(k, str) for k in remove):
        raise map_error(where, "remove must be a list of model ids")
    sections: dict[str, dict[str, Any]] = {}
    for name in MODEL_SECTIONS:
        section = user.get(name, {})
        if not isinstance(section, dict):
            raise map_error(where, f"section {name!r} must be an object keyed by model id")
        sections[name] = {str(k).lower(): v for k, v in section.items()}
    named = set().union(*(set(s) for s in sections.values()))
    for key in sorted(named):
        if key not in sections["capabilities"] and key not in sections["context_caps"]:
            raise map_error(
                where,
                f"{key!r} has no 'capabilities' or 'context_caps' entry; a model named in your "
                "map replaces the bundled one whole, so give it at least one of the two",
            )
    dropped = {k.lower() for k in remove}
    listed = set(bundled.get("capabilities", {})) | set(bundled.get("context_caps", {}))
    unknown = sorted(dropped - listed)
    if unknown:
        raise map_error(where, f"remove names {unknown}, which the bundled map does not list")
    merged = dict(bundled)
    for name in MODEL_SECTIONS:
        kept = {
            k: v for k, v in bundled.get(name, {}).items() if k not in named and k not in dropped
        }
        merged[name] = {**kept, **sections[name]}
    for name in ("claude_families", "reasoning"):
        extra = user.get(name, {})
        if not isinstance(extra, dict):
            raise map_error(where, f"section {name!r} must be an object")
        merged[name] = {**bundled.get(name, {}), **extra}
    return merged


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _parse_model(key: str, entry: object, where: str) -> ModelInfo:
    if not isinstance(entry, dict):
        raise map_error(where, f"models[{key!r}] must be an object")
    source, updated = entry.get("source"), entry.get("source_updated")
    if not isinstance(source, str) or not source.startswith("https://"):
        raise map_error(where, f"models[{key!r}].source must be the https URL of the page read")
    if not isinstance(updated, str) or not _DATE.fullmatch(updated):
        raise map_error(
            where, f"models[{key!r}].source_updated must be the page's own date as YYYY-MM-DD"
        )
    ids = entry.get("api_ids", {})
    if not isinstance(ids, dict) or not all(
        isinstance(p, str) and isinstance(v, str) and v for p, v in ids.items()
    ):
        raise map_error(where, f"models[{key!r}].api_ids must map a provider to a model name")
    secondary = entry.get("secondary", False)
    if not isinstance(secondary, bool):
        raise map_error(where, f"models[{key!r}].secondary must be true or false")
    return ModelInfo(source, updated, tuple(sorted(ids.items())), secondary)


def _parse_models(section: object, where: str) -> dict[str, ModelInfo]:
    """``models``: per model, the page its figures were read from, and its API model names."""
    if not isinstance(section, dict):
        raise map_error(where, "section 'models' must be an object keyed by model id")
    return {str(k).lower(): _parse_model(str(k), v, where) for k, v in section.items()}


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
    optional = ("cache_pricing", "token_scale", "max_output_tokens", "max_input_tokens")
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
        if isinstance(entry, dict) and not isinstance(entry.get("reasoning", False), bool):
            raise map_error(where, f"capabilities[{key!r}].reasoning must be true or false")
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


def _parse_max_outputs(
    section: dict[str, Any], where: str, name: str = "max_output_tokens"
) -> dict[str, int]:
    outputs: dict[str, int] = {}
    for key, tokens in section.items():
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens <= 0:
            raise map_error(where, f"{name}[{key!r}] must be a positive integer")
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
