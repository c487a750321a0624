"""Loading the capability map and resolving model ids against it."""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import os
import re
import threading
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from membrane import config
from membrane.errors import InvalidInputError

__all__ = [
    "CachePricing",
    "ModelCapabilities",
    "get_cache_pricing",
    "get_context_cap_for_model",
    "get_model_capabilities",
    "get_token_scale",
    "has_prompt_caching",
    "load_capability_map",
    "resolve_model_id",
]

logger = logging.getLogger("membrane.capabilities")

_BUNDLED_NAME = "llm_capabilities.json"
_CACHE_MODES = ("automatic", "marked")

# Suffixes that name a snapshot of a model rather than a different model.
_SNAPSHOT_SUFFIXES = (
    re.compile(r"@\d{8}$"),  # Vertex AI: claude-sonnet-4-5@20250929
    re.compile(r"-v\d+(?::\d+)?$"),  # Bedrock: ...-20250929-v1:0
    re.compile(r"-\d{4}-\d{2}-\d{2}$"),  # OpenAI: gpt-4o-2024-08-06
    re.compile(r"-\d{8}$"),  # Anthropic: claude-3-5-haiku-20241022
    re.compile(r":latest$"),  # Ollama's default tag
)
# claude-opus-4-6, claude-opus-4.6, claude-opus-5, claude-fable (any region/vendor prefix).
_CLAUDE_NEW = re.compile(
    r"(?:^|[./])claude-(opus|sonnet|haiku|fable)(?:-(\d{1,2})(?:[-.](\d{1,2}))?)?(?::[\w-]+)?$"
)
# The older naming: claude-3-5-haiku, claude-3.5-sonnet.
_CLAUDE_OLD = re.compile(
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
class _Match:
    key: str
    # Set when a Claude id matched a listed model of its family but not its exact version.
    family: str | None = None
    version: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class _ParsedMap:
    raw: dict[str, Any]
    known: frozenset[str]
    by_bare: dict[str, str]
    claude_versions: dict[str, tuple[tuple[tuple[int, int], str], ...]]
    pricing: dict[str, CachePricing]
    caching: dict[str, bool]
    caps: dict[str, int | None]
    scales: dict[str, float]
    long_context_cap: int | None
    long_context_from: dict[str, tuple[int, int]]
    scale_from: tuple[tuple[tuple[int, int], float], ...]
    # Model ids already resolved against this map (a compile asks several times).
    resolved: dict[str, _Match | None] = dataclasses.field(
        default_factory=dict, compare=False, repr=False
    )


_lock = threading.Lock()
_cache: dict[tuple[str, int, int], _ParsedMap] = {}
_warned: set[str] = set()
_MAX_WARNED = 10_000
_MAX_RESOLVED = 10_000


def _fail(where: str, problem: str) -> InvalidInputError:
    return InvalidInputError(f"capability map {where}: {problem}", field="LLM_CAPABILITY_MAP_PATH")


def _claude_version(name: str) -> tuple[str, tuple[int, int] | None, bool] | None:
    """Family, (major, minor) and whether the name uses the current naming, for a Claude id."""
    m = _CLAUDE_NEW.search(name)
    if m:
        family, major, minor, current = m.group(1), m.group(2), m.group(3), True
    else:
        m = _CLAUDE_OLD.search(name)
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
        raise _fail(where, f"{field} must be a version like '4.6', got {text!r}")
    return int(m.group(1)), int(m.group(2) or 0)


def _parse(raw: object, where: str) -> _ParsedMap:
    if not isinstance(raw, dict):
        raise _fail(where, "the top level must be a JSON object")
    missing = [k for k in ("capabilities", "context_caps") if k not in raw]
    if missing:
        raise _fail(
            where,
            f"missing required section(s) {', '.join(repr(k) for k in missing)}; a map needs "
            "'capabilities' and 'context_caps' ('cache_pricing' and 'token_scale' are optional)",
        )
    sections: dict[str, dict[str, Any]] = {}
    for name in ("capabilities", "context_caps", "cache_pricing", "token_scale"):
        section = raw.get(name, {})
        if not isinstance(section, dict):
            raise _fail(where, f"section {name!r} must be an object keyed by model id")
        sections[name] = {str(k).lower(): v for k, v in section.items()}

    caching: dict[str, bool] = {}
    for key, entry in sections["capabilities"].items():
        flag = entry.get("prompt_caching", False) if isinstance(entry, dict) else entry
        if not isinstance(flag, bool):
            raise _fail(
                where,
                f'capabilities[{key!r}] must be an object like {{"prompt_caching": true}}',
            )
        caching[key] = flag

    caps: dict[str, int | None] = {}
    for key, cap in sections["context_caps"].items():
        if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap <= 0):
            raise _fail(where, f"context_caps[{key!r}] must be a positive integer or null")
        caps[key] = cap

    pricing: dict[str, CachePricing] = {}
    for key, entry in sections["cache_pricing"].items():
        if not isinstance(entry, dict):
            raise _fail(where, f"cache_pricing[{key!r}] must be an object")
        mode = entry.get("mode")
        if mode not in _CACHE_MODES:
            raise _fail(where, f"cache_pricing[{key!r}].mode must be 'automatic' or 'marked'")
        for field in ("write", "read"):
            if not _is_number(entry.get(field)) or entry[field] < 0:
                raise _fail(where, f"cache_pricing[{key!r}].{field} must be a number >= 0")
        min_tokens = entry.get("min_tokens")
        if not isinstance(min_tokens, int) or isinstance(min_tokens, bool) or min_tokens < 0:
            raise _fail(where, f"cache_pricing[{key!r}].min_tokens must be an integer >= 0")
        pricing[key] = CachePricing(
            mode=mode, write=float(entry["write"]), read=float(entry["read"]), min_tokens=min_tokens
        )

    scales: dict[str, float] = {}
    for key, scale in sections["token_scale"].items():
        if not _is_number(scale) or scale <= 0:
            raise _fail(where, f"token_scale[{key!r}] must be a number > 0")
        scales[key] = float(scale)

    rules = raw.get("claude_families", {})
    if not isinstance(rules, dict):
        raise _fail(where, "section 'claude_families' must be an object")
    long_cap = rules.get("long_context_cap")
    if long_cap is not None and (not isinstance(long_cap, int) or long_cap <= 0):
        raise _fail(where, "claude_families.long_context_cap must be a positive integer")
    long_from_raw = rules.get("long_context_from", {})
    scale_from_raw = rules.get("token_scale_from", {})
    if not isinstance(long_from_raw, dict) or not isinstance(scale_from_raw, dict):
        raise _fail(
            where, "claude_families.long_context_from and .token_scale_from must be objects"
        )
    long_from = {
        str(f).lower(): _version(v, where, f"claude_families.long_context_from[{f!r}]")
        for f, v in long_from_raw.items()
    }
    scale_from = []
    for v, scale in scale_from_raw.items():
        if not _is_number(scale) or scale <= 0:
            raise _fail(where, f"claude_families.token_scale_from[{v!r}] must be a number > 0")
        scale_from.append((_version(v, where, "claude_families.token_scale_from"), float(scale)))

    known = frozenset(caching) | frozenset(caps)
    by_bare: dict[str, str] = {}
    families: dict[str, list[tuple[tuple[int, int], str]]] = {}
    for key in sorted(known):
        by_bare.setdefault(key.rsplit("/", 1)[-1], key)
        claude = _claude_version(key)
        if claude is not None and claude[1] is not None:
            families.setdefault(claude[0], []).append((claude[1], key))
    return _ParsedMap(
        raw=raw,
        known=known,
        by_bare=by_bare,
        claude_versions={f: tuple(sorted(v)) for f, v in families.items()},
        pricing=pricing,
        caching=caching,
        caps=caps,
        scales=scales,
        long_context_cap=long_cap,
        long_context_from=long_from,
        scale_from=tuple(sorted(scale_from)),
    )


