"""The topic-shift measurement: its distance is the library's, its statistics are exact."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.topic_shift import _distance, balanced_accuracy, roc_auc
from membrane.lod import compute_attention_shift_with_embeddings

_vector = st.lists(st.floats(0.05, 1.0), min_size=4, max_size=4)


@given(recent=st.lists(_vector, min_size=1, max_size=4), current=_vector, cut=st.floats(0, 1))
def test_the_distance_decides_like_the_library(
    recent: list[list[float]], current: list[float], cut: float
) -> None:
    distance = _distance(recent, current)
    if abs(distance - cut) > 1e-9:  # away from the edge, where rounding may differ
        assert (distance >= cut) == compute_attention_shift_with_embeddings(recent, current, cut)


def test_roc_auc_counts_pairs_and_splits_ties() -> None:
    assert roc_auc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert roc_auc([0.1], [0.9]) == 0.0
    assert roc_auc([0.5, 0.9], [0.5, 0.1]) == pytest.approx((1 + 1 + 0.5 + 1) / 4)


def test_balanced_accuracy_at_a_threshold() -> None:
    row = balanced_accuracy(0.5, [0.4, 0.6, 0.9, 0.95], [0.1, 0.7])
    assert row == {
        "threshold": 0.5,
        "changes_of_subject_caught": 0.75,
        "follow_ups_flagged": 0.5,
        "balanced_accuracy": 0.625,
    }
