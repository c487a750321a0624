"""Build both distributions, check them, and install each wheel where a user would: `make dist`.

    python scripts/dist.py [--out dist] [--envs build/dist-envs] [--release]

Run it with an interpreter that has ``build`` and ``twine`` (``make dist`` makes one). Steps:

1. ``python -m build`` for ``membrane-aol`` (this folder) and ``membrane-longform-memory``
   (its sub-folder): an sdist each, then each wheel built from its sdist.
2. ``twine check --strict`` on the four files.
3. The archives themselves: both carry the version of ``src/membrane/__init__.py``; the
   ``membrane-aol`` wheel holds ``membrane`` and no ``longform_memory``; the drop-in's wheel
   holds ``longform_memory`` only, with no ``Requires-Dist`` and ``Requires-Python: >=3.9``.
4. Each wheel installed alone into a fresh virtual environment for every Python its
   classifiers name, and ``scripts/dist_smoke.py`` run there (the demo's recorded bytes for
   Membrane, the published package's answers for the drop-in).
5. The published ``longform-memory`` 0.1.1 and Membrane in one environment: no shared file,
   and uninstalling either leaves the other importable and answering.

The environments stay under ``--envs``; ``longform_memory-3.9`` there is what ``make test``
runs the differential tests against (``LONGFORM_DROPIN_PYTHON``). ``--release`` also requires
a clean work tree and a CHANGELOG section for the version (see docs/releasing.md).
"""

from __future__ import annotations

import argparse
import email.parser
import email.policy
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import Message
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DROPIN_DIR = ROOT / "membrane-longform-memory"
SMOKE = ROOT / "scripts" / "dist_smoke.py"
MANIFEST = ROOT / "tests" / "golden" / "output_hashes.json"
PUBLISHED = "longform-memory==0.1.1"
TIMES: dict[str, float] = {}


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"FAILED: {what}")
    print(f"  ok: {what}")


def run(*command: str | Path, cwd: Path | None = None, quiet: bool = False) -> str:
    printable = " ".join(str(part) for part in command)
    print(f"$ {printable}", flush=True)
    done = subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stdout, done.stderr, sep="\n")
        raise SystemExit(f"FAILED ({done.returncode}): {printable}")
    if not quiet and done.stdout.strip():
        print(done.stdout.rstrip())
    return done.stdout


@contextmanager
def timed(name: str) -> Iterator[None]:
    began = time.monotonic()
    yield
    TIMES[name] = time.monotonic() - began


