"""The profiler: per-stage wall time of one compile, when the profile asks for it."""

from __future__ import annotations

from collections.abc import Mapping
from time import perf_counter_ns
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from membrane.profile._profile import MembraneProfile

__all__ = ["NO_WATCH", "STAGES", "Stopwatch", "Watch", "start_watch"]

#: The stages a profiled compile reports, in pipeline order.
STAGES = ("normalise", "layout", "history", "fit", "render", "state_store")


class Stopwatch:
    """Laps of one compile: each :meth:`lap` closes the stage that ran since the last one."""

    __slots__ = ("_laps", "_last")
    enabled = True

    def __init__(self) -> None:
        self._laps: dict[str, int] = {}
        self._last = perf_counter_ns()

    def lap(self, stage: str) -> None:
        now = perf_counter_ns()
        self._laps[stage] = self._laps.get(stage, 0) + now - self._last
        self._last = now

    def timings(self, counts: Mapping[str, int]) -> tuple[tuple[str, float, int], ...]:
        """``(stage, milliseconds, items it handled)`` for each stage that ran, in order."""
        return tuple(
            (stage, round(self._laps[stage] / 1e6, 4), counts.get(stage, 0))
            for stage in STAGES
            if stage in self._laps
        )


class _Off:
    """The stopwatch of an unprofiled compile: a lap is one empty method call."""

    __slots__ = ()
    enabled = False

    def lap(self, stage: str) -> None:
        pass

    def timings(self, counts: Mapping[str, int]) -> tuple[tuple[str, float, int], ...]:
        return ()


NO_WATCH = _Off()

#: What :func:`start_watch` returns: a running :class:`Stopwatch` or :data:`NO_WATCH`.
Watch = Stopwatch | _Off


def start_watch(profile: MembraneProfile | None) -> Watch:
    """A running stopwatch when ``profile.profiler`` is on, else :data:`NO_WATCH`."""
    if profile is not None and profile.profiler:
        return Stopwatch()
    return NO_WATCH
