"""The cost model: what checking a task by brute force should cost, and per-task time limits.

Two sources, kept apart because only one is a measurement made here:

* an ESTIMATE from elsewhere: about 150-170 µs per `Int` multiply-add when Lean's kernel
  evaluates list code of this kind (kim-em/hex-dev #10212, Lean v4.34), times the task's
  `kernel_mul_adds` (network.kernel_mul_adds: 2·p³·H). It is never shown as a measurement;
  `calibrate` measures the rate on the user's own machine instead;
* a FIT of such measurements (`fit_rate`): seconds = intercept + rate · kernel_mul_adds, by least
  squares over the reference proofs `calibrate` graded, from which `timeouts_for` gives every task
  of a set its own `timeout_s`. The taskset reads that file (`--env.taskset.task.timeouts`).

Pure functions and pydantic models only; reading and writing the file is the callers' business.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

#: Published kernel rate for `Int` list code, in seconds per multiply-add (low, high).
PUBLISHED_RATE_S: tuple[float, float] = (150e-6, 170e-6)
#: Where that rate comes from, printed next to every estimate made from it.
PUBLISHED_RATE_SOURCE = "kim-em/hex-dev #10212, Lean v4.34: a rate published elsewhere, not measured here"

#: A per-task limit is the fitted time times this, so that a slower grade still fits.
DEFAULT_HEADROOM = 3.0
#: No per-task limit below this many seconds (start-up and the build dominate small tasks).
DEFAULT_FLOOR_S = 60.0


def brute_force_estimate_s(kernel_mul_adds: int) -> tuple[float, float]:
    """(low, high) seconds the kernel should need to evaluate all p² pairs by brute force, from
    the published rate. An estimate from elsewhere, never a measurement (pure)."""
    low, high = PUBLISHED_RATE_S
    return kernel_mul_adds * low, kernel_mul_adds * high


def format_duration(seconds: float) -> str:
    """`45 s`, `12 min`, `1.5 h`: short and rounded, for tables (pure)."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def format_range(low: float, high: float) -> str:
    """`11–13 min`, `0.3 s`: a range in the unit of its upper end, short enough for a table (pure)."""
    if high < 90:
        unit, scale, digits = "s", 1.0, 1 if high < 10 else 0
    elif high < 90 * 60:
        unit, scale, digits = "min", 60.0, 0
    else:
        unit, scale, digits = "h", 3600.0, 1
    a, b = f"{low / scale:.{digits}f}", f"{high / scale:.{digits}f}"
    return f"{a} {unit}" if a == b else f"{a}–{b} {unit}"


class RateFit(BaseModel):
    """seconds ≈ intercept_s + seconds_per_mul_add · kernel_mul_adds, fitted to measurements."""

    model_config = ConfigDict(frozen=True)

    intercept_s: float = Field(ge=0)
    seconds_per_mul_add: float = Field(ge=0)
    n_tasks: int = Field(ge=1)

    def predict(self, kernel_mul_adds: int) -> float:
        return self.intercept_s + self.seconds_per_mul_add * kernel_mul_adds


def fit_rate(points: Sequence[tuple[int, float]]) -> RateFit:
    """Least squares of (kernel_mul_adds, seconds) pairs, clamped to a non-negative intercept and
    slope (a negative one is noise, and would promise a large task less time than a small one).
    With one distinct size, the line goes through the origin (pure)."""
    if not points:
        raise ValueError("no measurement to fit")
    xs = [float(x) for x, _ in points]
    ys = [float(y) for _, y in points]
    n = len(points)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    if sxx == 0.0:
        slope = mean_y / mean_x if mean_x > 0 else 0.0
        return RateFit(intercept_s=0.0, seconds_per_mul_add=max(slope, 0.0), n_tasks=n)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sxx
    intercept = mean_y - slope * mean_x
    if slope < 0:
        slope, intercept = 0.0, mean_y
    elif intercept < 0:  # refit through the origin
        slope, intercept = sum(x * y for x, y in zip(xs, ys, strict=True)) / sum(x * x for x in xs), 0.0
    return RateFit(intercept_s=intercept, seconds_per_mul_add=slope, n_tasks=n)


class TimeoutsFile(BaseModel):
    """What `calibrate --timeouts-out` writes and `--env.taskset.task.timeouts` reads."""

    model_config = ConfigDict(extra="forbid")

    toolchain: str
    """The toolchain the measurements were made with."""
    fit: RateFit
    headroom: float = Field(gt=0)
    floor_s: float = Field(gt=0)
    timeouts: dict[str, float]
    """Task id -> timeout_s. A task not listed gets the fixed `timeout_s`."""


def timeouts_for(
    tasks: Sequence[tuple[str, int]],
    fit: RateFit,
    headroom: float = DEFAULT_HEADROOM,
    floor_s: float = DEFAULT_FLOOR_S,
) -> dict[str, float]:
    """Each (task id, kernel_mul_adds) -> max(floor, headroom · predicted seconds), rounded up to
    a whole second (pure)."""
    return {tid: float(math.ceil(max(floor_s, headroom * fit.predict(m)))) for tid, m in tasks}


class TimeoutsFileError(ValueError):
    """A timeouts file that cannot be used (the message names the file and the problem)."""


def read_timeouts(path: Path) -> dict[str, float]:
    """Task id -> timeout_s from a timeouts file; every limit must be a positive finite number."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TimeoutsFileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        data = TimeoutsFile.model_validate(json.loads(text))
    except json.JSONDecodeError as exc:
        raise TimeoutsFileError(f"{path}: not JSON ({exc.msg})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise TimeoutsFileError(f"{path}: {where}: {first['msg']}") from None
    bad = [tid for tid, s in data.timeouts.items() if not (math.isfinite(s) and s > 0)]
    if bad:
        raise TimeoutsFileError(f"{path}: timeouts.{bad[0]}: must be a positive number of seconds")
    return dict(data.timeouts)
