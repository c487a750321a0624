"""History under a budget: the chunked cut, the eviction index and recall of dropped passages.

Three algorithms, one module each, behind this facade:

- :mod:`._cut`: where the cut falls (:func:`reference_cut`) and :class:`HistoryTracker`,
  its incremental replay, which hands every dropped unit to the other two;
- :mod:`._index`: the eviction index, one line per dropped message (:func:`index_digest`);
- :mod:`._score`, :mod:`._cover`, :mod:`._recall`: dropped passages scored against the turn
  (:func:`telling_words`), what the kept window already holds (:func:`window_cover`), and the
  passages brought back (:func:`select_passages`); :mod:`._meaning`: the embedder's vote
  (:func:`nearest_passages`);
- :mod:`._speakers`: who wrote a message, for a question that names them;
- :mod:`._snapshot`: the tracker saved in the state store and restored from it
  (:func:`restore_tracker`).

How a message's shape is read (roles, tool calls, their results) lives in
:mod:`membrane.messages`; the headers and the index block are :mod:`membrane.prompt_text`'s.
"""

from __future__ import annotations

from membrane.prompt_text import INDEX_HEADER, RECALL_HEADER
from membrane.stages.history._cover import WindowCover, recall_reason, window_cover
from membrane.stages.history._cut import HistoryTracker
from membrane.stages.history._index import (
    KEYFRAME_SPAN_TOKENS,
    RARE_DOCUMENT_FREQUENCY,
    IndexLine,
    index_digest,
    render_index,
    select_index_lines,
)
from membrane.stages.history._meaning import (
    EMBEDDED_PASSAGES,
    MEANING_PASSAGES,
    MEANING_SCAN,
    nearest_passages,
    passage_order,
    prefetch_arrivals,
)
from membrane.stages.history._passages import PASSAGE_WORDS, Passage, RecalledPassage
from membrane.stages.history._recall import recall_candidates, select_passages
from membrane.stages.history._score import telling_words
from membrane.stages.history._snapshot import (
    TrackerSnapshot,
    read_snapshot,
    restore_tracker,
    snapshot_tracker,
)
from membrane.stages.history._speakers import NO_WRITERS, Writers, check_speakers
from membrane.stages.history._units import CutEvent, reference_cut

__all__ = [
    "EMBEDDED_PASSAGES",
    "INDEX_HEADER",
    "KEYFRAME_SPAN_TOKENS",
    "MEANING_PASSAGES",
    "MEANING_SCAN",
    "NO_WRITERS",
    "PASSAGE_WORDS",
    "RARE_DOCUMENT_FREQUENCY",
    "RECALL_HEADER",
    "CutEvent",
    "HistoryTracker",
    "IndexLine",
    "Passage",
    "RecalledPassage",
    "TrackerSnapshot",
    "WindowCover",
    "Writers",
    "check_speakers",
    "index_digest",
    "nearest_passages",
    "passage_order",
    "prefetch_arrivals",
    "read_snapshot",
    "recall_candidates",
    "recall_reason",
    "reference_cut",
    "render_index",
    "restore_tracker",
    "select_index_lines",
    "select_passages",
    "snapshot_tracker",
    "telling_words",
    "window_cover",
]
