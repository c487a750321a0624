"""Templated, seeded text for the benchmark scenarios.

Every scenario draws its facts, chatter, replies, memories, tool results and pastes from the
banks below with its own ``random.Random``. A fact is a unique random code (``K7Q-42``), so a
code found in a prompt cannot be there by accident. The banks are deliberately wide: no single
phrasing dominates, and nothing in Membrane is tuned to them.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Fact", "TextFactory"]

_CODENAMES = (
    "Kestrel",
    "Tamarind",
    "Basalt",
    "Juniper",
    "Quartz",
    "Heron",
    "Marigold",
    "Obsidian",
    "Sycamore",
    "Falcon",
    "Cobalt",
    "Lantern",
    "Meadow",
    "Saffron",
    "Granite",
    "Willow",
    "Osprey",
    "Cedar",
    "Topaz",
    "Harbor",
    "Bramble",
    "Cinder",
    "Dapple",
    "Ember",
    "Fennel",
    "Garnet",
    "Hollow",
    "Indigo",
    "Jasper",
    "Kelp",
    "Larch",
    "Mistral",
    "Nettle",
    "Onyx",
    "Pumice",
    "Quill",
    "Rowan",
    "Sorrel",
    "Thistle",
    "Umber",
    "Vesper",
    "Wren",
    "Yarrow",
    "Zephyr",
    "Alder",
    "Birch",
    "Coral",
    "Dune",
    "Elm",
    "Flint",
    "Gale",
    "Hazel",
    "Iris",
    "Jade",
    "Kiln",
    "Lichen",
    "Maple",
    "Nimbus",
    "Opal",
    "Pine",
    "Quince",
    "Reed",
    "Slate",
    "Tansy",
    "Umbra",
    "Vale",
    "Wisp",
    "Aspen",
    "Beacon",
    "Comet",
    "Delta",
    "Echo",
    "Fjord",
    "Glacier",
    "Hearth",
    "Islet",
    "Jetty",
    "Knoll",
    "Lagoon",
    "Marsh",
    "Nova",
    "Orchid",
    "Prairie",
    "Ridge",
    "Summit",
    "Tundra",
    "Upland",
    "Vortex",
    "Wharf",
    "Acorn",
    "Bluff",
    "Canyon",
    "Drift",
    "Estuary",
    "Fable",
    "Grove",
    "Haven",
    "Inlet",
    "Kite",
    "Loom",
    "Mesa",
    "Nectar",
    "Oasis",
    "Pebble",
)


_SUFFIXES = (
    "Trading",
    "Labs",
    "Logistics",
    "Partners",
    "Foods",
    "Systems",
    "Studio",
    "Works",
    "Holdings",
    "Supply",
    "Analytics",
    "Freight",
    "Designs",
    "Health",
    "Energy",
    "Print",
)

_BRANCHES = ("North", "South", "East", "West", "Central", "Harbour", "Uptown", "Riverside")

# (city, the adjective a question uses instead of the city): a paraphrased question names the
# country, never the city, so it shares no word with the statement it asks about.
_PLACES = (
    ("Lisbon", "Portuguese"),
    ("Osaka", "Japanese"),
    ("Lyon", "French"),
    ("Krakow", "Polish"),
    ("Nairobi", "Kenyan"),
    ("Lagos", "Nigerian"),
    ("Bergen", "Norwegian"),
    ("Valencia", "Spanish"),
    ("Turin", "Italian"),
    ("Ghent", "Belgian"),
    ("Graz", "Austrian"),
    ("Utrecht", "Dutch"),
    ("Tampere", "Finnish"),
    ("Cork", "Irish"),
    ("Brno", "Czech"),
    ("Aarhus", "Danish"),
    ("Gothenburg", "Swedish"),
    ("Zurich", "Swiss"),
    ("Leipzig", "German"),
    ("Busan", "Korean"),
    ("Hanoi", "Vietnamese"),
    ("Lima", "Peruvian"),
    ("Quito", "Ecuadorian"),
    ("Accra", "Ghanaian"),
    ("Alexandria", "Egyptian"),
    ("Perth", "Australian"),
    ("Calgary", "Canadian"),
    ("Monterrey", "Mexican"),
    ("Pune", "Indian"),
    ("Cebu", "Filipino"),
    ("Izmir", "Turkish"),
    ("Tbilisi", "Georgian"),
    ("Riga", "Latvian"),
    ("Tartu", "Estonian"),
    ("Kaunas", "Lithuanian"),
    ("Debrecen", "Hungarian"),
    ("Cluj", "Romanian"),
    ("Plovdiv", "Bulgarian"),
    ("Split", "Croatian"),
    ("Thessaloniki", "Greek"),
    ("Reykjavik", "Icelandic"),
    ("Casablanca", "Moroccan"),
    ("Medellin", "Colombian"),
    ("Valparaiso", "Chilean"),
    ("Montevideo", "Uruguayan"),
    ("Auckland", "New Zealand"),
)

# (what the statement calls the entity, what a paraphrased question calls it)
_KINDS = (
    ("supplier", "vendor"),
    ("client", "customer"),
    ("warehouse", "depot"),
    ("office", "branch"),
    ("contractor", "outside firm"),
    ("lab", "research facility"),
    ("bakery", "pastry shop"),
    ("studio", "design workshop"),
    ("clinic", "medical practice"),
    ("hotel", "lodging"),
    ("print shop", "printing house"),
    ("law firm", "legal counsel"),
    ("freight agent", "shipping broker"),
    ("data centre", "server hall"),
)

# (full attribute, the short noun a later sentence uses, a paraphrase with no shared word)
_ATTRIBUTES = (
    ("invoice reference", "reference", "billing number"),
    ("locker combination", "combination", "storage cabinet unlock digits"),
    ("booking reference", "booking", "reservation ID"),
    ("tracking number", "number", "parcel trace ID"),
    ("license key", "key", "software activation string"),
    ("batch ID", "batch", "production lot label"),
    ("door PIN", "PIN", "entry keypad sequence"),
    ("account number", "account", "customer ledger identifier"),
    ("serial number", "serial", "hardware identifier on the unit"),
    ("approval code", "approval", "sign-off token"),
    ("ticket number", "ticket", "support case identifier"),
    ("purchase order", "order", "PO we raised"),
    ("wifi password", "password", "wireless passphrase"),
    ("gate code", "code", "entrance barrier digits"),
    ("contract number", "contract", "agreement identifier"),
    ("shipment ID", "shipment", "consignment label"),
    ("room code", "code", "meeting space identifier"),
    ("API token", "token", "integration secret"),
    ("vehicle plate", "plate", "registration on the van"),
    ("voucher code", "voucher", "discount coupon string"),
    ("badge number", "badge", "staff pass identifier"),
    ("safe combination", "combination", "strongbox digits"),
    ("parking permit", "permit", "car park pass identifier"),
    ("claim number", "claim", "insurance case identifier"),
    ("build tag", "tag", "release label of the binary"),
)

_CODE_SHAPES = ("ADA-DD", "AA-DDDD", "DAAD-AD", "AAADDA", "AD-DAD-A", "DDA-AAD", "AADD-DA")

_STATEMENTS = (
    "The {attr} for {entity} is {code}.",
    "For {entity}, the {attr} is {code}.",
    "Note that {entity}'s {attr} is {code}.",
    "{entity} uses {code} as its {attr}.",
    "Please remember: {attr} of {entity} = {code}.",
    "I just got the {attr} for {entity}: {code}.",
    "We finally received {entity}'s {attr}, which is {code}.",
    "Heads up, {entity} changed its {attr} to {code}.",
    "Writing this down before I forget: {entity}, {attr} {code}.",
    "According to the email from {entity}, their {attr} is {code}.",
)

_TWO_SENTENCES = (
    "{entity} sent over a new {attr} this morning. The {short} is {code}.",
    "{entity} finally sorted out their {attr}. The new {short} reads {code}.",
    "I had a call with {entity} about the {attr}. The {short} they settled on is {code}.",
    "{entity} issued us a fresh {attr} yesterday. The value to use is {code}.",
)

_SPREAD = (
    "I spoke with someone at {entity} earlier. They had to change the {attr} again. "
    "It's {code} from now on.",
    "Quick update on {entity}. Their {attr} got reset after the audit. Going forward it is {code}.",
    "{entity} called back. Apparently the old {attr} expired. Use {code} instead.",
    "So, {entity}. There was a mix-up with the {attr} last week. They confirmed {code} is correct.",
    "Remember {entity}? The {attr} we had was wrong. It should have been {code} all along.",
    "News from {entity} today. A new {attr} was assigned. It reads {code}, in capitals.",
    "About {entity}: they migrated systems over the weekend. Their {attr} changed with it. "
    "The replacement is {code}.",
)

_QUESTIONS = (
    "What is the {attr} for {entity}?",
    "Can you remind me of {entity}'s {attr}?",
    "Which {attr} did I give you for {entity}?",
    "Do you still have the {attr} of {entity}?",
    "I need the {attr} for {entity} again. What was it?",
    "Quick one: what's {entity}'s {attr}?",
    "Could you look up the {attr} we have on file for {entity}?",
    "What {attr} did we note down for {entity}?",
)

_PARAPHRASED_QUESTIONS = (
    "What was the {para} for the {adj} {kind}?",
    "Remind me of the {para} belonging to the {adj} {kind}.",
    "Do you recall the {para} of that {adj} {kind}?",
    "I've lost the {para} from the {adj} {kind}; what was it?",
    "Which {para} goes with the {adj} {kind} again?",
)

_TOOL_QUESTIONS = (
    "What {attr} did the lookup return for {entity}?",
    "Earlier you fetched {entity}'s record. What was the {attr} in it?",
    "From that database result for {entity}, what's the {attr}?",
    "The records tool listed the {attr} for {entity}. Which value was it?",
)

_PASTE_QUESTIONS = (
    "In the {doc} I pasted, what was the {attr} for {entity}?",
    "Going back to the {doc} I shared, which {attr} is listed for {entity}?",
    "From my pasted {doc}: what's {entity}'s {attr}?",
)

_MEMORY_QUESTIONS = (
    "What's the {attr} of {entity}, according to our notes?",
    "Do our records say what {entity}'s {attr} is?",
    "Check the notes: which {attr} belongs to {entity}?",
    "What {attr} do we have saved for {entity}?",
)

_TWO_FACT_QUESTIONS = (
    "Compare two things for me: {entity1}'s {attr1} from our notes and the {attr2} I gave you "
    "for {entity2}.",
    "I need both the {attr1} of {entity1} (it's in our records) and the {attr2} of {entity2} "
    "that I mentioned earlier.",
    "Put {entity1}'s stored {attr1} next to the {attr2} I told you for {entity2}.",
)

_FILLER = (
    "I spent most of the morning on the {task}.",
    "The weather here has been {weather} all week.",
    "We're still waiting for feedback on the {doc}.",
    "Remind me later to follow up with {person} about the {doc}.",
    "{person} thinks the {task} will slip by a few days.",
    "Honestly, the {task} is taking longer than anyone expected.",
    "Lunch was {food} again, which is the third time this week.",
    "I moved the sync with {person} to {day}.",
    "The coffee machine on our floor is broken, so everyone is {mood}.",
    "{person} asked whether we can reuse last quarter's {doc}.",
    "My train was late, so I caught up on the {doc} on the way in.",
    "We might need to hire another person for the {task}.",
    "The {doc} is finally in a shape I'm happy with.",
    "{person} is out on {day}, so the review has to wait.",
    "I keep forgetting to book the room for the {task} retro.",
    "The new laptop arrived, but setting it up ate an hour.",
    "Budget talks are on {day}, and I'd like to be prepared.",
    "We had a long debate about naming in the {task} channel.",
)

_REPLY_OPENERS = (
    "Got it.",
    "Understood.",
    "Thanks for the update.",
    "Noted.",
    "Sure thing.",
    "That makes sense.",
    "Okay, I've taken that on board.",
    "Thanks, that's helpful context.",
)

_REPLY_BODIES = (
    "For the {task}, I'd start by listing the open questions and then rank them by risk.",
    "If the {doc} needs another pass, focus on the summary first; reviewers read that most.",
    "It may help to share a short agenda with {person} before {day}.",
    "A small checklist usually keeps a project like the {task} from drifting.",
    "When deadlines slip, writing down the new date and the reason avoids confusion later.",
    "You could split the {task} into two phases so the first part ships sooner.",
    "Consider asking {person} for a quick written summary instead of another meeting.",
    "Keeping decisions in one shared place saves a lot of searching afterwards.",
    "If the {doc} is reused, double-check the figures; they tend to go stale.",
    "Blocking an hour on {day} for focused work might make the week feel calmer.",
    "A short retro after the {task} would capture what to repeat next time.",
    "I'd keep the scope of the {task} fixed until the first review is done.",
)

_REPLY_CLOSERS = (
    "Let me know if you want me to draft anything.",
    "Happy to help with the next step.",
    "Tell me when you want to revisit this.",
    "I can summarise the thread whenever you need.",
    "",
    "",
)

_ANSWER_LINES = (
    "I've answered from what we have in the conversation and notes.",
    "That's what I found in the context I have.",
    "Here's what I can see about that.",
    "I checked what's available and replied above.",
)

_TASKS = (
    "migration plan",
    "quarterly report",
    "vendor onboarding",
    "website refresh",
    "budget review",
    "hiring pipeline",
    "release checklist",
    "customer survey",
    "office move",
    "security audit",
    "pricing update",
    "training programme",
)
_DOCS = (
    "proposal",
    "design doc",
    "slide deck",
    "contract draft",
    "roadmap",
    "status memo",
    "spreadsheet",
    "handbook chapter",
    "press release",
    "risk register",
)
_PEOPLE = ("Amara", "Bruno", "Chiara", "Dmitri", "Esi", "Farid", "Greta", "Hiro", "Ines", "Jonas")
_WEATHER = ("grey", "unusually warm", "windy", "rainy", "freezing", "bright and dry")
_FOOD = ("soup", "pasta", "a sandwich", "rice and beans", "salad", "curry")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
_MOODS = ("grumpy", "slow", "queueing at the kitchen", "drinking tea instead")

_MEMORY_FORMS = (
    "{entity} is our {kind} in {city}. Their {attr} is {code}.",
    "From an earlier session: {entity} ({kind}, {city}) has {attr} {code}.",
    "CRM note on {entity}, the {kind} in {city}: {attr} {code}.",
    "{entity}, {kind} based in {city}; {attr} on file: {code}.",
)
_MEMORY_TAILS = (
    "Contact them by email rather than phone.",
    "They prefer invoices at the start of the month.",
    "Last reviewed during the spring audit.",
    "Our main contact there is {person}.",
    "They asked us to confirm changes in writing.",
    "Relationship owner: {person}.",
    "Payment terms were renegotiated during the {task}.",
    "They were mentioned in the {doc} as a key partner.",
    "Deliveries usually arrive on {day} mornings.",
    "Escalations go to {person} first, then to the account lead.",
    "",
)
_PREFERENCES = (
    "The user prefers short answers with bullet points.",
    "The user works in the {city} office and starts early.",
    "The user is leading the {task} this quarter.",
    "The user likes to get a summary at the end of long threads.",
    "The user asked us to avoid jargon in customer emails.",
    "The user's manager is {person}.",
    "The user is preparing the {doc} for {day}.",
)

_PASTE_KINDS = ("server log", "meeting notes", "inventory export", "config dump")

_SYSTEM_RULES = (
    "Answer from the conversation and the notes provided; say so when something is missing.",
    "Quote reference codes exactly as they were given, character for character.",
    "Keep replies brief unless the user asks for detail.",
    "Never invent account numbers, codes or names.",
    "When two notes disagree, prefer the most recent one and mention the conflict.",
    "Use plain language and avoid internal jargon.",
    "If a request is ambiguous, ask one clarifying question.",
    "Respect the user's time zone when talking about dates.",
    "Do not repeat sensitive values unless the user asks for them.",
    "Summaries should lead with the decision, then the reasons.",
    "Format lists as short bullet points.",
    "Flag any deadline that is less than two days away.",
)


@dataclass(frozen=True, slots=True)
class Fact:
    """One thing to remember: an entity, an attribute of it, and the code that answers."""

    entity: str
    kind: str
    kind_para: str
    city: str
    adj: str
    attr: str
    short: str
    para: str
    code: str


class TextFactory:
    """Seeded source of every string a scenario needs."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self._codes: set[str] = set()
        self._entities: set[str] = set()
        self._pairs: set[tuple[str, str, str]] = set()
        self._tool_ids = 0

    # -- atoms -------------------------------------------------------------------------------

    def code(self) -> str:
        """A fresh code, unique within this factory."""
        while True:
            shape = self.rng.choice(_CODE_SHAPES)
            out = "".join(
                self.rng.choice(string.ascii_uppercase.replace("O", "").replace("I", ""))
                if ch == "A"
                else self.rng.choice("23456789")
                if ch == "D"
                else ch
                for ch in shape
            )
            if out not in self._codes:
                self._codes.add(out)
                return out

    def _fill(self, template: str, **slots: str) -> str:
        defaults = {
            "task": self.rng.choice(_TASKS),
            "doc": self.rng.choice(_DOCS),
            "person": self.rng.choice(_PEOPLE),
            "weather": self.rng.choice(_WEATHER),
            "food": self.rng.choice(_FOOD),
            "day": self.rng.choice(_DAYS),
            "mood": self.rng.choice(_MOODS),
            "city": self.rng.choice(_PLACES)[0],
        }
        defaults.update(slots)
        return template.format(**defaults)

    def fact(self) -> Fact:
        """A fact about a fresh entity, unambiguous even when asked for in other words."""
        for attempt in range(400):
            name = f"{self.rng.choice(_CODENAMES)} {self.rng.choice(_SUFFIXES)}"
            if attempt >= 200:
                # Only very long conversations (the compile-speed runs) get this far.
                name += f" {self.rng.choice(_BRANCHES)} {attempt}"
            city, adj = self.rng.choice(_PLACES)
            kind, kind_para = self.rng.choice(_KINDS)
            attr, short, para = self.rng.choice(_ATTRIBUTES)
            pair = (adj, kind_para, para)
            if name in self._entities or (pair in self._pairs and attempt < 100):
                continue
            self._entities.add(name)
            self._pairs.add(pair)
            return Fact(name, kind, kind_para, city, adj, attr, short, para, self.code())
        raise RuntimeError("ran out of distinct facts; widen the phrase banks")

    def tool_call_id(self) -> str:
        self._tool_ids += 1
        return f"call_{self._tool_ids:04d}_{self.rng.randrange(16**6):06x}"

    # -- sentences ---------------------------------------------------------------------------

    def statement(self, fact: Fact, style: str = "plain") -> str:
        """A user sentence (or several, for the spread styles) that states ``fact``."""
        if style == "plain":
            text = self._fill(
                self.rng.choice(_STATEMENTS), attr=fact.attr, code=fact.code, entity=fact.entity
            )
            return f"{text} ({fact.entity} is our {fact.kind} in {fact.city}.)"
        if style == "two_sentence":
            first = f"{fact.entity} is our {fact.kind} in {fact.city}. "
            return first + self._fill(
                self.rng.choice(_TWO_SENTENCES),
                entity=fact.entity,
                attr=fact.attr,
                short=fact.short,
                code=fact.code,
            )
        if style == "spread":
            text = self._fill(
                self.rng.choice(_SPREAD), entity=fact.entity, attr=fact.attr, code=fact.code
            )
            intro = self.rng.choice(
                (
                    f"{fact.entity} is the {fact.kind} we use in {fact.city}. ",
                    f"(Context: {fact.entity} is our {fact.kind} over in {fact.city}.) ",
                    "",
                )
            )
            if not intro:
                return f"{text} For reference, they're our {fact.kind} in {fact.city}."
            return intro + text
        raise ValueError(f"unknown statement style {style!r}")

    def question(self, fact: Fact, style: str = "direct", source: str = "history") -> str:
        """A question whose answer is ``fact.code``."""
        if style == "paraphrase":
            return self._fill(
                self.rng.choice(_PARAPHRASED_QUESTIONS),
                para=fact.para,
                adj=fact.adj,
                kind=fact.kind_para,
            )
        bank = {
            "history": _QUESTIONS,
            "memory": _MEMORY_QUESTIONS,
            "tool": _TOOL_QUESTIONS,
            "paste": _PASTE_QUESTIONS,
        }[source]
        return self._fill(
            self.rng.choice(bank),
            attr=fact.attr,
            entity=fact.entity,
            doc=self.rng.choice(_PASTE_KINDS),
        )

    def two_fact_question(self, memory_fact: Fact, history_fact: Fact) -> str:
        return self._fill(
            self.rng.choice(_TWO_FACT_QUESTIONS),
            entity1=memory_fact.entity,
            attr1=memory_fact.attr,
            entity2=history_fact.entity,
            attr2=history_fact.attr,
        )

    def filler(self, sentences: int) -> list[str]:
        return [self._fill(self.rng.choice(_FILLER)) for _ in range(sentences)]

    def user_message(self, parts: list[str], question: str | None, filler: int) -> str:
        """Join statements, chatter and the question, the question at a varied position."""
        body = parts + self.filler(filler)
        self.rng.shuffle(body)
        if question is not None:
            where = self.rng.random()
            if where < 0.4:
                body.insert(0, question)
            elif where < 0.75:
                body.append(question)
            else:
                body.insert(self.rng.randint(0, len(body)), question)
        return " ".join(body)

    def reply(self, sentences: int, answering: bool = False) -> str:
        """A scripted assistant reply; it never repeats a code."""
        out = [self.rng.choice(_REPLY_OPENERS)]
        if answering:
            out.append(self.rng.choice(_ANSWER_LINES))
        out.extend(self._fill(self.rng.choice(_REPLY_BODIES)) for _ in range(sentences))
        closer = self.rng.choice(_REPLY_CLOSERS)
        if closer:
            out.append(closer)
        return " ".join(out)

    def system_prompt(self, min_tokens: int, count: Callable[[str], int]) -> str:
        """A system prompt of at least ``min_tokens`` tokens, built from varied rules."""
        lines = ["You are a careful assistant for a small operations team."]
        rules = list(_SYSTEM_RULES)
        self.rng.shuffle(rules)
        lines.extend(f"- {r}" for r in rules[: self.rng.randint(6, len(rules))])
        text = "\n".join(lines)
        section = 0
        while count(text) < min_tokens:
            section += 1
            task = self.rng.choice(_TASKS)
            para = " ".join(self._fill(self.rng.choice(_REPLY_BODIES), task=task) for _ in range(4))
            text += f"\n\nGuidance note {section} ({task}): {para}"
        return text

    # -- memories, tool results, pastes -----------------------------------------------------

    def memory_text(self, fact: Fact) -> str:
        head = self._fill(
            self.rng.choice(_MEMORY_FORMS),
            entity=fact.entity,
            kind=fact.kind,
            city=fact.city,
            attr=fact.attr,
            code=fact.code,
        )
        tails = self.rng.sample(_MEMORY_TAILS, self.rng.randint(1, 3))
        return " ".join([head, *(self._fill(t) for t in tails if t)])

    def preference_memory(self) -> str:
        return self._fill(self.rng.choice(_PREFERENCES))

    def tool_call(self, fact: Fact) -> tuple[dict[str, object], str]:
        """An OpenAI tool call looking ``fact`` up, and the tool's (long) result text."""
        call_id = self.tool_call_id()
        name = self.rng.choice(("lookup_record", "get_account", "search_crm", "fetch_entity"))
        args = json.dumps({"entity": fact.entity, "fields": "all"})
        call: dict[str, object] = {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": args},
        }
        fields: dict[str, str] = {
            "entity": fact.entity,
            "type": fact.kind,
            "city": fact.city,
            fact.attr: fact.code,
        }
        for _ in range(self.rng.randint(6, 12)):
            other = self.rng.choice(_ATTRIBUTES)[0]
            if other not in fields:
                fields[other] = self.code()
        fields["notes"] = " ".join(self.filler(self.rng.randint(3, 6)))
        fields["owner"] = self.rng.choice(_PEOPLE)
        items = list(fields.items())
        head, rest = items[:3], items[3:]
        self.rng.shuffle(rest)
        result = json.dumps(dict(head + rest), indent=1)
        return call, result

    def paste(
        self, facts: list[Fact], min_tokens: int, count: Callable[[str], int]
    ) -> tuple[str, str]:
        """A long pasted document (kind, text) with ``facts`` buried at random lines."""
        kind = self.rng.choice(_PASTE_KINDS)
        lines: list[str] = []
        while count("\n".join(lines)) < min_tokens:
            n = len(lines)
            if kind == "server log":
                lines.append(
                    f"2026-03-{1 + n % 28:02d}T{n % 24:02d}:{(7 * n) % 60:02d}:11Z "
                    f"{self.rng.choice(('INFO', 'WARN', 'DEBUG'))} "
                    f"{self.rng.choice(('worker', 'scheduler', 'api', 'cache'))}-{n % 7} "
                    f"{self._fill(self.rng.choice(_FILLER))} req={self.code()}"
                )
            elif kind == "meeting notes":
                lines.append(
                    f"- {self.rng.choice(_PEOPLE)}: {self._fill(self.rng.choice(_FILLER))}"
                )
            elif kind == "inventory export":
                lines.append(
                    f"{self.code()},{self.rng.choice(_CODENAMES)} unit,"
                    f"{self.rng.randint(1, 400)},{self.rng.choice(_PLACES)[0]},"
                    f"{self.rng.choice(('ok', 'low', 'reorder'))}"
                )
            else:
                lines.append(
                    f"{self.rng.choice(_CODENAMES).lower()}.{self.rng.choice(_TASKS).split()[0]}"
                    f'_{n} = "{self.code()}"  # {self._fill(self.rng.choice(_FILLER))}'
                )
        for fact in facts:
            at = self.rng.randint(1, len(lines) - 1)
            lines.insert(at, self.statement(fact, "plain"))
        return kind, "\n".join(lines)
