"""Every Python example in docs/ runs.

Each page's examples run top to bottom in one namespace, as a reader pastes them. Where the
prose around an example says what a name is ("``result`` from the compile above", "your
``index``", "the stream of deltas"), ``GIVENS`` defines it first, with the smallest real object
that fits; Redis examples get the test's redis-server. The CrewAI example runs in the CrewAI
environment (``MEMBRANE_ADAPTER_ENV=crewai``), the others in the main one.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.conftest import CREWAI_WARNINGS
from tests.state.conftest import cluster_url as _session_cluster_url
from tests.state.conftest import redis_cluster as _session_redis_cluster
from tests.state.conftest import redis_url as _session_redis_url

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

redis_url = _session_redis_url
cluster_url = _session_cluster_url
redis_cluster = _session_redis_cluster
DOCS = Path(__file__).resolve().parents[1] / "docs"
CREWAI_ENV = os.environ.get("MEMBRANE_ADAPTER_ENV") == "crewai"

_MEMORIES = """
from membrane import MemoryItem
memories = [
    MemoryItem(id="a", content="User prefers tea."),
    MemoryItem(id="b", content="The user prefers tea."),
    MemoryItem(id="c", content="Deploy with make release.", memory_type="procedural"),
]
question = "What does the user drink?"
history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]
"""

GIVENS: dict[str, str] = {
    "agents.md": _MEMORIES
    + """
RULES = "You are a careful agent."
AGENT_PROMPT = "Use the tools when a page must change."
thread_id = "thread-1"
user_message = "Open the settings page."
TOOLS = [{"type": "function", "function": {"name": "click", "description": "Click a button.",
          "parameters": {"type": "object", "properties": {"label": {"type": "string"}}}}}]
""",
    "adapters.md": """
from llama_index.core import Document, Settings, SummaryIndex
from llama_index.core.llms import MockLLM
Settings.llm = MockLLM(max_tokens=8)
index = SummaryIndex.from_documents(
    [Document(text="The zone 3 warehouse opens at 06:00.", id_="wh-3")]
)
from haystack import Pipeline, component
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.dataclasses import ChatMessage
from haystack.document_stores.in_memory import InMemoryDocumentStore
from membrane.adapters.haystack import MembranePromptBuilder

@component
class EchoChat:
    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, list[ChatMessage]]:
        return {"replies": [ChatMessage.from_assistant("ok")]}

pipe, store, chat_generator = Pipeline(), InMemoryDocumentStore(), EchoChat()
""",
    "history.md": _MEMORIES
    + "from membrane import ContextCompiler\ncompiler = ContextCompiler(4000, token_scale=1.0)\n",
    "interrupt-protocol.md": """
stream = ["Checking. <SYSTEM_INTERR", "UPT_FETCH[user's timezone]> One", " moment."]
shown, lookups = [], []
send_to_user, start_lookup = shown.append, lookups.append
""",
    "profiles.md": _MEMORIES,
    "prompt-caching.md": "text = 'You are a support assistant.\\n' * 300 + 'Today is Monday.\\n'",
    "providers.md": """
from membrane import (ContextCompiler, MemoryItem, anthropic_request, bedrock_converse_request,
                      gemini_request, openai_request, openai_responses_request)
result = ContextCompiler(8192, "anthropic/claude-opus-5-5", "Rules.").compile(
    [MemoryItem(id="1", content="User is in Lagos.")], "What time zone am I in?")
conversation_id = "conv-42"
""",
    "state.md": "from typing import Protocol\nfrom membrane import InMemoryStateStore\n"
    + _MEMORIES,
    "tokenizers.md": "",  # set up by the fixture below: it needs files on disk
}

# Pages whose examples need the CrewAI environment, and the given names they use.
CREWAI_GIVENS = """
from crewai import Agent, Task
from tests.adapters.crewai.test_crewai import CitingLLM
from membrane import MemoryItem
agent = Agent(role="Support agent", goal="Answer with citations", backstory="A shop.",
              llm=CitingLLM(model="citing"), verbose=False)
task = Task(description="How long do refunds in region 2 take?", expected_output="days",
            agent=agent)
