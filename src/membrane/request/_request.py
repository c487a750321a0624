"""One compile's arguments as the caller gave them, and the typed request they normalise to.

:class:`CompileArgs` groups the keywords of :meth:`~membrane.ContextCompiler.compile` (the seed's
flat spelling) into a few records; :func:`normalise` checks them once and returns the
:class:`CompileRequest` every stage reads. Normalising does no I/O and runs no caller code: the
state store is read, and a caller's compressor runs, after it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from membrane.capabilities import ModelCapabilities
from membrane.messages import (
    CheckedPrefix,
    HistoryVersion,
    Message,
    check_history,
    leading_unit,
)
from membrane.request._checks import check_compressor, check_message_counts, check_turn_texts
from membrane.request._offer import normalise_offer
from membrane.request._settings import CompilerSettings
from membrane.request._turn import TurnSplit, fit_steps, split_turn, wants_turn
from membrane.stages.agent import AgentInputs, agent_inputs
from membrane.stages.history import Writers, check_speakers
from membrane.stages.layout import ContextLayoutEngine
from membrane.stages.turn import memory_room
from membrane.stages.values import (
    NO_STEPS,
    Budget,
    CallOptions,
    HistoryRequest,
    Offer,
    TurnSteps,
    TurnText,
)
from membrane.state.keys import DEFAULT_CONVERSATION
from membrane.tokenizers import counted_budget

if TYPE_CHECKING:
    from membrane.profile import QueryLabel
    from membrane.stages.preflight import SyncCompressor
    from membrane.tokenizers import MemoizedCounter

__all__ = [
    "AgentArgs",
    "CompileArgs",
    "CompileRequest",
    "HistoryArgs",
    "MemoryArgs",
    "TurnArgs",
    "normalise",
]


@dataclass(frozen=True, slots=True)
class TurnArgs:
    """The turn's texts: the question and what frames it."""

    user_message: str = ""
    last_assistant_turn: str | None = None
    agent_persona_prompt: str | None = None
    dynamic_directives: str | Sequence[str] | None = None
    #: The history's last question is this turn's, continued (None: when it ends in results).
    continue_turn: bool | None = None


@dataclass(frozen=True, slots=True)
class MemoryArgs:
    """What is on offer for the middle: memory records, extras, and how to shorten them."""

    memories: Sequence[object] = ()
    tier_by_memory_id: Mapping[int, int] | None = None
    middle_extras: Sequence[tuple[str, int]] | None = None
    compress_sync: SyncCompressor | None = None


@dataclass(frozen=True, slots=True)
class HistoryArgs:
    """The conversation so far and what the caller vouches for about it."""

    messages: Sequence[Message] | None = None
    version: HistoryVersion | None = None
    counts: Sequence[int | None] | None = None
    new_session: bool = False
    speakers: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class AgentArgs:
    """An agent request's other inputs: tool definitions, image sizes, the output reserve."""

    tools: Sequence[Mapping[str, Any]] | None = None
    image_sizes: Mapping[str, tuple[int, int]] | None = None
    reserve_output_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class CompileArgs:
    """Every argument of one compile, grouped, as given."""

    turn: TurnArgs
    memories: MemoryArgs
    history: HistoryArgs
    agent: AgentArgs
    options: CallOptions


@dataclass(frozen=True, slots=True)
class CompileRequest:
    """One compile's inputs, checked: what each stage reads."""

    history: HistoryRequest
    text: TurnText
    #: The memories and extras on offer, before a caller's compressor runs.
    offer: Offer
    agent: AgentInputs
    options: CallOptions
    budget: Budget
    label: QueryLabel | None
    #: The profile has policies whose outcome the report carries.
    report_policies: bool
    #: A continued turn's steps after its question (none for a new question).
    steps: TurnSteps = NO_STEPS


