"""Token-scale calibration: rises at once, falls only when 0.1 too high, moves in 0.05 steps."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membrane.tokenizers._calibration import SCALE_STEP, ScaleCalibration


def _on_step(scale: float) -> bool:
    return math.isclose(scale / SCALE_STEP, round(scale / SCALE_STEP), abs_tol=1e-6)


def test_first_observation_rises_at_once_to_the_next_step() -> None:
    before = ScaleCalibration(scale=1.0)
    after = before.observe(100, 123)
    assert after.scale == 1.25
    assert (after.samples, after.mean, after.variance) == (1, 1.23, 0.0)
    assert before == ScaleCalibration(scale=1.0)  # frozen: a new state is returned


def test_an_exact_step_is_not_rounded_up() -> None:
    assert ScaleCalibration(scale=1.0).observe(100, 120).scale == 1.2


def test_falls_only_when_a_tenth_too_high() -> None:
    assert ScaleCalibration(scale=1.51).observe(100, 145).scale == 1.51
    assert ScaleCalibration(scale=1.5).observe(100, 141).scale == 1.5  # target 1.45
    assert ScaleCalibration(scale=1.5).observe(100, 140).scale == 1.4  # exactly 0.1
    assert ScaleCalibration(scale=1.51).observe(100, 100).scale == 1.0


def test_a_slightly_lower_ratio_never_moves_the_scale() -> None:
    state = ScaleCalibration(scale=1.2)
    for _ in range(100):
        state = state.observe(1000, 1120)
    assert state.scale == 1.2
    assert state.mean == pytest.approx(1.12)


def test_a_steady_ratio_converges_and_stays() -> None:
    state = ScaleCalibration(scale=1.0)
    seen = []
    for _ in range(50):
        state = state.observe(200, 262)  # 1.31
        seen.append(state.scale)
    assert seen[0] == 1.35
    assert set(seen) == {1.35}


@pytest.mark.parametrize(("counted", "provider"), [(0, 100), (100, 0), (-5, 100), (100, -1)])
def test_nonsense_observations_are_ignored(counted: int, provider: int) -> None:
    state = ScaleCalibration(scale=1.11, samples=3, mean=1.1, variance=0.001)
    assert state.observe(counted, provider) is state


def test_first_ratios_are_clamped_to_a_sane_range() -> None:
    # The range a stored scale must fall in to be trusted (issue 11): [0.5, 3.0].
    assert ScaleCalibration(scale=1.0).observe(100, 100_000).scale == 3.0
    assert ScaleCalibration(scale=1.0).observe(100, 1).scale == 0.5


def test_an_outlier_after_a_steady_history_moves_the_scale_one_step_at_most() -> None:
    state = ScaleCalibration(scale=1.0)
    for _ in range(30):
        state = state.observe(100, 100)
    assert state.scale == 1.0
    spiked = state.observe(100, 5000)
    assert 1.0 <= spiked.scale <= 1.15
    assert spiked.mean < 1.05


def test_dict_round_trip() -> None:
    state = ScaleCalibration(scale=1.0).observe(100, 130).observe(100, 125)
    assert ScaleCalibration.from_dict(state.to_dict()) == state
    assert state.to_dict() == {
        "scale": state.scale,
        "samples": 2,
        "mean": state.mean,
        "variance": state.variance,
    }
    assert ScaleCalibration.from_dict({"scale": 1.51}) == ScaleCalibration(scale=1.51)
    with pytest.raises(ValueError, match="scale must be a finite number"):
        ScaleCalibration.from_dict({"scale": "1.51"})  # stored values are checked, not coerced


@given(
    seed=st.sampled_from([1.0, 1.11, 1.51]),
    observations=st.lists(
        st.tuples(st.integers(-10, 5000), st.integers(-10, 20000)), min_size=1, max_size=40
    ),
)
def test_every_move_is_a_rise_or_a_fall_of_at_least_a_tenth(
    seed: float, observations: list[tuple[int, int]]
) -> None:
    state = ScaleCalibration(scale=seed)
    valid = 0
    for counted, provider in observations:
        new = state.observe(counted, provider)
        if counted > 0 and provider > 0:
            valid += 1
        if new.scale != state.scale:
            assert _on_step(new.scale)
            assert new.scale > state.scale or state.scale - new.scale >= 0.1 - 1e-9
        assert 0.25 <= new.scale <= 4.15
        state = new
    assert state.samples == valid
