"""The same inputs give the same bytes in every worker process, whatever its hash seed."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]

# Compiles two scripted conversations turn by turn and prints a digest of every request.
_SCRIPT = """
import hashlib, json
from benchmarks._scenarios import HARD_SCENARIOS, build_scenario
from membrane import ContextCompiler, MemoryItem

digest = hashlib.sha256()
for name, seed in (("spread_paraphrased", 1), ("memory_many", 2)):
    sc = build_scenario(HARD_SCENARIOS[name], seed)
    compiler = ContextCompiler(sc.budget, model_id="openai/gpt-4o",
                               core_content=sc.system_prompt, token_scale=1.0)
    history = []
    for turn in sc.turns:
        memories = [MemoryItem(id=m.id, content=m.content, memory_type=m.memory_type,
                               priority=m.priority) for m in turn.memories]
        result = compiler.compile(memories=memories, conversation_messages=history,
                                  user_message=turn.user_message)
        digest.update(json.dumps(result.messages).encode())
        history.append({"role": "user", "content": turn.user_message})
        history.extend(dict(m) for m in turn.reply)
print(digest.hexdigest())
"""


def _digest(hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.mark.parametrize("other", ["1", "4242"])
def test_two_workers_with_different_hash_seeds_emit_the_same_requests(other: str) -> None:
    # Word sets iterate in an order that depends on the hash seed; scores summed in that order
    # once differed in the last bit and flipped a keyframe, which broke the shared prefix.
    assert _digest("0") == _digest(other)


class _RandomRarity:
    """A rarity with arbitrary float weights, so summation order shows in the last bits."""

    def __init__(self, weights: dict[str, float]) -> None:
        self.weights = weights

    def idf(self, word: str) -> float:
        return self.weights.get(word, 0.1)


_WORDS = st.lists(
    st.text(alphabet="bcdfghjklmnpqrstvwxz", min_size=3, max_size=8), min_size=2, max_size=12
)


@given(words=_WORDS, seed=st.floats(0.01, 50.0))
def test_scores_are_exactly_rounded_sums_so_word_order_cannot_matter(
    words: list[str], seed: float
) -> None:
    from membrane.text.keyframes import sentence_density
    from membrane.text.relevance import content_words, lexical_scores

    stats = _RandomRarity({w: seed / (i + 1.7) for i, w in enumerate(sorted(set(words)))})
    sentence = " ".join(words)
    distinct = set(content_words(sentence))
    expected = math.fsum(stats.idf(w) for w in distinct) / math.sqrt(len(content_words(sentence)))
    assert sentence_density(sentence, stats) == expected
    [score] = lexical_scores(" ".join(sorted(distinct)), [sentence], stats)
    assert score == math.fsum(stats.idf(w) for w in distinct)
