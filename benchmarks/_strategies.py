"""The strategies under test, each behind one small adapter.

Every adapter gets the same inputs per turn (system prompt, retrieved memories in retriever
order, the history so far as OpenAI-shape messages, the user turn) and the same budget, and
returns the OpenAI-shape messages it would send. Peers are the real packages, run with their
documented defaults; where a default would make a careful user's request invalid, the knob a
careful user sets is set and named in ``description``.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._providers import openai_to_anthropic
from benchmarks._scenarios import Memory, Scenario, Turn
from benchmarks._tokens import FRAMING_TOKENS, count_message, count_text, encode_fresh

__all__ = [
    "ALL_STRATEGIES",
    "ANTHROPIC_MODEL",
    "OPENAI_MODEL",
    "Built",
    "Strategy",
    "StrategyUnavailable",
    "make_strategy",
    "membrane_sessions",
    "membrane_speakers",
    "membrane_speakers_embed",
    "membrane_speakers_static",
    "memory_block",
    "shared_local_embedder",
]

OPENAI_MODEL = "openai/gpt-4o"
ANTHROPIC_MODEL = "anthropic/claude-sonnet-4.5"
PRIOMPT_DIR = Path(__file__).resolve().parent / "priompt_node"


class StrategyUnavailable(RuntimeError):
    """The strategy cannot run here (a package or ``node`` is missing); the row is skipped."""


@dataclass(slots=True)
class Built:
    """What a strategy sends for one turn."""

    messages: list[dict[str, Any]]
    compile_ns: int
    anthropic: dict[str, Any] | None = None
    error: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    # CPU time of the process during the timed compile (Membrane strategies only).
    cpu_ns: int | None = None


def memory_block(memories: tuple[Memory, ...] | list[Memory]) -> str:
    """How peers show retrieved memories: a list appended to the system prompt (RAG style)."""
    if not memories:
        return ""
    return "\n\nRelevant memories:\n" + "\n".join(f"- {m.content}" for m in memories)


class Strategy:
    """Base adapter; ``start`` is called once per scenario run, ``build`` once per turn."""

    name = ""
    label = ""
    description = ""
    # None of the peers emits cache_control, so their Anthropic requests carry no markers.
    # Adding the usual two by hand would not help them: with memories in the system message the
    # marked prefixes change every turn, so they would pay 1.25x writes that are never read.
    anthropic_markers = False
    # Set by the speed suite, which reads only the timed build: a strategy then does no
    # untimed work between builds (it would evict the timed code's data from the CPU caches,
    # which the peers' loops do not suffer).
    timing_only = False
    # True for a strategy that reads when things happen: the conversation suite then stamps
    # history messages with a "timestamp" (seconds) and sets ``now`` before each build.
    session_clock = False
    now: float | None = None
    #: Who is who (a person's name -> role); the conversation suite sets it for strategies
    #: that take it (``membrane_speakers``).
    speakers: dict[str, str] | None = None

    def start(self, scenario: Scenario) -> None:
        self.scenario = scenario

    def build(self, history: list[dict[str, Any]], turn: Turn) -> Built:
        raise NotImplementedError

    def anthropic_request(self, built: Built) -> dict[str, Any]:
        if built.anthropic is not None:
            return built.anthropic
        return openai_to_anthropic(
            built.messages, mark_system=self.anthropic_markers, mark_history=self.anthropic_markers
        )

    def close(self) -> None:
        """Release processes or connections."""


class Naive(Strategy):
    """Everything that fits: all memories in the system message, then history newest first."""

    name = "naive"
    label = "Naive loop"
    description = (
        "System prompt with the retrieved memories appended (all of them, or the best-ranked that "
        "fit), then as many of the newest history messages as fit, one message at a time, then "
        "the user turn. No tool-pair awareness."
    )
    anthropic_markers = False

    def build(self, history: list[dict[str, Any]], turn: Turn) -> Built:
        t0 = time.perf_counter_ns()
        budget = self.scenario.budget
        user = {"role": "user", "content": turn.user_message}
        reserved = count_message(user)
        kept_memories: list[Memory] = list(turn.memories)
        everything = self.scenario.system_prompt + memory_block(kept_memories)
        if count_message({"role": "system", "content": everything}) + reserved > budget:
            kept_memories = self._memories_that_fit(turn.memories, reserved)
        system = {
            "role": "system",
            "content": self.scenario.system_prompt + memory_block(kept_memories),
        }
        room = budget - count_message(system) - count_message(user)
        kept: list[dict[str, Any]] = []
        for m in reversed(history):
            cost = count_message(m)
            if cost > room:
                break
            kept.append(m)
            room -= cost
        kept.reverse()
        messages = [system, *kept, user]
        return Built(messages, time.perf_counter_ns() - t0)

    def _memories_that_fit(self, memories: tuple[Memory, ...], reserved: int) -> list[Memory]:
        kept_memories: list[Memory] = []
        for m in memories:
            text = self.scenario.system_prompt + memory_block([*kept_memories, m])
            if count_message({"role": "system", "content": text}) + reserved > self.scenario.budget:
                break
            kept_memories.append(m)
        return kept_memories


class LangChainTrim(Strategy):
    """``langchain_core.messages.trim_messages`` with the careful-user settings."""

    name = "langchain"
    label = "LangChain trim_messages"
    description = (
        'trim_messages(strategy="last", include_system=True, start_on="human", '
        "allow_partial=False), token_counter = offline cl100k plus 3 tokens per message; "
        'memories appended to the system message. start_on="human" is the documented knob '
        "that keeps a cut from starting on a tool result."
    )

    def __init__(self) -> None:
        try:
            from langchain_core.messages import (
                AIMessage,
                HumanMessage,
                SystemMessage,
                ToolMessage,
                trim_messages,
            )
            from langchain_core.messages.utils import convert_to_openai_messages
        except ImportError as exc:
            raise StrategyUnavailable(f"langchain-core is not installed ({exc})") from exc
        self._ai, self._human, self._system, self._tool = (
            AIMessage,
            HumanMessage,
            SystemMessage,
            ToolMessage,
        )
        self._trim = trim_messages
        self._to_openai = convert_to_openai_messages

    def start(self, scenario: Scenario) -> None:
        super().start(scenario)
        self._lc_history: list[Any] = []
        self._counts: dict[int, int] = {}

    def _convert(self, m: dict[str, Any]) -> Any:
        role = m["role"]
        if role == "user":
            return self._human(content=m["content"])
        if role == "tool":
            return self._tool(content=m["content"], tool_call_id=m["tool_call_id"])
        if role == "assistant":
            calls = [
                {
                    "name": c["function"]["name"],
                    "args": json.loads(c["function"]["arguments"]),
                    "id": c["id"],
                    "type": "tool_call",
                }
                for c in m.get("tool_calls") or ()
            ]
            return self._ai(content=m.get("content") or "", tool_calls=calls)
        return self._system(content=m["content"])

    def _count(self, messages: list[Any]) -> int:
        total = 0
        for msg in messages:
            n = self._counts.get(id(msg))
            if n is None:
                # Counted fresh, once per message object: the harness's shared text memo would
                # hand LangChain counts the naive baseline already paid for.
                text = msg.content if isinstance(msg.content, str) else str(msg.content)
                n = FRAMING_TOKENS + len(encode_fresh(text))
                for call in getattr(msg, "tool_calls", None) or ():
                    n += len(encode_fresh(call["name"])) + len(
                        encode_fresh(json.dumps(call["args"]))
                    )
                self._counts[id(msg)] = n
            total += n
        return total

    def build(self, history: list[dict[str, Any]], turn: Turn) -> Built:
        t0 = time.perf_counter_ns()
        # LangChain users keep their message objects across turns; convert only what is new.
        for m in history[len(self._lc_history) :]:
            self._lc_history.append(self._convert(m))
        system = self._system(content=self.scenario.system_prompt + memory_block(turn.memories))
        user = self._human(content=turn.user_message)
        trimmed = self._trim(
            [system, *self._lc_history, user],
            max_tokens=self.scenario.budget,
            token_counter=self._count,
            strategy="last",
            include_system=True,
            start_on="human",
            allow_partial=False,
        )
        elapsed = time.perf_counter_ns() - t0
        self._counts.pop(id(system), None)
        self._counts.pop(id(user), None)
        messages = _normalise(self._to_openai(trimmed))
        return Built(messages, elapsed)


def _normalise(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-shape messages with only the fields every strategy emits."""
    out: list[dict[str, Any]] = []
    for m in messages:
        clean: dict[str, Any] = {"role": m["role"], "content": m.get("content")}
        if isinstance(clean["content"], list):
            clean["content"] = "".join(
                p.get("text", "") for p in clean["content"] if isinstance(p, dict)
            )
        if m.get("tool_calls"):
            clean["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {
                        "name": c["function"]["name"],
                        "arguments": c["function"]["arguments"],
                    },
                }
                for c in m["tool_calls"]
            ]
        if m.get("tool_call_id"):
            clean["tool_call_id"] = m["tool_call_id"]
        out.append(clean)
    return out


