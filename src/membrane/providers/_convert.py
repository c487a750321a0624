"""A provider-neutral reading of compiled messages, shared by the request builders.

The messages themselves are read by :func:`membrane.messages.normalize_messages` (typed
parts, tool pairing checked); this module adds what only requests need: the cache
breakpoints of a compile result, string content split where a cached prefix ends, where the
cache markers go, and turns merged for APIs that want user and assistant to alternate.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from membrane.capabilities import get_cache_pricing, get_token_scale, provider_model_id
from membrane.errors import InvalidInputError
from membrane.messages import NormalMessage, Part, Text, normalize_messages
from membrane.report import ResultView

__all__ = [
    "Breakpoint",
    "CompiledPrompt",
    "Location",
    "Message",
    "cache_anchors",
    "choose_anchors",
    "label_speakers",
    "parse_data_url",
    "read_breakpoints",
    "read_messages",
    "read_with_cuts",
    "render_turns",
    "request_model",
    "require_end_placement",
    "strip_cache_control",
]


class CompiledPrompt(Protocol):
    """What the request builders need from a compile result (``CompileResult`` has both)."""

    @property
    def messages(self) -> Sequence[Mapping[str, Any]]: ...

    @property
    def metadata(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Message:
    """A normalised message whose string content may be split where cached prefixes end."""

    role: Literal["system", "user", "assistant"]
    parts: tuple[Part, ...]
    index: int  # position in the compiled message list
    # chars offset of a cut inside the string content -> index of the part ending there
    cuts: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Breakpoint:
    message_index: int
    tokens: int
    reason: str
    chars: int | None = None


def require_end_placement(result: CompiledPrompt, builder: str) -> None:
    placement = ResultView.of(result).placement
    if placement != "end":
        raise InvalidInputError(
            f"{builder} needs a result compiled with memory_placement='end' (the default); "
            f"this one has memory_placement={placement!r}, which leaves no conversation turns "
            "to send",
            field="memory_placement",
        )


def request_model(
    result: CompiledPrompt, model: str | None, provider: str, key: str = "model"
) -> dict[str, Any]:
    """``{key: model}`` for a request: the caller's ``model``, else the one API name the map
    gives the result's ``model_id`` for ``provider``, else nothing (the caller adds it)."""
    if model is None:
        model_id = ResultView.of(result).model_id
        model = provider_model_id(model_id, provider) if isinstance(model_id, str) else None
        return {} if model is None else {key: model}
    if not isinstance(model, str) or not model.strip():
        raise InvalidInputError(f"{key} must be the provider's model name", field=key)
    return {key: model}


