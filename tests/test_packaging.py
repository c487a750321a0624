"""A package people can install: its metadata, licence files, extras and first README lines."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path
from types import ModuleType

import pytest
import tomllib
from packaging.version import Version

from membrane.cli import main

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
DROPIN_DIR = ROOT / "membrane-longform-memory"
DROPIN_PYPROJECT = tomllib.loads((DROPIN_DIR / "pyproject.toml").read_text(encoding="utf-8"))
DROPIN = DROPIN_PYPROJECT["project"]

# The seed's install table: each extra, and a module of ours that uses what it installs.
SEED_EXTRAS = {
    "lod": {"numpy": "membrane/lod/_shift.py", "fastembed": "membrane/lod/_fastembed.py"},
    "redis": {"redis": "membrane/state/async_redis.py"},
    "stress": {"psutil": "membrane/stress.py"},
    "pydantic": {"pydantic": "membrane/models.py"},
    "llm-openai": {"openai": "membrane/compressors.py"},
    "llm-anthropic": {"anthropic": "membrane/compressors.py"},
    "langchain": {
        "langchain-core": "membrane/adapters/langchain/_messages.py",
        "langchain": "membrane/adapters/langchain/_middleware.py",
        "langgraph": "membrane/adapters/langchain/_middleware.py",
    },
    "llamaindex": {"llama-index-core": "membrane/adapters/llamaindex/_postprocessor.py"},
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


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _classifier_pythons(project: dict[str, object]) -> list[tuple[int, int]]:
    found = []
    for classifier in project["classifiers"]:  # type: ignore[attr-defined]
        match = re.fullmatch(r"Programming Language :: Python :: 3\.(\d+)", classifier)
        if match:
            found.append((3, int(match.group(1))))
    return found


@pytest.mark.parametrize("project", [PROJECT, DROPIN], ids=["membrane-aol", "drop-in"])
def test_classifiers_run_without_a_gap_from_the_oldest_python(project: dict[str, object]) -> None:
    # `make dist` installs the wheel on every Python a classifier names; the oldest is the one
    # requires-python names, and `make extras` resolves every extra for it.
    pythons = _classifier_pythons(project)
    oldest = _script("check_extras").oldest_python(project["requires-python"])
    assert pythons[0] == tuple(int(part) for part in oldest.split("."))
    assert pythons == [(3, minor) for minor in range(pythons[0][1], pythons[0][1] + len(pythons))]


def test_python_support_is_the_oldest_every_extra_resolves_for() -> None:
    # numpy 2.4, langchain-core 1.8, haystack-ai 3.4 and transformers 5.24 have no Python 3.10
    # release (pip download --python-version 3.10 fails for lod, embed, all, langchain,
    # haystack, tokenizers and dev), so Membrane claims 3.11; mypy checks for it.
    assert PROJECT["requires-python"] == ">=3.11"
    assert PYPROJECT["tool"]["mypy"]["python_version"] == "3.11"
    check_extras = _script("check_extras")
    assert check_extras.oldest_python(">=3.11") == "3.11"
    with pytest.raises(ValueError, match="single"):
        check_extras.oldest_python(">=3.10,<3.14")
    sets = check_extras.requirement_sets(PROJECT)
    assert set(sets) == {"(core)", *PROJECT["optional-dependencies"]}
    assert sets["redis"] == ["tiktoken>=0.5.0", "redis>=8.1.0"]


def test_membrane_neither_ships_nor_requires_longform_memory() -> None:
    assert PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["src/membrane"]
    assert not (ROOT / "src" / "longform_memory").exists()
    extras = PROJECT["optional-dependencies"].values()
    requirements = [*PROJECT["dependencies"], *(r for extra in extras for r in extra)]
    assert requirements and not [r for r in requirements if "longform" in r]


def test_the_drop_in_is_a_distribution_of_its_own() -> None:
    assert DROPIN["name"] == "membrane-longform-memory"
    # Not the published package's name: both can be on the index, and pinned apart.
    assert DROPIN["name"] != "longform-memory"
    assert DROPIN["requires-python"] == ">=3.9"
    assert DROPIN["dependencies"] == []
    assert "optional-dependencies" not in DROPIN
    assert DROPIN["license"] == PROJECT["license"] == "Apache-2.0"
    assert (DROPIN_DIR / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
    # One version for both distributions: Membrane's.
    assert DROPIN["dynamic"] == ["version"]
    assert DROPIN_PYPROJECT["tool"]["hatch"]["version"]["path"] == "../src/membrane/__init__.py"
    package = DROPIN_DIR / "src" / "longform_memory"
    assert sorted(p.name for p in package.iterdir() if p.suffix in (".py", ".typed")) == [
        "__init__.py", "budget.py", "language.py", "py.typed", "threads.py", "vector.py",
    ]  # fmt: skip


def test_the_drop_in_parses_as_python_3_9() -> None:
    # The real check runs the built wheel on Python 3.9 (`make dist`, `make test`); this one
    # catches 3.10-only syntax without leaving this interpreter.
    for path in sorted((DROPIN_DIR / "src" / "longform_memory").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path), feature_version=(3, 9))
        for node in ast.walk(tree):
            assert not isinstance(node, ast.Match), (path, node.lineno)
            # dataclass(slots=True) and zip(strict=True) are 3.10 keywords.
            if isinstance(node, ast.keyword):
                assert node.arg not in ("slots", "strict", "kw_only"), (path, node.arg)
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                module = node.module if isinstance(node, ast.ImportFrom) else None
                assert not [n for n in [*names, module] if n and n.startswith("membrane")]


STANDALONE_PROBE = textwrap.dedent(
    """
    import json, sys
    sys.path[:0] = [sys.argv[1]]
    before = set(sys.modules)
    import longform_memory
    from longform_memory import budget, language, threads, vector
    loaded = sorted({name.split(".")[0] for name in set(sys.modules) - before})
    print(json.dumps({"file": longform_memory.__file__, "loaded": loaded}))
    """
)


def test_the_drop_in_imports_the_standard_library_only() -> None:
    source = DROPIN_DIR / "src"
    done = subprocess.run(
        [sys.executable, "-I", "-c", STANDALONE_PROBE, str(source)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    probe = json.loads(done.stdout)
    assert probe["file"] == str(source / "longform_memory" / "__init__.py")
    foreign = [name for name in probe["loaded"] if name not in sys.stdlib_module_names]
    assert foreign == ["longform_memory"]
