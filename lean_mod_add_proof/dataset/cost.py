"""The cost model: what checking a task costs the kernel, the hard tasks' shipped limits, and
per-task limits from measurements.

Three sources, kept apart because only the last is a measurement:

* COUNTS, exact for a given (p, H): `network.kernel_mul_adds`, the Int multiply-adds the kernel
  performs to check a task by brute force ((p + 1)·p²·H: the kernel's whnf cache shares each
  pair's hidden layer between its p scores), and `packed_route.count_ops`, the kernel operations
  of the packed route (the fast proof the hard split is meant to admit);
* RATES, assumed: seconds per kernel operation, as a range (`PLAUSIBLE_RATES`). An earlier audit
  cited 150-170 µs per Int multiply-add (kim-em/hex-dev #10212, Lean v4.34); that thread was not
  found in the stored sources and nothing here measured it. The range widens it both ways: 75 µs
  (twice as fast as its low end) is the fastest we plan for, 340 µs (twice its high end: the
  cited figure may be per multiply-add of the uncached count 2·p³·H, which is twice the kernel's)
  the slowest. A hard task's limit must keep brute force out at the fastest rate (`BRUTE_FORCE_MARGIN`
  times over) and let the packed route in at the slowest (`PACKED_MARGIN` times over);
* a FIT of measurements (`fit_rate`): seconds = intercept + rate · kernel_mul_adds, by least
  squares over the reference proofs `calibrate` graded (grid tasks only), from which
  `timeouts_for` gives each grid task its own `timeout_s`, and `hard_limit_s` each hard task.

Pure functions and pydantic models only; reading and writing files is the callers' business.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lean_mod_add_proof.dataset.packed_route import OpCount, count_ops

#: The rate an earlier audit cited for `Int` list code, in seconds per multiply-add (low, high).
CITED_RATE_S: tuple[float, float] = (150e-6, 170e-6)
#: Where it comes from, printed next to every estimate made from the range below.
CITED_RATE_SOURCE = (
    "150-170 µs per Int multiply-add, cited from kim-em/hex-dev #10212 (Lean v4.34); not found in "
    "the stored sources and not measured here"
)
#: One brute force pass (the judge's replay) is all we count: the build skips kernel checks
#: (grading/reference.py: `-Ddebug.skipKernelTC=true`), and Lean.Environment.replay checks one
#: declaration at a time, so splitting the proof does not make it faster.
BRUTE_FORCE_MARGIN = 3.0
"""A hard task's limit is at most brute force's time at the fastest rate, divided by this."""
PACKED_MARGIN = 5.0
"""A hard task's limit is at least the packed route's time at the slowest rate, times this."""
#: Fixed seconds a packed proof may spend outside its kernel evaluation at the slowest: the build
#: (elaborating a few hundred lines of lemmas), the judge's start, the replay of those lemmas, the
#: statement and axiom checks. An allowance, not a measurement.
PACKED_OVERHEAD_S = 60.0
#: Seconds per 64-bit limb that GMP touches, at the slowest (schoolbook products, cold caches).
SLOWEST_LIMB_S = 1e-9
#: A hard limit is rounded down to a multiple of this many seconds.
LIMIT_STEP_S = 10.0

#: A per-task limit from a fit is the fitted time times this, so that a slower grade still fits.
DEFAULT_HEADROOM = 3.0
#: No per-task limit below this many seconds (start-up and the build dominate small tasks).
DEFAULT_FLOOR_S = 60.0
#: A rate measured on this machine is taken to vary by this factor either way (load, noise).
MEASURED_SPREAD = 1.5


class Rates(BaseModel):
    """Seconds per kernel operation (one Int multiply-add of the brute force; the packed route's
    operations are each charged as much), as a range."""

    model_config = ConfigDict(frozen=True)

    fastest_s: float = Field(gt=0)
    slowest_s: float = Field(gt=0)
    source: str

    @classmethod
    def measured(cls, seconds_per_mul_add: float, what: str) -> Rates:
        """A measured rate, widened by MEASURED_SPREAD either way."""
        return cls(
            fastest_s=seconds_per_mul_add / MEASURED_SPREAD,
            slowest_s=seconds_per_mul_add * MEASURED_SPREAD,
            source=f"{what}, {seconds_per_mul_add * 1e6:.3g} µs per Int multiply-add, "
            f"÷ or × {MEASURED_SPREAD:g}",
        )


#: The range the shipped limits are planned with (see the module docstring).
PLAUSIBLE_RATES = Rates(
    fastest_s=75e-6,
    slowest_s=340e-6,
    source="75-340 µs per kernel operation: the cited 150-170 µs, halved and doubled",
)


def brute_force_estimate_s(mul_adds: int, rates: Rates = PLAUSIBLE_RATES) -> tuple[float, float]:
    """(fastest, slowest) seconds for the kernel to check all p² pairs by brute force (pure)."""
    return mul_adds * rates.fastest_s, mul_adds * rates.slowest_s


def packed_estimate_s(ops: OpCount, rates: Rates = PLAUSIBLE_RATES) -> tuple[float, float]:
    """(fastest, slowest) seconds for a packed proof: its kernel operations at each rate; the
    slowest adds GMP's limb work and PACKED_OVERHEAD_S (pure)."""
    fastest = ops.operations * rates.fastest_s
    slowest = PACKED_OVERHEAD_S + ops.operations * rates.slowest_s + ops.limb_work * SLOWEST_LIMB_S
    return fastest, slowest


