"""The offline encodings shipped inside the package.

tiktoken normally downloads its BPE files on first use; that fails on machines without internet,
so Membrane ships gzipped copies and checks each against the hash tiktoken itself pins.
"""

from __future__ import annotations

import binascii
import hashlib
import threading
import zlib
from typing import TYPE_CHECKING

from membrane import packaged as resources
from membrane.errors import TokenizerDataError

if TYPE_CHECKING:
    import tiktoken

_ENDOFTEXT = "<|endoftext|>"
_FIM_PREFIX = "<|fim_prefix|>"
_FIM_MIDDLE = "<|fim_middle|>"
_FIM_SUFFIX = "<|fim_suffix|>"
_ENDOFPROMPT = "<|endofprompt|>"

# sha256 of the uncompressed .tiktoken files, as pinned in tiktoken_ext/openai_public.py.
_PINNED_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}

_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

_SPECIAL_TOKENS = {
    "cl100k_base": {
        _ENDOFTEXT: 100257,
        _FIM_PREFIX: 100258,
        _FIM_MIDDLE: 100259,
        _FIM_SUFFIX: 100260,
        _ENDOFPROMPT: 100276,
    },
    "o200k_base": {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
}
_PATTERNS = {"cl100k_base": _CL100K_PATTERN, "o200k_base": _O200K_PATTERN}

BUNDLED_ENCODINGS: tuple[str, ...] = tuple(sorted(_PINNED_SHA256))

_cache: dict[str, tiktoken.Encoding] = {}
_lock = threading.Lock()


def _read_ranks(name: str) -> dict[bytes, int]:
    resource = resources.files("membrane.tokenizers") / "data" / f"{name}.tiktoken.gz"
    try:
        # zlib reads the gzip format itself (wbits 16 + 15); the gzip module costs an import.
        raw = zlib.decompress(resource.read_bytes(), wbits=31)
    except (OSError, zlib.error) as exc:
        raise TokenizerDataError(
            f"cannot read the bundled {name} file ({exc}); reinstall membrane-aol", encoding=name
        ) from exc
    digest = hashlib.sha256(raw).hexdigest()
    if digest != _PINNED_SHA256[name]:
        raise TokenizerDataError(
            f"bundled {name} file has sha256 {digest}, expected {_PINNED_SHA256[name]}; "
            "the package is corrupted, reinstall membrane-aol",
            encoding=name,
        )
    # Each line is "<token in base64> <rank>", and the pinned files number their tokens 0, 1,
    # 2 ... in line order (tests/tokenizers/test_bundled.py checks it), so the rank column need
    # not be parsed. Decoded in bulk, without a Python call per line: a first compile pays this.
    tokens = raw.split()[0::2]
    return dict(zip(map(binascii.a2b_base64, tokens), range(len(tokens)), strict=True))


def load_encoding(name: str) -> tiktoken.Encoding:
    """Return the bundled encoding ``name``, building it on first use (thread-safe)."""
    if name not in _PINNED_SHA256:
        known = ", ".join(BUNDLED_ENCODINGS)
        raise ValueError(f"unknown encoding {name!r}; bundled encodings are: {known}")
    enc = _cache.get(name)
    if enc is not None:
        return enc
    with _lock:
        enc = _cache.get(name)
        if enc is None:
            import tiktoken

            enc = tiktoken.Encoding(
                name=name,
                pat_str=_PATTERNS[name],
                mergeable_ranks=_read_ranks(name),
                special_tokens=_SPECIAL_TOKENS[name],
            )
            _cache[name] = enc
    return enc
