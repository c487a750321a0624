"""What a fresh process pays before its first prompt: importing, then the first compile.

Each sample is a new Python process, the sides interleaved run by run:

- ``import membrane`` against ``import tiktoken`` (the only dependency Membrane needs);
- the first compile (importing the compiler, building it, loading the bundled ``cl100k_base``
  encoding, compiling a short turn), timed after ``import membrane`` and ``import tiktoken``,
  against tiktoken loading the same encoding its own way: ``tiktoken.get_encoding(
  "cl100k_base")`` reading the BPE file from its disk cache (``TIKTOKEN_CACHE_DIR``, filled
  here from Membrane's bundled copy, so no network), timed after ``import tiktoken``. Both
  clocks start with tiktoken imported (``import membrane`` does not import it: the compile
  would otherwise pay for an import the other side's clock leaves out);
- the whole cold start, each side's import and first use added: ``import membrane`` and the
  first compile against ``import tiktoken`` and loading the encoding.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["cold_start"]

_ROOT = Path(__file__).resolve().parent.parent
_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"

_IMPORT_MEMBRANE = """
import time
t = time.perf_counter()
import membrane
print((time.perf_counter() - t) * 1e3)
"""

_IMPORT_TIKTOKEN = """
import time
t = time.perf_counter()
import tiktoken
print((time.perf_counter() - t) * 1e3)
"""

_FIRST_COMPILE = """
import time
import membrane
import tiktoken  # imported before the clock on both sides: neither pays for it here
t = time.perf_counter()
from membrane import ContextCompiler, MemoryItem
compiler = ContextCompiler(max_tokens=8000, core_content="Be brief.")
history = [
    {"role": "user", "content": "My order number is KX-4471. It has not arrived yet."},
    {"role": "assistant", "content": "Sorry to hear that. I will look into order KX-4471."},
]
compiler.compile(
    [MemoryItem(id="m1", content="The user prefers email over phone calls.")],
    "Any news on my order?",
    conversation_messages=history,
)
print((time.perf_counter() - t) * 1e3)
"""

_LOAD_ENCODING = """
import time
import tiktoken
t = time.perf_counter()
encoding = tiktoken.get_encoding("cl100k_base")
encoding.encode_ordinary("Any news on my order?")
print((time.perf_counter() - t) * 1e3)
"""

# Modules `import membrane` used to pull in that a compile does not need.
_HEAVY = ("asyncio", "ssl", "socket", "redis", "numpy", "membrane.compiler", "membrane.backend")
_LOADED = f"""
import json, sys
import membrane
print(json.dumps(sorted(n for n in {list(_HEAVY)!r} if n in sys.modules)))
"""


def _tiktoken_cache(directory: Path) -> None:
    """Put the plain cl100k_base file where tiktoken looks for its download."""
    from importlib import resources

    packed = resources.files("membrane.tokenizers") / "data" / "cl100k_base.tiktoken.gz"
    key = hashlib.sha1(_CL100K_URL.encode()).hexdigest()
    (directory / key).write_bytes(gzip.decompress(packed.read_bytes()))


def _run(script: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=300,
    )
    return done.stdout.strip().splitlines()[-1]


def _row(samples: dict[str, list[float]], ours: str, theirs: str) -> dict[str, Any]:
    mine, other = statistics.median(samples[ours]), statistics.median(samples[theirs])
    return {
        f"{ours}_ms_median": mine,
        f"{theirs}_ms_median": other,
        "ratio": mine / other if other else None,
        f"{ours}_ms": samples[ours],
        f"{theirs}_ms": samples[theirs],
    }


def cold_start(runs: int) -> dict[str, Any]:
    """Medians of ``runs`` fresh processes per side (see the module)."""
    scripts = {
        "import_membrane": _IMPORT_MEMBRANE,
        "import_tiktoken": _IMPORT_TIKTOKEN,
        "first_compile": _FIRST_COMPILE,
        "load_cl100k": _LOAD_ENCODING,
    }
    samples: dict[str, list[float]] = {name: [] for name in scripts}
    with tempfile.TemporaryDirectory() as cache:
        _tiktoken_cache(Path(cache))
        path = os.pathsep.join([str(_ROOT / "src"), os.environ.get("PYTHONPATH", "")])
        env = {**os.environ, "PYTHONPATH": path, "TIKTOKEN_CACHE_DIR": cache}
        # Byte code cached as an installed package has it, outside the source tree.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(cache) / "pycache")
        for script in scripts.values():
            _run(script, env)  # once unmeasured: the byte-code caches are written
        for _ in range(runs):
            for name, script in scripts.items():
                samples[name].append(float(_run(script, env)))
        loaded = json.loads(_run(_LOADED, env))
    ours = statistics.median(samples["import_membrane"]) + statistics.median(
        samples["first_compile"]
    )
    theirs = statistics.median(samples["import_tiktoken"]) + statistics.median(
        samples["load_cl100k"]
    )
    out = {
        "runs": runs,
        "import": _row(samples, "import_membrane", "import_tiktoken"),
        "first_compile": _row(samples, "first_compile", "load_cl100k"),
        "total": {"membrane_ms": ours, "tiktoken_ms": theirs, "ratio": ours / theirs},
        "heavy_modules_after_import_membrane": loaded,
    }
    for part in ("import", "first_compile", "total"):
        row = out[part]
        print(f"  cold start, {part}: ratio {row['ratio']:.2f}", file=sys.stderr)
    return out
