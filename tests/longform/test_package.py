from __future__ import annotations

import doctest
import json
import subprocess
import sys
import textwrap
from types import ModuleType

import pytest

import longform_memory
import membrane.longform
from membrane.longform import _matrix, bridge, budget, language, store, threads, vector

from .helpers import subprocess_env

# The names the longform-memory documentation lists, plus the value types needed to call them.
SEED_NAMES = {
    # budget
    "estimate_tokens", "allocate", "skeleton_chapters", "fit_items", "fit_sections",
    "SectionInput", "Fitted", "BudgetResult", "DEFAULT_MEMORY_BUDGET", "MAX_SKELETON_ENTRIES",
    "SECTION_SHARE",
    # vector
    "encode_vector", "decode_vector", "search_top_k", "ScoredRow", "DEFAULT_MIN_SCORE",
    "RELATIVE_FLOOR",
    # language
    "resolve_language", "dominates", "is_char_counted_language", "language_mismatch",
    "LanguageHint",
    # threads
    "UNRESOLVED_THREAD_STATUSES", "resolve_thread_deadline", "plan_thread_ops",
    "plan_owed_payoff", "compare_thread_urgency", "render_known_threads", "KnownThread",
    "OwedThread", "RawThreadItem", "ThreadLabels", "ThreadOp", "DEFAULT_THREAD_LABELS",
    "MAX_THREAD_OPS_PER_CHAPTER",
    # added by the published 0.1.1
    "ThreadUrgency", "__version__",
}  # fmt: skip


def test_longform_memory_exports_exactly_the_published_names() -> None:
    # The full surface (submodules, signatures, dataclass fields) is compared with the
    # published package itself in test_differential.py.
    assert set(longform_memory.__all__) == SEED_NAMES
    assert longform_memory.__version__ == "0.1.1"
    for name in SEED_NAMES:
        assert hasattr(longform_memory, name)
    from longform_memory import budget as b
    from longform_memory import language as la
    from longform_memory import threads as t
    from longform_memory import vector as v

    assert (
        b.fit_items is longform_memory.fit_items and v.search_top_k is longform_memory.search_top_k
    )
    assert la.HAN.pattern and t.ThreadUrgency is longform_memory.ThreadUrgency


def test_longform_memory_shares_membranes_constants() -> None:
    for name in (
        "DEFAULT_MEMORY_BUDGET",
        "MAX_SKELETON_ENTRIES",
        "DEFAULT_MIN_SCORE",
        "RELATIVE_FLOOR",
        "UNRESOLVED_THREAD_STATUSES",
        "MAX_THREAD_OPS_PER_CHAPTER",
    ):
        assert getattr(longform_memory, name) == getattr(membrane.longform, name)  # fmt: skip
    assert dict(membrane.longform.SECTION_SHARE) == longform_memory.SECTION_SHARE


# Public in their module, not re-exported by the package.
MODULE_ONLY = {"HEURISTIC_COUNTER_NAME", "NUMPY_MIN_ROWS", "SAMPLE_CHARS", "SCRIPTS",
               "UNIT_TOLERANCE", "BLOCK_ORDER", "ARABIC", "CYRILLIC", "DEVANAGARI", "HAN",
               "HANGUL", "HEBREW", "KANA", "LATIN", "THAI"}  # fmt: skip


def test_public_all_is_sorted_complete_and_private_free() -> None:
    exported = membrane.longform.__all__
    assert exported == sorted(exported, key=lambda n: (not n.isupper(), n))
    assert len(set(exported)) == len(exported)
    for name in exported:
        assert not name.startswith("_")
        assert hasattr(membrane.longform, name)
    public_modules = (budget, vector, language, threads, store, bridge)
    for module in public_modules:
        for name in module.__all__:
            assert name in exported or name in MODULE_ONLY, name


def test_longform_memory_ships_py_typed() -> None:
    from importlib.resources import files

    assert files("longform_memory").joinpath("py.typed").is_file()
    assert files("membrane").joinpath("py.typed").is_file()


IMPORT_PROBE = textwrap.dedent(
    """
    import json, sys
    start = set(sys.modules)
    import membrane
    after_core = set(sys.modules)
    import {module}
    print(json.dumps({{
        "ours": sorted({{n.split(".")[0] for n in set(sys.modules) - after_core}}),
        "all": sorted({{n.split(".")[0] for n in set(sys.modules) - start}}),
    }}))
    """
)


@pytest.mark.parametrize("module", ["membrane.longform", "longform_memory"])
def test_import_loads_only_the_standard_library(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE.format(module=module)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=subprocess_env(),
    )
    loaded = json.loads(done.stdout)
    # What this package adds on top of `import membrane` is standard library only ...
    foreign = {
        name
        for name in loaded["ours"]
        if name not in sys.stdlib_module_names and name not in {"membrane", "longform_memory"}
    }
    assert foreign == set()
    # ... and neither the tokenizer nor NumPy is loaded by the import as a whole.
    assert "tiktoken" not in loaded["all"]
    assert "numpy" not in loaded["all"]


@pytest.mark.parametrize(
    "module", [budget, vector, language, threads, store, bridge, _matrix, membrane.longform]
)
def test_docstring_examples_hold(module: ModuleType) -> None:
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert outcome.failed == 0
    if module is not membrane.longform:
        assert outcome.attempted > 0
