"""The route protocol: what a way to a verdict needs, what it gives back, and how `auto` chooses.

A route is one way from a built submission to a verdict (`Route`: which judge, and what it
reads). Each has its own module in this package: `export.py`, `olean.py`, `comparator/`, with
`checkers.py` for the extra kernels of `kernels = all`; `core.py` and `steps.py` hold what they
share. The pipeline (`grading/pipeline.py`) knows routes only through `RouteRunner`:

- `prepare()`: get the route's judge ready on this host (no submission involved): None, or why
  the route cannot grade here (never a verdict);
- `verdict_path`: how verdicts are reached (the self-test's memo key part);
- `chosen(skipped)`: the route won; it may add a note to the result (the olean route's warning);
- `warm()`: build or verify what a first grade of the task would (warm-cache);
- `run(submission, switches, arm)`: grade. It sets the result and raises `core.StageFailed` for a
  failed stage (a verdict, or could not judge with `judged=False`); it re-arms the watchdog with
  `arm(deadline)` each time it starts a step with a new deadline;
- `accepted_reason()`: the result's reason once `run` returned.

How `auto` chooses (`ROUTES`): each `judge` setting tries its routes in order, and the first
whose `prepare()` and self-test pass grades; none passing is could not judge, naming each
route's reason (pipeline.py `choose_route`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar, Protocol

from lean_mod_add_proof.grading.result import JudgeChoice, JudgeName, VerdictFrom


@dataclass(frozen=True)
class Route:
    """How a grade reaches its verdict: which judge, and what the replay judge reads."""

    judge: JudgeName
    verdict_from: VerdictFrom | None = None
    """`export` or `olean` for the replay judge; None for the comparator."""

    @property
    def label(self) -> str:
        return f"{self.judge} ({self.verdict_from})" if self.verdict_from else self.judge

    @property
    def reads(self) -> VerdictFrom:
        """Which judge text the route uses, and what that judge reads (the olean text for the
        comparator route, whose grades never run it)."""
        return self.verdict_from or "olean"


EXPORT_ROUTE = Route("replay", "export")
OLEAN_ROUTE = Route("replay", "olean")
COMPARATOR_ROUTE = Route("comparator")
#: The routes each `judge` setting tries, in order: the first whose self-test passes grades. The
#: export boundary first (only text crosses into the verdict process), then the olean replay
#: (the weaker boundary, named on every result), then the toolchain's own comparator.
ROUTES: dict[JudgeChoice, tuple[Route, ...]] = {
    "auto": (EXPORT_ROUTE, OLEAN_ROUTE, COMPARATOR_ROUTE),
    "replay": (EXPORT_ROUTE, OLEAN_ROUTE),
    "comparator": (COMPARATOR_ROUTE,),
}

#: A test-only edit of the submission's export before the judge reads it (the self-test's
#: crafted-export canaries): exported text in, the text the judge gets out.
ExportEdit = Callable[[str], str]
#: Re-arms the grade's watchdog: the deadline of the step that starts now.
Arm = Callable[[float], None]


@dataclass(frozen=True)
class TestSwitches:
    """`grade`'s test-only switches (see its docstring), reachable from no setting."""

    extra_modules: Mapping[str, str]
    route: Route | None
    export_edit: ExportEdit | None
    checkers_only: bool = False
    """The self-test's checker canaries: the external checkers read the (edited) export and
    decide alone; the grader's own judge does not run."""


class RouteRunner(Protocol):
    """One route, made for one grade (`RouteClass(grade, env)`); see the module docstring."""

    route: ClassVar[Route]
    runs_checkers: ClassVar[bool]
    """Whether `kernels = all` can grade on it (the extra checkers read its export)."""
    self_tested: bool
    """Set by the route choice once this grade's self-test passed for the route (never for the
    self-test's own canaries): what the toolchain was shown to do on the reference is known."""

    async def prepare(self) -> str | None: ...

    @property
    def verdict_path(self) -> str: ...

    def chosen(self, skipped: list[str]) -> None: ...

    async def warm(self) -> None: ...

    async def run(self, submission: str, switches: TestSwitches, arm: Arm) -> None: ...

    def accepted_reason(self) -> str: ...
