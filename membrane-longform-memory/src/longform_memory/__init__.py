"""A drop-in for the published ``longform-memory`` 0.1.1 package, from the Membrane project.

Code written against that package runs unchanged: the same names, submodules
(``longform_memory.budget``, ``.vector``, ``.language``, ``.threads``), signatures, keyword
names, mutable result dataclasses, values and exception types, checked against the published
package itself by Membrane's differential tests. Standard library only, Python 3.9 and later;
it imports nothing from Membrane. ``__version__`` names the published release whose behaviour
it reproduces; the distribution's own version (``membrane-longform-memory``) follows Membrane's
releases. The richer API (exact token counters, the SQLite store, the compiler bridge) is
Membrane's :mod:`membrane.longform`.
"""

from __future__ import annotations

from longform_memory.budget import (
    DEFAULT_MEMORY_BUDGET,
    MAX_SKELETON_ENTRIES,
    SECTION_SHARE,
    BudgetResult,
    Fitted,
    SectionInput,
    allocate,
    estimate_tokens,
    fit_items,
    fit_sections,
    skeleton_chapters,
)
from longform_memory.language import (
    LanguageHint,
    dominates,
    is_char_counted_language,
    language_mismatch,
    resolve_language,
)
from longform_memory.threads import (
    DEFAULT_THREAD_LABELS,
    MAX_THREAD_OPS_PER_CHAPTER,
    UNRESOLVED_THREAD_STATUSES,
    KnownThread,
    OwedThread,
    RawThreadItem,
    ThreadLabels,
    ThreadOp,
    ThreadUrgency,
    compare_thread_urgency,
    plan_owed_payoff,
    plan_thread_ops,
    render_known_threads,
    resolve_thread_deadline,
)
from longform_memory.vector import (
    DEFAULT_MIN_SCORE,
    RELATIVE_FLOOR,
    ScoredRow,
    decode_vector,
    encode_vector,
    search_top_k,
)

#: The published version this package reproduces.
__version__ = "0.1.1"

__all__ = [
    "DEFAULT_MEMORY_BUDGET",
    "DEFAULT_MIN_SCORE",
    "DEFAULT_THREAD_LABELS",
    "MAX_SKELETON_ENTRIES",
    "MAX_THREAD_OPS_PER_CHAPTER",
    "RELATIVE_FLOOR",
    "SECTION_SHARE",
    "UNRESOLVED_THREAD_STATUSES",
    "BudgetResult",
    "Fitted",
    "KnownThread",
    "LanguageHint",
    "OwedThread",
    "RawThreadItem",
    "ScoredRow",
    "SectionInput",
    "ThreadLabels",
    "ThreadOp",
    "ThreadUrgency",
    "__version__",
    "allocate",
    "compare_thread_urgency",
    "decode_vector",
    "dominates",
    "encode_vector",
    "estimate_tokens",
    "fit_items",
    "fit_sections",
    "is_char_counted_language",
    "language_mismatch",
    "plan_owed_payoff",
    "plan_thread_ops",
    "render_known_threads",
    "resolve_language",
    "resolve_thread_deadline",
    "search_top_k",
    "skeleton_chapters",
]
