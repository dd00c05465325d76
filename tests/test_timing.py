"""The linear-time check itself (`tests/timing.py`): it fails on quadratic work, passes on linear
work, and a run that loses the CPU (a loaded machine) does not make linear work fail."""

from __future__ import annotations

import time

import pytest
import timing
from timing import assert_time_is_linear


def linear(text: str) -> int:
    return sum(text.count(c) for c in "abcdefgh")


def quadratic(text: str) -> int:
    # every 8th prefix copied and scanned: n**2 / 16 characters, in C, so the small input takes
    # a few ms (above FLOOR_S, as the guard's inputs do) and the large one 64 times that
    return sum(text[:i].count("b") for i in range(0, len(text), 8))


SMALL = "a" * 10_000
LARGE = "a" * 80_000


def test_quadratic_work_fails() -> None:
    with pytest.raises(AssertionError, match="8x the input took"):
        assert_time_is_linear(quadratic, SMALL, LARGE, scale=8)


def test_linear_work_passes() -> None:
    big_small, big_large = "a" * 2_000_000, "a" * 16_000_000  # well above FLOOR_S
    assert_time_is_linear(linear, big_small, big_large, scale=8)


def preempted(text: str) -> int:
    """Linear work, but the large input's run also waits as long as a run does when other
    processes hold the CPU (a loaded 2-core machine)."""
    if len(text) > 10_000_000:
        time.sleep(0.5)
    return linear(text)


def test_waiting_for_the_cpu_does_not_count() -> None:
    assert_time_is_linear(preempted, "a" * 2_000_000, "a" * 16_000_000, scale=8)


def test_waiting_for_the_cpu_counted_on_the_wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    # what the wall clock made of the same runs (issue 38: the reason the clock is CPU time)
    monkeypatch.setattr(timing, "CLOCK", time.perf_counter)
    with pytest.raises(AssertionError, match="8x the input took"):
        assert_time_is_linear(preempted, "a" * 2_000_000, "a" * 16_000_000, scale=8, attempts=1)
