"""The public surface: one sorted ``__all__``, nothing private, a light import, ``py.typed``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from importlib import resources
from pathlib import Path

import membrane

SRC = Path(__file__).resolve().parents[1] / "src"

# Optional dependencies that `import membrane` must not pull in.
OPTIONAL_MODULES = (
    "redis",
    "numpy",
    "langchain_core",
    "langchain",
    "llama_index",
    "mcp",
    "rich",
    "sentencepiece",
    "transformers",
    "tokenizers",
)


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: CONSTANTS, then Classes, then everything else.
    if name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def test_all_is_sorted_and_unique() -> None:
    names = list(membrane.__all__)
    assert len(names) == len(set(names))
    assert names == sorted(names, key=_isort_key)


def test_every_exported_name_resolves() -> None:
    for name in membrane.__all__:
        assert getattr(membrane, name) is not None, name


def test_no_private_name_is_exported() -> None:
    for name in membrane.__all__:
        is_dunder = name.startswith("__") and name.endswith("__")
        assert is_dunder or not name.startswith("_"), name
        obj = getattr(membrane, name)
        module = getattr(obj, "__module__", None)
        if isinstance(module, str):
            assert module.startswith("membrane"), (name, module)
            assert not any(part.startswith("_") for part in module.split(".")[1:-1]), (
                name,
                module,
            )


def test_every_public_top_level_name_is_listed() -> None:
    for name in dir(membrane):
        if name.startswith("_") or name == "annotations":  # from __future__
            continue
        if isinstance(getattr(membrane, name), types.ModuleType):
            continue
        assert name in membrane.__all__, name


def test_seed_entry_points_are_exported() -> None:
    for name in (
        "ContextCompiler",
        "CompileResult",
        "MemoryItem",
        "TIER_PROCEDURAL",
        "TIER_SEMANTIC",
        "TIER_EPISODIC",
        "ContextLayoutEngine",
        "PreFlightContextFirewall",
        "SemanticMemory",
        "anthropic_system_blocks",
        "build_system_messages",
        "count_tokens",
        "glaciate",
        "anthropic_request",
        "get_cache_pricing",
        "get_token_scale",
        "has_prompt_caching",
        "get_context_cap_for_model",
        "contains_interrupt",
        "parse_interrupt",
        "strip_all_interrupts",
        "EpisodicMemory",
        "ProceduralMemory",
        "KernelMemoryObject",
        "KernelMemoryRecord",
        "load_kernel_memory_json_schema",
        "PreFlightAnalyst",
        "as_preflight_analyst",
        "InvalidInputError",
        "MembraneError",
        "ToolPairingError",
    ):
        assert name in membrane.__all__, name
    assert membrane.TIER_PROCEDURAL == 1
    assert membrane.TIER_SEMANTIC == 2
    assert membrane.TIER_EPISODIC == 3


def test_import_is_light() -> None:
    script = (
        "import json, sys\n"
        "import membrane\n"
        "import membrane.tokenizers._bundled as bundled\n"
        f"names = {list(OPTIONAL_MODULES)!r}\n"
        "loaded = sorted(n for n in names if n in sys.modules)\n"
        "print(json.dumps({'loaded': loaded, 'encodings': sorted(bundled._cache),\n"
        "                  'file': membrane.__file__}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    report = json.loads(out.stdout)
    assert Path(report["file"]).resolve().is_relative_to(SRC.resolve())
    assert report["loaded"] == []
    assert report["encodings"] == []


def test_py_typed_is_shipped() -> None:
    assert (resources.files("membrane") / "py.typed").is_file()


# What a cold start must not pay for: the event loop and network stack, the Redis store, the
# stress sampler, the request builders and profile modules a plain compile never calls.
_NOT_NEEDED_TO_COMPILE = (
    "asyncio",
    "ssl",
    "socket",
    "membrane.backend",
    "membrane.stress",
    "membrane.state.redis",
    "membrane.providers.anthropic",
    "membrane.providers.openai",
    "membrane.providers.gemini",
    "membrane.profile._classify",
    "membrane.profile._dedup",
    "membrane.lod",
    "membrane.longform",
    "membrane.cli",
)


def _loaded_after(code: str, names: tuple[str, ...]) -> list[str]:
    script = (
        "import json, sys\n"
        f"{code}\n"
        f"print(json.dumps(sorted(n for n in {list(names)!r} if n in sys.modules)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    loaded: list[str] = json.loads(out.stdout)
    return loaded


def test_import_membrane_loads_no_module_of_the_library() -> None:
    """``import membrane`` loads only the package itself: every public name comes on use."""
    names = ("logging", "membrane.compiler", "membrane.tokenizers", "membrane.records")
    assert _loaded_after("import membrane", names + _NOT_NEEDED_TO_COMPILE) == []


def test_a_first_compile_loads_only_what_compiling_needs() -> None:
    code = (
        "from membrane import ContextCompiler, MemoryItem\n"
        "compiler = ContextCompiler(2000, core_content='Be brief.')\n"
        "history = [{'role': 'user', 'content': 'Hi.'},\n"
        "           {'role': 'assistant', 'content': 'Hello.'}]\n"
        "compiler.compile([MemoryItem(id='m', content='Likes tea.')], 'Tea?',\n"
        "                 conversation_messages=history)\n"
    )
    assert _loaded_after(code, _NOT_NEEDED_TO_COMPILE) == []


def test_lazy_names_and_submodules_resolve_on_use() -> None:
    code = (
        "import membrane\n"
        "assert membrane.ContextCompiler.__module__ == 'membrane.compiler'\n"
        "assert membrane.tokenizers.count_tokens('hello world') == 2\n"
        "from membrane.providers import anthropic_request\n"
        "from membrane.state import RedisStateStore\n"
        "import membrane.profile as profile\n"
        "assert callable(profile.classify_query)\n"
        "try:\n"
        "    membrane.no_such_name\n"
        "except AttributeError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('no AttributeError')\n"
    )
    assert _loaded_after(code, ("membrane.stages.history",)) == ["membrane.stages.history"]
