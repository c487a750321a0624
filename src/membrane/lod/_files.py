"""Finding and checking the model files an embedder reads: installed packages, pinned digests."""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path

from membrane.errors import EmbedderUnavailable

__all__ = ["installed", "missing_packages", "package_dir", "verified_bytes"]


def installed(module: str) -> bool:
    """Whether a top-level module can be imported, found without importing it."""
    return _spec(module) is not None


def _spec(module: str) -> ModuleSpec | None:
    try:
        return importlib.util.find_spec(module)
    except ImportError:  # an import hook that refuses the name: not installed for us
        return None


def missing_packages(packages: Sequence[tuple[str, str]]) -> list[str]:
    """The distributions whose module (``(module, distribution)`` pairs) cannot be imported."""
    return [dist for module, dist in packages if not installed(module)]


def package_dir(package: str) -> Path | None:
    """Where an installed top-level package lives, found without importing it."""
    spec = _spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def verified_bytes(path: Path, expected_sha256: str | None, *, what: str, fix: str) -> bytes:
    """The bytes of ``path``, refused unless their sha256 is ``expected_sha256`` (None: any).

    ``what`` names the file in the error and ``fix`` says what to run.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EmbedderUnavailable(
            f"cannot read the {what} {path} ({exc}); {fix}", embedder=str(path)
        ) from exc
    if expected_sha256 is not None:
        digest = hashlib.sha256(data).hexdigest()
        if digest != expected_sha256:
            raise EmbedderUnavailable(
                f"the {what} {path} has sha256 {digest}, expected {expected_sha256}; "
                f"reinstall it ({fix})",
                embedder=str(path),
            )
    return data