def membrane_version() -> str:
    source = (ROOT / "src" / "membrane" / "__init__.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__ = "([^"]+)"$', source, re.M)
    assert match is not None, "no __version__ in src/membrane/__init__.py"
    return match.group(1)


def find_python(version: str) -> Path:
    """An interpreter for ``version`` ("3.9"): pyenv's, or ``pythonX.Y`` on the PATH."""
    candidates: list[str] = []
    pyenv = shutil.which("pyenv")
    if pyenv:
        prefix = subprocess.run([pyenv, "prefix", version], capture_output=True, text=True)
        if prefix.returncode == 0:
            candidates.append(str(Path(prefix.stdout.strip()) / "bin" / f"python{version}"))
    on_path = shutil.which(f"python{version}")
    if on_path:
        candidates.append(on_path)
    for candidate in candidates:
        probe = subprocess.run(
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return Path(candidate)
    raise SystemExit(
        f"FAILED: no Python {version} found (pyenv or python{version} on the PATH); a classifier "
        f"names it, so the wheel must be installed and tested there"
    )


# ------------------------------------------------------------------ the archives


def wheel_metadata(wheel: Path) -> tuple[list[str], Message]:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        text = archive.read(info).decode("utf-8")
    return names, email.parser.Parser(policy=email.policy.compat32).parsestr(text)


def sdist_names(sdist: Path) -> list[str]:
    with tarfile.open(sdist) as archive:
        return [member.name for member in archive.getmembers() if member.isfile()]


def pythons_of(metadata: Message) -> list[str]:
    """The ``X.Y`` of each ``Programming Language :: Python :: X.Y`` classifier."""
    found = []
    for classifier in metadata.get_all("Classifier") or []:
        match = re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", classifier)
        if match:
            found.append(match.group(1))
    return found


def check_membrane_archives(wheel: Path, sdist: Path, version: str) -> Message:
    names, meta = wheel_metadata(wheel)
    top = sorted({name.split("/")[0] for name in names})
    check(top == ["membrane", f"membrane_aol-{version}.dist-info"], f"membrane-aol wheel: {top}")
    check(not [n for n in names if n.startswith("longform_memory")], "no longform_memory in it")
    check(meta["Name"] == "membrane-aol" and meta["Version"] == version, f"version {version}")
    check(meta["Requires-Python"] == ">=3.11", f"Requires-Python {meta['Requires-Python']}")
    requires = meta.get_all("Requires-Dist") or []
    check("tiktoken>=0.5.0" in requires, "requires tiktoken")
    check(not [r for r in requires if "longform" in r], "requires no longform package")
    check(meta["License-Expression"] == "Apache-2.0", "License-Expression: Apache-2.0")
    licences = sorted(meta.get_all("License-File") or [])
    check(licences == ["LICENSE", "NOTICE"], f"licence files {licences}")
    check(f"membrane_aol-{version}.dist-info/entry_points.txt" in names, "the membrane command")

    files = sdist_names(sdist)
    base = f"membrane_aol-{version}/"
    check(all(n.startswith(base) for n in files), f"membrane-aol sdist unpacks into {base}")
    inner = sorted({n[len(base) :].split("/")[0] for n in files})
    expected = [".gitignore", "CHANGELOG.md", "LICENSE", "NOTICE", "PKG-INFO", "README.md", "docs"]
    check(inner == [*expected, "pyproject.toml", "src"], f"membrane-aol sdist holds {inner}")
    check(not [n for n in files if "longform_memory/" in n], "no longform_memory in the sdist")
    return meta


def check_dropin_archives(wheel: Path, sdist: Path, version: str) -> Message:
    names, meta = wheel_metadata(wheel)
    top = sorted({name.split("/")[0] for name in names})
    expected_top = ["longform_memory", f"membrane_longform_memory-{version}.dist-info"]
    check(top == expected_top, f"membrane-longform-memory wheel: {top}")
    check("longform_memory/py.typed" in names, "it ships py.typed")
    check(meta["Version"] == version, f"version {version}, Membrane's")
    check(meta.get_all("Requires-Dist") is None, "no Requires-Dist")
    check(meta["Requires-Python"] == ">=3.9", f"Requires-Python {meta['Requires-Python']}")
    check(pythons_of(meta)[0] == "3.9", f"classifiers from Python 3.9: {pythons_of(meta)}")

    files = sdist_names(sdist)
    base = f"membrane_longform_memory-{version}/"
    inner = sorted(n[len(base) :] for n in files)
    package = ["__init__.py", "budget.py", "language.py", "py.typed", "threads.py", "vector.py"]
    expected = [".gitignore", "LICENSE", "PKG-INFO", "README.md", "pyproject.toml"]
    expected += [f"src/longform_memory/{name}" for name in package]
    check(inner == expected, f"membrane-longform-memory sdist holds {inner}")
    return meta


# ------------------------------------------------------------------ fresh environments


def fresh_env(envs: Path, name: str, python: Path) -> Path:
    path = envs / name
    shutil.rmtree(path, ignore_errors=True)
    run(python, "-m", "venv", path)
    return path / "bin" / "python"


def pip(env: Path, *args: str | Path) -> None:
    run(env, "-m", "pip", "--disable-pip-version-check", *args, quiet=True)


def smoke(env: Path, *args: str | Path) -> None:
    # -I and a neutral working folder: only the environment's own site-packages count.
    run(env, "-I", SMOKE, *args, cwd=env.parent.parent)


# Each distribution's files inside site-packages, one tab-separated line per distribution.
OWNED_FILES = """
from importlib import metadata
for name in ("membrane-aol", "longform-memory"):
    files = metadata.distribution(name).files or []
    print("\\t".join([name, *(str(f) for f in files if not str(f).startswith(".."))]))
"""


def coexistence(envs: Path, python: Path, wheel: Path, version: str) -> None:
    """The published longform-memory and Membrane side by side, then each uninstalled."""
    env = fresh_env(envs, "coexistence", python)
    pip(env, "install", "--quiet", "--only-binary=:all:", PUBLISHED, wheel)
    pip(env, "check")
    listing = run(env, "-c", OWNED_FILES, quiet=True).split("\n")
    ours, theirs = (set(line.split("\t")[1:]) for line in listing[:2])
    check(bool(ours) and bool(theirs) and not ours & theirs, "the two share no installed file")
    smoke(env, "membrane", version, MANIFEST)
    smoke(env, "longform_memory", "longform-memory", "0.1.1")
    pip(env, "uninstall", "--yes", "--quiet", "membrane-aol")
    smoke(env, "longform_memory", "longform-memory", "0.1.1")
    print("  ok: the published longform-memory still works without Membrane")
    pip(env, "install", "--quiet", "--only-binary=:all:", wheel)
    pip(env, "uninstall", "--yes", "--quiet", "longform-memory")
    smoke(env, "membrane", version, MANIFEST)
    print("  ok: Membrane still works without the published longform-memory")


# ------------------------------------------------------------------ release gate


def release_gate(version: str) -> None:
    status = run("git", "status", "--porcelain", cwd=ROOT, quiet=True)
    check(status.strip() == "", "the work tree is clean")
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    heading = re.search(
        rf"^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M
    )
    check(heading is not None, f"CHANGELOG.md has a dated section for {version}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    parser.add_argument("--envs", type=Path, default=ROOT / "build" / "dist-envs")
    parser.add_argument("--release", action="store_true", help="also the release gate")
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    envs: Path = args.envs.resolve()
    version = membrane_version()
    print(f"==> version {version} (src/membrane/__init__.py)")
    if args.release:
        release_gate(version)

    shutil.rmtree(out, ignore_errors=True)
    for project, name in ((ROOT, "membrane-aol"), (DROPIN_DIR, "membrane-longform-memory")):
        with timed(f"build {name}"):
            run(sys.executable, "-m", "build", "--outdir", out, project, quiet=True)
    built = sorted(path.name for path in out.iterdir())
    expected = [
        f"membrane_aol-{version}-py3-none-any.whl",
        f"membrane_aol-{version}.tar.gz",
        f"membrane_longform_memory-{version}-py3-none-any.whl",
        f"membrane_longform_memory-{version}.tar.gz",
    ]
    check(built == expected, f"built {built}")
    membrane_wheel, membrane_sdist, dropin_wheel, dropin_sdist = (out / n for n in expected)

    print("==> twine check --strict")
    with timed("twine check"):
        run(sys.executable, "-m", "twine", "check", "--strict", *(out / n for n in expected))

    print("==> the archives")
    membrane_meta = check_membrane_archives(membrane_wheel, membrane_sdist, version)
    dropin_meta = check_dropin_archives(dropin_wheel, dropin_sdist, version)

    envs.mkdir(parents=True, exist_ok=True)
    with timed("membrane-aol smoke"):
        for python in pythons_of(membrane_meta):
            print(f"==> membrane-aol alone on Python {python}")
            env = fresh_env(envs, f"membrane-aol-{python}", find_python(python))
            pip(env, "install", "--quiet", "--only-binary=:all:", membrane_wheel)
            smoke(env, "membrane", version, MANIFEST)
    with timed("drop-in smoke"):
        for python in pythons_of(dropin_meta):
            print(f"==> membrane-longform-memory alone on Python {python}")
            env = fresh_env(envs, f"longform_memory-{python}", find_python(python))
            # --no-index: the wheel must install with nothing from the package index.
            pip(env, "install", "--quiet", "--no-index", dropin_wheel)
            smoke(env, "longform_memory", "membrane-longform-memory", version)
    with timed("coexistence"):
        oldest = pythons_of(membrane_meta)[0]
        print(f"==> {PUBLISHED} and membrane-aol in one environment (Python {oldest})")
        coexistence(envs, find_python(oldest), membrane_wheel, version)

    print("==> summary")
    for path in (out / n for n in expected):
        count = len(sdist_names(path)) if path.suffix == ".gz" else len(wheel_metadata(path)[0])
        print(f"  {path.name}: {path.stat().st_size / 1024:,.1f} KiB, {count} files")
    for name, seconds in TIMES.items():
        print(f"  {name}: {seconds:.1f} s")
    print(f"  total: {sum(TIMES.values()):.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
