"""Seeded multi-session chats between two people, with facts and the questions that ask for them.

Frozen: the catalogue of facts, the statement templates, the question paraphrases and the way
they are placed are fixed before any recall work is measured on them; changing any of them
makes a new benchmark, not a better score.

The small talk between the facts is real human chat: single-session conversations between
strangers from the ``chitchat-dataset`` package (BYU PCC lab, MIT licence, pinned to 0.9.0),
one of them per session. The facts are written here, in lower-case prose, and woven into those
sessions: most in passing (appended to something the person was saying anyway), some as a
message of their own with a short reaction, and some only across several turns. Person A's
messages carry the ``user`` role and person B's the ``assistant`` role; their names are said in
the system prompt, as a chat app would.

Four kinds of question, each with the ids of the turns that hold its answer:

- ``single``: one fact stated in one turn;
- ``when``: the date of one event, stated in one turn;
- ``spread``: items stated in 2-6 turns of different sessions;
- ``open``: a fact stated in one turn or across a short exchange, asked for in words that the
  evidence does not use.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "CHITCHAT_VERSION",
    "KINDS",
    "ChatMessage",
    "Conversation",
    "Question",
    "Session",
    "build_conversation",
    "conversation_seeds",
    "split_of",
]

KINDS = ("single", "when", "spread", "open")
Kind = Literal["single", "when", "spread", "open"]
CHITCHAT_VERSION = "0.9.0"
# Conversation seeds 1..N; seeds whose position in a block of ten is 3, 6 or 9 are held out
# (30% of any run of ten). Held-out conversations are never run while developing.
HELD_OUT_POSITIONS = frozenset({3, 6, 9})


def split_of(seed: int) -> str:
    """``"heldout"`` or ``"dev"`` for conversation ``seed`` (1-based)."""
    return "heldout" if (seed - 1) % 10 + 1 in HELD_OUT_POSITIONS else "dev"


def conversation_seeds(count: int, split: str) -> list[int]:
    """The seeds among 1..count in ``split`` (``dev``, ``heldout`` or ``all``)."""
    if split not in ("dev", "heldout", "all"):
        raise ValueError(f"split must be dev, heldout or all, not {split!r}")
    return [s for s in range(1, count + 1) if split in ("all", split_of(s))]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One turn: ``id`` is its position in the whole conversation."""

    id: int
    session: int
    role: Literal["user", "assistant"]
    speaker: str
    text: str
    time: float  # seconds since the first session began


@dataclass(frozen=True, slots=True)
class Session:
    """A sitting of the chat: its date and its turns' ids (``first`` .. ``stop - 1``)."""

    index: int
    date: str
    first: int
    stop: int


@dataclass(frozen=True, slots=True)
class Question:
    """A question, the turns holding its answer, and a clue that each of those turns contains."""

    id: str
    kind: Kind
    text: str
    about: str
    evidence: tuple[int, ...]
    clues: tuple[str, ...]
    answer: str
    # The session after which it is asked in the "next session" mode.
    ask_after: int


@dataclass(frozen=True, slots=True)
class Conversation:
    seed: int
    names: tuple[str, str]
    system_prompt: str
    sessions: tuple[Session, ...]
    messages: tuple[ChatMessage, ...]
    questions: tuple[Question, ...]

    @property
    def split(self) -> str:
        return split_of(self.seed)


# --------------------------------------------------------------------------- slot values

