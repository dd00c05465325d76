"""The cost model (dataset/cost.py): the published-rate estimate and the fit behind per-task limits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lean_mod_add_proof.dataset import cost


def test_estimate_uses_the_published_rate() -> None:
    assert cost.brute_force_estimate_s(4_000_000) == pytest.approx((600.0, 680.0))
    assert "not measured here" in cost.PUBLISHED_RATE_SOURCE


def test_largest_grid_task_fits_and_hard_tasks_do_not() -> None:
    """Issue 28's premise: p = 23, H = 32 fits the default 300 s; 4,000,000 needs twice that."""
    assert cost.brute_force_estimate_s(2 * 23**3 * 32)[1] < 300
    assert cost.brute_force_estimate_s(4_000_000)[0] >= 600


@pytest.mark.parametrize(("seconds", "text"), [(5, "5 s"), (89, "89 s"), (600, "10 min"), (7200, "2.0 h")])
def test_format_duration(seconds: float, text: str) -> None:
    assert cost.format_duration(seconds) == text


def test_fit_recovers_a_line() -> None:
    fit = cost.fit_rate([(1000, 2.0 + 1000 * 1e-4), (5000, 2.0 + 5000 * 1e-4), (9000, 2.0 + 9000 * 1e-4)])
    assert fit.intercept_s == pytest.approx(2.0) and fit.seconds_per_mul_add == pytest.approx(1e-4)
    assert fit.predict(100_000) == pytest.approx(12.0)


def test_fit_with_one_size_goes_through_the_origin() -> None:
    fit = cost.fit_rate([(2000, 4.0), (2000, 6.0)])
    assert (fit.intercept_s, fit.seconds_per_mul_add) == (0.0, pytest.approx(5.0 / 2000))


def test_fit_never_gives_a_larger_task_less_time() -> None:
    # Noise that slopes downwards: the slope is clamped to 0, the intercept is the mean.
    fit = cost.fit_rate([(1000, 5.0), (9000, 3.0)])
    assert fit.seconds_per_mul_add == 0.0 and fit.intercept_s == pytest.approx(4.0)
    with pytest.raises(ValueError, match="no measurement"):
        cost.fit_rate([])


@given(st.lists(st.tuples(st.integers(1, 10**7), st.floats(0.0, 1e4)), min_size=1, max_size=8))
def test_fit_is_never_negative_and_limits_grow_with_work(points: list[tuple[int, float]]) -> None:
    fit = cost.fit_rate(points)
    assert fit.intercept_s >= 0 and fit.seconds_per_mul_add >= 0
    limits = cost.timeouts_for([("a", 1000), ("b", 10**7)], fit)
    assert cost.DEFAULT_FLOOR_S <= limits["a"] <= limits["b"]


def test_timeouts_round_up_and_respect_the_floor() -> None:
    fit = cost.RateFit(intercept_s=1.0, seconds_per_mul_add=1e-4, n_tasks=2)
    assert cost.timeouts_for([("small", 10), ("big", 1_000_000)], fit, headroom=2.0, floor_s=60.0) == {
        "small": 60.0,
        "big": 202.0,
    }


def test_read_timeouts_round_trip_and_errors(tmp_path: Path) -> None:
    fit = cost.RateFit(intercept_s=0.5, seconds_per_mul_add=2e-5, n_tasks=3)
    doc = cost.TimeoutsFile(toolchain="t", fit=fit, headroom=3.0, floor_s=60.0, timeouts={"x": 61.0})
    path = tmp_path / "t.json"
    path.write_text(doc.model_dump_json(), encoding="utf-8")
    assert cost.read_timeouts(path) == {"x": 61.0}
    path.write_text(json.dumps({**json.loads(doc.model_dump_json()), "extra": 1}), encoding="utf-8")
    with pytest.raises(cost.TimeoutsFileError, match="extra"):
        cost.read_timeouts(path)
    path.write_text(json.dumps({**json.loads(doc.model_dump_json()), "timeouts": {"x": 0}}), encoding="utf-8")
    with pytest.raises(cost.TimeoutsFileError, match=r"timeouts\.x: must be a positive"):
        cost.read_timeouts(path)
