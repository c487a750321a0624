"""Seeded, deterministic conversations for the suites.

A scenario is a scripted chat: every strategy sees the same system prompt, the same user turns,
the same retrieved memories and the same assistant replies (the replies never depend on what a
strategy sent, so histories stay identical). Each turn may carry probes: codes that must be in
the prompt for the question to be answerable, tagged by where the code lives (memory, history,
tool result or paste).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from benchmarks._text import Fact, TextFactory
from benchmarks._tokens import count_text

__all__ = [
    "HARD_SCENARIOS",
    "Memory",
    "Probe",
    "Scenario",
    "ScenarioSpec",
    "Turn",
    "build_scenario",
]

PROBE_KINDS = ("memory", "history", "tool", "paste")
MemoryKind = Literal["semantic", "episodic", "procedural"]


@dataclass(frozen=True, slots=True)
class Probe:
    """A code the prompt must contain for this turn's question to be answerable."""

    code: str
    kind: str


@dataclass(frozen=True, slots=True)
class Memory:
    """A retrieved memory as the retriever hands it over (rank = position in the turn's list)."""

    id: str
    content: str
    memory_type: MemoryKind = "semantic"
    priority: int = 2


@dataclass(frozen=True, slots=True)
class Turn:
    """One user turn: what was retrieved, what the user says, and the scripted reply after it."""

    memories: tuple[Memory, ...]
    user_message: str
    probes: tuple[Probe, ...]
    reply: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Scenario:
    """A whole scripted conversation with its budget."""

    name: str
    title: str
    seed: int
    budget: int
    system_prompt: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class ScenarioSpec:
    """The knobs a scenario generator is built from."""

    name: str
    title: str
    turns: int
    budget: int
    system_tokens: int = 400
    memories: tuple[int, int] = (4, 4)
    fresh_memories: bool = False
    ask: dict[str, float] = field(default_factory=lambda: {"history": 1.0})
    distance: tuple[int, int] = (3, 30)
    statement_style: str = "plain"
    question_style: str = "direct"
    statements: tuple[int, int] = (1, 1)
    tool_rate: float = 0.0
    paste_turns: tuple[int, ...] = ()
    paste_tokens: int = 2500
    two_fact: bool = False
    filler: tuple[int, int] = (2, 4)
    reply_sentences: tuple[int, int] = (7, 14)


HARD_SCENARIOS: dict[str, ScenarioSpec] = {
    spec.name: spec
    for spec in (
        ScenarioSpec(
            "long_chat",
            "80-turn chat, facts asked up to 30 turns later",
            turns=80,
            budget=6000,
            distance=(3, 30),
        ),
        ScenarioSpec(
            "tool_calls",
            "Tool calls, facts in old tool results",
            turns=40,
            budget=6000,
            tool_rate=0.5,
            ask={"tool": 0.6, "history": 0.4},
        ),
        ScenarioSpec(
            "memory_many",
            "Up to 40 memories per turn, needed one at a random rank",
            turns=40,
            budget=6000,
            memories=(10, 40),
            ask={"memory": 0.6, "history": 0.4},
        ),
        ScenarioSpec(
            "two_fact",
            "Every answer needs a memory fact and a history fact",
            turns=40,
            budget=6000,
            memories=(6, 10),
            two_fact=True,
        ),
        ScenarioSpec(
            "pastes",
            "Three 2,500-token pastes",
            turns=30,
            budget=6000,
            paste_turns=(2, 9, 16),
            ask={"paste": 0.5, "history": 0.5},
            distance=(2, 25),
        ),
        ScenarioSpec(
            "tight_budget",
            "3,000-token budget",
            turns=40,
            budget=3000,
            memories=(5, 5),
            ask={"history": 0.75, "memory": 0.25},
            distance=(3, 15),
        ),
        ScenarioSpec(
            "memory_flood_paraphrase",
            "Memory flood with paraphrased questions",
            turns=40,
            budget=6000,
            memories=(30, 40),
            ask={"memory": 0.5, "history": 0.5},
            question_style="paraphrase",
        ),
        ScenarioSpec(
            "big_budget",
            "24,000-token budget",
            turns=40,
            budget=24000,
            memories=(8, 8),
            ask={"history": 0.6, "memory": 0.4},
            distance=(3, 30),
        ),
        ScenarioSpec(
            "two_sentence",
            "History fact spread over two sentences of one message",
            turns=40,
            budget=6000,
            memories=(5, 5),
            statement_style="two_sentence",
        ),
        ScenarioSpec(
            "spread_varied",
            "History fact over two or three sentences, varied wording",
            turns=40,
            budget=6000,
            memories=(5, 5),
            statement_style="spread",
        ),
        ScenarioSpec(
            "spread_paraphrased",
            "The same, asked for in other words",
            turns=40,
            budget=6000,
            memories=(5, 5),
            statement_style="spread",
            question_style="paraphrase",
        ),
    )
}


def _tier(rng: random.Random) -> tuple[MemoryKind, int]:
    roll = rng.random()
    if roll < 0.7:
        return "semantic", 2
    if roll < 0.95:
        return "episodic", 3
    return "procedural", 1


