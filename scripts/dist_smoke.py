"""Smoke tests run inside the fresh environments that `scripts/dist.py` makes.

    python -I dist_smoke.py membrane VERSION MANIFEST
    python -I dist_smoke.py longform_memory DISTRIBUTION VERSION

``membrane``: the installed Membrane reports VERSION, ships no ``longform_memory``, and its
demo prints exactly the bytes recorded under ``demo`` in MANIFEST (``tests/golden``'s output
hashes). ``longform_memory``: whichever distribution installed ``longform_memory`` (the drop-in
``membrane-longform-memory`` or the published ``longform-memory``) loads only the standard
library and answers as the published 0.1.1 does. The file runs on every Python from 3.9 with
the standard library only; ``-I`` keeps the checkout out of reach. Exit status 0 when every
check holds.
"""

import contextlib
import hashlib
import importlib.util
import io
import json
import subprocess
import sys
import typing
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

DROPIN = "membrane-longform-memory"

# What the published longform-memory 0.1.1 answers to the calls below (read off it).
PUBLISHED_ANSWERS = {
    "allocate": {"entity": 1302, "recent": 2022, "skeleton": 869, "retrieval": 1806},
    "estimate_tokens": [7, 7, 0],
    "skeleton_chapters": [1, 83, 165, 247, 329, 411, 493, 575, 657, 739, 821, 903],
    "encode_vector": "mpkZP83MTD8=",
    "decode_vector": [0.6000000238418579, 0.800000011920929],
    "search_top_k": [["cellar", "0x1.fd75840000000p-1"]],
    "fit_sections": [["Mara: captain, wounded"], ["Ch.9: the storm breaks the mast"], 14],
    "resolve_language": {"directive": "中文", "unit": "chars", "char_counted": True},
    "plan_thread_ops": [
        ["resolve", "k2", None, "At last.", 0],
        ["skip", None, "unmatched-ref", "", 0],
        ["open", None, None, "", 18],
    ],
    "plan_owed_payoff": ["letter", ["chest"]],
    "render_known_threads": "[T1] [in progress] Who sent the letter? (due by Ch.12)",
    "format string as ThreadLabels.due": "TypeError",
}


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"FAILED: {what}")
    print(f"  ok: {what}")


def smoke_membrane(version: str, manifest: Path) -> None:
    import membrane
    import membrane.longform as mlf
    from membrane.demo import main as demo

    check(membrane.__version__ == version, f"membrane.__version__ == {version!r}")
    check(metadata.version("membrane-aol") == version, f"membrane-aol {version} is installed")
    files = [str(path) for path in metadata.distribution("membrane-aol").files or []]
    check(not [f for f in files if f.startswith("longform_memory")], "no longform_memory file")
    providers = metadata.packages_distributions().get("longform_memory", [])
    check("membrane-aol" not in providers, f"longform_memory comes from {providers or 'nowhere'}")
    if not providers:
        check(importlib.util.find_spec("longform_memory") is None, "no longform_memory at all")
    requires = metadata.requires("membrane-aol") or []
    check(not [r for r in requires if "longform" in r], "no requirement on a longform package")

    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = demo([])
    raw = json.dumps([code, stdout.getvalue()], ensure_ascii=False, separators=(",", ":"))
    digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()
    expected = json.loads(manifest.read_text(encoding="utf-8"))["demo"]
    check(digest == expected, f"the demo prints the recorded bytes (sha256 {digest[:12]}...)")

    command = Path(sys.executable).with_name("membrane")
    out = subprocess.run([str(command), "--version"], capture_output=True, text=True, check=True)
    check(out.stdout == f"membrane {version}\n", "the membrane command reports that version")
    check(mlf.allocate(6000)["recent"] == 2022, "membrane.longform answers")


def foreign_modules(names: typing.Iterable[str], package_dir: Path) -> list[str]:
    """Those modules that come neither from the standard library nor from ``package_dir``."""
    stdlib = Path(sys.base_prefix).resolve()
    foreign = []
    for name in names:
        origin = getattr(sys.modules[name], "__file__", None)
        if origin is None:
            continue  # built into the interpreter
        path = Path(origin).resolve()
        if path.is_relative_to(package_dir):
            continue
        if path.is_relative_to(stdlib) and "site-packages" not in path.parts:
            continue
        foreign.append(name)
    return foreign


def _row(summary: str, status: str, deadline: int) -> SimpleNamespace:
    return SimpleNamespace(summary=summary, status=status, deadline_chapter=deadline)


