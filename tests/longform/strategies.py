"""Hypothesis strategies for the differential tests against the published package.

They generate request values (see :mod:`tests.longform.oracle`): plain data, plus ``New``
(an instance built inside each server), ``Fn`` (a callable known by name) and ``Attr``.
Inputs lean on the edges where implementations drift: range boundaries of every script,
NaN and infinity, signed zeros, vectors one float32 ulp apart, ties, and wrong types.
"""

from __future__ import annotations

import base64
import math
import struct
from typing import Any

from hypothesis import strategies as st

from .oracle import Attr, Fn, New

# Code points just inside and just outside each range the published rules test.
_EDGE_POINTS = [
    0x40, 0x41, 0x5A, 0x5B, 0x60, 0x61, 0x7A, 0x7B, 0xBF, 0xC0, 0xD7, 0xF7, 0xFF, 0x100,
    0x3FF, 0x400, 0x4FF, 0x500, 0x58F, 0x590, 0x5FF, 0x600, 0x6FF, 0x700, 0x8FF, 0x900,
    0x97F, 0x980, 0xDFF, 0xE00, 0xE7F, 0xE80, 0x10FF, 0x1100, 0x11FF, 0x1200, 0x303F,
    0x3040, 0x309F, 0x30A0, 0x30FF, 0x3100, 0x3130, 0x31F0, 0x33FF, 0x3400, 0x4DBF, 0x4DC0,
    0x4DFF, 0x4E00, 0x9FFF, 0xA000, 0xABFF, 0xAC00, 0xD7A3, 0xD7A4, 0xD7AF, 0xD7B0, 0xF8FF,
    0xF900, 0xFAFF, 0xFB00, 0xFF66, 0xFF9F, 0x20000, 0x1F600,
]  # fmt: skip

script_char = st.one_of(
    st.sampled_from([chr(c) for c in _EDGE_POINTS]),
    st.sampled_from(list("abcXYZéñ 你好世界日本語한국어ไทยРусскийعربيעבריתहिन्दी,.!?\n\t ")),
    st.characters(codec="utf-8"),
)

text = st.one_of(
    st.text(script_char, max_size=40),
    st.lists(
        st.sampled_from(
            [
                "The lighthouse keeper",
                "灯塔看守人",
                "灯台守",
                "등대지기",
                "ผู้ดูแลประภาคาร",
                "Смотритель маяка",
                "حارس المنارة",
                "שומר המגדלור",
                "प्रकाशस्तंभ",
                "  ",
                "Mara",
                "你",
            ]
        ),
        max_size=6,
    ).map(" ".join),
)

# Text, plus the odd value of another type that a caller might pass.
loose_text = st.one_of(text, text, text, st.none(), st.just(""), st.integers(-3, 3))

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
any_float = st.floats(width=64)
small_int = st.integers(-20, 1_200)

chapter = st.integers(-5, 200)


def components(dim: int) -> st.SearchStrategy[list[float]]:
    return st.lists(
        st.one_of(
            st.floats(-10.0, 10.0, allow_subnormal=True),
            st.integers(-5, 5).map(float),
            st.sampled_from([0.0, -0.0, 1e-300, 1e300]),
        ),
        min_size=dim,
        max_size=dim,
    )


vector_input = st.one_of(
    st.integers(0, 12).flatmap(components),
    st.lists(st.one_of(any_float, st.integers(-(10**6), 10**6)), max_size=12),
    st.lists(st.floats(width=32), max_size=12),
)


def _f32_bytes(value: float) -> bytes:
    try:
        return struct.pack("<f", value)
    except OverflowError:
        # Out of float32 range: store the infinity of the same sign, as a float32 cast would.
        return struct.pack("<f", float("inf") if value > 0 else float("-inf"))


def wire(values: list[float]) -> str:
    """Little-endian float32 bytes of ``values``, base64: a stored row as any writer makes it."""
    return base64.b64encode(b"".join(_f32_bytes(v) for v in values)).decode("ascii")


def _ulp_step(value: float, steps: int) -> float:
    """``value`` moved ``steps`` float32 ulps (bit-pattern steps of the float32)."""
    bits = struct.unpack("<i", struct.pack("<f", value))[0]
    moved = bits + steps if bits >= 0 else bits - steps
    return float(struct.unpack("<f", struct.pack("<i", moved))[0])


@st.composite
def near_duplicate_rows(draw: st.DrawFn, dim: int) -> list[list[float]]:
    """A base vector and copies of it moved by a few float32 ulps in one component each."""
    magnitude = st.floats(0.001, 10.0)
    base = draw(
        st.lists(
            st.tuples(magnitude, st.booleans()).map(lambda p: -p[0] if p[1] else p[0]),
            min_size=dim,
            max_size=dim,
        )
    )
    norm = sum(x * x for x in base) ** 0.5
    unit = [float(struct.unpack("<f", struct.pack("<f", x / norm))[0]) for x in base]
    rows = [unit]
    for _ in range(draw(st.integers(1, 5))):
        copy = list(unit)
        index = draw(st.integers(0, dim - 1))
        if copy[index] != 0.0:
            copy[index] = _ulp_step(copy[index], draw(st.sampled_from([-2, -1, 1, 2])))
        rows.append(copy)
    return rows