memories = [MemoryItem(id="policy-2", content="Policy 2: refunds in region 2 take 5 days.")]
"""


def _blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(encoding="utf-8"), re.S)


def _needs_crewai(block: str) -> bool:
    return bool(re.search(r"^from crewai|^import crewai", block, re.M))


def _pages() -> list[str]:
    return sorted(p.name for p in DOCS.glob("*.md") if _blocks(p.name))


def test_every_page_with_examples_is_known() -> None:
    # A new page with examples must say here what its prose assumes (or assume nothing).
    assert set(_pages()) <= set(GIVENS) | {
        "backend.md",
        "cli.md",
        "errors.md",
        "lod.md",
        "longform.md",
        "recall_tool.md",
    }


@pytest.fixture
def tokenizer_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """models/tokenizer.model (SentencePiece), models/llama/ (Hugging Face) and my_tokenizer."""
    import sentencepiece
    from transformers import PreTrainedTokenizerFast

    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    corpus = [f"the refund for order {i} takes {i % 9} days in region {i % 5}" for i in range(300)]
    (tmp_path / "models" / "llama").mkdir(parents=True)
    (tmp_path / "corpus.txt").write_text("\n".join(corpus), encoding="utf-8")
    sentencepiece.SentencePieceTrainer.train(
        input=str(tmp_path / "corpus.txt"),
        model_prefix=str(tmp_path / "models" / "tokenizer"),
        vocab_size=60,
        model_type="bpe",
        minloglevel=2,
    )
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(corpus, trainers.WordLevelTrainer(special_tokens=["[UNK]"]))
    tok.save(str(tmp_path / "models" / "llama" / "tokenizer.json"))
    PreTrainedTokenizerFast(tokenizer_object=tok).save_pretrained(
        str(tmp_path / "models" / "llama")
    )
    monkeypatch.chdir(tmp_path)
    yield {"my_tokenizer": tok}


def _run(page: str, blocks: list[str], namespace: dict[str, Any]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for i, block in enumerate(blocks):
            exec(compile(block, f"docs/{page} (example {i + 1})", "exec"), namespace)
    return out.getvalue()


@pytest.mark.parametrize("page", _pages())
def test_the_examples_of_a_page_run(
    page: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    if page == "tokenizers.md":
        namespace.update(request.getfixturevalue("tokenizer_files"))
    if page == "state.md":
        import redis

        url = request.getfixturevalue("redis_url")
        real = redis.Redis.from_url
        monkeypatch.setattr(redis.Redis, "from_url", lambda _u, **kw: real(url, **kw))
        namespace["url"] = url  # "the URL of your Redis"
        import redis.cluster

        nodes = request.getfixturevalue("cluster_url")
        real_cluster = redis.cluster.RedisCluster.from_url
        monkeypatch.setattr(
            redis.cluster.RedisCluster, "from_url", lambda _u, **kw: real_cluster(nodes, **kw)
        )
    exec(GIVENS.get(page, ""), namespace)
    _run(page, [b for b in _blocks(page) if not _needs_crewai(b)], namespace)
    if page == "interrupt-protocol.md":
        assert namespace["lookups"] == ["user's timezone"]
        assert "".join(namespace["shown"]) == "Checking. One moment."
    if page == "state.md":
        assert namespace["result"].ref_map == {1: "a", 2: "b", 3: "c"}


# CrewAI's import chain warns (not our warnings; the adapter tests ignore the same ones).
@pytest.mark.filterwarnings(*CREWAI_WARNINGS)
def test_the_crewai_examples_run() -> None:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(CREWAI_GIVENS, namespace)
    _run("adapters.md", [b for b in _blocks("adapters.md") if _needs_crewai(b)], namespace)
    assert namespace["prompt"].ref_map == {1: "policy-2"}
    assert "5 days [Mem:1]" in str(namespace["result"].raw)


# Each environment collects only the tests it can run (a skipped test would hide a gap).
if CREWAI_ENV:
    del test_the_examples_of_a_page_run, test_every_page_with_examples_is_known
else:
    del test_the_crewai_examples_run