def normalise(
    args: CompileArgs,
    settings: CompilerSettings,
    counter: MemoizedCounter,
    scale: tuple[float, int],
    proofs: Callable[[str], CheckedPrefix | None],
) -> CompileRequest:
    """Check ``args`` and build the request.

    ``scale`` is the model's token scale and how many observations shaped it; ``proofs`` gives
    what a conversation's last validated history proved (see
    :func:`membrane.messages.check_history`), asked once the conversation id is checked.
    """
    options, history = args.options, args.history
    conversation = _checked(args)
    writers = Writers.from_speakers(check_speakers(history.speakers))
    messages, proof, read = check_history(history.messages, proofs(conversation), history.version)
    counts = read.fold_counts(check_message_counts(history.counts, _given(history)))
    split = None
    if wants_turn(args.turn.continue_turn, args.turn.user_message, messages):
        split = split_turn(messages)
        messages, counts = split.earlier, counts[: split.at] if counts is not None else None
        args = replace(args, turn=replace(args.turn, user_message=split.question))
    turn = args.turn
    profile = options.profile
    label = profile.classify(turn.user_message, messages) if profile is not None else None
    # One capability lookup per compile: the context cap here, caching in the metadata.
    capabilities = settings.capabilities()
    agent = agent_inputs(
        tools=args.agent.tools,
        image_sizes=args.agent.image_sizes,
        reserve_output_tokens=args.agent.reserve_output_tokens,
        capabilities=capabilities,
        model_id=settings.model_id,
        count=counter.count,
    )
    offer = _offer(args, settings, label)
    text = _text(turn, settings, messages)
    budget = _budget(agent, settings.max_tokens, counter, scale, capabilities)
    return CompileRequest(
        history=HistoryRequest(
            messages=messages,
            conversation=conversation,
            counts=counts,
            proof=proof,
            new_session=history.new_session,
            writers=writers,
            pinned=leading_unit(messages) if read.boundary is not None else 0,
            boundary=read.boundary,
        ),
        text=text,
        offer=offer,
        agent=agent,
        options=options,
        budget=budget,
        label=label,
        report_policies=profile is not None and bool(profile.policies or profile.must_include),
        steps=_steps(split, text, budget, agent, offer, settings.message_overhead_tokens),
    )


def _steps(
    split: TurnSplit | None,
    text: TurnText,
    budget: Budget,
    agent: AgentInputs,
    offer: Offer,
    overhead: int,
) -> TurnSteps:
    """A continued turn's steps, fitted to what the core, the question and the memories'
    share (:func:`memory_room`) leave."""
    if split is None:
        return NO_STEPS
    count = budget.count
    room = budget.counted - count(text.core) - count(text.end_text) - 2 * overhead
    room -= memory_room(offer, budget)
    return fit_steps(split, room, count, overhead, agent.images.tokens)


def _checked(args: CompileArgs) -> str:
    """Check the turn's texts and the compressor; the conversation's state key."""
    turn, conversation = args.turn, args.options.conversation_id
    check_compressor(args.memories.compress_sync)
    check_turn_texts(
        turn.user_message,
        turn.agent_persona_prompt,
        turn.last_assistant_turn,
        turn.dynamic_directives,
        conversation,
    )
    return DEFAULT_CONVERSATION if conversation is None else conversation


def _given(history: HistoryArgs) -> int:
    """How many messages (or Responses items) the caller gave."""
    given = history.messages
    return len(given) if given is not None else 0


def _budget(
    agent: AgentInputs,
    max_tokens: int,
    counter: MemoizedCounter,
    scale: tuple[float, int],
    capabilities: ModelCapabilities | None,
) -> Budget:
    tokens = agent.prompt_budget(max_tokens)
    return Budget(
        counter=counter,
        tokens=tokens,
        scale=scale[0],
        scale_samples=scale[1],
        counted=max(counted_budget(tokens, scale[0]) - agent.tools_tokens, 0),
        capabilities=capabilities,
    )


def _text(turn: TurnArgs, settings: CompilerSettings, history: list[Message]) -> TurnText:
    layout = ContextLayoutEngine(
        settings.core_content,
        agent_persona_prompt=turn.agent_persona_prompt,
        include_interrupt_instruction=settings.include_interrupt_instruction,
    )
    # Without history the last reply stands in the end region.
    last = turn.last_assistant_turn if not history else None
    return TurnText(
        user_message=turn.user_message,
        layout=layout,
        core=layout.build_core(),
        end_text=layout.build_end(last, turn.user_message, turn.dynamic_directives),
        last_assistant_turn=turn.last_assistant_turn,
        directives=turn.dynamic_directives,
    )


def _offer(args: CompileArgs, settings: CompilerSettings, label: QueryLabel | None) -> Offer:
    memories = args.memories
    return normalise_offer(
        memories.memories,
        memories.tier_by_memory_id,
        args.options.profile,
        args.turn.user_message,
        memories.middle_extras,
        label,
        settings.text_caps,
    )
