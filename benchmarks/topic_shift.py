"""The topic-shift threshold of the local embedder, measured on the conversation benchmark's chats.

    python -m benchmarks.topic_shift [--conversations 10] [--recent 3]

Each session of a benchmark chat is a different real conversation (``benchmarks/_chats.py``),
so a session's first message from person A leaves the topic of A's last messages before it,
and a message deep inside a session does not. For every user message the detector sees what a
chat app would: the ``--recent`` user messages before it. Two groups are scored, the others
(a session's second and third messages, whose window straddles the boundary) are left out:

- change of subject: the first user message of a session, its window all in the session before;
- follow-up: a user message whose window is all in its own session.

The cosine distance each gets from :func:`membrane.lod.compute_attention_shift_with_embeddings`
is the score; the report gives both groups' quantiles, the area under the ROC curve, the
threshold with the best balanced accuracy, and how the default 0.35 and the embedder's own
threshold do. Development split only (the held-out conversations are never used for tuning).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from benchmarks._chats import build_conversation, conversation_seeds
from benchmarks._report import machine, write_result
from benchmarks._strategies import StrategyUnavailable, shared_local_embedder
from benchmarks._suite import command_line

__all__ = ["balanced_accuracy", "main", "roc_auc", "scored_pairs"]


def _distance(recent: Sequence[Sequence[float]], current: Sequence[float]) -> float:
    import numpy as np

    window = np.asarray(recent, dtype=np.float64)
    window /= np.linalg.norm(window, axis=1)[:, None]
    centroid = window.mean(axis=0)
    now = np.asarray(current, dtype=np.float64)
    similarity = float(centroid @ now) / float(np.linalg.norm(centroid) * np.linalg.norm(now))
    return 1.0 - similarity


def scored_pairs(seed: int, recent: int, embed: Any) -> tuple[list[float], list[float]]:
    """(distances of changes of subject, distances of follow-ups) in conversation ``seed``."""
    conv = build_conversation(seed)
    user = [m for m in conv.messages if m.role == "user"]
    vectors = embed([m.text for m in user])
    shifts: list[float] = []
    follow: list[float] = []
    for i in range(recent, len(user)):
        window = user[i - recent : i]
        sessions = {m.session for m in window}
        if len(sessions) != 1:
            continue
        (before,) = sessions
        first_of_session = user[i - 1].session != user[i].session
        if first_of_session:
            shifts.append(_distance(vectors[i - recent : i], vectors[i]))
        elif before == user[i].session:
            follow.append(_distance(vectors[i - recent : i], vectors[i]))
    return shifts, follow


def roc_auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """The chance that a random change of subject scores above a random follow-up."""
    ranked = sorted([(v, 1) for v in positives] + [(v, 0) for v in negatives])
    rank_sum, i = 0.0, 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        mean_rank = (i + j + 1) / 2  # ranks are 1-based; ties share their mean rank
        rank_sum += mean_rank * sum(label for _, label in ranked[i:j])
        i = j
    n_pos, n_neg = len(positives), len(negatives)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def balanced_accuracy(
    threshold: float, positives: Sequence[float], negatives: Sequence[float]
) -> dict[str, float]:
    """Shares caught (distance >= threshold) and false alarms at ``threshold``."""
    caught = sum(v >= threshold for v in positives) / len(positives)
    false_alarms = sum(v >= threshold for v in negatives) / len(negatives)
    return {
        "threshold": round(threshold, 3),
        "changes_of_subject_caught": round(caught, 3),
        "follow_ups_flagged": round(false_alarms, 3),
        "balanced_accuracy": round((caught + 1 - false_alarms) / 2, 3),
    }


def _quantiles(values: Sequence[float]) -> dict[str, float]:
    cuts = statistics.quantiles(values, n=10)
    return {
        "count": len(values),
        "p10": round(cuts[0], 3),
        "median": round(statistics.median(values), 3),
        "p90": round(cuts[-1], 3),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.topic_shift", description=__doc__)
    parser.add_argument("--conversations", type=int, default=10, help="dev conversations used")
    parser.add_argument("--recent", type=int, default=3, help="user messages in the window")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    try:
        model = shared_local_embedder()
    except StrategyUnavailable as exc:
        print(f"cannot run: {exc}", file=sys.stderr)
        return 1
    seeds = conversation_seeds(10 * args.conversations, "dev")[: args.conversations]
    t0 = time.perf_counter()
    shifts: list[float] = []
    follow: list[float] = []
    for seed in seeds:
        s, f = scored_pairs(seed, args.recent, model)
        shifts += s
        follow += f
    elapsed = time.perf_counter() - t0
    grid = [round(0.2 + 0.01 * i, 2) for i in range(91)]
    best = max(
        (balanced_accuracy(t, shifts, follow) for t in grid),
        key=lambda r: (r["balanced_accuracy"], -r["threshold"]),
    )
    payload: dict[str, Any] = {
        "suite": "topic_shift",
        "command": command_line(),
        "machine": machine(),
        "elapsed_seconds": round(elapsed, 1),
        "settings": {
            "conversations": seeds,
            "split": "dev",
            "recent_user_messages": args.recent,
            "embedder": "membrane.lod.local_embedder() (all-MiniLM-L6-v2 int8 ONNX)",
        },
        "changes_of_subject": _quantiles(shifts),
        "follow_ups": _quantiles(follow),
        "roc_auc": round(roc_auc(shifts, follow), 3),
        "best_threshold": best,
        "at_default_0_35": balanced_accuracy(0.35, shifts, follow),
        "at_embedder_threshold": balanced_accuracy(
            float(model.attention_shift_threshold), shifts, follow
        ),
    }
    if not args.no_write:
        print(f"wrote {write_result('topic_shift', payload)}", file=sys.stderr)
    for key in ("changes_of_subject", "follow_ups", "roc_auc", "best_threshold"):
        print(f"{key}: {payload[key]}")
    for key in ("at_default_0_35", "at_embedder_threshold"):
        print(f"{key}: {payload[key]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