def _llama_tokenizer() -> Callable[[str], list[int]]:
    # LlamaIndex tokenizes whole joined histories, a new string each time: no memo here.
    return encode_fresh


def _import_llama() -> Any:
    try:
        from llama_index.core import Settings
        from llama_index.core.llms import ChatMessage
        from llama_index.core.memory import ChatMemoryBuffer, Memory
    except ImportError as exc:
        raise StrategyUnavailable(f"llama-index-core is not installed ({exc})") from exc
    # LlamaIndex's global tokenizer would fetch tiktoken files on first use; hand it ours.
    Settings.tokenizer = _llama_tokenizer()
    return ChatMessage, ChatMemoryBuffer, Memory


def _to_llama(chat_message: Any, m: dict[str, Any]) -> Any:
    kwargs: dict[str, Any] = {}
    if m.get("tool_calls"):
        kwargs["tool_calls"] = m["tool_calls"]
    if m.get("tool_call_id"):
        kwargs["tool_call_id"] = m["tool_call_id"]
    return chat_message(role=m["role"], content=m.get("content") or "", additional_kwargs=kwargs)


def _from_llama(msg: Any) -> dict[str, Any]:
    role = msg.role.value if hasattr(msg.role, "value") else str(msg.role)
    out: dict[str, Any] = {"role": role, "content": msg.content or ""}
    extra = msg.additional_kwargs or {}
    if extra.get("tool_calls"):
        out["tool_calls"] = extra["tool_calls"]
    if extra.get("tool_call_id"):
        out["tool_call_id"] = extra["tool_call_id"]
    return out


