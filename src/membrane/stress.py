"""Stress: how loaded the machine is, and how hard a conversation pushes its budget.

Two things a backend wants to see when answers get slow or thin:

- :func:`sample_load`: a CPU-load sample of this machine (the ``stress`` extra, psutil):
  CPU use since the previous sample, the one-minute load average per CPU and the CPU count.
  ``CompileResult.to_debug_dict(environment=True)`` includes one.
- a recent-stress record per conversation: the last turn's budget pressure (tokens against the
  budget, what was trimmed, history dropped) with a load sample, kept in Redis under
  ``MEMBRANE_STRESS_KEY_PREFIX`` + the conversation's scope (namespace, user, id, as its state
  key: :func:`membrane.state.keys.scope`) for ``STRESS_RECENT_TTL_SECONDS``
  (:func:`record_recent_stress`, :func:`recent_stress`; ``compile_prompt_async(...,
  record_stress=True)`` writes one per turn).

Nothing here runs unless called, and nothing opens a connection but the client you pass.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
import warnings
from collections.abc import Mapping
from typing import Any

from membrane import config
from membrane.report import CompileReport
from membrane.state.async_redis import check_async_client, redis_get, redis_set
from membrane.state.keys import check_id, check_namespace, scoped_conversation, stress_key
from membrane.state.protocol import StateStoreWarning

__all__ = ["recent_stress", "record_recent_stress", "sample_load", "stress_record"]


def sample_load() -> dict[str, Any]:
    """This machine's load now: ``cpu_percent``, ``load_per_cpu_1m``, ``cpu_count``.

    ``cpu_percent`` is CPU use since the previous sample in this process (psutil counts from
    the first call, which reports 0.0). Without psutil: ``{"available": False, "reason": ...}``.
    """
    if importlib.util.find_spec("psutil") is None:
        return {
            "available": False,
            "reason": 'psutil is not installed (the stress extra: pip install ".[stress]")',
        }
    import psutil

    cpus = psutil.cpu_count() or 1
    load_1m = psutil.getloadavg()[0]
    return {
        "available": True,
        "cpu_percent": float(psutil.cpu_percent(interval=None)),
        "load_per_cpu_1m": round(load_1m / cpus, 3),
        "cpu_count": cpus,
        "pid": os.getpid(),
    }


def stress_record(
    metadata: Mapping[str, Any] | CompileReport, load: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """One turn's pressure from a result's ``metadata``, with a load sample."""
    report = (
        metadata if isinstance(metadata, CompileReport) else CompileReport.from_metadata(metadata)
    )
    budget = report.tokens_budget or 1
    return {
        "at": round(time.time(), 3),
        "sent_tokens": report.sent_tokens,
        "tokens_budget": report.tokens_budget,
        "budget_fill": round(report.sent_tokens / budget, 4),
        "budget_exceeded": report.budget_exceeded,
        "tokens_trimmed": report.tokens_trimmed,
        "memories_dropped": report.fit.segments_offered - report.fit.segments_kept,
        "memories_thinned": report.fit.segments_thinned,
        "history_messages_dropped": report.history_messages_dropped,
        "load": dict(load) if load is not None else sample_load(),
    }


def _key(conversation_id: str, user_id: str | None, state_namespace: str | None) -> str:
    check_id(conversation_id, "conversation_id")
    check_id(user_id, "user_id", optional=True)
    namespace = check_namespace(state_namespace)
    return stress_key(scoped_conversation(user_id, conversation_id), namespace)


async def record_recent_stress(
    conversation_id: str,
    metadata: Mapping[str, Any] | CompileReport,
    client: Any,
    *,
    user_id: str | None = None,
    state_namespace: str | None = None,
) -> dict[str, Any]:
    """Save this turn's :func:`stress_record` for the user's conversation; returns it.

    The key carries the conversation's full scope, as its state key does (``user_id`` and
    ``state_namespace`` as given to ``compile_prompt_async``).
    """
    check_async_client(client, field="client")
    key = _key(conversation_id, user_id, state_namespace)
    record = stress_record(metadata)
    raw = json.dumps(record, sort_keys=True)
    ttl = config.stress_recent_ttl_seconds()
    await redis_set(client, key, raw, ttl, "saving the recent-stress record")
    return record


async def recent_stress(
    conversation_id: str,
    client: Any,
    *,
    user_id: str | None = None,
    state_namespace: str | None = None,
) -> dict[str, Any] | None:
    """The user's conversation's last stress record, or None when none is recent."""
    check_async_client(client, field="client")
    key = _key(conversation_id, user_id, state_namespace)
    try:
        raw = await redis_get(client, key, "reading the recent-stress record")
        value = None if raw is None else json.loads(raw)
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, nested too deep
        warnings.warn(
            f"discarded the recent-stress record stored under {key!r}: it cannot be decoded "
            f"({type(exc).__name__})",
            StateStoreWarning,
            stacklevel=2,
        )
        return None
    return value if isinstance(value, dict) else None
