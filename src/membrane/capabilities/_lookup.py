"""Loading the capability map and resolving model ids against it."""

from __future__ import annotations

import copy
import json
import logging
import os
import threading
from dataclasses import dataclass
from importlib import resources
from typing import Any

from membrane import config
from membrane.capabilities._parse import (
    SNAPSHOT_SUFFIXES,
    CachePricing,
    Match,
    ParsedMap,
    claude_version,
    map_error,
    parse_map,
)

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
_lock = threading.Lock()
_cache: dict[tuple[str, int, int], ParsedMap] = {}
_warned: set[str] = set()
_MAX_WARNED = 10_000
_MAX_RESOLVED = 10_000
_PROVIDERS = ("openai", "anthropic", "google")
# How a model id names its provider when the map has no entry for it (Bedrock and Vertex ids
# included: anthropic.claude-..., publishers/google/models/gemini-...).
_PROVIDER_MARKS = (
    ("anthropic", ("claude",)),
    ("google", ("gemini",)),
    ("openai", ("gpt-", "gpt4", "o1", "o3", "o4")),
)


def _current() -> ParsedMap:
    path = config.capability_map_path()
    if path is None:
        key = ("<bundled>", 0, 0)
    else:
        try:
            st = os.stat(path)
        except OSError as exc:
            raise map_error(
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
                raise map_error(path, f"cannot read it ({exc.strerror})") from None
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise map_error(where, f"not valid JSON ({exc.msg} at line {exc.lineno})") from None
        parsed = parse_map(raw, where)
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
            for pattern in SNAPSHOT_SUFFIXES:
                new = pattern.sub("", stripped)
                if new != stripped and new:
                    stripped, changed = new, True
        if stripped not in out:
            out.append(stripped)
    return out


def _resolve(parsed: ParsedMap, model_id: str) -> Match | None:
    candidates = _candidates(model_id)
    for cand in candidates:
        if cand in parsed.known:
            return Match(cand)
    for cand in candidates:
        hit = parsed.by_bare.get(cand)
        if hit is not None:
            return Match(hit)
    # Claude ids are matched by family: the newest listed version at or below the one asked
    # for carries the figures (claude-opus-6 -> the newest Opus listed). A current-style name
    # older than every listed version takes the oldest one. Names in the old style
    # (claude-3-5-haiku) belong to retired generations and must be listed to resolve.
    for cand in candidates:
        found = claude_version(cand)
        if found is None:
            continue
        family, version, current = found
        listed = parsed.claude_versions.get(family, ())
        if not listed:
            return None
        if not current:
            key = next((k for v, k in listed if v == version), None)
            return None if key is None else Match(key)
        if version is None:
            return Match(listed[-1][1])
        exact = next((k for v, k in listed if v == version), None)
        if exact is not None:
            return Match(exact)
        eligible = [k for v, k in listed if v <= version]
        return Match(eligible[-1] if eligible else listed[0][1], family, version)
    return None


def _lookup(model_id: str | None) -> tuple[ParsedMap, Match | None]:
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
    max_output_tokens: int | None = None
    provider: str | None = None


def get_model_capabilities(model_id: str | None) -> ModelCapabilities:
    """:func:`get_context_cap_for_model`, :func:`has_prompt_caching` and
    :func:`get_cache_pricing` of ``model_id`` at once (one lookup, for per-request code).

    >>> get_model_capabilities("openai/gpt-4o").context_cap
    128000
    """
    parsed, match = _lookup(model_id)
    return ModelCapabilities(
        _context_cap(parsed, match),
        _caching(parsed, match),
        _pricing(parsed, match),
        None if match is None else parsed.max_outputs.get(match.key),
        _provider(match.key if match is not None else model_id),
    )


def _provider(name: str | None) -> str | None:
    """``openai``, ``anthropic`` or ``google`` for a map key or a model id, else None."""
    if not name:
        return None
    lowered = name.lower()
    prefix = lowered.split("/", 1)[0] if "/" in lowered else ""
    if prefix in _PROVIDERS:
        return prefix
    for provider, marks in _PROVIDER_MARKS:
        if any(mark in lowered for mark in marks):
            return provider
    return None


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


def _context_cap(parsed: ParsedMap, match: Match | None) -> int | None:
    if match is None:
        return None
    cap = parsed.caps.get(match.key)
    if match.family is not None and match.version is not None:
        threshold = parsed.long_context_from.get(match.family)
        if threshold is not None and match.version >= threshold:
            return parsed.long_context_cap or cap
    return cap


def _caching(parsed: ParsedMap, match: Match | None) -> bool:
    return match is not None and parsed.caching.get(match.key, False)


def _pricing(parsed: ParsedMap, match: Match | None) -> CachePricing | None:
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