_PEOPLE = (
    "Maria", "Jon", "Aisha", "Tom", "Lucia", "Ben", "Nadia", "Sam", "Erin", "Omar", "Clara",
    "Felix", "Yuki", "Marcus", "Ingrid", "Rafael", "Chloe", "Daniel", "Zara", "Hugo",
)  # fmt: skip
_NAMES = (
    "rosa", "tomasz", "priya", "dev", "hannah", "kofi", "ines", "mateo", "ayumi", "lars",
    "fatima", "theo", "noor", "callum", "bea", "oskar", "leila", "ravi", "greta", "sami",
)  # fmt: skip
_PET_KINDS = ("dog", "cat", "rabbit", "parrot", "tortoise", "hamster")
_PET_NAMES = (
    "pepper", "biscuit", "miso", "juniper", "pickles", "waffles", "olive", "bruno",
    "clementine", "noodle", "ziggy", "maple", "tofu", "pumpkin", "rocket", "luna",
)  # fmt: skip
_TOWNS = (
    "tulsa", "galway", "ballarat", "dundee", "spokane", "leeds", "duluth", "nanaimo",
    "bendigo", "asheville", "wollongong", "ipswich", "fresno", "limerick", "halifax", "boise",
)  # fmt: skip
_JOBS = (
    "paramedic", "dental hygienist", "sound engineer", "pastry chef", "bus driver",
    "physiotherapist", "librarian", "electrician", "court reporter", "zookeeper", "florist",
    "air traffic controller", "tattoo artist", "vet nurse", "land surveyor",
)  # fmt: skip
_DISHES = (
    "pad thai", "shakshuka", "mushroom risotto", "pho", "chicken katsu", "lasagna", "pierogi",
    "jollof rice", "fish tacos", "ramen", "paella", "dal", "gnocchi", "bibimbap",
)  # fmt: skip
_INSTRUMENTS = (
    "cello", "ukulele", "trumpet", "banjo", "saxophone", "bass guitar", "harp", "accordion",
    "violin", "drums",
)  # fmt: skip
_BOOKS = (
    "the overstory", "piranesi", "east of eden", "the remains of the day", "middlemarch",
    "a gentleman in moscow", "the name of the wind", "klara and the sun", "the goldfinch",
    "station eleven", "the secret history", "pachinko", "lonesome dove", "rebecca",
)  # fmt: skip
_BANDS = (
    "fleetwood mac", "the national", "khruangbin", "bon iver", "arctic monkeys", "big thief",
    "radiohead", "the cure", "phoebe bridgers", "tame impala", "fontaines dc", "wet leg",
    "talking heads", "haim",
)  # fmt: skip
_ALLERGIES = ("peanuts", "shellfish", "kiwi", "sesame", "strawberries", "cashews", "mustard")
_CARS = (
    "1998 volvo estate", "red honda civic", "old vw camper", "beat up corolla", "mini cooper",
    "subaru forester", "green fiat panda",
)  # fmt: skip
_DRINKS = ("oat flat white", "iced americano", "chai latte", "double espresso", "cortado")
_SPORTS = (
    "five a side football", "volleyball", "ultimate frisbee", "netball", "water polo",
    "badminton", "basketball", "field hockey",
)  # fmt: skip
_MOVIES = (
    "the princess bride", "spirited away", "jaws", "paddington 2", "alien", "amelie", "heat",
    "the grand budapest hotel", "before sunrise", "the thing",
)  # fmt: skip
_CITIES = (
    "denver", "lisbon", "montreal", "edinburgh", "osaka", "valencia", "portland", "copenhagen",
    "cape town", "wellington", "krakow", "austin", "bergen", "seville", "hanoi", "reykjavik",
)  # fmt: skip
_CLASSES = (
    "pottery", "salsa", "life drawing", "woodworking", "spanish", "sourdough baking",
    "rock climbing", "improv", "jewellery making", "photography",
)  # fmt: skip
_RACES = (
    "city half marathon", "10k fun run", "charity cycle ride", "trail marathon",
    "sprint triathlon",
)  # fmt: skip
_MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip

# --------------------------------------------------------------------------- the catalogue