def _current() -> _ParsedMap:
    path = config.capability_map_path()
    if path is None:
        key = ("<bundled>", 0, 0)
    else:
        try:
            st = os.stat(path)
        except OSError as exc:
            raise _fail(
                path, f"cannot read it ({exc.strerror}); fix or unset LLM_CAPABILITY_MAP_PATH"
            ) from None
        key = (path, st.st_mtime_ns, st.st_size)
    with _lock:
        parsed = _cache.get(key)
        if parsed is not None:
            return parsed
        if path is None:
            text = resources.files(__package__).joinpath(_BUNDLED_NAME).read_text("utf-8")
            where = f"(bundled {_BUNDLED_NAME})"
        else:
            where = path
            try:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
            except OSError as exc:
                raise _fail(path, f"cannot read it ({exc.strerror})") from None
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _fail(where, f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
        parsed = _parse(raw, where)
        # Keep only the newest version of a user map; the bundled one never changes.
        for stale in [k for k in _cache if k[0] == key[0]]:
            del _cache[stale]
        _cache[key] = parsed
        return parsed


def load_capability_map() -> dict[str, Any]:
    """The capability map in use: the bundled one, or the file named by LLM_CAPABILITY_MAP_PATH.

    Returns a copy; editing it changes nothing. Raises :class:`InvalidInputError` when the file
    is missing, is not JSON, or lacks the ``capabilities`` / ``context_caps`` sections.
    """
    return copy.deepcopy(_current().raw)


def _candidates(model_id: str) -> list[str]:
    name = model_id.strip().lower()
    out = [name]
    bare = name.rsplit("/", 1)[-1]
    if bare != name:
        out.append(bare)
    for base in list(out):
        stripped = base
        changed = True
        while changed:
            changed = False
            for pattern in _SNAPSHOT_SUFFIXES:
                new = pattern.sub("", stripped)
                if new != stripped and new:
                    stripped, changed = new, True
        if stripped not in out:
            out.append(stripped)
    return out


def _resolve(parsed: _ParsedMap, model_id: str) -> _Match | None:
    candidates = _candidates(model_id)
    for cand in candidates:
        if cand in parsed.known:
            return _Match(cand)
    for cand in candidates:
        hit = parsed.by_bare.get(cand)
        if hit is not None:
            return _Match(hit)
    # Claude ids are matched by family: the newest listed version at or below the one asked
    # for carries the figures (claude-opus-6 -> the newest Opus listed). A current-style name
    # older than every listed version takes the oldest one. Names in the old style
    # (claude-3-5-haiku) belong to retired generations and must be listed to resolve.
    for cand in candidates:
        found = _claude_version(cand)
        if found is None:
            continue
        family, version, current = found
        listed = parsed.claude_versions.get(family, ())
        if not listed:
            return None
        if not current:
            key = next((k for v, k in listed if v == version), None)
            return None if key is None else _Match(key)
        if version is None:
            return _Match(listed[-1][1])
        exact = next((k for v, k in listed if v == version), None)
        if exact is not None:
            return _Match(exact)
        eligible = [k for v, k in listed if v <= version]
        return _Match(eligible[-1] if eligible else listed[0][1], family, version)
    return None


def _lookup(model_id: str | None) -> tuple[_ParsedMap, _Match | None]:
    parsed = _current()
    if model_id is None:
        return parsed, None
    if not isinstance(model_id, str):
        raise TypeError(f"model_id must be a string, got {type(model_id).__name__}")
    if not model_id.strip():
        return parsed, None
    if model_id in parsed.resolved:
        match = parsed.resolved[model_id]
    else:
        match = _resolve(parsed, model_id)
        if len(parsed.resolved) >= _MAX_RESOLVED:
            parsed.resolved.clear()
        parsed.resolved[model_id] = match
    if match is None and model_id not in _warned:
        if len(_warned) >= _MAX_WARNED:
            _warned.clear()  # a process that invents ids must not grow without bound
        _warned.add(model_id)
        logger.warning(
            "model %r is not in the capability map: no context cap, no prompt caching, "
            "token scale 1.0 (add it through LLM_CAPABILITY_MAP_PATH)",
            model_id,
        )
    return parsed, match


def resolve_model_id(model_id: str | None) -> str | None:
    """The capability-map key whose figures apply to ``model_id``, or None for unknown models.

    Case, a missing provider prefix and snapshot suffixes are ignored. A Claude id that is not
    listed resolves to the newest listed model of its family at or below its version.

    >>> resolve_model_id("gpt-4o-2024-08-06")
    'openai/gpt-4o'
    """
    match = _lookup(model_id)[1]
    return None if match is None else match.key


@dataclass(frozen=True, slots=True)
class ModelCapabilities:
    """What the capability map says about one model, from a single lookup."""

    context_cap: int | None
    prompt_caching: bool
    cache_pricing: CachePricing | None


def get_model_capabilities(model_id: str | None) -> ModelCapabilities:
    """:func:`get_context_cap_for_model`, :func:`has_prompt_caching` and
    :func:`get_cache_pricing` of ``model_id`` at once (one lookup, for per-request code).

    >>> get_model_capabilities("openai/gpt-4o").context_cap
    128000
    """
    parsed, match = _lookup(model_id)
    return ModelCapabilities(
        _context_cap(parsed, match), _caching(parsed, match), _pricing(parsed, match)
    )


def get_context_cap_for_model(model_id: str | None) -> int | None:
    """The model's context window in tokens, or None when it is unknown.

    >>> get_context_cap_for_model("anthropic/claude-sonnet-4.5")
    200000
    """
    return _context_cap(*_lookup(model_id))


def has_prompt_caching(model_id: str | None) -> bool:
    """Whether the model's provider caches prompt prefixes (False for unknown models)."""
    return _caching(*_lookup(model_id))


def get_cache_pricing(model_id: str | None) -> CachePricing | None:
    """Cache mode, prices and minimum prefix for the model, or None when not known.

    >>> get_cache_pricing("claude-opus-5-5")
    CachePricing(mode='marked', write=1.25, read=0.05, min_tokens=512)
    """
    return _pricing(*_lookup(model_id))


def _context_cap(parsed: _ParsedMap, match: _Match | None) -> int | None:
    if match is None:
        return None
    cap = parsed.caps.get(match.key)
    if match.family is not None and match.version is not None:
        threshold = parsed.long_context_from.get(match.family)
        if threshold is not None and match.version >= threshold:
            return parsed.long_context_cap or cap
    return cap


def _caching(parsed: _ParsedMap, match: _Match | None) -> bool:
    return match is not None and parsed.caching.get(match.key, False)


def _pricing(parsed: _ParsedMap, match: _Match | None) -> CachePricing | None:
    if match is None or not parsed.caching.get(match.key, match.key in parsed.pricing):
        return None
    return parsed.pricing.get(match.key)


def get_token_scale(model_id: str | None) -> float:
    """Seed for provider tokens per counted ``cl100k_base`` token (1.0 when unmeasured).

    >>> get_token_scale("gpt-4o")
    1.0
    """
    parsed, match = _lookup(model_id)
    if match is None:
        return 1.0
    scale = parsed.scales.get(match.key, 1.0)
    if match.version is not None:
        for since, stepped in parsed.scale_from:
            if match.version >= since:
                scale = stepped
    return scale
