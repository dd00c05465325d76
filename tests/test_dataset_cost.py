"""The cost model (dataset/cost.py): the rates planned with, both routes' estimates, the hard
tasks' shipped limits and their margins, and the fit behind per-task limits from measurements."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lean_mod_add_proof.dataset import cost
from lean_mod_add_proof.dataset.network import kernel_mul_adds
from lean_mod_add_proof.dataset.packed_route import OpCount
from lean_mod_add_proof.dataset.tasks import is_hard, load_tasks

HARD = [r for r in load_tasks() if is_hard(r.split)]


def test_the_planned_rates_widen_the_cited_one_both_ways() -> None:
    """The issue's floor: the fastest rate planned for is at least twice the cited low end's
    speed, and the slowest no faster than the cited high end."""
    low, high = cost.CITED_RATE_S
    assert cost.PLAUSIBLE_RATES.fastest_s <= low / 2
    assert cost.PLAUSIBLE_RATES.slowest_s >= high
    assert "not found" in cost.CITED_RATE_SOURCE and "not measured here" in cost.CITED_RATE_SOURCE


def test_estimates_scale_with_the_counts() -> None:
    rates = cost.Rates(fastest_s=1e-4, slowest_s=2e-4, source="t")
    assert cost.brute_force_estimate_s(1_000_000, rates) == pytest.approx((100.0, 200.0))
    ops = OpCount(steps=10, int_ops=20, nat_ops=70, limb_work=10**9)
    fast, slow = cost.packed_estimate_s(ops, rates)
    assert fast == pytest.approx(100 * 1e-4)
    assert slow == pytest.approx(cost.PACKED_OVERHEAD_S + 100 * 2e-4 + 10**9 * cost.SLOWEST_LIMB_S)


def test_limit_between_keeps_both_margins_by_the_same_factor() -> None:
    limit = cost.limit_between(brute_fastest_s=6000.0, packed_slowest_s=20.0)
    # bounds 100 s (5 × 20) and 2000 s (6000 / 3): the geometric middle, rounded down to 10 s
    assert limit == 440.0
    assert 6000.0 / limit >= cost.BRUTE_FORCE_MARGIN and limit / 20.0 >= cost.PACKED_MARGIN
    with pytest.raises(cost.NoLimitFits, match="brute force is kept out only below 100 s"):
        cost.limit_between(brute_fastest_s=300.0, packed_slowest_s=60.0)


def test_hard_estimate_of_the_old_p47_shape_has_no_limit() -> None:
    """Issue 40's finding, in the model: p = 47, H = 32 cannot keep both margins."""
    est = cost.hard_estimate(47, 32)
    assert est.mul_adds == kernel_mul_adds(47, 32) == 48 * 47**2 * 32
    assert est.limit_s is None


def test_every_shipped_hard_limit_keeps_both_margins() -> None:
    """Brute force at least 3× each hard task's limit at the fastest rate planned for, the packed
    route at most a fifth of it at the slowest; the limit is the model's."""
    assert len(HARD) >= 6
    for record in HARD:
        assert cost.limit_problems(record.p, record.hidden, record.timeout_s) == [], record.id
        assert record.timeout_s == cost.hard_estimate(record.p, record.hidden).limit_s


def test_a_limit_that_lets_brute_force_in_is_caught() -> None:
    record = HARD[0]
    est = cost.hard_estimate(record.p, record.hidden)
    too_long = est.brute_force_s[0] / cost.BRUTE_FORCE_MARGIN + 10
    assert "brute force at the fastest rate" in cost.limit_problems(record.p, record.hidden, too_long)[0]
    too_short = est.packed_s[1] * cost.PACKED_MARGIN - 10
    assert "the packed route" in cost.limit_problems(record.p, record.hidden, too_short)[0]
    assert cost.limit_problems(record.p, record.hidden, None) == ["no shipped limit"]


def test_a_measured_rate_is_widened_both_ways() -> None:
    rates = cost.Rates.measured(1e-4, "here")
    assert rates.fastest_s == pytest.approx(1e-4 / cost.MEASURED_SPREAD)
    assert rates.slowest_s == pytest.approx(1e-4 * cost.MEASURED_SPREAD)


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
    doc = cost.TimeoutsFile(
        toolchain="t", fit=fit, headroom=3.0, floor_s=60.0, timeouts={"x": 61.0}, hard_rates=None
    )
    path = tmp_path / "t.json"
    path.write_text(doc.model_dump_json(), encoding="utf-8")
    assert cost.read_timeouts(path) == {"x": 61.0}
    path.write_text(json.dumps({**json.loads(doc.model_dump_json()), "extra": 1}), encoding="utf-8")
    with pytest.raises(cost.TimeoutsFileError, match="extra"):
        cost.read_timeouts(path)
    path.write_text(json.dumps({**json.loads(doc.model_dump_json()), "timeouts": {"x": 0}}), encoding="utf-8")
    with pytest.raises(cost.TimeoutsFileError, match=r"timeouts\.x: must be a positive"):
        cost.read_timeouts(path)