# A single or when fact: slot pools, statement templates (one is drawn), question paraphrases
# (one is drawn) and the slot whose value answers the question. ``{o}`` in a question is the
# owner's name; ``{date}`` is drawn for every when fact.
_SINGLE: dict[str, tuple[dict[str, Sequence[str]], tuple[str, ...], tuple[str, ...], str]] = {
    "pet": (
        {"kind": _PET_KINDS, "pet": _PET_NAMES},
        (
            "had to take {pet} to the vet this morning, our {kind} ate half a sock again",
            "{pet} has decided my side of the bed is hers now, typical {kind} behaviour",
        ),
        (
            "What is the name of {o}'s {kind}?",
            "What is {o}'s {kind} called?",
            "What did {o} name the {kind}?",
        ),
        "pet",
    ),
    "hometown": (
        {"town": _TOWNS},
        (
            "it reminds me of {town}, where i grew up, everyone knew everyone's business",
            "back in {town} when i was a kid we used to do that every summer",
        ),
        (
            "Where did {o} grow up?",
            "Which town is {o} originally from?",
            "What place did {o} spend their childhood in?",
        ),
        "town",
    ),
    "job": (
        {"job": _JOBS},
        (
            "long shift today, being a {job} is not for the faint hearted",
            "nobody warns you how much paperwork comes with being a {job}",
        ),
        ("What does {o} do for work?", "What is {o}'s job?", "How does {o} earn a living?"),
        "job",
    ),
    "brother": (
        {"name": _NAMES[1::2]},
        (
            "my brother {name} is staying with us next week so the flat is chaos",
            "my brother {name} called, he wants to borrow the car again",
        ),
        (
            "What is the name of {o}'s brother?",
            "What is {o}'s brother called?",
            "Who is {o}'s brother?",
        ),
        "name",
    ),
    "food": (
        {"dish": _DISHES},
        (
            "honestly nothing beats {dish}, i could eat it every single day",
            "if i could only eat one thing forever it would be {dish}",
        ),
        (
            "What is {o}'s favourite food?",
            "Which dish does {o} love most?",
            "What would {o} happily eat every day?",
        ),
        "dish",
    ),
    "instrument": (
        {"instrument": _INSTRUMENTS},
        (
            "been practising the {instrument} again, the neighbours must hate me",
            "dusted off my old {instrument} last night, my fingers are so out of shape",
        ),
        (
            "What instrument does {o} play?",
            "Which instrument has {o} been practising?",
            "What does {o} play music on?",
        ),
        "instrument",
    ),
    "book": (
        {"book": _BOOKS},
        (
            "i'm halfway through {book} and i can't put it down",
            "stayed up way too late reading {book} again",
        ),
        (
            "What book is {o} reading?",
            "Which novel has {o} been reading lately?",
            "What is {o} in the middle of reading?",
        ),
        "book",
    ),
    "band": (
        {"band": _BANDS},
        (
            "been listening to {band} on repeat all week",
            "i put {band} on in the car and sang the whole way",
        ),
        (
            "Which band does {o} keep listening to?",
            "What music has {o} had on repeat?",
            "Who does {o} listen to over and over?",
        ),
        "band",
    ),
    "partner": (
        {"name": _NAMES},
        (
            "{name} and i are doing a proper dinner for our anniversary this year",
            "{name} says hi by the way, we've been together six years now, can you believe it",
        ),
        (
            "What is the name of {o}'s partner?",
            "Who is {o} in a relationship with?",
            "What is {o}'s partner called?",
        ),
        "name",
    ),
    "allergy": (
        {"food": _ALLERGIES},
        (
            "can't have anything with {food} in it, i'm allergic, found out the hard way",
            "had to send the salad back, it had {food} and my allergy is no joke",
        ),
        ("What is {o} allergic to?", "Which food can {o} not eat?", "What allergy does {o} have?"),
        "food",
    ),
    "car": (
        {"car": _CARS},
        (
            "my {car} wouldn't start again this morning",
            "took the {car} in for its service, fingers crossed it passes",
        ),
        ("What car does {o} drive?", "What kind of car does {o} have?", "What is {o}'s car?"),
        "car",
    ),
    "drink": (
        {"drink": _DRINKS},
        (
            "the cafe by work finally learned my order, a {drink} every morning",
            "i can't function before my {drink}, don't talk to me till then",
        ),
        (
            "What does {o} usually order at the cafe?",
            "What is {o}'s usual coffee order?",
            "What does {o} drink every morning?",
        ),
        "drink",
    ),
    "sport": (
        {"sport": _SPORTS},
        (
            "we lost at {sport} again on thursday but the team drinks after make up for it",
            "my knees are sore from {sport} last night, i'm getting too old for this",
        ),
        ("Which sport does {o} play?", "What team sport is {o} into?", "What does {o} play?"),
        "sport",
    ),
    "movie": (
        {"movie": _MOVIES},
        (
            "we watched {movie} for the hundredth time, still my favourite film",
            "{movie} was on tv last night, i will never get tired of that film",
        ),
        (
            "What is {o}'s favourite film?",
            "Which movie does {o} never get tired of?",
            "What film does {o} love most?",
        ),
        "movie",
    ),
}

