"""The model ids the official SDKs name, and whether the capability map resolves each.

    python scripts/sdk_model_ids.py            # the installed SDKs against constraints/sdks.txt
    python scripts/sdk_model_ids.py --newest   # any installed versions (make check-models)

Where the ids come from:

- openai: the ``openai.types.shared.ChatModel`` literal, from ``gpt-4o`` on. The older
  generations it still names (``gpt-4``, ``gpt-4-turbo``, ``gpt-4-32k``, their previews and
  ``gpt-3.5-turbo``) are retired and stay unknown on purpose.
- anthropic: the ``anthropic.types.Model`` literal.
- google-genai: the ``google.genai.interactions.Model`` literal where the release has one, and
  the model tables of ``google.genai._local_tokenizer_loader``, limited to text models: ids
  naming an image, speech, music, video, live or robotics model and the open Gemma models are
  outside a text prompt's map, and the tables' Gemini 2.0 ids are a retired generation that
  stays unknown on purpose.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import logging
import re
import sys
import typing
from importlib import metadata
from pathlib import Path

CONSTRAINTS = Path(__file__).resolve().parents[1] / "constraints" / "sdks.txt"
SDKS = ("openai", "anthropic", "google-genai")
# ChatModel ids of the generations before gpt-4o.
_RETIRED_OPENAI = re.compile(r"gpt-4(?:-|$)|gpt-3\.5")
_NOT_TEXT_GEMINI = re.compile(
    r"image|tts|transcribe|omni|robotics|nano-banana|live|embedding|lyria|gemma|audio"
)
_RETIRED_GEMINI = re.compile(r"gemini-(?:1\.|2\.0)")


def pinned_versions(path: Path = CONSTRAINTS) -> dict[str, str]:
    """``{distribution: version}`` from the constraints file."""
    pins = {}
    for line in path.read_text("utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[name.strip()] = version.strip()
    return pins


def installed_versions() -> dict[str, str]:
    return {name: metadata.version(name) for name in SDKS}


def _literal_strings(tp: object) -> list[str]:
    out: list[str] = []
    for arg in typing.get_args(tp):
        if isinstance(arg, str):
            out.append(arg)
        else:
            out.extend(_literal_strings(arg))
    return out


def openai_ids() -> list[str]:
    from openai.types.shared import ChatModel

    return [m for m in _literal_strings(ChatModel) if not _RETIRED_OPENAI.match(m)]


def retired_openai_ids() -> list[str]:
    from openai.types.shared import ChatModel

    return [m for m in _literal_strings(ChatModel) if _RETIRED_OPENAI.match(m)]


def anthropic_ids() -> list[str]:
    from anthropic.types import Model

    return _literal_strings(Model)


def google_ids() -> list[str]:
    found: list[str] = []
    try:
        from google.genai import interactions

        found.extend(_literal_strings(interactions.Model))
    except (ImportError, AttributeError):
        pass
    found.extend(_tokenizer_table_ids())
    ids = [
        m
        for m in found
        if m.startswith("gemini-")
        and not _NOT_TEXT_GEMINI.search(m)
        and not _RETIRED_GEMINI.match(m)
    ]
    return list(dict.fromkeys(ids))


def _tokenizer_table_ids() -> list[str]:
    """The keys of the ``_GEMINI...`` dicts of the tokenizer loader, read from its source (the
    module itself imports sentencepiece, which google-genai does not install)."""
    spec = importlib.util.find_spec("google.genai")
    if spec is None or spec.origin is None:
        return []
    source = Path(spec.origin).with_name("_local_tokenizer_loader.py")
    if not source.exists():
        return []
    ids: list[str] = []
    for node in ast.parse(source.read_text("utf-8")).body:
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Dict):
            continue
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if any(n.startswith("_GEMINI") for n in names):
            ids.extend(k.value for k in node.value.keys if isinstance(k, ast.Constant))
    return [str(i) for i in ids]


def sdk_model_ids() -> dict[str, list[str]]:
    """Each SDK's current ids, bare (as the SDK writes them)."""
    return {"openai": openai_ids(), "anthropic": anthropic_ids(), "google": google_ids()}


def unresolved(ids: dict[str, list[str]]) -> list[str]:
    """The ids, bare and ``provider/``-prefixed, that the capability map does not resolve."""
    from membrane.capabilities import resolve_model_id

    logging.getLogger("membrane.capabilities").setLevel(logging.ERROR)
    missing = []
    for provider, names in ids.items():
        for name in names:
            for model_id in (name, f"{provider}/{name}"):
                if resolve_model_id(model_id) is None:
                    missing.append(model_id)
    return missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--newest", action="store_true", help="do not compare with the pins")
    args = parser.parse_args(argv)
    pins, installed = pinned_versions(), installed_versions()
    for name in SDKS:
        print(f"{name:13} installed {installed[name]:10} pinned {pins.get(name, '-')}")
    if not args.newest and installed != {n: pins.get(n) for n in SDKS}:
        print("the installed SDKs are not the pinned ones; install constraints/sdks.txt")
        return 2
    ids = sdk_model_ids()
    missing = unresolved(ids)
    total = sum(len(v) for v in ids.values())
    print(f"{total - len({m.split('/', 1)[-1] for m in missing})} of {total} ids resolve")
    for model_id in missing:
        print(f"  unresolved: {model_id}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
