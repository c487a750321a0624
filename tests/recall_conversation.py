"""A long conversation whose first messages hold facts, compiled under a small budget so the
window drops them: the shared fixture of the recall tool's tests."""

from __future__ import annotations

from typing import Any

ATLAS_CODE = "KX-4471"
ATLAS_FACT = (
    f"Remember this for later: the code of project Atlas is {ATLAS_CODE}, "
    "and its launch date is 14 March."
)
BOREALIS_FACT = "The Borealis budget owner is Mirela Stan."
BUDGET = 1200

_FILLER = (
    "We went over the weekly status of the migration work and the team seemed fine with it.",
    "Please summarise the open questions about the dashboard layout and its colours.",
    "The dashboard colours stay blue and grey, and the layout keeps two columns for now.",
    "Let us talk about lunch options near the office; the team likes the noodle place.",
)


def long_history(turns: int = 40) -> list[dict[str, Any]]:
    """The Atlas fact first, ``turns`` filler messages, then the Borealis fact (kept)."""
    history: list[dict[str, Any]] = [
        {"role": "user", "content": ATLAS_FACT},
        {"role": "assistant", "content": f"Noted: project Atlas has code {ATLAS_CODE}."},
    ]
    for i in range(turns):
        role = "user" if i % 2 == 0 else "assistant"
        history.append({"role": role, "content": f"Turn {i}. {_FILLER[i % 4]}"})
    history.append({"role": "user", "content": BOREALIS_FACT})
    history.append({"role": "assistant", "content": "Understood: Mirela Stan owns it."})
    return history
