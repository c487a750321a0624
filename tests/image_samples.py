"""Image files of a given size, built byte by byte (headers and a little body), as data URLs."""

from __future__ import annotations

import base64
import struct
import zlib


def png(width: int, height: int, body: bytes = b"") -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    return (
        b"\x89PNG\r\n\x1a\n"
        + struct.pack(">I", 13)
        + chunk
        + struct.pack(">I", zlib.crc32(chunk))
        + body
    )


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00;"


def webp_vp8x(width: int, height: int) -> bytes:
    payload = b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little")
    payload += (height - 1).to_bytes(3, "little")
    return (
        b"RIFF"
        + struct.pack("<I", 4 + 8 + len(payload))
        + b"WEBPVP8X"
        + struct.pack("<I", len(payload))
        + payload
    )


def webp_lossless(width: int, height: int) -> bytes:
    bits = (width - 1) | ((height - 1) << 14)
    payload = b"\x2f" + bits.to_bytes(4, "little")
    return (
        b"RIFF"
        + struct.pack("<I", 4 + 8 + len(payload))
        + b"WEBPVP8L"
        + struct.pack("<I", len(payload))
        + payload
    )


def webp_lossy(width: int, height: int) -> bytes:
    payload = b"\x00\x00\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height)
    return (
        b"RIFF"
        + struct.pack("<I", 4 + 8 + len(payload))
        + b"WEBPVP8 "
        + struct.pack("<I", len(payload))
        + payload
    )


def jpeg(width: int, height: int, exif_bytes: int = 0) -> bytes:
    out = b"\xff\xd8"
    if exif_bytes:
        # APP1 segments of at most 65,533 bytes each, before the frame header.
        left = exif_bytes
        while left:
            size = min(left, 65_533)
            out += b"\xff\xe1" + struct.pack(">H", size + 2) + b"E" * size
            left -= size
    out += b"\xff\xdb" + struct.pack(">H", 67) + b"\x00" * 65  # a quantisation table
    out += b"\xff\xc2" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return out + b"\xff\xd9"


def data_url(image: bytes, media_type: str = "image/png") -> str:
    return f"data:{media_type};base64,{base64.b64encode(image).decode('ascii')}"