TEXTS = ("The key was under the mat.", "鍵はマットの下", "")


def published_calls() -> dict[str, typing.Any]:
    import longform_memory as lm

    hits = lm.search_top_k(
        [1.0, 0.0],
        [("cellar", lm.encode_vector([1.0, 0.1])), ("roof", lm.encode_vector([0.0, 1.0]))],
        lambda row: row[1],
    )
    block = lm.fit_sections(
        lm.SectionInput(["Mara: captain, wounded"], str),
        lm.SectionInput(["Ch.9: the storm breaks the mast"], str),
        lm.SectionInput([], str),
        lm.SectionInput([], str),
        total=100,
    )
    ops = lm.plan_thread_ops(
        [
            lm.RawThreadItem(action="resolve", ref="T2", summary="The map is found.",
                             resolution_note=" At last. "),
            lm.RawThreadItem(action="progress", ref="T9", summary="?"),
            lm.RawThreadItem(summary="A stranger watches.", deadline_chapter="18"),
        ],
        [lm.KnownThread("k1", "open"), lm.KnownThread("k2", "progressing")],
        7,
        30,
    )  # fmt: skip
    must, rest = lm.plan_owed_payoff(
        [lm.OwedThread("letter", 2, 5, 4), lm.OwedThread("chest", 3, 8, 1)], 9, 40
    )
    try:
        lm.render_known_threads([_row("s", "open", 3)], lm.ThreadLabels(due=" [bis {chapter}]"))
        raised = "nothing"
    except Exception as exc:
        raised = type(exc).__name__
    return {
        "allocate": lm.allocate(6000),
        "estimate_tokens": [lm.estimate_tokens(text) for text in TEXTS],
        "skeleton_chapters": lm.skeleton_chapters(1000, 980),
        "encode_vector": lm.encode_vector([3.0, 4.0]),
        "decode_vector": lm.decode_vector("mpkZP83MTD8="),
        "search_top_k": [[hit.row[0], hit.score.hex()] for hit in hits],
        "fit_sections": [block.entity.kept, block.recent.kept, block.used_tokens],
        "resolve_language": vars(lm.resolve_language("今天下雨了")),
        "plan_thread_ops": [
            [op.kind, op.id, op.reason, op.resolution_note, op.deadline_chapter] for op in ops
        ],
        "plan_owed_payoff": [must.summary, [thread.summary for thread in rest]],
        "render_known_threads": lm.render_known_threads(
            [_row("Who sent the letter?", "progressing", 12)]
        ),
        "format string as ThreadLabels.due": raised,
    }


def smoke_longform_memory(distribution: str, version: str) -> None:
    before = set(sys.modules)
    import longform_memory as lm
    from longform_memory import budget, language, threads, vector  # noqa: F401

    loaded = set(sys.modules) - before

    package_dir = Path(lm.__file__).resolve().parent
    check(package_dir.parent.name == "site-packages", f"longform_memory from {package_dir}")
    check(metadata.version(distribution) == version, f"{distribution} {version} is installed")
    check(lm.__version__ == "0.1.1", "longform_memory.__version__ == '0.1.1'")
    answers = published_calls()
    for name, expected in PUBLISHED_ANSWERS.items():
        check(answers[name] == expected, f"{name}: as the published 0.1.1")
    check(not [m for m in loaded if m.split(".")[0] == "membrane"], "no Membrane module loaded")
    check(foreign_modules(loaded, package_dir) == [], "nothing but the standard library loaded")
    if distribution == DROPIN:
        check(metadata.requires(distribution) is None, "no Requires-Dist")
        python = metadata.metadata(distribution)["Requires-Python"]
        check(python == ">=3.9", f"Requires-Python {python}")
        hints = typing.get_type_hints(lm.ThreadOp)
        optional_str = typing.Optional[str]  # noqa: UP045 (no X | None before Python 3.10)
        check(hints["id"] == optional_str, "the annotations resolve on this Python")


def main(argv: list[str]) -> int:
    print(f"smoke test on Python {sys.version.split()[0]} ({sys.executable})")
    if argv[:1] == ["membrane"] and len(argv) == 3:
        smoke_membrane(argv[1], Path(argv[2]))
    elif argv[:1] == ["longform_memory"] and len(argv) == 3:
        smoke_longform_memory(argv[1], argv[2])
    else:
        raise SystemExit(__doc__)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