_WHEN: dict[str, tuple[dict[str, Sequence[str]], tuple[str, ...], tuple[str, ...], str]] = {
    "move": (
        {"city": _CITIES},
        (
            "we're moving to {city} on {date}, the boxes are already taking over",
            "the flat in {city} is ours from {date}, so that's when we move",
        ),
        (
            "When is {o} moving to {city}?",
            "On what date does {o} move to {city}?",
            "When does {o}'s move to {city} happen?",
        ),
        "date",
    ),
    "wedding": (
        {"name": _NAMES},
        (
            "my cousin {name}'s wedding is on {date} and i still have nothing to wear",
            "got the invite for {name}'s wedding, it's on {date}, my cousin is actually getting "
            "married",
        ),
        (
            "When is the wedding of {o}'s cousin {name}?",
            "On what date is {o}'s cousin {name} getting married?",
            "When does {o}'s cousin {name} get married?",
        ),
        "date",
    ),
    "class": (
        {"class": _CLASSES},
        (
            "i start a {class} class on {date}, wish me luck",
            "signed up for {class} at the community centre, first session is {date}",
        ),
        (
            "When does {o}'s {class} class start?",
            "On what date is {o}'s first {class} session?",
            "When does {o} begin the {class} class?",
        ),
        "date",
    ),
    "trip": (
        {"city": _CITIES},
        (
            "flying out to {city} on {date} for a week, can't wait",
            "booked it, {city} on {date}, just me and a backpack",
        ),
        (
            "When is {o} travelling to {city}?",
            "On what date does {o} leave for {city}?",
            "When does {o}'s trip to {city} start?",
        ),
        "date",
    ),
    "concert": (
        {"band": _BANDS},
        (
            "got tickets to see {band} on {date}!!",
            "{band} are playing near us on {date} and i got two tickets",
        ),
        (
            "When is {o} seeing {band}?",
            "On what date is the {band} concert {o} is going to?",
            "When does {o} get to see {band} live?",
        ),
        "date",
    ),
    "surgery": (
        {"part": ("knee", "shoulder", "wrist", "hip", "ankle")},
        (
            "my {part} operation is booked for {date}, finally",
            "the hospital called, {date} is the day they fix my {part}",
        ),
        (
            "When is {o}'s {part} operation?",
            "On what date will {o} have surgery on the {part}?",
            "When is {o} getting the {part} fixed?",
        ),
        "date",
    ),
    "race": (
        {"race": _RACES},
        (
            "signed up for the {race} on {date}, what have i done",
            "the {race} is on {date} and i have barely trained",
        ),
        (
            "When is the {race} {o} entered?",
            "On what date does {o} do the {race}?",
            "When is {o}'s {race}?",
        ),
        "date",
    ),
    "newjob": (
        {"place": ("hospital", "bakery", "council", "bank", "school", "studio", "warehouse")},
        (
            "it's official, i start at the new {place} on {date}",
            "the {place} said yes!! first day is {date}",
        ),
        (
            "When does {o} start at the new {place}?",
            "On what date is {o}'s first day at the {place}?",
            "When does {o}'s job at the {place} begin?",
        ),
        "date",
    ),
}

