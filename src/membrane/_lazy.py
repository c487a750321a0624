"""Package attributes imported on first use, so importing a package costs little.

``import membrane`` runs in every fresh worker (a serverless function pays it on each cold
start), and a package's ``__init__`` runs whenever any module inside it is imported. A package
lists where each of its public names lives, and the module holding a name is imported the
first time someone reads it; ``from package import name`` and ``package.name`` work as if the
``__init__`` had imported it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` for ``exports`` (module -> names).

    A name not listed may be a submodule not imported yet (``membrane.tokenizers``): it is
    imported. Anything else raises ``AttributeError`` as a plain module would.
    """
    module_of = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        namespace = vars(sys.modules[package])
        module = module_of.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
            namespace[name] = value  # the next read finds it without this call
            return value
        if not name.startswith("_"):
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *module_of})

    return __getattr__, __dir__
