"""Token-scale calibration: learning how many provider tokens one counted token is worth.

Every change of scale moves the history cut and costs one cache miss, so the scale in use moves
in coarse steps: it rises at once (an overflow is worse than a miss) and falls only when it is
clearly too high.
"""

from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import asdict, dataclass, replace
from fractions import Fraction
from typing import Any

__all__ = [
    "SCALE_MAX",
    "SCALE_MIN",
    "SCALE_STEP",
    "ScaleCalibration",
    "counted_budget",
    "provider_tokens",
]

SCALE_STEP = 0.05
#: The range a learned or stored scale may take. A tokenizer that differs from the counter by
#: more than this is a misconfiguration; a stored value outside it is corruption.
SCALE_MIN, SCALE_MAX = 0.5, 3.0
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
        # Compared before dividing: a count of 10**400 is past the ceiling, not an overflow.
        if provider_tokens >= _RATIO_CEILING * counted_tokens:
            ratio = _RATIO_CEILING
        else:
            ratio = max(provider_tokens / counted_tokens, _RATIO_FLOOR)
        if self.samples == 0:
            mean, variance = ratio, 0.0
        else:
            spread = _OUTLIER_SDS * math.sqrt(self.variance) + _OUTLIER_SLACK
            ratio = min(max(ratio, self.mean - spread), self.mean + spread)
            delta = ratio - self.mean
            mean = self.mean + _SMOOTHING * delta
            variance = (1 - _SMOOTHING) * (self.variance + _SMOOTHING * delta * delta)
        margin = min(_SPREAD_FACTOR * math.sqrt(variance), _MAX_MARGIN)
        # Clamped before the fall test, so a clamp cannot make a fall smaller than the threshold.
        target = min(max(_step_up(mean + margin), SCALE_MIN), SCALE_MAX)
        scale = self.scale
        if target > scale or scale - target >= _FALL_THRESHOLD:
            scale = target
        return replace(self, scale=scale, samples=self.samples + 1, mean=mean, variance=variance)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object) -> ScaleCalibration:
        """The calibration in ``data`` (a value read back from a state store), checked.

        Raises ``ValueError`` naming the first thing wrong: not a dict, a missing or
        non-numeric scale, a scale outside [SCALE_MIN, SCALE_MAX], a negative or fractional
        sample count, a mean or variance that is not a finite number (or a negative variance).
        """
        if not isinstance(data, dict):
            raise ValueError(f"a calibration is a JSON object, got {type(data).__name__}")
        scale = _finite(data, "scale", None)
        if not SCALE_MIN <= scale <= SCALE_MAX:
            raise ValueError(f"scale {scale!r} is outside [{SCALE_MIN}, {SCALE_MAX}]")
        samples = data.get("samples", 0)
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 0:
            raise ValueError(f"samples must be a non-negative int, got {samples!r}")
        variance = _finite(data, "variance", 0.0)
        if variance < 0:
            raise ValueError(f"variance must not be negative, got {variance!r}")
        return cls(scale=scale, samples=samples, mean=_finite(data, "mean", 0.0), variance=variance)


def _finite(data: dict[Any, Any], key: str, default: float | None) -> float:
    """``data[key]`` as a finite float (``default`` when absent; required when None)."""
    if key not in data and default is not None:
        return default
    value = data.get(key)
    number = float("nan")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        with contextlib.suppress(OverflowError):  # an int too large for a float stays NaN
            number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{key} must be a finite number, got {str(value)[:40]}")
    return number


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
