"""Environment variables and defaults, read in one place.

Values are read when asked for (not at import), so tests and long-running processes see changes.
"""

from __future__ import annotations

import os

__all__ = [
    "DEFAULT_CACHE_BYTES",
    "DEFAULT_HISTORY_SHARE",
    "DEFAULT_INDEX_SHARE",
    "DEFAULT_KEYFRAME_TOKENS",
    "DEFAULT_MESSAGE_OVERHEAD_TOKENS",
    "MAX_HISTORY_MESSAGES",
    "MAX_MEMORIES",
    "MAX_TEXT_CHARS",
    "PROMPT_CACHE_TTL_SECONDS",
    "capability_map_path",
    "lod_attention_shift_cosine_threshold",
    "max_cacheable_prefix_tokens",
    "memory_text_max_chars",
    "preflight_analyst_model",
    "preflight_cache_prefix",
    "preflight_cache_ttl_seconds",
    "preflight_target_tokens",
    "preflight_token_threshold",
    "redis_url",
    "ref_map_prefix",
    "ref_map_ttl_seconds",
    "store_deadline_seconds",
    "stress_key_prefix",
    "stress_recent_ttl_seconds",
]

#: What one compiler's caches may hold, by real memory: the history trackers and system texts
#: of the conversations it serves (three quarters, ``stages.window.WindowPlanner``) and its
#: token counts (a quarter, ``tokenizers.CounterChoice``). The process-wide text memos are
#: bounded apart (``membrane.memo``).
DEFAULT_CACHE_BYTES = 128 * 2**20
DEFAULT_HISTORY_SHARE = 0.75
DEFAULT_INDEX_SHARE = 0.125
DEFAULT_KEYFRAME_TOKENS = 40
DEFAULT_MESSAGE_OVERHEAD_TOKENS = 3
DEFAULT_STORE_DEADLINE_SECONDS = 0.25
# How long a provider keeps a cached prefix unused: 5 minutes for Anthropic's default cache and
# OpenAI's in-memory one. The capability map carries no lifetime, so one figure serves all; a
# longer gap between two messages starts a session (see membrane.stages.history._cut).
PROMPT_CACHE_TTL_SECONDS = 300.0

# Input size limits. Past them a compile raises InvalidInputError naming the field, instead of
# running for minutes and holding gigabytes. Each is ten times what the benchmarks compile in
# a few seconds (benchmarks/slow_inputs.py: 100,000 messages of history, 50,000 memories, a
# 5 MB message). Read when a compile checks its input, so a test or an operator may change them.
#: The most messages a history (``conversation_messages``) may hold.
MAX_HISTORY_MESSAGES = 1_000_000
#: The most memories one compile may be offered.
MAX_MEMORIES = 500_000
#: The most characters one text may hold: the user message, a persona or core, a memory's
#: content, a history message's content string or one of its text blocks.
MAX_TEXT_CHARS = 50_000_000


def check_within(
    size: int, ceiling: str, field: str, unit: str, advice: str, *, label: str | None = None
) -> None:
    """Raise :class:`membrane.InvalidInputError` naming ``field`` (called ``label`` in the
    message, if given) when ``size`` (in ``unit``) passes the ceiling called ``ceiling`` in
    this module, as it stands now."""
    limit = globals()[ceiling]
    if size > limit:
        from membrane.errors import InvalidInputError

        raise InvalidInputError(
            f"{label or field} holds {size:,} {unit}, more than the {limit:,} a compile accepts "
            f"(membrane.config.{ceiling}); {advice}",
            field=field,
        )


def _int_env(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name} must be an integer, got {raw!r}") from None


def preflight_token_threshold() -> int:
    """Middle size in tokens above which a pre-flight compressor runs."""
    return _int_env("MEMORY_PREFLIGHT_TOKEN_THRESHOLD", 8000)


def preflight_target_tokens() -> int:
    """Target size handed to the pre-flight compressor."""
    return _int_env("MEMORY_PREFLIGHT_TARGET_TOKENS", 500)


