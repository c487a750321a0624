"""Checks of the compiler's and the compile's arguments: a clear, typed error per field."""

from __future__ import annotations

import functools
import operator
import sys
from collections.abc import Mapping, Sequence

from membrane.errors import InvalidInputError
from membrane.messages import check_text

__all__ = [
    "check_compressor",
    "check_extras",
    "check_fraction",
    "check_message_counts",
    "check_non_negative_int",
    "check_placement",
    "check_positive_int",
    "check_scale",
    "check_turn_texts",
]


def check_compressor(compressor: object) -> None:
    if compressor is not None and not callable(compressor):
        raise TypeError("compress_sync must be a function (raw_middle, target_tokens, question)")


def check_turn_texts(
    user_message: object,
    agent_persona_prompt: object,
    last_assistant_turn: object,
    dynamic_directives: object,
    conversation_id: object,
) -> None:
    """The compile's text arguments are strings (or None where optional) UTF-8 can encode."""
    check_text(user_message, "user_message")
    check_text(agent_persona_prompt, "agent_persona_prompt", optional=True)
    check_text(last_assistant_turn, "last_assistant_turn", optional=True)
    check_text(conversation_id, "conversation_id", optional=True)
    if dynamic_directives is None or isinstance(dynamic_directives, str):
        check_text(dynamic_directives, "dynamic_directives", optional=True)
    elif isinstance(dynamic_directives, Sequence) and not isinstance(dynamic_directives, bytes):
        for i, directive in enumerate(dynamic_directives):
            check_text(directive, f"dynamic_directives[{i}]", optional=True)
    else:
        raise InvalidInputError(
            "dynamic_directives must be a string, a list of strings or None, got "
            f"{type(dynamic_directives).__name__}",
            field="dynamic_directives",
        )


def check_positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidInputError(f"{name} must be a positive integer, got {value!r}", field=name)


def check_non_negative_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{name} must be a non-negative integer, got {value!r}", field=name)


def check_placement(placement: object) -> None:
    if placement not in ("end", "system"):
        raise InvalidInputError(
            f"memory_placement must be 'end' or 'system', got {placement!r}",
            field="memory_placement",
        )


def check_fraction(name: str, value: object, *, allow_zero: bool) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok:
        v = float(value)  # type: ignore[arg-type]
        ok = (v >= 0.0 if allow_zero else v > 0.0) and v <= 1.0
    if not ok:
        low = "0" if allow_zero else "above 0"
        raise InvalidInputError(
            f"{name} must be a number from {low} to 1, got {value!r}", field=name
        )


def check_scale(value: object) -> None:
    if value is None:
        return
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    # An int too large for a float (10**400) is as unusable as an infinite scale; Python
    # compares ints and floats exactly, so the bound needs no conversion.
    if not ok or not (0 < value <= sys.float_info.max):  # type: ignore[operator]
        shown = f"an int of {value.bit_length()} bits" if isinstance(value, int) else repr(value)
        raise InvalidInputError(
            f"token_scale must be a positive finite number or None, got {shown}",
            field="token_scale",
        )


def check_message_counts(counts: object, messages: int) -> list[int | None] | None:
    """The caller's ``message_token_counts``, checked: one int >= 0 or None per message.

    A count is the caller's assertion of how many tokens this compiler's counter (before the
    token scale, without the per-message overhead or images) gives the message's text; it is
    used as given, in place of counting, when the compiler first reads the message. Budget
    guarantees hold for the counts Membrane makes; a wrong supplied count moves the cut and
    the total by what it is wrong by. ``metadata["message_counts_supplied"]`` says how many
    messages had one.
    """
    if counts is None:
        return None
    field_name = "message_token_counts"
    if isinstance(counts, (str, bytes, Mapping)) or not isinstance(counts, Sequence):
        raise InvalidInputError(
            f"{field_name} must be a list with one int (or None) per conversation message, "
            f"got {type(counts).__name__}",
            field=field_name,
        )
    if len(counts) != messages:
        raise InvalidInputError(
            f"{field_name} has {len(counts)} entries for {messages} conversation_messages; give "
            "one per message, None where Membrane should count",
            field=field_name,
        )
    given = list(counts)
    # Checked at C speed; a Python loop runs only to name the bad entry.
    present = list(filter(functools.partial(operator.is_not, None), given))
    if set(map(type, present)) <= {int} and min(present, default=0) >= 0:
        return given
    i, n = next(
        (i, n) for i, n in enumerate(given) if n is not None and (type(n) is not int or n < 0)
    )
    raise InvalidInputError(
        f"{field_name}[{i}] must be an int >= 0 (the message's token count) or None, got {n!r}",
        field=f"{field_name}[{i}]",
    )


def check_extras(extras: Sequence[tuple[str, int]] | None) -> list[tuple[str, int]]:
    if extras is None:
        return []
    if isinstance(extras, (str, bytes)) or not isinstance(extras, Sequence):
        raise InvalidInputError(
            "middle_extras must be a list of (text, tier) tuples", field="middle_extras"
        )
    out = []
    for i, item in enumerate(extras):
        if (
            not isinstance(item, tuple)
            or len(item) != 2
            or not isinstance(item[0], str)
            or isinstance(item[1], bool)
            or item[1] not in (1, 2, 3)
        ):
            raise InvalidInputError(
                f"middle_extras[{i}] must be a (text, tier) tuple with tier 1, 2 or 3",
                field=f"middle_extras[{i}]",
            )
        check_text(item[0], f"middle_extras[{i}]")
        out.append((item[0], int(item[1])))
    return out
