"""A package people can install: its metadata, licence files, extras and first README lines."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import tomllib
from packaging.version import Version

from membrane.cli import main

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]

# The seed's install table: each extra, and a module of ours that uses what it installs.
SEED_EXTRAS = {
    "lod": {"numpy": "membrane/lod.py", "fastembed": "membrane/lod.py"},
    "redis": {"redis": "membrane/state/async_redis.py"},
    "stress": {"psutil": "membrane/stress.py"},
    "pydantic": {"pydantic": "membrane/models.py"},
    "llm-openai": {"openai": "membrane/compressors.py"},
    "llm-anthropic": {"anthropic": "membrane/compressors.py"},
    "langchain": {"langchain-core": "membrane/adapters/langchain.py"},
    "llamaindex": {"llama-index-core": "membrane/adapters/llamaindex.py"},
    "crewai": {"crewai": "membrane/adapters/crewai.py"},
    "haystack": {"haystack-ai": "membrane/adapters/haystack.py"},
    "tokenizers": {
        "sentencepiece": "membrane/tokenizers/_external.py",
        "transformers": "membrane/tokenizers/_external.py",
    },
    "mcp": {"mcp": "membrane/adapters/mcp_server.py"},
}
IMPORT_NAME = {
    "langchain-core": "langchain_core",
    "llama-index-core": "llama_index",
    "haystack-ai": "haystack",
}
# What uses an SDK extra is the caller's client object; the module names the SDK it drives.
SDK_NAMED = {"openai": "openai.AsyncOpenAI", "anthropic": "anthropic.AsyncAnthropic"}


def _requirements(extra: str) -> dict[str, str]:
    out = {}
    for req in PROJECT["optional-dependencies"][extra]:
        name, bound = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:==|>=)([0-9][^,;]*)", req).groups()  # type: ignore[union-attr]
        out[name] = bound
    return out


def test_every_extra_of_the_seed_stays_and_something_uses_it() -> None:
    for extra, uses in SEED_EXTRAS.items():
        requirements = _requirements(extra)
        assert set(requirements) == set(uses), extra
        for dist, path in uses.items():
            source = (ROOT / "src" / path).read_text(encoding="utf-8")
            name = IMPORT_NAME.get(dist, dist)
            imported = re.search(rf"^\s*(import|from) {name}\b", source, re.M) or re.search(
                rf'import_module\("{name}[."]', source
            )
            assert imported or SDK_NAMED.get(dist, "\0") in source, (extra, dist, path)
    all_extra = _requirements("all")
    for part in ("lod", "redis", "stress", "pydantic", "llm-openai"):
        assert _requirements(part).items() <= all_extra.items(), part


def test_lower_bounds_are_met_by_the_versions_under_test() -> None:
    # Each bound was raised to the release the tests ran with when it was set (CHANGELOG); a
    # bound above what this environment runs would promise something nobody tested.
    for extra in ("lod", "redis", "stress", "pydantic", "llm-openai", "llm-anthropic"):
        for dist, bound in _requirements(extra).items():
            assert Version(metadata.version(dist)) >= Version(bound), (extra, dist, bound)


def test_metadata_names_this_project_only() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8").lower()
    for foreign in ("consilience", "adeyomi", "lawal", "emberspun", "song-finder"):
        assert foreign not in text
    assert PROJECT["authors"] == [{"name": "The Membrane contributors"}]
    assert PROJECT["license"] == "Apache-2.0"
    assert PROJECT["license-files"] == ["LICENSE", "NOTICE"]
    assert "Apache License" in (ROOT / "LICENSE").read_text(encoding="utf-8")[:200]
    dist = metadata.metadata("membrane-aol")
    assert dist["Version"] == __import__("membrane").__version__


def test_notice_credits_every_bundled_data_file() -> None:
    notice = (ROOT / "NOTICE").read_text(encoding="utf-8")
    ours = {"demo_data.json", "llm_capabilities.json", "kernel_memory.schema.json", "page.html"}
    bundled = [
        p
        for p in (ROOT / "src").rglob("*")
        if p.is_file() and p.suffix not in (".py", ".typed", ".pyc") and p.name not in ours
    ]
    assert bundled, "expected the bundled encodings and tokenizer"
    for path in bundled:
        assert str(path.relative_to(ROOT)) in notice, path
    assert notice.count("MIT License") >= 1 and notice.count("Apache License") >= 2


def test_readme_opens_with_how_to_install_from_a_clone() -> None:
    head = (ROOT / "README.md").read_text(encoding="utf-8")[:1500]
    assert 'pip install ".[redis]"' in head
    assert "not on the Python package index" in head


def test_version_flag(capsys: object) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "membrane.cli", "--version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == f"membrane {__import__('membrane').__version__}\n"
    assert main(["--version"]) == 0
    for name in ("CONTRIBUTING.md", "SECURITY.md"):
        assert (ROOT / name).read_text(encoding="utf-8").startswith("# ")


def test_history_file_dash_reads_standard_input() -> None:
    history = '[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]'
    argv = ["inspect", "--user-message", "Next?", "--history-file", "-", "--json"]
    out = subprocess.run(
        [sys.executable, "-m", "membrane.cli", *argv],
        input=history,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    compiled = json.loads(out)["compiled_messages"]
    assert [m["role"] for m in compiled] == ["system", "user", "assistant", "user"]
    assert compiled[1:3] == json.loads(history)
    bad = subprocess.run(
        [sys.executable, "-m", "membrane.cli", *argv],
        input="not json",
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "--history-file -: not valid UTF-8 JSON" in bad.stderr
