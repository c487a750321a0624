"""An embedder on an executor: vectors made as messages arrive, a compile that never waits long."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from membrane import ContextCompiler
from membrane.errors import InvalidInputError
from membrane.text.semantic import SemanticRanker, check_background
from tests.stages.test_meaning_recall import TopicEmbedder, _history

QUESTION = "Which places has Omar visited?"


class Background(TopicEmbedder):
    """The topic model on an executor; it can be held back, and records the threads it ran on."""

    def __init__(self, executor: Any, wait_seconds: float | None = 0.01) -> None:
        super().__init__()
        self.executor = executor
        self.wait_seconds = wait_seconds
        self.release = threading.Event()
        self.release.set()
        self.threads: set[str] = set()

    def __call__(self, texts: list[str]) -> Sequence[Sequence[float]]:
        self.release.wait(10)
        self.threads.add(threading.current_thread().name)
        return super().__call__(texts)


def _compiler(embedder: Any) -> ContextCompiler:
    return ContextCompiler(
        400, model_id="openai/gpt-4o", include_interrupt_instruction=False, embedder=embedder
    )


def _ask(compiler: ContextCompiler, history: list[dict[str, Any]], question: str) -> Any:
    return compiler.compile([], question, conversation_messages=history, conversation_id="c")


@pytest.fixture
def pool() -> Any:
    executor = ThreadPoolExecutor(1, thread_name_prefix="embed")
    yield executor
    executor.shutdown(wait=True, cancel_futures=True)


def test_a_compile_waits_at_most_the_bound_then_ranks_by_words_and_says_so(pool: Any) -> None:
    embedder = Background(pool, wait_seconds=0.05)
    embedder.release.clear()  # the model is busy: nothing it is given finishes
    compiler = _compiler(embedder)
    t0 = time.perf_counter()
    held = _ask(compiler, _history(), QUESTION)
    elapsed = time.perf_counter() - t0
    words = _ask(_compiler(None), _history(), QUESTION)
    assert held.messages == words.messages  # exactly what word matching alone sends
    assert held.metadata["semantic_vectors_pending"] > 0
    assert "semantic_ranking" not in held.metadata
    assert elapsed < 2.0  # the bound (0.05 s) plus the compile itself, far from the model's 10 s
    embedder.release.set()
    pool.submit(lambda: None).result()  # what was handed over is done
    ready = _ask(compiler, _history(), QUESTION)
    synchronous = _ask(_compiler(TopicEmbedder()), _history(), QUESTION)
    assert ready.messages == synchronous.messages
    assert ready.metadata["semantic_ranking"] is True
    assert "semantic_vectors_pending" not in ready.metadata


def test_waiting_as_long_as_it_takes_gives_the_synchronous_bytes_every_turn(pool: Any) -> None:
    history = _history()
    background = _compiler(Background(pool, wait_seconds=None))
    synchronous = _compiler(TopicEmbedder())
    for turn in range(20, len(history), 4):
        question = QUESTION if turn % 8 == 0 else "What did you cook lately?"
        assert (
            _ask(background, history[:turn], question).messages
            == _ask(synchronous, history[:turn], question).messages
        )


def test_passages_are_embedded_as_messages_arrive_not_when_asked(pool: Any) -> None:
    embedder = Background(pool)
    compiler = _compiler(embedder)
    history = _history()
    for turn in range(2, len(history) + 1, 2):  # a chat: the history grows two messages a turn
        _ask(compiler, history[:turn], "ok, and then?")
        pool.submit(lambda: None).result()  # the model call between turns
    embedded_before = len(embedder.texts)
    assert any("lisbon" in t for t in embedder.texts)  # dropped long ago, embedded on arrival
    result = _ask(compiler, history, QUESTION)
    # Only the question is embedded now, on the compiling thread: every passage was ready.
    assert embedder.texts[embedded_before:] == ["Which places has Omar visited?"]
    assert result.metadata["semantic_ranking"] is True
    assert "lisbon" in result.messages[-1]["content"]
    assert "MainThread" in embedder.threads
    assert any(t.startswith("embed") for t in embedder.threads)


def test_a_failing_background_model_falls_back_to_words_and_says_why(pool: Any) -> None:
    class Broken:
        executor = pool
        wait_seconds = None

        def __call__(self, texts: list[str]) -> Sequence[Sequence[float]]:
            raise RuntimeError("model offline")

    result = _ask(_compiler(Broken()), _history(), QUESTION)
    assert result.metadata["semantic_ranking_error"] == "RuntimeError: model offline"
    assert result.messages == _ask(_compiler(None), _history(), QUESTION).messages


def test_an_executor_that_was_shut_down_is_reported_not_raised() -> None:
    executor = ThreadPoolExecutor(1)
    executor.shutdown()
    result = _ask(_compiler(Background(executor)), _history(), QUESTION)
    assert result.metadata["semantic_ranking_error"].startswith("RuntimeError: ")
    assert result.messages == _ask(_compiler(None), _history(), QUESTION).messages


def test_a_ranker_hands_each_pending_text_over_once(pool: Any) -> None:
    embedder = Background(pool)
    embedder.release.clear()
    ranker = SemanticRanker(embedder)
    assert ranker.prefetch(["a", "b", "a"]) == 2
    assert ranker.prefetch(["a", "b", "c"]) == 1  # a and b are pending
    assert ranker.missing_after_wait(["a", "b", "c"], 0.0) == 3
    embedder.release.set()
    assert ranker.missing_after_wait(["a", "b", "c"], None) == 0
    assert ranker.prefetch(["a", "b", "c"]) == 0  # known now
    assert sorted(embedder.texts) == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("executor", "wait_seconds"),
    [("pool", 0.01), (None, -1.0), (None, float("nan")), (None, True), (None, "1")],
)
def test_background_settings_are_checked(executor: Any, wait_seconds: Any) -> None:
    with pytest.raises(InvalidInputError):
        check_background(executor, wait_seconds)
    check_background(None, None)
    check_background(None, 0)