class LlamaChatMemoryBuffer(Strategy):
    """``ChatMemoryBuffer`` as LlamaIndex's context chat engine drives it."""

    name = "llamaindex_buffer"
    label = "LlamaIndex ChatMemoryBuffer"
    description = (
        "ChatMemoryBuffer.from_defaults(token_limit=budget, tokenizer_fn=offline cl100k); the "
        "user turn is put first, then get(initial_token_count=tokens of the system prompt with "
        "memories), as ContextChatEngine does. The buffer counts content only, no framing."
    )

    def __init__(self) -> None:
        self._chat_message, self._buffer_cls, _ = _import_llama()

    def start(self, scenario: Scenario) -> None:
        super().start(scenario)
        self._buffer = self._buffer_cls.from_defaults(
            token_limit=scenario.budget, tokenizer_fn=_llama_tokenizer()
        )
        self._seen = 0

    def build(self, history: list[dict[str, Any]], turn: Turn) -> Built:
        t0 = time.perf_counter_ns()
        for m in history[self._seen :]:
            self._buffer.put(_to_llama(self._chat_message, m))
        self._seen = len(history) + 1
        system_text = self.scenario.system_prompt + memory_block(turn.memories)
        self._buffer.put(self._chat_message(role="user", content=turn.user_message))
        error = None
        try:
            kept = self._buffer.get(initial_token_count=count_text(system_text))
        except ValueError as exc:
            error = f"ChatMemoryBuffer.get raised: {exc}"
            kept = self._buffer.get_all()[-1:]
        elapsed = time.perf_counter_ns() - t0
        messages = [{"role": "system", "content": system_text}, *map(_from_llama, kept)]
        return Built(messages, elapsed, error=error)