def preflight_analyst_model() -> str:
    """Model hint passed to a pre-flight compressor."""
    return os.environ.get("PREFLIGHT_ANALYST_MODEL", "openai/gpt-4o-mini")


def memory_text_max_chars() -> int | None:
    """Per-memory character cap from the environment: None = per-kind defaults, 0 = no cap."""
    raw = os.environ.get("MEMBRANE_MEMORY_TEXT_MAX_CHARS", "").strip()
    if not raw:
        return None
    return _int_env("MEMBRANE_MEMORY_TEXT_MAX_CHARS", 0)


def max_cacheable_prefix_tokens() -> int:
    """Default ``max_cacheable_tokens`` for :func:`membrane.glaciate`."""
    return _int_env("MAX_CACHEABLE_PREFIX_TOKENS", 2000)


def capability_map_path() -> str | None:
    """Path of a capability map merged over the bundled one, if set."""
    return os.environ.get("LLM_CAPABILITY_MAP_PATH") or None


def redis_url() -> str | None:
    """Default Redis URL for ref-map persistence and the Redis state store."""
    return os.environ.get("MEMBRANE_REDIS_URL") or os.environ.get("REDIS_URL") or None


def ref_map_prefix() -> str:
    """Redis key prefix of persisted ref maps (the conversation id follows)."""
    return os.environ.get("MEMBRANE_REF_MAP_PREFIX", "membrane:ref_map:")


def preflight_cache_prefix() -> str:
    """Redis key prefix of cached pre-flight summaries."""
    return os.environ.get("MEMBRANE_PREFLIGHT_CACHE_PREFIX", "membrane:preflight:")


def preflight_cache_ttl_seconds() -> int:
    """How long a cached pre-flight summary lives in Redis."""
    return _positive_env("MEMBRANE_PREFLIGHT_CACHE_TTL_SECONDS", 60)


def stress_key_prefix() -> str:
    """Redis key prefix of recent-stress records (the conversation id follows)."""
    return os.environ.get("MEMBRANE_STRESS_KEY_PREFIX", "membrane:stress:")


def stress_recent_ttl_seconds() -> int:
    """How long a recent-stress record lives in Redis."""
    return _positive_env("STRESS_RECENT_TTL_SECONDS", 300)


def _positive_env(name: str, default: int) -> int:
    value = _int_env(name, default)
    if value <= 0:
        raise ValueError(f"environment variable {name} must be a positive integer, got {value}")
    return value


def ref_map_ttl_seconds() -> int:
    """Seconds a saved ref map lives in Redis (``MEMBRANE_REF_MAP_TTL_SECONDS``, 600)."""
    return _int_env("MEMBRANE_REF_MAP_TTL_SECONDS", 600)


def store_deadline_seconds() -> float:
    """Seconds one state-store call may take before it is abandoned (default 0.25)."""
    raw = os.environ.get("MEMBRANE_STORE_DEADLINE_SECONDS", "").strip()
    if not raw:
        return DEFAULT_STORE_DEADLINE_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0.0 < value <= 60.0:
        raise ValueError(
            "environment variable MEMBRANE_STORE_DEADLINE_SECONDS must be a number of seconds "
            f"in (0, 60], got {raw!r}"
        )
    return value


def lod_attention_shift_cosine_threshold(default: float = 0.35) -> float:
    """Cosine distance from recent user messages at which a new message counts as a topic shift.

    ``default`` applies when the variable is unset (an embedder may bring its own measured one).
    """
    raw = os.environ.get("LOD_ATTENTION_SHIFT_COSINE_THRESHOLD", "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(
            "environment variable LOD_ATTENTION_SHIFT_COSINE_THRESHOLD must be a number, "
            f"got {raw!r}"
        ) from None
    if not 0.0 < value <= 2.0:
        raise ValueError(
            "environment variable LOD_ATTENTION_SHIFT_COSINE_THRESHOLD must be a cosine distance "
            f"in (0, 2], got {raw!r}"
        )
    return value
