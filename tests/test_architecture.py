"""The code's shape: small modules, a short pipeline, private names kept private.

Complexity (ruff C901, PLR0915) and the import layers (import-linter) are checked by
``make lint``; these are the rules no linter here knows.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import membrane
from membrane.compiler import ContextCompiler

SRC = Path(membrane.__file__).resolve().parent
MAX_MODULE_LINES = 450
MAX_COMPILE_BODY_LINES = 40


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "longform" not in p.relative_to(SRC).parts)


def _package_of(path: Path) -> str:
    parts = ("membrane", *path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1])


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_is_over_the_size_limit(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.name} has {lines} lines"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_private_name_is_imported_from_another_package(path: Path) -> None:
    own = _package_of(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        if not node.module.startswith("membrane"):
            continue
        parts = node.module.split(".")
        private = [i for i, part in enumerate(parts) if part.startswith("_")]
        names = [alias.name for alias in node.names if alias.name.startswith("_")]
        if private:
            owner = ".".join(parts[: private[0]])
            assert own == owner or own.startswith(owner + "."), (
                f"{path.name} imports the private module {node.module}"
            )
        if names:
            assert node.module == own or node.module.startswith(own + "."), (
                f"{path.name} imports private names {names} from {node.module}"
            )


def test_compile_body_fits_on_one_screen() -> None:
    source = inspect.getsource(ContextCompiler.compile)
    tree = ast.parse(source.lstrip())
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    first = function.body[1] if isinstance(function.body[0], ast.Expr) else function.body[0]
    body_lines = function.end_lineno - first.lineno + 1  # type: ignore[operator]
    assert body_lines <= MAX_COMPILE_BODY_LINES, body_lines


_METADATA_NAMES = {"md", "metadata", "meta"}
# Adapters read the metadata of framework documents (LangChain, LlamaIndex, Haystack), not ours.
_OTHER_METADATA = ("adapters",)


def _name_of(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _key_reads(tree: ast.AST) -> set[str]:
    keys = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and _name_of(node.value) in _METADATA_NAMES
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            keys.add(node.slice.value)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and _name_of(node.func.value) in _METADATA_NAMES
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            keys.add(node.args[0].value)
    return keys


def test_only_the_report_reads_metadata_by_key() -> None:
    readers = {}
    for path in _modules():
        relative = path.relative_to(SRC)
        if relative.parts[0] in ("report", *_OTHER_METADATA):
            continue
        keys = _key_reads(ast.parse(path.read_text(encoding="utf-8")))
        if keys:
            readers[str(relative)] = sorted(keys)
    assert readers == {}, f"read CompileReport fields instead: {readers}"