class LlamaMemory(Strategy):
    """LlamaIndex's newer ``Memory`` (FIFO queue, no memory blocks), defaults but the limit."""

    name = "llamaindex_memory"
    label = "LlamaIndex Memory"
    description = (
        "Memory.from_defaults(token_limit=budget, tokenizer_fn=offline cl100k), other settings "
        "at their defaults (chat_history_token_ratio=0.7, token_flush_size=3000, no memory "
        "blocks); put() each message, get() the history, system prompt with memories in front."
    )

    def __init__(self) -> None:
        self._chat_message, _, self._memory_cls = _import_llama()

    def start(self, scenario: Scenario) -> None:
        self.close()
        super().start(scenario)
        # Memory runs its SQL store through asyncio on the thread's current loop, creating one
        # if there is none and never closing it; give it a loop of ours that close() closes.
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self._memory = self._memory_cls.from_defaults(
            session_id=f"bench-{uuid.uuid4().hex}",
            token_limit=scenario.budget,
            tokenizer_fn=_llama_tokenizer(),
        )
        self._seen = 0

    def build(self, history: list[dict[str, Any]], turn: Turn) -> Built:
        t0 = time.perf_counter_ns()
        new = [_to_llama(self._chat_message, m) for m in history[self._seen :]]
        new.append(self._chat_message(role="user", content=turn.user_message))
        self._memory.put_messages(new)
        self._seen = len(history) + 1
        kept = self._memory.get()
        elapsed = time.perf_counter_ns() - t0
        system_text = self.scenario.system_prompt + memory_block(turn.memories)
        messages = [{"role": "system", "content": system_text}, *map(_from_llama, kept)]
        return Built(messages, elapsed)

    def close(self) -> None:
        memory = getattr(self, "_memory", None)
        self._memory = None
        loop: asyncio.AbstractEventLoop | None = getattr(self, "_loop", None)
        self._loop = None
        if loop is None:
            return
        engine = getattr(getattr(memory, "sql_store", None), "_async_engine", None)
        if engine is not None:
            # The in-memory SQLite connection stays open until its engine is disposed.
            loop.run_until_complete(engine.dispose())
        asyncio.set_event_loop(None)
        loop.close()