def build_scenario(spec: ScenarioSpec, seed: int) -> Scenario:
    """Generate ``spec``'s conversation for ``seed`` (same spec and seed give the same text)."""
    # The seed is mixed with the scenario name so two scenarios never share their text.
    rng = random.Random(f"{spec.name}:{seed}")
    text = TextFactory(rng)
    system = text.system_prompt(spec.system_tokens, count_text)

    # Facts in history, tool results and pastes wait here until asked: (fact, turn stated).
    waiting: dict[str, list[tuple[Fact, int]]] = {"history": [], "tool": [], "paste": []}
    memory_pool: list[Memory] = []
    next_memory = 0
    turns: list[Turn] = []

    def new_memory(content: str) -> Memory:
        nonlocal next_memory
        next_memory += 1
        kind, priority = _tier(rng)
        return Memory(
            id=f"m{seed}-{next_memory:04d}", content=content, memory_type=kind, priority=priority
        )

    def take(kind: str, t: int) -> Fact | None:
        # Draw the distance first and ask only a fact stated about that long ago (two turns
        # either way), so distances are spread evenly over the range; early turns, which cannot
        # reach far back, then ask less often instead of skewing every scenario to short gaps.
        lo, hi = spec.distance
        d = rng.randint(lo, hi)
        for offset in (0, 1, -1, 2, -2):
            said_at = t - d - offset
            if not lo <= t - said_at <= hi:
                continue
            at = [i for i, (_, said) in enumerate(waiting[kind]) if said == said_at]
            if at:
                fact, _ = waiting[kind].pop(rng.choice(at))
                return fact
        return None

    for t in range(spec.turns):
        probes: list[Probe] = []
        parts: list[str] = []
        question: str | None = None
        needed_memory: Memory | None = None

        if spec.two_fact:
            hist = take("history", t)
            if hist is not None:
                mem_fact = text.fact()
                needed_memory = new_memory(text.memory_text(mem_fact))
                question = text.two_fact_question(mem_fact, hist)
                probes += [Probe(mem_fact.code, "memory"), Probe(hist.code, "history")]
        else:
            kinds = list(spec.ask)
            weights = [spec.ask[k] for k in kinds]
            first = rng.choices(kinds, weights)[0]
            for kind in [first, *[k for k in kinds if k != first]]:
                if kind == "memory":
                    fact = text.fact()
                    needed_memory = new_memory(text.memory_text(fact))
                else:
                    got = take(kind, t)
                    if got is None:
                        continue
                    fact = got
                question = text.question(fact, spec.question_style, source=kind)
                probes.append(Probe(fact.code, kind))
                break

        user_extra = ""
        if t in spec.paste_turns:
            facts = [text.fact() for _ in range(3)]
            doc_kind, body = text.paste(facts, spec.paste_tokens, count_text)
            user_extra = f"Here is the {doc_kind} I mentioned, keep it handy:\n\n{body}"
            waiting["paste"] += [(f, t) for f in facts]
        else:
            for _ in range(rng.randint(*spec.statements)):
                fact = text.fact()
                parts.append(text.statement(fact, spec.statement_style))
                waiting["history"].append((fact, t))

        tool_facts: list[Fact] = []
        if spec.tool_rate and rng.random() < spec.tool_rate:
            tool_facts = [text.fact() for _ in range(2 if rng.random() < 0.25 else 1)]
            names = " and ".join(f.entity for f in tool_facts)
            parts.append(f"Can you pull up the record for {names}?")

        message = text.user_message(parts, question, rng.randint(*spec.filler))
        if user_extra:
            message = f"{message}\n\n{user_extra}" if message else user_extra

        turns.append(
            Turn(
                memories=tuple(_retrieve(spec, rng, text, memory_pool, needed_memory, new_memory)),
                user_message=message,
                probes=tuple(probes),
                reply=tuple(_reply(spec, rng, text, tool_facts, bool(probes))),
            )
        )
        waiting["tool"] += [(f, t) for f in tool_facts]

    return Scenario(spec.name, spec.title, seed, spec.budget, system, tuple(turns))


def _retrieve(
    spec: ScenarioSpec,
    rng: random.Random,
    text: TextFactory,
    pool: list[Memory],
    needed: Memory | None,
    new_memory: Any,
) -> list[Memory]:
    """This turn's retrieved memories: some seen before, some new, the needed one at any rank."""
    n = rng.randint(*spec.memories)
    others = n - 1 if needed is not None else n
    out: list[Memory] = []
    if not spec.fresh_memories and pool:
        out += rng.sample(pool, min(len(pool), others // 2))
    while len(out) < others:
        # Most memories are facts like the ones asked for; a quarter are user preferences.
        fact_like = rng.random() < 0.75
        content = text.memory_text(text.fact()) if fact_like else text.preference_memory()
        memory = new_memory(content)
        pool.append(memory)
        out.append(memory)
    rng.shuffle(out)
    if needed is not None:
        out.insert(rng.randint(0, len(out)), needed)
    return out


def _reply(
    spec: ScenarioSpec,
    rng: random.Random,
    text: TextFactory,
    tool_facts: list[Fact],
    answering: bool,
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if tool_facts:
        calls_and_results = [text.tool_call(f) for f in tool_facts]
        out.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call for call, _ in calls_and_results],
            }
        )
        for call, result in calls_and_results:
            out.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        summary = "I found the record" + ("s" if len(tool_facts) > 1 else "") + "; the full "
        summary += "details are in the lookup result above."
        out.append({"role": "assistant", "content": f"{summary} {text.reply(1)}"})
        return out
    out.append(
        {"role": "assistant", "content": text.reply(rng.randint(*spec.reply_sentences), answering)}
    )
    return out


def with_budget(spec: ScenarioSpec, budget: int) -> ScenarioSpec:
    """``spec`` with another budget (the name records it)."""
    return replace(spec, budget=budget)
