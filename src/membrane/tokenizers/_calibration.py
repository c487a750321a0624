"""Token-scale calibration: learning how many provider tokens one counted token is worth.

Every change of scale moves the history cut and costs one cache miss, so the scale in use moves
in coarse steps: it rises at once (an overflow is worse than a miss) and falls only when it is
clearly too high.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, replace
from fractions import Fraction
from typing import Any

__all__ = ["SCALE_STEP", "ScaleCalibration", "counted_budget", "provider_tokens"]

SCALE_STEP = 0.05
_FALL_THRESHOLD = 0.1 - 1e-9
_SMOOTHING = 0.3
_SPREAD_FACTOR = 2.0
_MAX_MARGIN = 0.15
# Ratios outside this range are not tokenizer differences but reporting mistakes.
_RATIO_FLOOR, _RATIO_CEILING = 0.25, 4.0
_OUTLIER_SDS = 3.0
_OUTLIER_SLACK = 0.1


def _step_up(value: float) -> float:
    return round(math.ceil(value / SCALE_STEP - 1e-9) * SCALE_STEP, 2)


@dataclass(frozen=True, slots=True)
class ScaleCalibration:
    """The calibration state of one model: the scale in use and the smoothed ratio behind it."""

    scale: float
    samples: int = 0
    mean: float = 0.0
    variance: float = 0.0

    def observe(self, counted_tokens: int, provider_tokens: int) -> ScaleCalibration:
        """The state after one observation; nonsense (zero or negative counts) is ignored."""
        if counted_tokens <= 0 or provider_tokens <= 0:
            return self
        ratio = min(max(provider_tokens / counted_tokens, _RATIO_FLOOR), _RATIO_CEILING)
        if self.samples == 0:
            mean, variance = ratio, 0.0
        else:
            spread = _OUTLIER_SDS * math.sqrt(self.variance) + _OUTLIER_SLACK
            ratio = min(max(ratio, self.mean - spread), self.mean + spread)
            delta = ratio - self.mean
            mean = self.mean + _SMOOTHING * delta
            variance = (1 - _SMOOTHING) * (self.variance + _SMOOTHING * delta * delta)
        margin = min(_SPREAD_FACTOR * math.sqrt(variance), _MAX_MARGIN)
        target = _step_up(mean + margin)
        scale = self.scale
        if target > scale or scale - target >= _FALL_THRESHOLD:
            scale = target
        return replace(self, scale=scale, samples=self.samples + 1, mean=mean, variance=variance)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScaleCalibration:
        return cls(
            scale=float(data["scale"]),
            samples=int(data.get("samples", 0)),
            mean=float(data.get("mean", 0.0)),
            variance=float(data.get("variance", 0.0)),
        )


@functools.lru_cache(maxsize=1024)
def counted_budget(budget: int, scale: float) -> int:
    """``budget / scale`` rounded down, computed on the scale's decimal value.

    Binary floats make ``8800 / 1.1`` come out as 7999.99…; reading the scale as the decimal
    a person wrote keeps an exact quotient exact.
    """
    return math.floor(Fraction(budget) / Fraction(repr(float(scale))))


def provider_tokens(counted: int, scale: float) -> int:
    """``counted * scale`` rounded up, on the scale's decimal value."""
    return math.ceil(Fraction(counted) * Fraction(repr(float(scale))))