class PriomptNode(Strategy):
    """The real Priompt 0.2.1 renderer through a long-lived Node process."""

    name = "priompt"
    label = "Priompt (Node, @impowering/priompt 0.2.1)"
    description = (
        "render() with tokenLimit=budget and Priompt's own cl100k tokenizer; one scope per "
        "conversation turn (newer turns ranked higher), each memory its own scope ranked above "
        "all history in retriever order, system prompt and user turn always kept."
    )

    def __init__(self) -> None:
        ensure_priompt()
        self._proc: subprocess.Popen[str] | None = None

    def _process(self) -> subprocess.Popen[str]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                ["node", str(PRIOMPT_DIR / "driver.js")],
                cwd=PRIOMPT_DIR,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                bufsize=1,
            )
            atexit.register(self.close)
        return self._proc

    def build(self, history: list[dict[str, Any]], turn: Turn) -> Built:
        turns: list[list[dict[str, Any]]] = []
        for m in history:
            if m["role"] == "user" or not turns:
                turns.append([])
            turns[-1].append(m)
        request = {
            "budget": self.scenario.budget,
            "system": self.scenario.system_prompt
            + ("\n\nRelevant memories:" if turn.memories else ""),
            "memories": [f"- {m.content}" for m in turn.memories],
            "turns": turns,
            "user": turn.user_message,
        }
        proc = self._process()
        assert proc.stdin is not None and proc.stdout is not None
        t0 = time.perf_counter_ns()
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        elapsed = time.perf_counter_ns() - t0
        if not line:
            raise RuntimeError("the Priompt driver exited; run it by hand to see its error")
        reply = json.loads(line)
        if "error" in reply:
            return Built(
                [{"role": "user", "content": turn.user_message}],
                elapsed,
                error=reply["error"].splitlines()[0],
            )
        messages = _normalise(reply["messages"])
        return Built(messages, elapsed, info={"priompt_tokens": reply["tokenCount"]})

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def ensure_priompt() -> None:
    """Install the pinned Priompt in ``benchmarks/priompt_node`` if needed, or say why not."""
    if shutil.which("node") is None:
        raise StrategyUnavailable("`node` is not on PATH; install Node.js 18+ to run Priompt")
    if (PRIOMPT_DIR / "node_modules" / "@impowering" / "priompt").is_dir():
        return
    npm = shutil.which("npm")
    if npm is None:
        raise StrategyUnavailable("`npm` is not on PATH; it is needed once to install Priompt")
    # `npm ci` installs exactly the committed lock; some npm versions refuse it when the lock
    # lacks other platforms' optional binaries, and `npm install` still honours the lock then.
    errors = []
    for verb in ("ci", "install"):
        command = [npm, verb, "--no-audit", "--no-fund"]
        done = subprocess.run(command, cwd=PRIOMPT_DIR, capture_output=True, text=True, check=False)
        if done.returncode == 0:
            return
        errors.append(f"`npm {verb}`: {done.stderr.strip()[-200:]}")
    raise StrategyUnavailable(f"installing Priompt in {PRIOMPT_DIR} failed: " + " | ".join(errors))


class MembraneStrategy(Strategy):
    """Membrane's ``ContextCompiler``, one compiler per conversation, reused across turns."""

    # The model id of the twin compile whose Anthropic request is billed (the live suite sets
    # the model it calls).
    anthropic_model_id = ANTHROPIC_MODEL

    def __init__(self, name: str, label: str, description: str, **options: Any) -> None:
        try:
            from membrane import ContextCompiler, MemoryItem
        except ImportError as exc:
            raise StrategyUnavailable(f"membrane cannot be imported ({exc})") from exc
        builder: Callable[..., dict[str, Any]] | None
        try:
            from membrane import anthropic_request as builder
        except ImportError:
            builder = None
        self.name, self.label, self.description = name, label, description
        self._compiler_cls = ContextCompiler
        self._memory_cls = MemoryItem
        self._anthropic_request = builder
        # Mark a compile new_session=True when the cache lifetime passed since the last message.
        self.session_clock = bool(options.pop("sessions", False))
        # Pass the conversation's speakers map (set by the conversation suite) to compile.
        self.takes_speakers = bool(options.pop("speakers", False))
        self._options = options

    def start(self, scenario: Scenario) -> None:
        super().start(scenario)
        common = dict(
            max_tokens=scenario.budget,
            core_content=scenario.system_prompt,
            token_scale=1.0,
            **self._options,
        )
        self._compiler = self._compiler_cls(model_id=OPENAI_MODEL, **common)
        self._anthropic = None
        if (
            self._anthropic_request is not None
            and self._options.get("memory_placement", "end") == "end"
            and not self.timing_only
        ):
            self._anthropic = self._compiler_cls(model_id=self.anthropic_model_id, **common)

    def build(self, history: list[dict[str, Any]], turn: Turn) -> Built:
        memories = [
            self._memory_cls(
                id=m.id, content=m.content, memory_type=m.memory_type, priority=m.priority
            )
            for m in turn.memories
        ]
        options: dict[str, Any] = {}
        if self.session_clock:
            options["new_session"] = self._new_session(history)
        if self.takes_speakers and self.speakers:
            options["speakers"] = self.speakers
        c0, t0 = time.process_time_ns(), time.perf_counter_ns()
        result = self._compiler.compile(
            memories=memories,
            conversation_messages=history,
            user_message=turn.user_message,
            **options,
        )
        elapsed = time.perf_counter_ns() - t0
        cpu = time.process_time_ns() - c0
        anthropic = None
        if self._anthropic is not None and self._anthropic_request is not None:
            twin = self._anthropic.compile(
                memories=memories,
                conversation_messages=history,
                user_message=turn.user_message,
                **options,
            )
            anthropic = self._anthropic_request(twin)
        md = result.metadata
        info = {
            k: md.get(k)
            for k in (
                "history_messages_dropped",
                "history_messages_recalled",
                "history_index_lines",
                "segments_thinned",
                "budget_exceeded",
            )
        }
        return Built(list(result.messages), elapsed, anthropic=anthropic, info=info, cpu_ns=cpu)

    def _new_session(self, history: list[dict[str, Any]]) -> bool:
        """The provider cache expired since the last message (the 5-minute lifetime)."""
        last = history[-1].get("timestamp") if history else None
        return self.now is not None and last is not None and self.now - last > 300.0


