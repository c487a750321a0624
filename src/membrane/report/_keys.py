"""Every public ``metadata`` key, declared once beside the report field it renders.

:func:`render_metadata` writes a report's dict from :data:`_KEYS` in the documented order;
:func:`read_metadata` reads a dict back through the same table. No other module spells these
keys.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from membrane.report._fragments import CacheReport, PolicyReport

__all__ = [
    "CACHE_KEYS",
    "FIREWALL_STATS",
    "MetadataView",
    "read_metadata",
    "render_cache",
    "render_metadata",
]


@dataclass(frozen=True, slots=True)
class MetadataView:
    """A ``metadata`` dict's raw values by name, unchecked and unconverted.

    For the request builders, which take any object with ``messages`` and ``metadata`` (a
    result possibly built by hand) and check each value they use themselves.
    """

    metadata: Mapping[str, Any]

    @property
    def model_id(self) -> Any:
        return self.metadata.get("model_id")

    @property
    def placement(self) -> Any:
        return self.metadata.get("memory_placement")

    @property
    def token_scale(self) -> Any:
        return self.metadata.get("token_scale")

    @property
    def cache_breakpoints(self) -> Any:
        return self.metadata.get("cache_breakpoints")

    @property
    def reserve_output_tokens(self) -> Any:
        return self.metadata.get("reserve_output_tokens")

    @property
    def reserve_output_default(self) -> Any:
        return self.metadata.get("reserve_output_default")

    @property
    def tools_tokens(self) -> Any:
        return self.metadata.get("tools_tokens")


@dataclass(frozen=True, slots=True)
class _Key:
    """One metadata key: the field it renders, when it is present, how it is written and read.

    ``path`` is the field (``"window.index_lines"`` inside a fragment). ``read`` turns the
    key's value back into ``{path: value}`` entries (None: derived, never read back).
    """

    name: str
    path: str
    when: Callable[[Any], bool]
    write: Callable[[Any], Any]
    read: Callable[[Any], dict[str, Any]] | None


def _key(
    name: str,
    path: str,
    convert: Callable[[Any], Any] = lambda v: v,
    *,
    when: Callable[[Any], bool] | None = None,
    write: Callable[[Any], Any] | None = None,
) -> _Key:
    get = _getter(path)
    return _Key(
        name,
        path,
        when if when is not None else _always,
        write if write is not None else get,
        lambda value: {path: convert(value)},
    )


def _getter(path: str) -> Callable[[Any], Any]:
    head, _, rest = path.partition(".")
    if not rest:
        return operator.attrgetter(head)
    inner = operator.attrgetter(rest)
    outer = operator.attrgetter(head)
    return lambda report: None if (part := outer(report)) is None else inner(part)


def _always(_report: Any) -> bool:
    return True


def _end(report: Any) -> bool:
    return bool(report.placement == "end")


def _system(report: Any) -> bool:
    return bool(report.placement == "system")


def _present(path: str) -> Callable[[Any], bool]:
    get = _getter(path)
    return lambda report: get(report) is not None


def _nonzero(path: str) -> Callable[[Any], bool]:
    get = _getter(path)
    return lambda report: bool(get(report))


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _moves(report: Any) -> dict[str, int]:
    session, mid = report.window.cut_moves
    return {"session": session, "mid_session": mid}


def _effect(report: Any) -> dict[str, Any] | None:
    label = report.label
    if label is None or label.tier_order is None:
        return None
    return {"tier_order": list(label.tier_order), "memory_share": label.memory_share}


def _read_effect(value: Any) -> dict[str, Any]:
    if not value:
        return {}
    return {
        "label.tier_order": tuple(value["tier_order"]),
        "label.memory_share": value.get("memory_share"),
    }


def _timings(report: Any) -> dict[str, dict[str, Any]]:
    rows = report.profile_timings or ()
    return {stage: {"ms": ms, "items": items} for stage, ms, items in rows}


def _read_timings(value: Any) -> tuple[tuple[str, float, int], ...]:
    return tuple((str(stage), float(row["ms"]), int(row["items"])) for stage, row in value.items())


def _semantic_error(report: Any) -> bool:
    return report.semantic_ranking_error is not None


def _semantic_used(report: Any) -> bool:
    return report.semantic_ranking_error is None and report.semantic_ranking


def _both(first: Callable[[Any], bool], second: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda report: first(report) and second(report)


_CACHE_TABLE: tuple[_Key, ...] = (
    _key("cache_mode", "mode"),
    _key("cache_breakpoints", "breakpoints", tuple, write=lambda c: list(c.breakpoints)),
    _key("prompt_cache_used", "used", bool),
    _key("cacheable_prefix_tokens", "prefix_tokens", int, when=_present("prefix_tokens")),
    _key("dynamic_tail_tokens", "tail_tokens", int, when=_present("tail_tokens")),
)
#: The caching keys of ``metadata``, in order.
CACHE_KEYS = tuple(key.name for key in _CACHE_TABLE)


def _in(fragment: str, table: tuple[_Key, ...], when: Callable[[Any], bool]) -> tuple[_Key, ...]:
    """``table``'s keys read from the report's ``fragment``, present when ``when`` holds too."""
    get = operator.attrgetter(fragment)
    return tuple(_nested(fragment, get, key, when) for key in table)


def _nested(
    fragment: str, get: Callable[[Any], Any], key: _Key, when: Callable[[Any], bool]
) -> _Key:
    read = key.read

    def present(report: Any) -> bool:
        part = get(report)
        return part is not None and when(report) and key.when(part)

    def write(report: Any) -> Any:
        return key.write(get(report))

    def read_nested(value: Any) -> dict[str, Any]:
        assert read is not None
        return {f"{fragment}.{path}": x for path, x in read(value).items()}

    return _Key(key.name, f"{fragment}.{key.path}", present, write, read_nested if read else None)


_TURN_TABLE: tuple[_Key, ...] = (
    _key("turn_steps", "steps", int),
    _key("turn_steps_stubbed", "steps_stubbed", int),
    _key("turn_question_reused", "question_reused", bool),
)

_AGENT_TABLE: tuple[_Key, ...] = (
    _key("tools", "tools", int, when=_nonzero("tools")),
    _key("tools_tokens", "tools_tokens", int, when=_nonzero("tools")),
    _key("tools_changed", "tools_changed", bool, when=_nonzero("tools")),
    _key("images", "images", int, when=_nonzero("images")),
    _key("image_tokens", "image_tokens", int, when=_nonzero("images")),
    _key("images_unsized", "images_unsized", int, when=_nonzero("images")),
    _key(
        "reserve_output_tokens",
        "reserve_output_tokens",
        _optional_int,
        when=_present("reserve_output_tokens"),
    ),
    _key("context_window", "context_window", _optional_int, when=_present("reserve_output_tokens")),
    _key(
        "reserve_output_default",
        "reserve_output_default",
        bool,
        when=_present("reserve_output_tokens"),
    ),
)

_STABLE_PREFIX = _key("stable_prefix_messages", "stable_prefix_messages", int)

#: Every key of ``metadata``, in the documented order. ``stable_prefix_messages`` and the
#: caching keys stand at one place with end placement and another with system placement.
_KEYS: tuple[_Key, ...] = (
    _key("model_id", "model_id"),
    _key("memory_placement", "placement", lambda v: "system" if v == "system" else "end"),
    _key("token_count", "token_count", int),
    _key("tokens_budget", "tokens_budget", int),
    _key("message_framing_tokens", "message_framing_tokens", int),
    _key("tokens_trimmed", "tokens_trimmed", int),
    _key("segments_offered", "fit.segments_offered", int),
    _key("segments_kept", "fit.segments_kept", int),
    _key("segments_thinned", "fit.segments_thinned", int),
    _key("memories_truncated", "memories_truncated", int),
    _Key(_STABLE_PREFIX.name, _STABLE_PREFIX.path, _end, _STABLE_PREFIX.write, _STABLE_PREFIX.read),
    _key("history_messages_dropped", "window.messages_dropped", int, when=_end),
    _key("history_messages_recalled", "fit.messages_recalled", int, when=_end),
    _key("history_recall_reason", "fit.recall_reason", when=_present("fit.recall_reason")),
    _key("history_index_lines", "window.index_lines", int, when=_end),
    _key("history_index_tokens", "window.index_tokens", int, when=_end),
    _key(
        "history_cut_moves",
        "window.cut_moves",
        lambda v: (v["session"], v["mid_session"]),
        when=_both(_end, _present("window.cut_moves")),
        write=_moves,
    ),
    _key("history_resume", "window.resume", when=_both(_end, _present("window.resume"))),
    _Key("retrieval_summary", "fit", _always, lambda r: r.fit.summary, None),
    _Key(_STABLE_PREFIX.name, _STABLE_PREFIX.path, _system, _STABLE_PREFIX.write, None),
    *_in("cache", _CACHE_TABLE, _system),
    _key(
        "history_turn_local_drop",
        "window.turn_local_drop",
        int,
        when=_nonzero("window.turn_local_drop"),
    ),
    _key(
        "message_counts_supplied",
        "window.counts_supplied",
        int,
        when=_nonzero("window.counts_supplied"),
    ),
    _key(
        "compaction_boundary",
        "window.compaction_boundary",
        int,
        when=_present("window.compaction_boundary"),
    ),
    _key("core_chars", "window.core_chars", _optional_int, when=_present("window.core_chars")),
    _key("token_scale", "token_scale", float),
    _key("token_scale_samples", "token_scale_samples", int),
    _key(
        "tokens_budget_counted", "tokens_budget_counted", int, when=lambda r: r.token_scale != 1.0
    ),
    _key("budget_exceeded", "budget_exceeded", bool),
    _key("semantic_ranking_error", "semantic_ranking_error", when=_semantic_error),
    _key("semantic_ranking", "semantic_ranking", bool, when=_semantic_used),
    _key(
        "semantic_vectors_pending",
        "semantic_vectors_pending",
        int,
        when=_nonzero("semantic_vectors_pending"),
    ),
    _key(
        "state_discarded",
        "store.discarded",
        lambda v: tuple(str(x) for x in v or ()),
        when=_nonzero("store.discarded"),
        write=lambda r: list(r.store.discarded),
    ),
    _key("state_store_fallback", "store.fallback", bool, when=_nonzero("store.fallback")),
    *_in("cache", _CACHE_TABLE, _end),
    *_in("agent", _AGENT_TABLE, _always),
    *_in("turn", _TURN_TABLE, _always),
    _key("query_label", "label.name", when=_present("label")),
    _Key("query_label_effect", "label", _present("label"), _effect, _read_effect),
    _key(
        "policy_report",
        "policy_report",
        PolicyReport.from_dict,
        when=_present("policy_report"),
        write=lambda r: r.policy_report.to_dict(),
    ),
    _key(
        "profile_timings",
        "profile_timings",
        _read_timings,
        when=_present("profile_timings"),
        write=_timings,
    ),
    _key("preflight_cache", "preflight_cache", when=_present("preflight_cache")),
    _key("topic_shift", "topic_shift", when=_nonzero("topic_shift_checked")),
    _key(
        "topic_shift_reason",
        "topic_shift_reason",
        when=_both(_nonzero("topic_shift_checked"), _present("topic_shift_reason")),
    ),
)

_FRAGMENTS = ("fit", "window", "cache", "store", "agent", "turn", "label")

#: The keys of the seed's ``PreFlightContextFirewall.run`` stats, in their order.
FIREWALL_STATS = (
    "segments_offered",
    "segments_kept",
    "tokens_trimmed",
    "tokens_budget",
    "token_count",
    "budget_exceeded",
)


def render_metadata(report: Any) -> dict[str, Any]:
    """A :class:`~membrane.report.CompileReport`'s ``metadata`` dict, keys in their order."""
    return _render(_KEYS, report)


def render_cache(cache: CacheReport) -> dict[str, Any]:
    """The caching keys alone, as they stand in ``metadata``."""
    return _render(_CACHE_TABLE, cache)


def read_metadata(md: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The report's own fields, and each fragment's fields, from the keys ``md`` has."""
    values = _parse(_KEYS, md)
    # Without a scale the budget is counted as given.
    values.setdefault("tokens_budget_counted", values.get("tokens_budget", 0))
    parts = {name: values.pop(name) for name in _FRAGMENTS if name in values}
    return values, parts


def _render(table: tuple[_Key, ...], report: Any) -> dict[str, Any]:
    return {key.name: key.write(report) for key in table if key.when(report)}


def _parse(table: tuple[_Key, ...], md: Mapping[str, Any]) -> dict[str, Any]:
    """``{field or fragment: value or {field: value}}`` for the keys ``md`` has."""
    values: dict[str, Any] = {}
    for key in table:
        if key.read is None or key.name not in md:
            continue
        for path, value in key.read(md[key.name]).items():
            head, _, rest = path.partition(".")
            if rest:
                values.setdefault(head, {})[rest] = value
            elif head not in values:
                values[head] = value
    if "topic_shift" in md:
        values["topic_shift_checked"] = True
    return values