# A spread category: items (one per turn, each in a different session), statement templates
# with {item} and {comment}, question paraphrases.
_SPREAD: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "family": (
        (
            "camping by the lake",
            "to the natural history museum",
            "to a pottery workshop",
            "swimming at the leisure centre",
            "strawberry picking",
            "ice skating",
            "to the aquarium",
            "on a bike ride along the canal",
            "to mini golf",
            "fossil hunting at the beach",
        ),
        (
            "took the kids {item} on saturday, {comment}",
            "we all went {item} as a family, {comment}",
        ),
        (
            "What activities has {o} done with the family?",
            "What has {o} been doing with the kids?",
            "Which outings has {o} had with the family?",
        ),
    ),
    "travel": (
        _CITIES,
        ("just got back from {item}, {comment}", "the long weekend in {item}: {comment}"),
        (
            "Which places has {o} travelled to?",
            "Where has {o} been on trips?",
            "What cities has {o} visited?",
        ),
    ),
    "reading": (
        _BOOKS,
        ("finally finished {item}, {comment}", "i read {item} in two days, {comment}"),
        (
            "Which books has {o} finished?",
            "What has {o} read?",
            "What books has {o} got through?",
        ),
    ),
    "cooking": (
        _DISHES,
        ("tried making {item} tonight, {comment}", "cooked {item} for everyone, {comment}"),
        (
            "What dishes has {o} cooked?",
            "What has {o} tried making in the kitchen?",
            "Which meals has {o} made?",
        ),
    ),
    "concerts": (
        _BANDS,
        ("saw {item} live on friday, {comment}", "the {item} gig last night, {comment}"),
        (
            "Which artists has {o} seen live?",
            "What gigs has {o} been to?",
            "Which concerts has {o} attended?",
        ),
    ),
    "fitness": (
        ("spin", "yoga", "boxing", "pilates", "aqua aerobics", "climbing", "barre", "kickboxing"),
        (
            "went to my first {item} class, {comment}",
            "tried a {item} session at the gym, {comment}",
        ),
        (
            "What kinds of exercise classes has {o} tried?",
            "Which workouts has {o} given a go?",
            "What fitness classes has {o} been to?",
        ),
    ),
}
_COMMENTS = (
    "honestly the best day we've had in ages",
    "someone cried but it was worth it",
    "completely exhausted after",
    "would do it again in a heartbeat",
    "the weather held up for once",
    "not sure i'd go back",
    "way better than i expected",
    "a bit of a disaster but a funny one",
)

# An open fact: the turns that state it (the owner's, in order; an exchange has the other
# person's reply between them), a clue word from each, and question paraphrases that share no
# content word with the statement.
_OPEN: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], str]] = {
    "career": (
        (
            "handed in my notice today. from september i'll be training to teach primary "
            "school kids",
        ),
        ("notice",),
        (
            "How is {o}'s working life about to change?",
            "What big change is {o} making at work?",
            "What's next for {o} professionally?",
        ),
        "leaving to train as a primary school teacher",
    ),
    "injury": (
        (
            "so the physio finally had a look at my ankle",
            "torn ligament. six weeks in a boot and no running till summer",
        ),
        ("physio", "ligament"),
        (
            "Is {o} dealing with any health problems?",
            "What has been wrong with {o} physically?",
            "Why has {o} had to take a break from exercise?",
        ),
        "a torn ankle ligament",
    ),
    "engaged": (
        ("they got down on one knee on the beach last night!!! i said yes obviously",),
        ("knee",),
        (
            "What happened in {o}'s love life recently?",
            "What milestone did {o} reach with a significant other?",
            "Has anything changed between {o} and the person they are dating?",
        ),
        "engaged",
    ),
    "house": (
        (
            "we got the keys today! two bedrooms, a little garden, and the kitchen actually has "
            "counter space",
        ),
        ("keys",),
        (
            "What's new with {o}'s living situation?",
            "Has {o} changed where they live?",
            "What has {o} been waiting for at home that finally came through?",
        ),
        "moved into a new place",
    ),
    "stress": (
        (
            "haven't slept properly in weeks, the deadlines keep piling up and i keep snapping "
            "at everyone",
        ),
        ("deadlines",),
        (
            "How has {o} been coping lately?",
            "What state of mind has {o} been in recently?",
            "Is {o} doing okay emotionally?",
        ),
        "stressed and sleeping badly",
    ),
    "twins": (
        ("my sister just had twins!! two tiny girls, i'm officially the fun relative now",),
        ("twins",),
        (
            "Did {o}'s family grow recently?",
            "What happy news came from {o}'s relatives?",
            "Has anyone close to {o} had a baby?",
        ),
        "a sister had twin girls",
    ),
    "saving": (
        (
            "we're saving every penny for the deposit, no takeaways and no new clothes till "
            "next year",
        ),
        ("deposit",),
        (
            "How is {o} handling money at the moment?",
            "What is {o} doing about spending?",
            "Is {o} on a budget?",
        ),
        "saving hard for a deposit",
    ),
    "volunteer": (
        (
            "guess where i spend my saturday mornings now",
            "ha no. walking dogs at the animal shelter, i missed having one around",
        ),
        ("saturday", "shelter"),
        (
            "How does {o} give back to the community?",
            "What does {o} do to help others in spare time?",
            "What unpaid work has {o} taken on?",
        ),
        "volunteers at an animal shelter",
    ),
    "smoking": (
        ("day thirty without a cigarette. the patches help but i still want one after dinner",),
        ("cigarette",),
        (
            "What habit is {o} trying to break?",
            "What is {o} giving up?",
            "Is {o} trying to get healthier in some way?",
        ),
        "quitting smoking",
    ),
    "japanese": (
        (
            "ok don't laugh but i signed up for something",
            "japanese lessons, twice a week, for the trip next spring",
        ),
        ("signed", "japanese"),
        (
            "What new skill is {o} working on?",
            "What is {o} studying?",
            "Is {o} learning anything new?",
        ),
        "learning japanese",
    ),
    "accident": (
        (
            "someone reversed into me in the supermarket car park, bumper's hanging off. i'm "
            "fine, just shaken",
        ),
        ("bumper",),
        (
            "Did anything bad happen to {o} recently?",
            "What unlucky thing happened to {o}?",
            "What went wrong for {o} the other day?",
        ),
        "a minor car accident",
    ),
}
# The other person's line in the middle of a two-part open fact.
_PROMPTS = ("and?? tell me", "oh no, what did they say?", "lol what", "go on...", "no idea, what?")
_REACTIONS = (
    "oh nice",
    "haha of course",
    "wait, really?",
    "that's so you lol",
    "ooh tell me more next time",
    "no way",
    "love that",
    "good for you honestly",
    "ha, sounds about right",
    "oh wow",
)