def strip_cache_control(block: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of a caller's block without its own cache marker (Membrane places them)."""
    return {k: copy.deepcopy(v) for k, v in block.items() if k != "cache_control"}


def parse_data_url(url: str, where: str) -> tuple[str, str]:
    """Media type and base64 payload of a ``data:`` URL."""
    head, sep, payload = url.partition(",")
    if not sep or not head.startswith("data:") or not head.endswith(";base64"):
        raise InvalidInputError(
            f"{where}: image data URLs must look like 'data:image/png;base64,<data>'",
            field=where,
        )
    return head[len("data:") : -len(";base64")], payload


def read_breakpoints(result: CompiledPrompt, n_messages: int) -> list[Breakpoint]:
    """The ``cache_breakpoints`` of a compile result, checked."""
    raw = ResultView.of(result).cache_breakpoints or []
    if not isinstance(raw, Sequence) or isinstance(raw, (str, bytes)):
        raise InvalidInputError(
            "metadata['cache_breakpoints'] must be a list of dicts", field="cache_breakpoints"
        )
    out = []
    for i, bp in enumerate(raw):
        where = f"metadata['cache_breakpoints'][{i}]"
        if not isinstance(bp, Mapping):
            raise InvalidInputError(f"{where} must be a dict", field=where)
        index, tokens, chars = bp.get("message_index"), bp.get("tokens"), bp.get("chars")
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n_messages:
            raise InvalidInputError(
                f"{where}['message_index'] must be an index into messages (0..{n_messages - 1})",
                field=where,
            )
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
            raise InvalidInputError(f"{where}['tokens'] must be an integer >= 0", field=where)
        if chars is not None and (
            not isinstance(chars, int) or isinstance(chars, bool) or chars < 0
        ):
            raise InvalidInputError(f"{where}['chars'] must be an integer >= 0", field=where)
        out.append(Breakpoint(index, tokens, str(bp.get("reason", "")), chars))
    return out


def choose_anchors(
    breakpoints: Sequence[Breakpoint],
    messages: Sequence[Message],
    *,
    token_scale: float,
    min_tokens: int,
    limit: int,
) -> list[tuple[int, int]]:
    """Where cache markers go: ``(message_index, part_index)`` of each marked prefix's last part.

    A breakpoint qualifies when its prefix, in provider tokens, reaches ``min_tokens``.
    """
    by_index = {m.index: m for m in messages}
    anchors: list[tuple[int, tuple[int, int]]] = []
    for bp in sorted(breakpoints, key=lambda b: (b.tokens, b.message_index)):
        if bp.tokens * token_scale < min_tokens:
            continue
        msg = by_index.get(bp.message_index)
        if msg is None:
            continue
        if bp.chars is None:
            part = len(msg.parts) - 1
        elif bp.chars in msg.cuts:
            part = msg.cuts[bp.chars]
        else:
            continue  # the cut could not be honoured (content is not a string)
        anchors.append((bp.tokens, (msg.index, part)))
    seen: set[tuple[int, int]] = set()
    unique = []
    for _, anchor in anchors:
        if anchor not in seen:
            seen.add(anchor)
            unique.append(anchor)
    # Providers cap the number of markers (Anthropic and Bedrock allow 4). When more qualify,
    # keep the longest prefixes: a hit on a longer prefix saves more, and on a miss the
    # provider still finds the shorter cached prefixes behind the last marker on its own.
    return unique[-limit:] if limit > 0 else []


def _cut_string(
    text: str, cut_points: Sequence[int], where: str
) -> tuple[list[Text], dict[int, int]]:
    if not text:
        return [], {}
    pieces: list[Text] = []
    cuts: dict[int, int] = {}
    start = 0
    for c in sorted(set(cut_points)):
        if c > len(text):
            raise InvalidInputError(
                f"{where}: a cache breakpoint cuts at char {c}, past the end of the message "
                f"({len(text)} chars)",
                field="cache_breakpoints",
            )
        if c == 0:
            continue
        if c > start:
            pieces.append(Text(text[start:c]))
            start = c
        cuts[c] = len(pieces) - 1
    if start < len(text):
        pieces.append(Text(text[start:]))
    return pieces, cuts


def _with_cuts(msg: NormalMessage, points: Sequence[int]) -> Message:
    """The message with its string content split at ``points`` (other content as it is)."""
    if msg.string_content is None:
        return Message(msg.role, msg.parts, msg.index)
    texts, cuts = _cut_string(msg.string_content, points, f"messages[{msg.index}]")
    rest = msg.parts[1:] if msg.string_content else msg.parts
    return Message(msg.role, (*texts, *rest), msg.index, cuts)


def read_messages(
    messages: Sequence[Mapping[str, Any]],
    cut_points: Mapping[int, Sequence[int]] | None = None,
    *,
    responses_items: bool = False,
) -> list[Message]:
    """Compiled messages as neutral parts (see ``normalize_messages``), string content cut.

    ``cut_points`` maps a message index to character offsets at which its string content is
    split into separate text parts (where a cached prefix ends inside the message).
    Raises :class:`ToolPairingError` when the tool pairing rules are broken.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidInputError("result.messages must be a list of message dicts")
    points = cut_points or {}
    normal = normalize_messages(messages, responses_items=responses_items)
    return [_with_cuts(m, points.get(m.index, ())) for m in normal]


def read_with_cuts(
    result: CompiledPrompt, *, labels: bool = True, responses_items: bool = False
) -> tuple[list[Breakpoint], list[Message]]:
    """The result's cache breakpoints, and its messages cut where a breakpoint ends inside one.

    Speakers are labelled (see :func:`label_speakers`) unless ``labels`` is False;
    ``responses_items`` is :func:`membrane.messages.normalize_messages`'.
    """
    breakpoints = read_breakpoints(result, len(result.messages))
    cuts: dict[int, list[int]] = {}
    for bp in breakpoints:
        if bp.chars is not None:
            cuts.setdefault(bp.message_index, []).append(bp.chars)
    messages = read_messages(result.messages, cuts, responses_items=responses_items)
    return breakpoints, label_speakers(messages, result.messages) if labels else messages


def _speaker(raw: Mapping[str, Any], index: int) -> str | None:
    """The ``name`` of a system, user or assistant message (a tool message's is its function)."""
    name = raw.get("name")
    if name is None or raw.get("role") == "tool":
        return None
    if not isinstance(name, str) or not name.strip():
        where = f"messages[{index}].name"
        raise InvalidInputError(f"{where} must be a non-empty string", field=where)
    return name.strip()


def label_speakers(messages: Sequence[Message], raw: Sequence[Mapping[str, Any]]) -> list[Message]:
    """Messages whose ``name`` becomes a ``"<name>: "`` label at the start of their text.

    Anthropic, Gemini, Bedrock Converse and the Responses API have no per-message speaker
    field, and consecutive messages of one role merge into one turn there, so the label is
    what tells two named speakers apart. It goes in front of the message's first text part
    (or as a text part of its own before the first part when there is no text); cache cuts
    keep their parts, and the label is the same every turn, so cached prefixes stay stable.
    """
    out = []
    for msg in messages:
        name = _speaker(raw[msg.index], msg.index)
        if name is None:
            out.append(msg)
            continue
        label = f"{name}: "
        parts = list(msg.parts)
        first = next((i for i, p in enumerate(parts) if isinstance(p, Text)), None)
        cuts = dict(msg.cuts)
        if first is None:
            parts.insert(0, Text(label))
            cuts = {c: p + 1 for c, p in cuts.items()}
        else:
            old = parts[first]
            assert isinstance(old, Text)
            raw_block = None if old.raw is None else {**old.raw, "text": label + old.text}
            parts[first] = Text(label + old.text, raw_block)
        out.append(Message(msg.role, tuple(parts), msg.index, cuts))
    return out


def cache_anchors(
    breakpoints: Sequence[Breakpoint],
    messages: Sequence[Message],
    result: CompiledPrompt,
    model_id: object,
    limit: int,
) -> list[tuple[int, int]]:
    """:func:`choose_anchors` for ``model_id``'s minimum; none for a model without caching.

    The token scale is the result's own ``token_scale`` when it holds a usable one.
    """
    pricing = get_cache_pricing(model_id) if isinstance(model_id, str) else None
    if pricing is None:
        return []
    scale = ResultView.of(result).token_scale
    if not isinstance(scale, (int, float)) or isinstance(scale, bool) or scale <= 0:
        scale = get_token_scale(str(model_id))
    return choose_anchors(
        breakpoints, messages, token_scale=float(scale), min_tokens=pricing.min_tokens, limit=limit
    )


Location = tuple[str, int, int]
"""Where a rendered block landed: ("system", 0, block) or ("messages", turn, block)."""


def render_turns(
    messages: Sequence[Message],
    *,
    provider: str,
    system_block: Callable[[Text, str], dict[str, Any]],
    block: Callable[[Part, str], dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[tuple[int, int], Location | None]]:
    """System blocks, alternating turns, and where each (message, part) ended up.

    For APIs that take the system text apart and want user and assistant turns to alternate
    (Anthropic, Bedrock Converse, Gemini): consecutive messages of one role merge into one
    turn, so a tool result and the user text after it become one user turn.
    ``ends[(message, -1)]`` is the location of a message's last block, for cache markers.
    """
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    ends: dict[tuple[int, int], Location | None] = {}
    last: Location | None = None
    for msg in messages:
        where = f"messages[{msg.index}]"
        if msg.role == "system":
            if out:
                raise InvalidInputError(
                    f"{where} is a system message after the conversation started; {provider} "
                    "takes system text only before the first turn (put it in core_content)",
                    field=where,
                )
            for p, part in enumerate(msg.parts):
                if not isinstance(part, Text):
                    raise InvalidInputError(
                        f"{where}: {provider} system prompts hold text only", field=where
                    )
                system.append(system_block(part, where))
                last = ("system", 0, len(system) - 1)
                ends[(msg.index, p)] = last
            ends[(msg.index, -1)] = last
            continue
        for p, part in enumerate(msg.parts):
            rendered = block(part, where)
            if not out or out[-1]["role"] != msg.role:
                out.append({"role": msg.role, "content": []})
            out[-1]["content"].append(rendered)
            last = ("messages", len(out) - 1, len(out[-1]["content"]) - 1)
            ends[(msg.index, p)] = last
        ends[(msg.index, -1)] = last
    return system, out, ends
