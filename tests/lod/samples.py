"""Memories where meaning finds the answer: the hotel shares no word with the question."""

from __future__ import annotations

from membrane import MemoryItem

FILLERS = [
    "The office printer on floor two jams when the tray is overfilled.",
    "Team lunch is on Fridays at the Thai place near the station.",
    "The quarterly budget for cloud spend is 42,000 EUR.",
    "Invoices are emailed on the 3rd of each month.",
    "The staging database runs PostgreSQL 15 on port 5433.",
    "Retries use exponential backoff with jitter, capped at five attempts.",
    "The design review for the mobile app moved to Thursday.",
    "Our VPN certificate expires at the end of the year.",
    "The support rota changes every second Monday.",
    "The marketing site is built with Hugo and deployed by CI.",
    "New laptops are ordered through the IT portal.",
    "The coffee machine on floor three needs descaling monthly.",
]
HOTEL = "Our hotel in Osaka is booked for the second week of May."
QUESTION = "Where are we staying in Japan?"


def memories() -> list[MemoryItem]:
    """Twelve unrelated notes with the hotel sixth in the retriever's order."""
    items = [MemoryItem(id=f"m{i}", content=t) for i, t in enumerate(FILLERS)]
    items.insert(5, MemoryItem(id="hotel", content=HOTEL))
    return items
