"""What an image in a message costs, by each provider's documented formula.

The size is read from the image's own header inside a ``data:`` URL (PNG ``IHDR``, GIF logical
screen, WebP ``VP8``/``VP8L``/``VP8X``, JPEG ``SOFn``), decoding only as much base64 as the
header needs. A remote URL carries no bytes: its size is the caller's (``image_sizes``) or,
unknown, the provider's largest per-image cost, and the image is reported as unsized.

The formulas, as the providers document them (pages read on 2026-12-01 through the search
tool's stored copies; the pages carry no revision date, so re-check them when a provider ships
a new vision model):

- OpenAI, https://platform.openai.com/docs/guides/images-vision#calculating-costs (GPT-4o
  family): ``detail: "low"`` costs 85 tokens. Otherwise the image is fitted inside 2048 x 2048,
  then scaled so its short side is 768 (only ever down: small images are not enlarged), and
  costs 85 + 170 per 512-pixel tile. ``"auto"`` and a missing detail are counted as high, the
  larger of the two. Newer OpenAI models bill by 32-pixel patches with per-model multipliers;
  ``observe()`` calibration absorbs that difference.
- Anthropic, https://platform.claude.com/docs/en/build-with-claude/vision: about
  ``width * height / 750`` tokens, after an image whose long edge exceeds 1568 pixels or that
  would cost more than about 1,600 tokens is scaled down, aspect kept. (Models from Opus 4.7
  accept a 2576-pixel long edge; they are counted with the 1568 limit here.)
- Google, https://ai.google.dev/gemini-api/docs/media-resolution (Gemini 3): an image costs its
  media resolution's budget, 1,120 tokens at the default (high) resolution. Older Gemini
  models, https://ai.google.dev/gemini-api/docs/tokens: 258 tokens when both sides are at most
  384 pixels, else 258 per 768 x 768 tile.

An unknown provider is charged the largest of the three.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_IMAGE_SIDE", "ImageCost", "ImageTally", "image_size", "image_tokens"]

Size = tuple[int, int]

#: The largest width or height an image may declare: what a PNG header can hold (2**31 - 1).
MAX_IMAGE_SIDE = 2**31 - 1

_OPENAI_BASE, _OPENAI_TILE, _OPENAI_LOW = 85, 170, 85
_CLAUDE_LONG_EDGE, _CLAUDE_MAX_TOKENS, _CLAUDE_PIXELS_PER_TOKEN = 1568, 1600, 750
_GEMINI3_DEFAULT = 1120
_GEMINI_SMALL, _GEMINI_TILE, _GEMINI_TILE_TOKENS = 384, 768, 258
# Sizes that reach each provider's largest per-image cost (a wide 2048 x 768 for OpenAI's
# tiles, the resize limit for Anthropic); an unsized image is charged the most of these.
_PROBE_SIZES: tuple[Size, ...] = ((2048, 768), (768, 2048), (1568, 1568), (1536, 1536))
# Base64 characters decoded per attempt while looking for a header (multiples of 4).
_HEAD_STEPS = (1024, 16_384, 262_144)


def _openai(size: Size, detail: str | None) -> int:
    if detail == "low":
        return _OPENAI_LOW
    fit = min(1.0, 2048 / max(size))
    w, h = size[0] * fit, size[1] * fit
    short = min(w, h)
    if short > 768:
        w, h = w * 768 / short, h * 768 / short
    # A side scaled below one pixel is still a pixel wide: 8192 x 3 fits as 2048 x 1 (four
    # tiles), not 2048 x 0.
    tiles = math.ceil(max(int(w), 1) / 512) * math.ceil(max(int(h), 1) / 512)
    return _OPENAI_BASE + _OPENAI_TILE * tiles


def _anthropic(size: Size) -> int:
    w, h = float(size[0]), float(size[1])
    if max(w, h) > _CLAUDE_LONG_EDGE:
        ratio = _CLAUDE_LONG_EDGE / max(w, h)
        w, h = w * ratio, h * ratio
    if w * h / _CLAUDE_PIXELS_PER_TOKEN > _CLAUDE_MAX_TOKENS:
        ratio = math.sqrt(_CLAUDE_MAX_TOKENS * _CLAUDE_PIXELS_PER_TOKEN / (w * h))
        w, h = w * ratio, h * ratio
    return max(math.ceil(int(w) * int(h) / _CLAUDE_PIXELS_PER_TOKEN), 1)


def _gemini(size: Size, model: str | None) -> int:
    if model is None or "gemini-3" in model.lower() or "gemini" not in model.lower():
        return _GEMINI3_DEFAULT
    w, h = size
    if w <= _GEMINI_SMALL and h <= _GEMINI_SMALL:
        return _GEMINI_TILE_TOKENS
    return math.ceil(w / _GEMINI_TILE) * math.ceil(h / _GEMINI_TILE) * _GEMINI_TILE_TOKENS


def image_tokens(
    size: Size, *, provider: str | None, detail: str | None = None, model: str | None = None
) -> int:
    """Tokens one image of ``size`` (width, height) costs at ``provider``.

    >>> image_tokens((1024, 1024), provider="openai")
    765
    >>> image_tokens((1000, 1000), provider="anthropic")
    1334
    """
    if provider == "openai":
        return _openai(size, detail)
    if provider == "anthropic":
        return _anthropic(size)
    if provider == "google":
        return _gemini(size, model)
    return max(_openai(size, detail), _anthropic(size), _gemini(size, model))


# ---------------------------------------------------------------------- reading sizes


def _png(head: bytes) -> Size | None:
    if head[:8] == b"\x89PNG\r\n\x1a\n" and len(head) >= 24 and head[12:16] == b"IHDR":
        w, h = struct.unpack(">II", head[16:24])
        return int(w), int(h)
    return None


def _gif(head: bytes) -> Size | None:
    if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        w, h = struct.unpack("<HH", head[6:10])
        return int(w), int(h)
    return None


def _webp(head: bytes) -> Size | None:
    if head[:4] != b"RIFF" or head[8:12] != b"WEBP" or len(head) < 25:
        return None
    chunk = head[12:16]
    if chunk == b"VP8X" and len(head) >= 30:
        w = int.from_bytes(head[24:27], "little") + 1
        h = int.from_bytes(head[27:30], "little") + 1
        return w, h
    if chunk == b"VP8L" and head[20] == 0x2F:
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 " and head[23:26] == b"\x9d\x01\x2a" and len(head) >= 30:
        w, h = struct.unpack("<HH", head[26:30])
        return int(w) & 0x3FFF, int(h) & 0x3FFF
    return None


# JPEG start-of-frame markers: C0-CF except DHT (C4), JPG (C8) and DAC (CC).
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg(head: bytes) -> Size | None:
    if head[:2] != b"\xff\xd8":
        return None
    i = 2
    while i + 9 <= len(head):
        if head[i] != 0xFF:
            return None
        marker = head[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in _SOF:
            h, w = struct.unpack(">HH", head[i + 5 : i + 9])
            return int(w), int(h)
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            i += 2
            continue
        (length,) = struct.unpack(">H", head[i + 2 : i + 4])
        i += 2 + length
    return None


def _size_of(head: bytes) -> Size | None:
    for read in (_png, _gif, _webp, _jpeg):
        size = read(head)
        if size is not None:
            return size if size[0] > 0 and size[1] > 0 else None
    return None


def image_size(data: str) -> Size | None:
    """(width, height) from base64 image data, or None when the header cannot be read.

    Only a prefix is decoded, longer on each attempt (a JPEG may carry a large EXIF block
    before its frame header); the whole image is decoded only as the last attempt.
    """
    for step in (*_HEAD_STEPS, len(data)):
        chunk = data[: step - step % 4] if step < len(data) else data
        try:
            head = base64.b64decode(chunk + "=" * (-len(chunk) % 4))
        except (binascii.Error, ValueError):
            return None
        size = _size_of(head)
        if size is not None or step >= len(data):
            return size
    return None


# ---------------------------------------------------------------------- messages


@dataclass(frozen=True, slots=True)
class ImageTally:
    """The images of some messages: their tokens and how many had no size to read."""

    tokens: int = 0
    images: int = 0
    unsized: int = 0

    def __add__(self, other: ImageTally) -> ImageTally:
        return ImageTally(
            self.tokens + other.tokens, self.images + other.images, self.unsized + other.unsized
        )


@dataclass(frozen=True)
class ImageCost:
    """How one compile prices images: the provider, the model, and the caller's known sizes."""

    provider: str | None
    model: str | None = None
    sizes: Mapping[str, Size] = field(default_factory=dict)

    def tally(self, message: Mapping[str, Any]) -> ImageTally:
        """The images of one message (tool results' images included)."""
        total = ImageTally()
        for url, data, detail in _images(message.get("content")):
            size = image_size(data) if data is not None else self.sizes.get(url)
            if size is None:
                tokens = max(self._tokens(s, detail) for s in _PROBE_SIZES)
                total += ImageTally(tokens, 1, 1)
            else:
                total += ImageTally(self._tokens(size, detail), 1, 0)
        return total

    def tokens(self, message: Mapping[str, Any]) -> int:
        return self.tally(message).tokens if isinstance(message.get("content"), list) else 0

    def _tokens(self, size: Size, detail: str | None) -> int:
        return image_tokens(size, provider=self.provider, detail=detail, model=self.model)


def _images(content: object) -> Iterator[tuple[str, str | None, str | None]]:
    """``(url, base64 data or None, detail)`` of each image part in ``content``."""
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "image_url":
            spec = block.get("image_url")
            url = spec.get("url") if isinstance(spec, Mapping) else spec
            detail = spec.get("detail") if isinstance(spec, Mapping) else None
            if isinstance(url, str):
                yield url, _data_of(url), detail if isinstance(detail, str) else None
        elif kind == "image":
            source = block.get("source")
            if isinstance(source, Mapping) and source.get("type") == "base64":
                yield "", str(source.get("data") or ""), None
            elif isinstance(source, Mapping):
                yield str(source.get("url") or ""), None, None
        elif kind == "tool_result":
            yield from _images(block.get("content"))


def _data_of(url: str) -> str | None:
    if not url.startswith("data:"):
        return None
    _, _, data = url.partition(",")
    return data