class NoLimitFits(ValueError):
    """No limit keeps brute force out and lets the packed route in by the required margins."""


def limit_between(brute_fastest_s: float, packed_slowest_s: float) -> float:
    """The limit halfway (geometrically) between PACKED_MARGIN × the packed route's slowest time
    and brute force's fastest time / BRUTE_FORCE_MARGIN, so that both margins are exceeded by the
    same factor; rounded down to LIMIT_STEP_S. NoLimitFits if the bounds cross (pure)."""
    low, high = PACKED_MARGIN * packed_slowest_s, brute_fastest_s / BRUTE_FORCE_MARGIN
    if low > high:
        raise NoLimitFits(
            f"the packed route needs at least {low:.0f} s ({PACKED_MARGIN:g} × {packed_slowest_s:.0f} s) "
            f"but brute force is kept out only below {high:.0f} s ({brute_fastest_s:.0f} s / "
            f"{BRUTE_FORCE_MARGIN:g})"
        )
    limit = math.floor(math.sqrt(low * high) / LIMIT_STEP_S) * LIMIT_STEP_S
    return float(limit) if limit >= low else float(math.ceil(low))


@dataclass(frozen=True)
class HardEstimate:
    """Both routes' estimates for one task shape, and the limit between them (None: none keeps
    both margins, NoLimitFits says why)."""

    p: int
    hidden: int
    mul_adds: int
    packed_ops: OpCount
    brute_force_s: tuple[float, float]
    packed_s: tuple[float, float]
    limit_s: float | None
    rates: Rates

    def margins(self, limit_s: float) -> tuple[float, float]:
        """(brute force's fastest time / limit, limit / the packed route's slowest time): the
        first must be at least BRUTE_FORCE_MARGIN, the second at least PACKED_MARGIN."""
        return self.brute_force_s[0] / limit_s, limit_s / self.packed_s[1]


def hard_estimate(p: int, hidden: int, rates: Rates = PLAUSIBLE_RATES) -> HardEstimate:
    """Both estimates and the limit for a task of this shape (pure)."""
    # Here, not at the top: network.py imports numpy, which the grade path (cli, the container's
    # requirements-grade.txt) must not need (tests/test_container.py).
    from lean_mod_add_proof.dataset.network import kernel_mul_adds

    mul_adds, ops = kernel_mul_adds(p, hidden), count_ops(p, hidden)
    brute, packed = brute_force_estimate_s(mul_adds, rates), packed_estimate_s(ops, rates)
    try:
        limit: float | None = limit_between(brute[0], packed[1])
    except NoLimitFits:
        limit = None
    return HardEstimate(
        p=p,
        hidden=hidden,
        mul_adds=mul_adds,
        packed_ops=ops,
        brute_force_s=brute,
        packed_s=packed,
        limit_s=limit,
        rates=rates,
    )


def limit_problems(p: int, hidden: int, limit_s: float | None, rates: Rates = PLAUSIBLE_RATES) -> list[str]:
    """What is wrong with a hard task's shipped limit, if anything (pure): it must exist, keep
    brute force at least BRUTE_FORCE_MARGIN times over it at the fastest rate, and let the packed
    route in PACKED_MARGIN times over at the slowest."""
    if limit_s is None:
        return ["no shipped limit"]
    est = hard_estimate(p, hidden, rates)
    brute, packed = est.margins(limit_s)
    problems = []
    if brute < BRUTE_FORCE_MARGIN:
        problems.append(
            f"brute force at the fastest rate ({est.brute_force_s[0]:.0f} s) is only {brute:.2f}× the "
            f"{limit_s:g} s limit (at least {BRUTE_FORCE_MARGIN:g}× needed)"
        )
    if packed < PACKED_MARGIN:
        problems.append(
            f"the packed route at the slowest rate ({est.packed_s[1]:.0f} s) is 1/{packed:.2f} of the "
            f"{limit_s:g} s limit (at most 1/{PACKED_MARGIN:g} allowed)"
        )
    return problems


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
    """Task id -> timeout_s. A task not listed gets its shipped limit (hard tasks) or the fixed
    `timeout_s`."""
    hard_rates: Rates | None = None
    """The rates the hard tasks' limits here were computed with (None: none listed)."""


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