# --------------------------------------------------------------------------- real small talk


@functools.lru_cache(maxsize=1)
def _chitchat() -> tuple[tuple[tuple[str, float], ...], ...]:
    """Every usable chitchat conversation: (text, seconds since its start) per merged turn.

    Consecutive utterances of one sender are one turn (joined by line breaks, as a chat app
    would pass a burst of bubbles). Conversations with links, very long turns or fewer than
    sixteen turns are left out.
    """
    try:
        from importlib import resources

        raw = resources.files("chitchat_dataset").joinpath("dataset.json").read_text()
    except (ImportError, FileNotFoundError) as exc:
        raise RuntimeError(
            f"the conversation benchmark needs chitchat-dataset=={CHITCHAT_VERSION} "
            "(pip install -e '.[bench]')"
        ) from exc
    data = json.loads(raw)
    out: list[tuple[tuple[str, float], ...]] = []
    for key in sorted(data):
        turns: list[tuple[str, str, float]] = []
        start: _dt.datetime | None = None
        for group in data[key]["messages"]:
            if not group:
                continue
            sender = group[0]["sender"]
            stamp = _dt.datetime.strptime(group[-1]["timestamp"], "%Y-%m-%dT%H:%M:%SZ")
            start = start or stamp
            text = "\n".join(u["text"].strip() for u in group if u["text"].strip())
            if not text:
                continue
            if turns and turns[-1][0] == sender:
                turns[-1] = (sender, turns[-1][1] + "\n" + text, turns[-1][2])
            else:
                turns.append((sender, text, (stamp - start).total_seconds()))
        if len(turns) < 16 or not all(t.isascii() for _, t, _ in turns):
            continue
        if any("http" in t or len(t) > 400 for _, t, _ in turns):
            continue
        out.append(tuple((t, s) for _, t, s in turns))
    return tuple(out)


# --------------------------------------------------------------------------- building


@dataclass(slots=True)
class _Line:
    speaker: int  # 0 = A (user), 1 = B (assistant)
    text: str
    gap: float  # seconds after the previous turn
    tag: tuple[str, int] | None = None  # (fact key, part) for fact turns


@dataclass(slots=True)
class _Fact:
    key: str
    kind: Kind
    owner: int
    question: str
    answer: str
    parts: list[tuple[int, str, str]]  # (session, text, clue) for each stated part
    exchange: bool = False  # an open fact told over owner / other / owner


def _date_phrase(rng: random.Random) -> tuple[str, str]:
    month = rng.randrange(12)
    day = rng.randint(1, 28)
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    name = _MONTHS[month]
    phrase = rng.choice((f"the {day}{suffix} of {name}", f"{name} {day}", f"{name} {day}{suffix}"))
    return phrase, f"{name} {day}"


