"""Data files shipped inside the package, read through the importing machinery's own loader.

:func:`files` reads like ``importlib.resources.files`` for the little Membrane needs (a file
beside a module, read whole), without what importing ``importlib.resources`` brings along
(``pathlib``, ``urllib``, ``tempfile``: a tenth of a cold start's import). It reads through
the package's loader, so a package imported from a zip archive reads its data from there too.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

__all__ = ["PackageFile", "files"]


class PackageFile:
    """A path inside an imported package, read whole."""

    __slots__ = ("_loader", "_path")

    def __init__(self, loader: Any, path: str) -> None:
        self._loader = loader
        self._path = path

    def joinpath(self, *parts: str) -> PackageFile:
        return PackageFile(self._loader, os.path.join(self._path, *parts))

    def __truediv__(self, part: str) -> PackageFile:
        return self.joinpath(part)

    def read_bytes(self) -> bytes:
        data: bytes = self._loader.get_data(self._path)
        return data

    def read_text(self, encoding: str = "utf-8") -> str:
        return self.read_bytes().decode(encoding)


def files(package: str) -> PackageFile:
    """The directory of the imported ``package`` (``membrane.tokenizers``)."""
    spec = importlib.import_module(package).__spec__
    if spec is None or spec.loader is None or spec.origin is None:
        raise ModuleNotFoundError(f"{package} has no files of its own", name=package)
    return PackageFile(spec.loader, os.path.dirname(spec.origin))