def _membrane_defaults() -> Strategy:
    return MembraneStrategy(
        "membrane",
        "Membrane, defaults",
        "ContextCompiler(token_scale=1.0) with every other option at its default "
        '(memory_placement="end", recall_evicted_history=True).',
    )


def _membrane_cheap() -> Strategy:
    return MembraneStrategy(
        "membrane_cheap",
        "Membrane, recall_evicted_history=False",
        "Defaults with recall_evicted_history=False (the index alone carries old history).",
        recall_evicted_history=False,
    )


def _membrane_cheap_wide_index() -> Strategy:
    return MembraneStrategy(
        "membrane_cheap_wide",
        "Membrane, recall_evicted_history=False, index_share=0.25",
        "The cheap mode with twice the default index room (the index is the only carrier of "
        "dropped history there, and it sits in the cached prefix).",
        recall_evicted_history=False,
        index_share=0.25,
    )


def membrane_sessions() -> Strategy:
    """Membrane told when sessions start (the conversation suite only: it stamps the times)."""
    return MembraneStrategy(
        "membrane_sessions",
        "Membrane, sessions marked",
        "Defaults, with each history message stamped with its time and new_session=True on a "
        "request that comes more than 5 minutes after the last message (issue 18: the cut "
        "moves where the cache is cold anyway).",
        sessions=True,
    )


def membrane_speakers_embed() -> Strategy:
    """Membrane told who is who and given the local embedder (the conversation suite only)."""
    return MembraneEmbedStrategy(speakers=True)


def membrane_speakers_static() -> Strategy:
    """Membrane told who is who and given the static embedder (the conversation suite only)."""
    return MembraneEmbedStrategy(speakers=True, kind="static")


def membrane_speakers() -> Strategy:
    """Membrane told who is who (the conversation suite only: its chats name both people)."""
    return MembraneStrategy(
        "membrane_speakers",
        "Membrane, speakers named",
        "Defaults, with speakers= mapping each person's name to the role they write as, so a "
        "question naming one weighs what they wrote (issue 18).",
        speakers=True,
    )


def _membrane_system() -> Strategy:
    return MembraneStrategy(
        "membrane_system",
        'Membrane, memory_placement="system"',
        'Defaults with memory_placement="system" (core, memories, the last turn and the user '
        "turn in one system message).",
        memory_placement="system",
    )


_EMBEDDERS: dict[str, Any] = {}