def _fill(template: str, values: dict[str, str]) -> str:
    return template.format(**values)


def build_conversation(seed: int) -> Conversation:
    """The conversation of ``seed``: the same text, times, facts and questions every time."""
    rng = random.Random(f"membrane-conversations-{seed}")
    pool = _chitchat()
    a, b = rng.sample(_PEOPLE, 2)
    names = (a, b)
    n_sessions = rng.randint(20, 30)
    sources = rng.sample(range(len(pool)), n_sessions)
    sessions: list[list[_Line]] = []
    for src in sources:
        turns = pool[src]
        length = min(len(turns), rng.randint(20, 44))
        length -= length % 2  # A opens and B closes every session
        lines = []
        prev = 0.0
        for i, (text, at) in enumerate(turns[:length]):
            lines.append(_Line(i % 2, text, max(5.0, at - prev) if i else 0.0))
            prev = at
        sessions.append(lines)

    facts = _draw_facts(rng, names, n_sessions)
    for fact in facts:
        _place(rng, fact, sessions)
    return _assemble(rng, seed, names, sessions, facts)


def _draw_facts(rng: random.Random, names: tuple[str, str], n_sessions: int) -> list[_Fact]:
    facts: list[_Fact] = []
    used: set[str] = set()

    def values_for(pools: dict[str, Sequence[str]]) -> dict[str, str]:
        values = {}
        for slot, options in pools.items():
            fresh = [v for v in options if v not in used] or list(options)
            values[slot] = rng.choice(fresh)
            used.add(values[slot])
        return values

    single = rng.sample(sorted(_SINGLE), 12)
    when = rng.sample(sorted(_WHEN), 6)
    spread = rng.sample(sorted(_SPREAD), 4)
    open_ = rng.sample(sorted(_OPEN), 6)
    for i, key in enumerate(single):
        owner = i % 2
        pools, statements, questions, slot = _SINGLE[key]
        values = values_for(pools)
        values["o"] = names[owner]
        text = _fill(rng.choice(statements), values)
        facts.append(
            _Fact(
                key,
                "single",
                owner,
                _fill(rng.choice(questions), values),
                values[slot],
                [(rng.randrange(n_sessions), text, values[slot])],
            )
        )
    for i, key in enumerate(when):
        owner = i % 2
        pools, statements, questions, _ = _WHEN[key]
        values = values_for(pools)
        phrase, answer = _date_phrase(rng)
        values.update(o=names[owner], date=phrase)
        text = _fill(rng.choice(statements), values)
        facts.append(
            _Fact(
                key,
                "when",
                owner,
                _fill(rng.choice(questions), values),
                answer,
                [(rng.randrange(n_sessions), text, phrase)],
            )
        )
    for i, key in enumerate(spread):
        owner = i % 2
        items, statements, questions = _SPREAD[key]
        fresh = [v for v in items if v not in used]
        chosen = rng.sample(fresh, rng.randint(2, 6))
        used.update(chosen)
        where = sorted(rng.sample(range(n_sessions), len(chosen)))
        parts = [
            (
                s,
                _fill(rng.choice(statements), {"item": item, "comment": rng.choice(_COMMENTS)}),
                item,
            )
            for s, item in zip(where, chosen, strict=True)
        ]
        facts.append(
            _Fact(
                key,
                "spread",
                owner,
                _fill(rng.choice(questions), {"o": names[owner]}),
                ", ".join(chosen),
                parts,
            )
        )
    for i, key in enumerate(open_):
        owner = i % 2
        statements, clues, questions, answer = _OPEN[key]
        session = rng.randrange(n_sessions)
        facts.append(
            _Fact(
                key,
                "open",
                owner,
                _fill(rng.choice(questions), {"o": names[owner]}),
                answer,
                [(session, text, clue) for text, clue in zip(statements, clues, strict=True)],
                exchange=len(statements) > 1,
            )
        )
    return facts


