"""`import membrane` loads no framework; each adapter loads only its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = (
    "langchain_core",
    "langchain_classic",
    "llama_index",
    "haystack",
    "crewai",
    "mcp",
    "pydantic_ai",
)
CREWAI_ENV = os.environ.get("MEMBRANE_ADAPTER_ENV") == "crewai"


def _loaded_after(statement: str) -> list[str]:
    code = (
        f"import json, sys\n{statement}\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & {set(FRAMEWORKS)!r})))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HAYSTACK_TELEMETRY_ENABLED": "False"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_the_package_and_the_adapters_package_load_no_framework() -> None:
    assert _loaded_after("import membrane, membrane.adapters") == []


MAIN_ENV_ADAPTERS = [
    ("langchain", {"langchain_core"}),
    ("llamaindex", {"llama_index"}),
    ("haystack", {"haystack"}),
    ("mcp_server", {"mcp"}),  # the SDK is imported when the server is built
    ("pydantic_ai", {"pydantic_ai"}),
]


@pytest.mark.parametrize(
    ("module", "allowed"),
    [("crewai", {"crewai", "langchain_core", "mcp"})] if CREWAI_ENV else MAIN_ENV_ADAPTERS,
)
def test_each_adapter_loads_only_its_own_framework(module: str, allowed: set[str]) -> None:
    statement = f"import membrane.adapters.{module} as adapter"
    if module == "mcp_server":
        statement += "; adapter.build_server()"
    loaded = set(_loaded_after(statement))
    assert loaded, f"membrane.adapters.{module} should import its framework"
    assert loaded <= allowed
