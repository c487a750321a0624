"""Token counters for SentencePiece and Hugging Face tokenizers (the ``tokenizers`` extra).

Both adapters count the tokens of a text as it sits inside a prompt: no beginning- or
end-of-sequence tokens are added, because chat framing is budgeted separately. Nothing here
touches the network; Hugging Face files are read from local paths only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from membrane.errors import InvalidInputError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["HuggingFaceAdapter", "SentencePieceAdapter"]

_EXTRA_HINT = 'pip install "membrane-aol[tokenizers]"'


def _missing(package: str, adapter: str) -> ImportError:
    return ImportError(f"{adapter} needs the {package!r} package; install it with: {_EXTRA_HINT}")


def _existing_path(path: str | os.PathLike[str], field: str, *, directory: bool) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{field} must be a path (str or os.PathLike), got {type(path).__name__}")
    resolved = Path(path)
    if directory and not resolved.is_dir():
        raise InvalidInputError(
            f"{field}: {str(resolved)!r} is not a directory; pass the local folder that holds "
            "the tokenizer files (nothing is downloaded)",
            field=field,
        )
    if not directory and not resolved.is_file():
        raise InvalidInputError(
            f"{field}: no file at {str(resolved)!r}; pass the path of a local tokenizer file",
            field=field,
        )
    return resolved


class SentencePieceAdapter:
    """Counts tokens with a SentencePiece model file (``.model``).

    ``name`` defaults to ``sentencepiece:<file stem>``.
    """

    def __init__(self, model_file: str | os.PathLike[str], *, name: str | None = None) -> None:
        path = _existing_path(model_file, "model_file", directory=False)
        try:
            import sentencepiece
        except ImportError as exc:
            raise _missing("sentencepiece", "SentencePieceAdapter") from exc
        try:
            processor = sentencepiece.SentencePieceProcessor(model_file=str(path))
        except (OSError, RuntimeError) as exc:
            raise InvalidInputError(
                f"model_file: {str(path)!r} is not a readable SentencePiece model ({exc})",
                field="model_file",
            ) from exc
        self._processor: Any = processor
        self._name = name if name is not None else f"sentencepiece:{path.stem}"

    @property
    def name(self) -> str:
        return self._name

    def count(self, text: str) -> int:
        return len(self._processor.encode(text, out_type=int))

    def __repr__(self) -> str:
        return f"SentencePieceAdapter(name={self._name!r})"


class HuggingFaceAdapter:
    """Counts tokens with a Hugging Face tokenizer.

    ``tokenizer`` is a path to a ``tokenizer.json`` file, a ``tokenizers.Tokenizer``, or a
    tokenizer object from ``transformers`` (anything with ``encode(text,
    add_special_tokens=...)`` returning ids). For a saved ``transformers`` folder use
    :meth:`from_pretrained_local`. Tokens the tokenizer's post-processor would add (such as
    ``[CLS]`` or ``<s>``) are not counted.
    """

    def __init__(self, tokenizer: object, *, name: str | None = None) -> None:
        self._count: Callable[[str], int]
        if isinstance(tokenizer, (str, os.PathLike)):
            tokenizer, label = _load_tokenizer_json(tokenizer)
        else:
            label = str(getattr(tokenizer, "name_or_path", "") or "tokenizer")
            label = Path(label).name or label
        raw = _as_raw_tokenizer(tokenizer)
        if raw is not None:
            self._count = _raw_counter(raw)
        elif callable(getattr(tokenizer, "encode", None)):
            self._count = _transformers_counter(tokenizer)
        else:
            raise TypeError(
                "tokenizer must be a path to tokenizer.json, a tokenizers.Tokenizer or a "
                f"transformers tokenizer, got {type(tokenizer).__name__}"
            )
        self._name = name if name is not None else f"huggingface:{label}"

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], *, name: str | None = None
    ) -> HuggingFaceAdapter:
        """Load a ``tokenizer.json`` file with the ``tokenizers`` package.

        ``name`` defaults to ``huggingface:<folder name>`` for a file named ``tokenizer.json``,
        else ``huggingface:<file stem>``.
        """
        return cls(path, name=name)

    @classmethod
    def from_pretrained_local(
        cls, directory: str | os.PathLike[str], *, name: str | None = None
    ) -> HuggingFaceAdapter:
        """Load a tokenizer saved with ``save_pretrained`` from a local folder (never downloads).

        Uses ``transformers.AutoTokenizer`` with ``local_files_only=True``. ``name`` defaults to
        ``huggingface:<folder name>``.
        """
        folder = _existing_path(directory, "directory", directory=True)
        try:
            import transformers
        except ImportError as exc:
            raise _missing("transformers", "HuggingFaceAdapter.from_pretrained_local") from exc
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(
                str(folder), local_files_only=True
            )
        except (OSError, ValueError) as exc:
            raise InvalidInputError(
                f"directory: no loadable tokenizer in {str(folder)!r} ({exc}); save one there "
                "with tokenizer.save_pretrained(...)",
                field="directory",
            ) from exc
        return cls(tokenizer, name=name if name is not None else f"huggingface:{folder.name}")

    @property
    def name(self) -> str:
        return self._name

    def count(self, text: str) -> int:
        return self._count(text)

    def __repr__(self) -> str:
        return f"HuggingFaceAdapter(name={self._name!r})"


def _load_tokenizer_json(path: str | os.PathLike[str]) -> tuple[Any, str]:
    resolved = _existing_path(path, "tokenizer", directory=False)
    try:
        import tokenizers
    except ImportError as exc:
        raise _missing("tokenizers", "HuggingFaceAdapter") from exc
    try:
        raw = tokenizers.Tokenizer.from_file(str(resolved))
    except Exception as exc:  # the Rust side raises a bare Exception on malformed JSON
        raise InvalidInputError(
            f"tokenizer: {str(resolved)!r} is not a readable tokenizer.json ({exc})",
            field="tokenizer",
        ) from exc
    label = resolved.parent.name if resolved.name == "tokenizer.json" else resolved.stem
    return raw, label or "tokenizer"


def _as_raw_tokenizer(obj: object) -> Any | None:
    """``obj`` if it is a ``tokenizers.Tokenizer``, else None."""
    try:
        import tokenizers
    except ImportError:
        return None
    return obj if isinstance(obj, tokenizers.Tokenizer) else None


def _raw_counter(raw: Any) -> Callable[[str], int]:
    def count(text: str) -> int:
        return len(raw.encode(text, add_special_tokens=False).ids)

    return count


def _transformers_counter(tokenizer: Any) -> Callable[[str], int]:
    def count(text: str) -> int:
        # verbose=False silences the "sequence longer than the model's maximum" log line:
        # counting a long prompt is exactly what we are here for.
        return len(tokenizer.encode(text, add_special_tokens=False, verbose=False))

    return count