def _place(rng: random.Random, fact: _Fact, sessions: list[list[_Line]]) -> None:
    """Weave the fact's parts into their sessions, keeping the speakers alternating."""
    if fact.exchange:
        lines = sessions[fact.parts[0][0]]
        (_, first, _), (_, second, _) = fact.parts
        block = [
            _Line(fact.owner, first, rng.uniform(20, 90), (fact.key, 0)),
            _Line(1 - fact.owner, rng.choice(_PROMPTS), rng.uniform(5, 30)),
            _Line(fact.owner, second, rng.uniform(15, 60), (fact.key, 1)),
            _Line(1 - fact.owner, rng.choice(_REACTIONS), rng.uniform(5, 30)),
        ]
        at = rng.choice(_starts_of(lines, fact.owner))
        lines[at:at] = block
        return
    for part, (session, text, _) in enumerate(fact.parts):
        lines = sessions[session]
        free = [
            i for i, line in enumerate(lines) if line.speaker == fact.owner and line.tag is None
        ]
        if free and rng.random() < 0.6:
            # In passing: added to something the person was saying anyway.
            line = lines[rng.choice(free)]
            joiner = rng.choice((". ", ", anyway ", "\n", " - "))
            if rng.random() < 0.5:
                line.text = f"{line.text.rstrip('.')}{joiner}{text}"
            else:
                line.text = f"{text}{joiner}{line.text}"
            line.tag = (fact.key, part)
            continue
        block = [
            _Line(fact.owner, text, rng.uniform(20, 90), (fact.key, part)),
            _Line(1 - fact.owner, rng.choice(_REACTIONS), rng.uniform(5, 30)),
        ]
        at = rng.choice(_starts_of(lines, fact.owner))
        lines[at:at] = block


def _starts_of(lines: list[_Line], owner: int) -> list[int]:
    """Positions where a block opened by ``owner`` keeps the alternation (A opens, B closes)."""
    return [i for i in range(len(lines) + 1) if i % 2 == owner % 2 and (owner == 0 or i > 0)]


def _assemble(
    rng: random.Random,
    seed: int,
    names: tuple[str, str],
    sessions: list[list[_Line]],
    facts: list[_Fact],
) -> Conversation:
    day = _dt.date(2023, 1, 1) + _dt.timedelta(days=rng.randrange(300))
    start = _dt.datetime.combine(day, _dt.time(rng.randint(8, 21), rng.randrange(60)))
    origin = start
    clock = 0.0
    messages: list[ChatMessage] = []
    out_sessions: list[Session] = []
    where: dict[tuple[str, int], int] = {}
    for index, lines in enumerate(sessions):
        if index:
            if rng.random() < 0.2:
                # Later the same day: within the hour, so a 1-hour cache may still hold.
                gap = _dt.timedelta(minutes=rng.randint(10, 50))
            else:
                gap = _dt.timedelta(days=rng.randint(1, 12), minutes=rng.randint(-240, 240))
            start = origin + _dt.timedelta(seconds=clock) + gap
            clock = (start - origin).total_seconds()
        first = len(messages)
        for i, line in enumerate(lines):
            clock += line.gap if i else 0.0
            if line.tag is not None:
                where[line.tag] = len(messages)
            messages.append(
                ChatMessage(
                    id=len(messages),
                    session=index,
                    role="user" if line.speaker == 0 else "assistant",
                    speaker=names[line.speaker],
                    text=line.text,
                    time=clock,
                )
            )
        out_sessions.append(Session(index, start.date().isoformat(), first, len(messages)))

    last = len(sessions) - 1
    questions = []
    for n, fact in enumerate(facts):
        evidence = tuple(where[(fact.key, p)] for p in range(len(fact.parts)))
        latest = max(messages[e].session for e in evidence)
        questions.append(
            Question(
                id=f"c{seed}-q{n}",
                kind=fact.kind,
                text=fact.question,
                about=names[fact.owner],
                evidence=evidence,
                clues=tuple(clue for _, _, clue in fact.parts),
                answer=fact.answer,
                ask_after=min(latest + 1, last),
            )
        )
    system_prompt = (
        f"A chat between {names[0]} and {names[1]} in a messaging app, over many days. "
        f"Messages with the user role are {names[0]}'s; messages with the assistant role are "
        f"{names[1]}'s. Answer questions about them from what they wrote to each other."
    )
    return Conversation(
        seed=seed,
        names=names,
        system_prompt=system_prompt,
        sessions=tuple(out_sessions),
        messages=tuple(messages),
        questions=tuple(questions),
    )
