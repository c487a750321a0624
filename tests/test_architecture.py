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


MAX_COMPILER_LINES = 350
MAX_FUNCTION_LINES = 60


def test_the_compiler_module_only_orchestrates() -> None:
    lines = len((SRC / "compiler.py").read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_COMPILER_LINES, lines


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_function_is_over_the_size_limit(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"  # type: ignore[operator]
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES  # type: ignore[operator]
    ]
    assert not long, long


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_private_name_is_imported_from_another_module(path: Path) -> None:
    """``from x import _name`` only inside a package's ``__init__``, for its own modules."""
    own = _package_of(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("membrane"):
            continue
        for alias in node.names:
            if not alias.name.startswith("_"):
                continue
            own_module = path.name == "__init__.py" and node.module == own
            assert own_module, f"{path.name} imports {alias.name} from {node.module}"


def _module_name(path: Path) -> str:
    parts = ("membrane", *path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for p in SRC.rglob("*.py")}

    def owner(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in paths}
    for name, path in paths.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("membrane"):
                targets = [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("membrane")]
            for target in targets:
                found = owner(target)
                if found is not None and found != name:
                    graph[name].add(found)
    return graph


def test_no_import_cycle() -> None:
    """No module reaches itself through imports (``TYPE_CHECKING`` and local ones count)."""
    graph = _import_graph()
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            cycle = [*path[path.index(name) :], name]
            raise AssertionError(" -> ".join(cycle))
        if name in done:
            return
        for target in sorted(graph[name]):
            visit(target, [*path, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