def shared_local_embedder(kind: str = "local") -> Any:
    """An offline embedder (``local``: MiniLM; ``static``: WordLlama), loaded once per process.

    Each conversation still gets its own compiler, so nothing embedded for one conversation is
    reused by another; only the model load (about a second) is paid once.
    """
    if kind not in _EMBEDDERS:
        try:
            from membrane.errors import EmbedderUnavailable
            from membrane.lod import local_embedder, static_embedder
        except ImportError as exc:
            raise StrategyUnavailable(f"membrane.lod cannot be imported ({exc})") from exc
        try:
            model = local_embedder() if kind == "local" else static_embedder()
            model.load()
        except EmbedderUnavailable as exc:
            raise StrategyUnavailable(str(exc)) from exc
        _EMBEDDERS[kind] = model
    return _EMBEDDERS[kind]


class _ConversationVectors:
    """One conversation's vectors, shared by its OpenAI compiler and its untimed Anthropic twin.

    The timed compile runs first each turn and pays for every new text; the twin then finds
    them here instead of running the model a second time (it would double the suite's time and
    change nothing that is measured).
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self.vectors: dict[str, list[float]] = {}

    def __call__(self, texts: list[str]) -> list[list[float]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, self.model(missing), strict=True))
        return [self.vectors[t] for t in texts]


_EMBED_DESCRIPTION = (
    "embedder=membrane.lod.local_embedder() (all-MiniLM-L6-v2 int8 ONNX, one thread): "
    "similarity to the question is a third vote in rank fusion for memories and recalled "
    "passages, and the dropped passages closest to the question come back after the word "
    "matches. Needs the embed extra."
)


_STATIC_DESCRIPTION = (
    "embedder=membrane.lod.static_embedder() (WordLlama l2_supercat, 256 dimensions, the "
    "mean of its tokens' vectors), used as the local embedder is. Needs the static extra."
)


class MembraneEmbedStrategy(MembraneStrategy):
    """Membrane with an offline embedder; each conversation starts with no vectors."""

    def __init__(self, speakers: bool = False, kind: str = "local") -> None:
        model = shared_local_embedder(kind)
        if kind == "static":
            super().__init__(
                "membrane_speakers_static" if speakers else "membrane-static",
                "Membrane, speakers and static embedder" if speakers else "Membrane, static",
                ("Defaults with speakers= and " if speakers else "Defaults plus ")
                + _STATIC_DESCRIPTION,
                speakers=speakers,
            )
        elif speakers:
            super().__init__(
                "membrane_speakers_embed",
                "Membrane, speakers and embedder",
                "Defaults with speakers= (each person's name and role) and " + _EMBED_DESCRIPTION,
                speakers=True,
            )
        else:
            super().__init__(
                "membrane-embed",
                "Membrane, embedder=local_embedder()",
                "Defaults plus " + _EMBED_DESCRIPTION,
            )
        self._model = model

    def start(self, scenario: Scenario) -> None:
        self._options["embedder"] = _ConversationVectors(self._model)
        super().start(scenario)


ALL_STRATEGIES: dict[str, Callable[[], Strategy]] = {
    "naive": Naive,
    "langchain": LangChainTrim,
    "llamaindex_buffer": LlamaChatMemoryBuffer,
    "llamaindex_memory": LlamaMemory,
    "priompt": PriomptNode,
    "membrane": _membrane_defaults,
    "membrane_cheap": _membrane_cheap,
    "membrane_cheap_wide": _membrane_cheap_wide_index,
    "membrane_system": _membrane_system,
    "membrane-embed": MembraneEmbedStrategy,
    "membrane-static": lambda: MembraneEmbedStrategy(kind="static"),
}


def make_strategy(name: str) -> Strategy:
    """Instantiate a strategy by name; raises StrategyUnavailable when it cannot run here."""
    if name not in ALL_STRATEGIES:
        known = ", ".join(ALL_STRATEGIES)
        raise ValueError(f"unknown strategy {name!r}; choose from {known}")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return ALL_STRATEGIES[name]()
