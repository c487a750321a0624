"""Loading the capability map and resolving model ids against it."""

from __future__ import annotations

import copy
import json
import math
import os
import threading
from dataclasses import replace
from typing import Any

from membrane import config
from membrane import packaged as resources
from membrane.capabilities._limits import (
    DEFAULT_RESERVE_CEILING,
    DEFAULT_RESERVE_SHARE,
    ModelCapabilities,
    ModelLimits,
)
from membrane.capabilities._parse import (
    SNAPSHOT_SUFFIXES,
    CachePricing,
    Match,
    ParsedMap,
    claude_version,
    family_of,
    map_error,
    merge_maps,
    parse_map,
)

__all__ = [
    "CachePricing",
    "default_output_reserve",
    "get_cache_pricing",
    "get_context_cap_for_model",
    "get_model_capabilities",
    "get_token_scale",
    "has_prompt_caching",
    "load_capability_map",
    "provider_model_id",
    "resolve_model_id",
]


def _warn(message: str, *args: object) -> None:
    """Log a warning on the ``membrane.capabilities`` logger."""
    import logging  # here, not at import: most processes never warn, and a cold start saves it

    logging.getLogger("membrane.capabilities").warning(message, *args)


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


def _read_json(path: str | None) -> tuple[object, str]:
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
        return json.loads(text), where
    except json.JSONDecodeError as exc:
        raise map_error(where, f"not valid JSON ({exc.msg} at line {exc.lineno})") from None


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
        bundled = _cache.get(("<bundled>", 0, 0))
        if bundled is None:
            raw, where = _read_json(None)
            bundled = parse_map(raw, where)
            _cache[("<bundled>", 0, 0)] = bundled
        if path is None:
            return bundled
        user, where = _read_json(path)
        # The user map lies over the bundled one: a model it names replaces that model.
        parsed = parse_map(merge_maps(copy.deepcopy(bundled.raw), user, where), where)
        # Keep only the newest version of a user map; the bundled one never changes.
        for stale in [k for k in _cache if k[0] == key[0]]:
            del _cache[stale]
        _cache[key] = parsed
        return parsed


