"""SentencePiece and Hugging Face adapters, checked against tokenizers trained in the test."""

from __future__ import annotations

import itertools
import re
import string
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import membrane.tokenizers
from membrane.errors import InvalidInputError
from membrane.tokenizers import HuggingFaceAdapter, SentencePieceAdapter, TokenCounter, _external

_WORDS = [
    "the", "budget", "prompt", "cache", "memory", "token", "history", "model", "fast", "small",
    "compiler", "keeps", "drops", "counts", "every", "turn", "user", "asks", "about", "timezone",
]  # fmt: skip


def _corpus() -> list[str]:
    # Deterministic: every ordered pair and triple of a few words, so merges are learnt.
    lines = [" ".join(p) + "." for p in itertools.permutations(_WORDS[:10], 3)]
    lines += [" ".join(p) for p in itertools.permutations(_WORDS, 2)]
    return lines


sample_text = st.one_of(
    st.lists(st.sampled_from([*_WORDS, "unseen", "Zebra", "42", ",", "!", "<s>", "[CLS]"])).map(
        " ".join
    ),
    st.text(max_size=80),
)


@pytest.fixture(scope="session")
def spm_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import sentencepiece

    folder = tmp_path_factory.mktemp("spm")
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(_corpus()), encoding="utf-8")
    sentencepiece.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(folder / "tiny"),
        vocab_size=120,
        model_type="bpe",
        character_coverage=1.0,
        minloglevel=2,
    )
    return folder / "tiny.model"


@pytest.fixture(scope="session")
def bpe_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["[UNK]", "[CLS]", "[SEP]"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_corpus(), trainer)
    # A post-processor that wraps every sequence: the adapter must not count these two.
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))],
    )
    path = tmp_path_factory.mktemp("tiny-bpe") / "tokenizer.json"
    tok.save(str(path))
    return path


@pytest.fixture(scope="session")
def wordlevel_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(_corpus(), trainers.WordLevelTrainer(special_tokens=["[UNK]"]))
    path = tmp_path_factory.mktemp("words") / "words.json"
    tok.save(str(path))
    return path


# --- SentencePiece -------------------------------------------------------------------------


@given(text=sample_text)
def test_sentencepiece_counts_equal_its_own_encoding(spm_model: Path, text: str) -> None:
    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor(model_file=str(spm_model))
    adapter = SentencePieceAdapter(spm_model)
    assert adapter.count(text) == len(processor.encode(text))


def test_sentencepiece_values_and_name(spm_model: Path) -> None:
    import sentencepiece

    adapter = SentencePieceAdapter(spm_model)
    assert isinstance(adapter, TokenCounter)
    assert adapter.name == "sentencepiece:tiny"
    assert SentencePieceAdapter(str(spm_model), name="llama-ish").name == "llama-ish"
    assert adapter.count("") == 0
    processor = sentencepiece.SentencePieceProcessor(model_file=str(spm_model))
    text = "the compiler keeps every token"
    pieces = processor.encode(text, out_type=str)
    assert adapter.count(text) == len(pieces)
    assert "".join(pieces).replace("▁", " ").strip() == text
    # Frequent corpus words were merged, so the count is well under one per character.
    assert adapter.count(text) < len(text.replace(" ", "")) // 2


def test_sentencepiece_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="no file at") as missing:
        SentencePieceAdapter(tmp_path / "absent.model")
    assert missing.value.field == "model_file"
    junk = tmp_path / "junk.model"
    junk.write_bytes(b"definitely not a protobuf")
    with pytest.raises(InvalidInputError, match="not a readable SentencePiece model"):
        SentencePieceAdapter(junk)
    with pytest.raises(TypeError, match="must be a path"):
        SentencePieceAdapter(123)  # type: ignore[arg-type]


# --- Hugging Face tokenizers ---------------------------------------------------------------


@given(text=sample_text)
def test_tokenizer_json_counts_exclude_post_processor_tokens(bpe_json: Path, text: str) -> None:
    from tokenizers import Tokenizer

    raw = Tokenizer.from_file(str(bpe_json))
    expected = len(raw.encode(text, add_special_tokens=False).ids)
    assert HuggingFaceAdapter(bpe_json).count(text) == expected
    assert HuggingFaceAdapter(raw).count(text) == expected
    assert len(raw.encode(text).ids) == expected + 2  # [CLS] ... [SEP]


def _comparable(text: str) -> bool:
    # ASCII only, and without the separators \x1c-\x1f, which Python's \s counts as white space
    # and Rust's does not: the two regex engines disagree there, not the adapter.
    return text.isascii() and not any("\x1c" <= c <= "\x1f" for c in text)