def _normalised(values: list[float]) -> list[float]:
    norm = math.sqrt(math.fsum(x * x for x in values))
    return [x / norm for x in values] if norm and math.isfinite(norm) else values


@st.composite
def stored_rows(draw: st.DrawFn, dim: int) -> list[Any]:
    """``[id, stored value]`` rows: encodings of the query's dimension (normalised as the wire
    format asks, or raw as a writer that skips it stores them), near-duplicates, other
    dimensions, damaged base64, NaN and infinite components."""
    rows: list[Any] = []
    kinds = st.sampled_from(
        ["vector", "vector", "raw", "dupes", "other-dim", "garbage", "nonfinite", "empty"]
    )
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(kinds)
        if kind == "vector":
            rows.append(wire(_normalised(draw(components(dim).filter(lambda v: any(v))))))
        elif kind == "raw":
            rows.append(wire(draw(components(dim).filter(lambda v: any(v)))))
        elif kind == "dupes":
            rows.extend(wire(v) for v in draw(near_duplicate_rows(dim)))
        elif kind == "other-dim":
            rows.append(wire(draw(components(draw(st.integers(1, 6))))))
        elif kind == "garbage":
            rows.append(draw(st.sampled_from(["!!!!", "abc", "AAAA", "AAAAAA==", "%%", "QQ=="])))
        elif kind == "nonfinite":
            values = draw(components(dim))
            values[draw(st.integers(0, dim - 1))] = draw(
                st.sampled_from([float("nan"), float("inf"), float("-inf")])
            )
            rows.append(wire(values))
        else:
            rows.append(draw(st.sampled_from(["", None])))
    return [[f"r{i}", value] for i, value in enumerate(rows)]


@st.composite
def search_cases(draw: st.DrawFn) -> tuple[list[Any], dict[str, Any]]:
    dim = draw(st.integers(1, 6))
    rows = draw(stored_rows(dim))
    query: Any = draw(st.one_of(components(dim), components(dim), st.just([])))
    if rows and draw(st.booleans()):
        # Query one of the stored vectors itself: exact ties and 1-ulp neighbours.
        stored = draw(st.sampled_from(rows))[1]
        if isinstance(stored, str):
            try:
                raw = base64.b64decode(stored, validate=True)
            except ValueError:
                raw = b""
            if raw and len(raw) % 4 == 0 and len(raw) // 4 == dim:
                query = list(struct.unpack(f"<{dim}f", raw))
    options: dict[str, Any] = {}
    if draw(st.booleans()):
        options["k"] = draw(st.one_of(st.integers(-2, 10), st.none()))
    if draw(st.booleans()):
        options["min_score"] = draw(st.one_of(st.floats(-1.5, 1.5), st.sampled_from([0.0, -1.0])))
    if draw(st.booleans()):
        options["relative_floor"] = draw(st.one_of(st.floats(-0.5, 1.5), st.just(1.0)))
    return [query, rows, Fn("item1")], options


def thread_items() -> st.SearchStrategy[list[New]]:
    field_text = st.one_of(
        st.none(),
        st.sampled_from(["", "  ", "The map is found", " Who sent the letter? ", "x"]),
        st.text(max_size=8),
    )
    action = st.one_of(
        st.none(),
        st.sampled_from(["open", "progress", "resolve", " RESOLVE ", "Progress", "advance", ""]),
    )
    ref = st.one_of(
        st.none(),
        st.sampled_from(["T1", "t2", " T3 ", "T0", "T10", "[T1]", "1", "T-1", "T٣", "", "t02"]),
        st.integers(0, 4).map(lambda n: f"T{n}"),
    )
    deadline = st.one_of(
        st.none(),
        st.integers(-3, 60),
        st.sampled_from(["12", "0", "ch. 9", "nan", "1e1", " 30 ", "ending"]),
        st.floats(-5, 80),
    )
    item = st.builds(
        lambda a, r, s, t, d, n: New(
            "RawThreadItem",
            kwargs={
                "action": a,
                "ref": r,
                "summary": s,
                "thread_type": t,
                "deadline_chapter": d,
                "resolution_note": n,
            },
        ),
        action,
        ref,
        field_text,
        st.one_of(st.none(), st.sampled_from(["mystery", "promise"])),
        deadline,
        st.one_of(st.none(), field_text),
    )
    return st.lists(item, max_size=14)


known_threads = st.lists(
    st.builds(
        lambda i, s: New("KnownThread", (f"k{i}", s)),
        st.integers(0, 99),
        st.sampled_from(["open", "progressing", "resolved"]),
    ),
    max_size=5,
)

owed_threads = st.lists(
    st.builds(
        lambda s, o, d, late: New("OwedThread", (s, o, d, late)),
        st.sampled_from(["letter", "chest", "brother", "map"]),
        st.integers(0, 50),
        st.integers(0, 60),
        st.integers(-3, 12),
    ),
    max_size=6,
)

urgency_item = st.builds(
    lambda d, a, o: New("ThreadUrgency", (d, a, o)),
    st.integers(-3, 60),
    st.integers(0, 60),
    st.integers(0, 60),
)

script_pattern = st.sampled_from(
    ["HANGUL", "KANA", "HAN", "CYRILLIC", "ARABIC", "DEVANAGARI", "THAI", "HEBREW", "LATIN"]
).map(lambda name: Attr("language", name))