def load_capability_map() -> dict[str, Any]:
    """The capability map in use: the bundled one, with the file named by
    ``LLM_CAPABILITY_MAP_PATH`` merged over it when that is set.

    Returns a copy; editing it changes nothing. Raises :class:`InvalidInputError` when the file
    is missing, is not JSON, or holds an entry that does not parse.
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
        return Match(eligible[-1] if eligible else listed[0][1], family, version, "claude")
    for cand in candidates:
        kin = family_of(cand.rsplit("/", 1)[-1])
        if kin is not None:
            return _family_match(parsed, *kin)
    return None


def _family_match(
    parsed: ParsedMap, family: str, version: tuple[int, int] | None, kind: str
) -> Match | None:
    """The newest listed model of ``family`` at or below ``version`` (GPT, o-series, Gemini).

    Unlike Claude's, a version older than every listed one does not resolve: those names
    belong to retired generations (gpt-4, gpt-3.5-turbo, gemini-1.5-flash).
    """
    listed = list(parsed.families.get(family, ()))
    if kind == "gpt" and family == "gpt":
        # OpenAI routes the bare gpt-5.6 alias to GPT-5.6 Sol; Sol is the unsuffixed tier.
        listed = sorted(listed + list(parsed.families.get("gpt-sol", ())))
    if not listed and kind == "gemini" and version is not None:
        # A tier the map does not list (a new Gemini 4 name) takes its generation's newest.
        listed = sorted(
            entry
            for name, entries in parsed.families.items()
            if name.startswith("gemini-")
            for entry in entries
            if entry[0][0] == version[0]
        )
    if not listed:
        return None
    if version is None:
        return Match(listed[-1][1], family, None, kind)
    eligible = [k for v, k in listed if v <= version]
    return Match(eligible[-1], family, version, kind) if eligible else None


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
        _warn(
            "model %r is not in the capability map: no context cap, no prompt caching, "
            "token scale 1.0 (add it through LLM_CAPABILITY_MAP_PATH)",
            model_id,
        )
    return parsed, match


def resolve_model_id(model_id: str | None) -> str | None:
    """The capability-map key whose figures apply to ``model_id``, or None for unknown models.

    Case, a missing provider prefix and snapshot suffixes are ignored. A Claude, GPT, o-series
    or Gemini id that is not listed resolves to the newest listed model of its family at or
    below its version (docs/providers.md lists the families).

    >>> resolve_model_id("gpt-4o-2024-08-06")
    'openai/gpt-4o'
    """
    match = _lookup(model_id)[1]
    return None if match is None else match.key


def provider_model_id(model_id: str | None, provider: str) -> str | None:
    """The name ``provider``'s API takes for ``model_id``, when the map gives exactly one.

    None for unknown models, for ids matched only by family (``claude-opus-7`` is not Opus
    5.5, ``gpt-5.3`` is not GPT-5.2), and for models the map lists no ``api_ids[provider]`` for.

    >>> provider_model_id("anthropic/claude-opus-5.5", "anthropic")
    'claude-opus-5-5'
    """
    parsed, match = _lookup(model_id)
    if match is None or match.family is not None:
        return None
    info = parsed.models.get(match.key)
    return None if info is None else dict(info.api_ids).get(provider)


def get_model_capabilities(
    model_id: str | None, limits: ModelLimits | None = None
) -> ModelCapabilities:
    """:func:`get_context_cap_for_model`, :func:`has_prompt_caching` and
    :func:`get_cache_pricing` of ``model_id`` at once (one lookup, for per-request code).

    ``limits`` (the caller's window, output limit or reasoning flag) win over the map's
    figures, and give an unknown model (or no model id) a window.

    >>> get_model_capabilities("openai/gpt-4o").context_cap
    128000
    >>> get_model_capabilities("gpt-4o", ModelLimits(context_window=32_000)).context_cap
    32000
    """
    if limits is not None and not isinstance(limits, ModelLimits):
        raise TypeError(f"limits must be a ModelLimits, got {type(limits).__name__}")
    parsed, match = _lookup(model_id)
    found: ModelCapabilities | None = parsed.found.get(model_id)
    if found is None:
        found = _capabilities(parsed, match, model_id)
        if len(parsed.found) >= _MAX_RESOLVED:
            parsed.found.clear()
        parsed.found[model_id] = found
    if limits is None:
        return found
    return replace(
        found,
        context_cap=limits.context_window or found.context_cap,
        max_output_tokens=limits.max_output_tokens or found.max_output_tokens,
        reasoning=found.reasoning if limits.reasoning is None else limits.reasoning,
    )


def _capabilities(
    parsed: ParsedMap, match: Match | None, model_id: str | None
) -> ModelCapabilities:
    provider = _provider(match.key if match is not None else model_id)
    return ModelCapabilities(
        _context_cap(parsed, match),
        _caching(parsed, match),
        _pricing(parsed, match),
        None if match is None else parsed.max_outputs.get(match.key),
        provider,
        None if match is None else parsed.max_inputs.get(match.key),
        match is not None and match.key in parsed.reasoning,
        None if provider is None else parsed.reasoning_reserve.get(provider),
        match is not None and match.key in parsed.cache_breakpoints,
    )


def default_output_reserve(capabilities: ModelCapabilities | None) -> int | None:
    """The room kept for the answer when the caller names none; None without a known window.

    A tenth of the window, at most :data:`DEFAULT_RESERVE_CEILING`; for a model that reasons
    by default, at least its provider's reasoning reserve (thinking counts against the output
    cap); never more than the model's maximum output.

    >>> default_output_reserve(get_model_capabilities("gpt-4o"))
    12800
    >>> default_output_reserve(get_model_capabilities("o3"))
    25000
    """
    window = None if capabilities is None else capabilities.context_cap
    if capabilities is None or window is None:
        return None
    reserve = min(math.ceil(window * DEFAULT_RESERVE_SHARE), DEFAULT_RESERVE_CEILING)
    if capabilities.reasoning and capabilities.reasoning_reserve:
        reserve = max(reserve, capabilities.reasoning_reserve)
    most = capabilities.max_output_tokens
    reserve = min(reserve, most) if most else reserve
    # However small a window the caller passes, the prompt keeps at least half of it.
    return min(reserve, window // 2)


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
    if match.kind == "claude" and match.family is not None and match.version is not None:
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
    if match.kind == "claude" and match.version is not None:
        for since, stepped in parsed.scale_from:
            if match.version >= since:
                scale = stepped
    return scale