@given(text=st.one_of(sample_text.filter(_comparable), st.text(string.printable, max_size=80)))
def test_word_level_count_is_the_number_of_words(wordlevel_json: Path, text: str) -> None:
    # Independent reference: Whitespace pre-tokenisation splits on \w+ and runs of other symbols.
    expected = len(re.findall(r"\w+|[^\w\s]+", text))
    assert HuggingFaceAdapter.from_file(wordlevel_json).count(text) == expected


def test_tokenizer_json_names(bpe_json: Path, wordlevel_json: Path) -> None:
    from tokenizers import Tokenizer

    assert HuggingFaceAdapter.from_file(bpe_json).name == f"huggingface:{bpe_json.parent.name}"
    assert HuggingFaceAdapter(str(wordlevel_json)).name == "huggingface:words"
    assert HuggingFaceAdapter(Tokenizer.from_file(str(bpe_json))).name == "huggingface:tokenizer"
    assert HuggingFaceAdapter(bpe_json, name="custom").name == "custom"
    assert repr(HuggingFaceAdapter(bpe_json, name="custom")) == "HuggingFaceAdapter(name='custom')"


def test_transformers_fast_tokenizer_counts_the_same(bpe_json: Path, tmp_path: Path) -> None:
    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(tokenizer_file=str(bpe_json))
    fast.save_pretrained(str(tmp_path / "saved"))
    from_object = HuggingFaceAdapter(fast)
    from_folder = HuggingFaceAdapter.from_pretrained_local(tmp_path / "saved")
    reference = HuggingFaceAdapter.from_file(bpe_json)
    texts = ["", "the budget keeps every token", "Zebra 42 unseen!", "[CLS] the [SEP]", "é" * 9]
    for text in texts:
        expected = len(fast.encode(text, add_special_tokens=False))
        assert from_object.count(text) == expected
        assert from_folder.count(text) == expected
        assert reference.count(text) == expected
    assert from_folder.name == "huggingface:saved"


def test_transformers_long_text_is_counted_without_truncation(
    bpe_json: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(tokenizer_file=str(bpe_json), model_max_length=8)
    text = " ".join(_WORDS * 5)
    adapter = HuggingFaceAdapter(fast)
    assert adapter.count(text) == HuggingFaceAdapter.from_file(bpe_json).count(text)
    assert adapter.count(text) > 8
    assert "longer than the specified maximum" not in caplog.text
    fast.encode(text, add_special_tokens=False)  # control: the plain call does log it
    assert "longer than the specified maximum" in caplog.text


def test_duck_typed_encoder_is_accepted() -> None:
    class Encoder:
        name_or_path = "org/letters"

        def encode(self, text: str, add_special_tokens: bool = True, **_: Any) -> list[int]:
            return [ord(c) for c in text] + ([0] if add_special_tokens else [])

    adapter = HuggingFaceAdapter(Encoder())
    assert adapter.count("abc") == 3
    assert adapter.name == "huggingface:letters"


def test_huggingface_bad_inputs(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"tokenizers\.Tokenizer"):
        HuggingFaceAdapter(42)
    with pytest.raises(InvalidInputError, match="no file at"):
        HuggingFaceAdapter.from_file(tmp_path / "tokenizer.json")
    broken = tmp_path / "tokenizer.json"
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"not a readable tokenizer\.json"):
        HuggingFaceAdapter(broken)
    with pytest.raises(InvalidInputError, match="is not a directory") as not_dir:
        HuggingFaceAdapter.from_pretrained_local(tmp_path / "missing")
    assert not_dir.value.field == "directory"
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidInputError, match="no loadable tokenizer"):
        HuggingFaceAdapter.from_pretrained_local(tmp_path / "empty")


# --- optional dependencies -----------------------------------------------------------------

EXTRA = 'pip install "membrane-aol[tokenizers]"'


def test_missing_sentencepiece_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, spm_model: Path
) -> None:
    monkeypatch.setitem(sys.modules, "sentencepiece", None)
    with pytest.raises(ImportError, match=re.escape(EXTRA)):
        SentencePieceAdapter(spm_model)


def test_missing_tokenizers_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, bpe_json: Path
) -> None:
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(ImportError, match=re.escape(EXTRA)):
        HuggingFaceAdapter.from_file(bpe_json)


def test_missing_transformers_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(ImportError, match=re.escape(EXTRA)):
        HuggingFaceAdapter.from_pretrained_local(tmp_path)


def test_adapters_are_exposed_lazily() -> None:
    assert membrane.tokenizers.SentencePieceAdapter is _external.SentencePieceAdapter
    assert membrane.tokenizers.HuggingFaceAdapter is _external.HuggingFaceAdapter
    assert "HuggingFaceAdapter" in membrane.tokenizers.__all__
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = membrane.tokenizers.Nope  # type: ignore[attr-defined]
