"""The toolchain proves itself before its verdicts count: canaries through the real pipeline.

Everything the grader believes about Lean (that the replay rejects what the build let through,
that the judge sees only what the grader placed, that axioms are found, that no initializer runs
while the verdict is reached) was read in Lean's sources, not run here. So before the first
grade in a process, each canary below is graded through the real pipeline on the real toolchain,
and each must get exactly its expected verdict. Any other outcome makes every grade "could not
judge" with the reason `toolchain self-test failed: <canary> was <what happened>`: a wrong belief
stops grading instead of producing wrong rewards.

A pass is remembered per (toolchain, grader version, settings) in memory and in the cache
directory; a failure only in memory, so a fixed toolchain is tried again by the next process.
A failure only because a canary could not be judged (a host fault: a program briefly missing, a
full disk, the OOM killer) says nothing about the toolchain: it is tried again once its back-off
(backoff.py) has passed, while a canary judged wrongly condemns the route for the process. A
route found unavailable while its canaries ran (a replay route whose `lean --run` cannot run its
judge text, native_judge.py `interpreter_unavailable`) is neither: the self-test stops there and
reports the route unavailable, with what it needs (`SelfTestReport.unavailable`); it is not run
again in this process, since the toolchain's files will not change their answer.

One path is tested only with the toolchain double: a judge that ends without a verdict after
its `{"phase":"replay"}` line (a crash on the submission's data) counts as a rejection. No canary
makes real rc2 do that deterministically: the oversized shift that once panicked the runtime is
now a kernel exception (lean4 #14849), and a native stack overflow depends on the stack size.

The canaries grade the self-test task (`SelfTestWeights.lean`, p = 3) with the guard skipped
where the canary needs a construct the guard would reject first. Their `-- double:` comment lines
are ignored by Lean; they script the test double (tests/toolchain_double) to act as Lean would
on the same file, so the double passes the self-test only by giving Lean's verdicts.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import json
import logging
import os
import tempfile
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from lean_mod_add_proof.grading import kernels as kernelsmod
from lean_mod_add_proof.grading import package as pkgmod
from lean_mod_add_proof.grading import toolchain_manifest, workdirs
from lean_mod_add_proof.grading.backoff import Backoff
from lean_mod_add_proof.grading.export_text import (
    append_line,
    drop_constant,
    require_constant,
    retype_constant,
)
from lean_mod_add_proof.grading.judge_source import judge_text
from lean_mod_add_proof.grading.lean_names import (
    SPEC_CONSTANT,
    WEIGHTS_MODULE,
    theorem_name,
    theorem_signature,
)
from lean_mod_add_proof.grading.native_judge import interpreter_unavailable
from lean_mod_add_proof.grading.pipeline import ExportEdit, GradeTask, Route, grade
from lean_mod_add_proof.grading.reference import reference_submission, row_lemma_name
from lean_mod_add_proof.grading.result import GraderConfig, GradeResult, Stage
from lean_mod_add_proof.grading.steps_log import long_step
from lean_mod_add_proof.grading.toolchain import Toolchain

log = logging.getLogger(__name__)

#: Bump when the canaries or the verdict logic change: remembered passes stop counting.
#: 6: the checkers classified by cause, each canary answered by its row's predicted status (issue 36);
#: 5: the comparator's host faults (issue 37); 4: its verdict, the shift bomb.
GRADER_VERSION = "judge-6"
SELFTEST_P = 3
SELFTEST_TASK_ID = "selftest_p03_h02"
SELFTEST_WEIGHTS_PATH = Path(__file__).resolve().parent / "SelfTestWeights.lean"
#: The file the initializer canary writes if its initializer ever runs in the verdict directory.
INIT_MARKER = "lean-mod-add-proof-init-marker"

_SIG = theorem_signature(SELFTEST_P)
_HEADER = f"import {WEIGHTS_MODULE}\n\n"
_REFERENCE_BODY = reference_submission(SELFTEST_P).removeprefix(_HEADER)
SHIFT_BOMB = "LeanCheckedNetwork.Net.shift_bomb"


#: The routes a canary can run on (`route_key`): the replay judge reading the export or the
#: olean, and the toolchain's comparator.
ROUTE_KEYS: tuple[str, ...] = ("export", "olean", "comparator")
#: What every rejection by the comparator says (routes/comparator/verdict.py `comparator_verdict`).
COMPARATOR_REJECTS = ("leanchecker", "lake comparator rejected")


def route_key(route: Route) -> str:
    return route.verdict_from or route.judge


@dataclass(frozen=True)
class Canary:
    """One submission and the verdict the grader must reach on it."""

    name: str
    text: str
    expect_stage: Stage | None
    """None: accepted; else the stage at which it must be rejected (as a verdict)."""
    expect_reason: str = ""
    """A part of the reason the rejection must give."""
    skip_guard: bool = True
    also_fine: tuple[Stage, ...] = ()
    """Rejection stages that count as correct too: a toolchain that refuses `initialize` here, or
    evaluates the shift while building, still never lets the code run in the verdict."""
    extra_modules: Mapping[str, str] = field(default_factory=dict)
    config: Mapping[str, object] = field(default_factory=dict)
    routes: tuple[str, ...] = ROUTE_KEYS
    """The routes it runs on (`route_key`)."""
    per_route: Mapping[str, tuple[Stage | None, str]] = field(default_factory=dict)
    """(stage, reason) expected on a route where it differs from `expect_stage`/`expect_reason`."""
    export_edit: ExportEdit | None = None
    """How the export is crafted before the judge reads it (export route only)."""

    def on(self, key: str) -> Canary:
        """This canary as it must come out on the route `key`."""
        stage, reason = self.per_route.get(key, (self.expect_stage, self.expect_reason))
        return dataclasses.replace(self, expect_stage=stage, expect_reason=reason)


CANARIES: tuple[Canary, ...] = (
    Canary("reference proof", reference_submission(SELFTEST_P), None, skip_guard=False),
    Canary(
        "a sorry proof",
        f"{_HEADER}-- double: judge axioms sorryAx\n{_SIG} := by\n  sorry\n",
        "axioms",
        "sorryAx",
        per_route={"comparator": COMPARATOR_REJECTS},
    ),
    Canary(
        "a theorem stated as True",
        f"{_HEADER}-- double: judge statement-fail the theorem's type is True, not Spec\n"
        f"theorem LeanCheckedNetwork.Net.adds_mod_{SELFTEST_P} : True := trivial\n",
        "statement",
        "Spec",
        per_route={"comparator": COMPARATOR_REJECTS},
    ),
    Canary(
        "skipKernelTC over a false decide",
        f"{_HEADER}-- double: judge replay-fail (kernel) declaration type mismatch\n"
        "set_option debug.skipKernelTC true in\n"
        "theorem LeanCheckedNetwork.Net.bogus : (1 : Nat) = 2 := by decide +kernel\n\n"
        f"{_SIG} :=\n  absurd LeanCheckedNetwork.Net.bogus (by decide)\n",
        "leanchecker",
        "kernel",
        per_route={"comparator": COMPARATOR_REJECTS},
    ),
    Canary(
        "an oversized shift in the replay",
        # Since lean4 #14849 (v4.34; issue #15193) the kernel refuses an oversized
        # `Nat.shiftLeft` with a kernel exception instead of a runtime panic, so on rc2 this is an
        # ordinary replay rejection. Not evaluated while building (skipKernelTC), so it is the
        # judge's replay that meets it; a toolchain that evaluates it while building rejects it
        # there, which is as good.
        # `leanexport` writes only the theorem's closure through types and values (`dumpConstant`,
        # src/LeanExport/Basic.lean), so the theorem must use the bomb: the tactic `have` becomes
        # a `let` whose value is kept even when unused (`elabLetDeclAux`, `usedOnly := false`,
        # src/Lean/Elab/Binders.lean), and `clear` only narrows the goal's context (a new goal
        # assigned to the old one, src/Lean/Meta/Tactic/Clear.lean), so no later tactic sees it.
        f"{_HEADER}-- double: judge replay-fail (kernel) Nat.shiftLeft exponent is too large\n"
        "theorem LeanCheckedNetwork.Net.shift_bomb : Nat.shiftLeft 1 4294967296 = 0 := by\n"
        f"  decide +kernel\n\n"
        + _REFERENCE_BODY.replace(
            "  intro a ha\n",
            f"  have _bomb := {SHIFT_BOMB}\n  clear _bomb\n  intro a ha\n",
            1,
        ),
        "leanchecker",
        "kernel",
        also_fine=("build",),
        per_route={"comparator": COMPARATOR_REJECTS},
        # Fails closed (ExportEditError) when the export lacks the bomb: a canary testing nothing.
        export_edit=functools.partial(require_constant, name=SHIFT_BOMB),
    ),
    Canary(
        "a declared axiom",
        f"{_HEADER}axiom LeanCheckedNetwork.Net.cheat : False\n\n"
        "-- double: judge axioms LeanCheckedNetwork.Net.cheat\n"
        f"{_SIG} :=\n  LeanCheckedNetwork.Net.cheat.elim\n",
        "axioms",
        "LeanCheckedNetwork.Net.cheat",
        per_route={"comparator": COMPARATOR_REJECTS},
    ),
    Canary(
        "an import of a module the build made",
        f"{_HEADER}import LeanCheckedNetwork.Extra\n\n{_REFERENCE_BODY}",
        "leanchecker",
        "LeanCheckedNetwork.Extra",
        extra_modules={"LeanCheckedNetwork.Extra": "theorem extraFact : True := trivial\n"},
        routes=("export", "olean"),
        # The export holds the theorem and what it uses, all of it replayed: an unused import
        # trusts nothing, so only the olean judge (which trusts imported modules) must refuse it.
        per_route={"export": (None, "")},
    ),
    Canary(
        "an initializer",
        f"{_HEADER}initialize do\n"
        '  if ← System.FilePath.pathExists "Judge.lean" then\n'
        '    let dir := (← IO.getEnv "TMPDIR").getD "/tmp"\n'
        f'    IO.FS.writeFile (System.FilePath.mk dir / "{INIT_MARKER}") "ran in the verdict"\n\n'
        f"{_REFERENCE_BODY}",
        None,
        also_fine=("build",),
        config={"keep_packages": True},
        routes=("export", "olean"),
    ),
    Canary(
        "a build over a small memory cap",
        reference_submission(SELFTEST_P) + "-- double: build alloc 256\n",
        "build",
        "memory cap exceeded",
        skip_guard=False,
        config={"memory_mb": 64},
        routes=("export", "olean"),
    ),
    # The export boundary: exports the judge must refuse, from a real build and export (the
    # first) or crafted from the reference's export (export_text.py).
    Canary(
        "an export that redefines Spec",
        # No import of the task's modules: the build elaborates its own Spec, and the export
        # carries it under the trusted name.
        f"def {SPEC_CONSTANT} : Prop := True\n\n"
        f"theorem {theorem_name(SELFTEST_P)} : {SPEC_CONSTANT} := trivial\n",
        "leanchecker",
        "differs from the trusted one",
        routes=("export",),
    ),
    Canary(
        "an export missing a dependency",
        reference_submission(SELFTEST_P),
        "leanchecker",
        "kernel rejected",
        routes=("export",),
        export_edit=functools.partial(drop_constant, name=row_lemma_name(SELFTEST_P, 0)),
    ),
    Canary(
        "an export whose theorem's type is not what its value proves",
        reference_submission(SELFTEST_P),
        "leanchecker",
        "kernel rejected",
        routes=("export",),
        export_edit=functools.partial(
            retype_constant, name=theorem_name(SELFTEST_P), like=row_lemma_name(SELFTEST_P, 0)
        ),
    ),
    Canary(
        "a malformed export",
        reference_submission(SELFTEST_P),
        "leanchecker",
        "malformed export",
        routes=("export",),
        export_edit=functools.partial(append_line, line='{"bogus":1}'),
    ),
)


#: The belief about Lean each canary tests, so that a failed canary in a report from a real
#: machine names the belief that was wrong (`lean-check`'s report).
BELIEFS: Mapping[str, str] = {
    "reference proof": "an honest per-row `decide +kernel` proof builds, exports and replays",
    "a sorry proof": "`sorry` elaborates to the axiom `sorryAx`, which the judge finds",
    "a theorem stated as True": "the judge compares the theorem's type with the trusted Spec",
    "skipKernelTC over a false decide": "the judge's replay re-checks what the build skipped",
    "an oversized shift in the replay": "the theorem's closure holds the bomb, and rc2's kernel "
    "refuses an oversized Nat.shiftLeft with an exception (lean4 #14849)",
    "a declared axiom": "a declared axiom the theorem uses is reported by the judge",
    "an import of a module the build made": "the olean judge refuses a module it does not trust; "
    "the export holds only the closure, so there it changes nothing",
    "an initializer": "no `initialize` code runs while the verdict is reached",
    "a build over a small memory cap": "the build's memory cap is enforced and is a verdict",
    "an export that redefines Spec": "a constant named Spec in the export must equal the trusted one",
    "an export missing a dependency": "the replay refuses a constant whose dependency is absent",
    "an export whose theorem's type is not what its value proves": "the replay type-checks each "
    "constant's value against its stated type",
    "a malformed export": "the judge's export reader (LeanExport.parseStream) refuses an unknown line",
}


@dataclass(frozen=True)
class CheckerCanary:
    """An export every external checker reads alone (`checkers_only`, `kernels = all`), and what
    it is to them (`case`): the reference, which each must accept; an ill-typed export (a missing
    dependency, a type mismatch), which each must reject with the class and the exit status its
    row predicts; an axiom outside the list, which each must answer as its row predicts
    (kernels.py `Checker.predicts`)."""

    name: str
    text: str
    case: kernelsmod.CanaryCase
    export_edit: ExportEdit | None = None

    @property
    def must_accept(self) -> bool:
        return self.case == "reference"


def checker_canaries() -> tuple[CheckerCanary, ...]:
    """The export canaries as each external checker sees them. The redefined-`Spec` export is not
    among them: it is well typed, so no kernel refuses it; the judge's comparison with the trusted
    `Spec` does, and the checkers only ever read an export the judge accepted."""
    return (
        CheckerCanary("reference proof", reference_submission(SELFTEST_P), "reference"),
        CheckerCanary(
            "an export missing a dependency",
            reference_submission(SELFTEST_P),
            "missing dependency",
            export_edit=functools.partial(drop_constant, name=row_lemma_name(SELFTEST_P, 0)),
        ),
        CheckerCanary(
            "an export whose theorem's type is not what its value proves",
            reference_submission(SELFTEST_P),
            "type mismatch",
            export_edit=functools.partial(
                retype_constant, name=theorem_name(SELFTEST_P), like=row_lemma_name(SELFTEST_P, 0)
            ),
        ),
        # `axiom` is `"axiom " >> declId >> ppIndent declSig` (lean4 src/Lean/Parser/Command.lean
        # `«axiom»`); the theorem's value is that constant, of the theorem's own type.
        CheckerCanary(
            "an axiom outside the list",
            f"{_HEADER}axiom selftestCheat : {SPEC_CONSTANT}\n\n{_SIG} := selftestCheat\n",
            "unpermitted axiom",
        ),
    )


#: The outcomes of a checker that say nothing about it: the host's (tried again after a back-off).
HOST_KINDS = frozenset({"missing", "host fault", "killed from outside", "host errno"})


@dataclass(frozen=True)
class CheckerProblem:
    """One checker that did not answer a canary as its row predicts."""

    checker: str
    problem: str
    transient: bool
    """Only a host fault kept it from answering (tried again after a back-off)."""


def judge_checkers(c: CheckerCanary, res: GradeResult) -> list[CheckerProblem]:
    """Each checker that did not answer `c` as its row predicts, with what it did (pure): the
    reference accepted, an invalid canary rejected *by the predicted class* (not merely not
    accepted: a row whose reject code is wrong shows here)."""
    by_name = {k.name: k for k in res.kernels}
    problems: list[CheckerProblem] = []
    for checker in kernelsmod.CHECKERS:
        run = by_name.get(checker.name)
        if run is None:
            problems.append(CheckerProblem(checker.name, f"nothing: not run ({res.reason})", not res.judged))
            continue
        if kernelsmod.predicted(checker, c.case, run):
            continue
        expected = checker.predicts[c.case].describe()
        problems.append(
            CheckerProblem(
                checker.name,
                f"predicted {expected}; got {run.detail or run.verdict} ({run.kind}, "
                f"{run.status or 'no status'})",
                run.kind in HOST_KINDS,
            )
        )
    return problems


class CanaryOutcome(BaseModel):
    """What one canary got, for the report and `doctor --selftest`."""

    name: str
    belief: str = ""
    """What about Lean it tests (`BELIEFS`)."""
    expected: str
    got: str
    passed: bool
    seconds: float


class SelfTestReport(BaseModel):
    passed: bool
    reason: str
    """Empty when passed; else `toolchain self-test failed: <canary> was <what happened>`."""
    canaries: list[CanaryOutcome]
    failed_checkers: list[str] = []
    """The bundled checkers (`kernels = all`) that did not answer every checker canary as their
    rows predict, by name: with any, `kernels = all` grades are could not judge."""
    transient: bool = False
    """It failed only because canaries could not be judged (host faults), never on a verdict:
    tried again after a back-off instead of condemning the route."""
    unavailable: bool = False
    """The route cannot run on this toolchain (`reason` says what it needs): no belief about Lean
    was found wrong, and nothing is retried. The canaries after the one that found it did not run."""


def _expected(c: Canary) -> str:
    return "accepted" if c.expect_stage is None else f"rejected at {c.expect_stage} ({c.expect_reason!r})"


def _got(res: GradeResult) -> str:
    if res.accepted:
        return "accepted"
    verdict = "rejected" if res.judged else "not judged"
    return f"{verdict} at {res.failed_stage}: {res.reason}"


def judge_canary(c: Canary, res: GradeResult, grade_dir: Path | None) -> str | None:
    """None if the canary got its expected verdict, else what happened instead (pure but for
    the marker check in a kept grade directory)."""
    tolerated = res.judged and res.failed_stage in c.also_fine
    if c.expect_stage is None:
        wrong = not res.accepted and not tolerated
    else:
        right_rejection = res.judged and res.failed_stage == c.expect_stage and c.expect_reason in res.reason
        wrong = res.accepted or not (right_rejection or tolerated)
    if wrong:
        return _got(res)
    if grade_dir is not None and any((grade_dir / tmp / INIT_MARKER).exists() for tmp in pkgmod.STEP_TMPS):
        return "accepted, but its initializer ran while the verdict was reached"
    return None


def canaries_for(route: Route) -> list[Canary]:
    """The canaries of `route`, each with what it must get there (pure)."""
    key = route_key(route)
    return [c.on(key) for c in CANARIES if key in c.routes]


async def run_selftest(
    toolchain: Toolchain, config: GraderConfig, network_lean: str, route: Route
) -> SelfTestReport:
    """Grade every canary of `route` by that route (no cache of the outcome) and report. Seconds
    to minutes on real Lean: one log line at its start and one at its end (steps_log.py), for
    the first grade, every re-run, `doctor --selftest` and `lean-check` alike."""
    where = f"route {route_key(route)}, sandbox {config.sandbox}"
    with long_step(log, "self-test", where) as step:
        report = await _grade_canaries(toolchain, config, network_lean, route)
        step.outcome, step.detail = ("passed", "") if report.passed else ("failed", report.reason)
    return report


async def _grade_canaries(
    toolchain: Toolchain, config: GraderConfig, network_lean: str, route: Route
) -> SelfTestReport:
    task = GradeTask(
        task_id=SELFTEST_TASK_ID,
        p=SELFTEST_P,
        network_lean=network_lean,
        weights_lean=SELFTEST_WEIGHTS_PATH.read_text(encoding="utf-8"),
    )
    outcomes: list[CanaryOutcome] = []
    failed_checkers: list[str] = []
    failure = ""
    on_verdict = False  # a canary judged wrongly (not just not judged)
    from lean_mod_add_proof.grading.cache import cache_root
    from lean_mod_add_proof.grading.routes.steps import sweep_once

    work_root = config.work_root if config.work_root is not None else Path(tempfile.gettempdir())
    work_root.mkdir(parents=True, exist_ok=True)
    # What a grader killed during its own self-test left here goes first (the same rule as a
    # grade's directory: its owner record names a dead process), then this one's is made with
    # its owner record, so the next grader can sweep it if this one is killed.
    await sweep_once(config.work_root, cache_root(config.cache_dir))
    work = await asyncio.to_thread(workdirs.make_owned_dir, work_root, workdirs.SELFTEST_DIR_PREFIX)
    try:
        base = config.model_copy(
            update={"toolchain_dir": toolchain.dir, "work_root": Path(work), "keep_packages": False}
        )
        for c in canaries_for(route):
            canary_config = base.model_copy(update=dict(c.config))
            res = await grade(
                c.text,
                task,
                canary_config,
                toolchain_check=None,  # the canaries are the check
                skip_guard=c.skip_guard,
                extra_modules=c.extra_modules,
                route=route,
                export_edit=c.export_edit,
            )
            kept = Path(res.package_dir) if res.package_dir else None
            problem = judge_canary(c, res, kept)
            if kept is not None:
                workdirs.remove_tree(kept)
            outcomes.append(
                CanaryOutcome(
                    name=c.name,
                    belief=BELIEFS.get(c.name, ""),
                    expected=_expected(c),
                    got=_got(res),
                    passed=problem is None,
                    seconds=res.grader_seconds,
                )
            )
            if problem is not None and (why := _route_unavailable(toolchain, route, res)) is not None:
                # The same for every canary after this one: the route cannot run here at all.
                return SelfTestReport(passed=False, reason=why, canaries=outcomes, unavailable=True)
            if problem is not None:
                on_verdict = on_verdict or res.judged
                if not failure:
                    failure = f"toolchain self-test failed ({route.label}): {c.name} was {problem}"
        if config.kernels == "all" and route_key(route) == "export":
            checker_failure, checker_verdict = await _grade_checker_canaries(
                task, base, route, outcomes, failed_checkers
            )
            failure = failure or checker_failure
            on_verdict = on_verdict or checker_verdict
    finally:
        await workdirs.remove_tree_off_loop(work)
    transient = bool(failure) and not on_verdict
    return SelfTestReport(
        passed=not failure,
        reason=failure,
        canaries=outcomes,
        transient=transient,
        failed_checkers=failed_checkers,
    )


async def _grade_checker_canaries(
    task: GradeTask,
    config: GraderConfig,
    route: Route,
    outcomes: list[CanaryOutcome],
    failed_checkers: list[str],
) -> tuple[str, bool]:
    """The checker canaries (`kernels = all`): one outcome per canary and checker, each checker
    that fails one named in `failed_checkers`. Returns (the first failure's reason naming the
    checker's self-test, or ""; whether a failure was on a verdict rather than a host fault)."""
    failure = ""
    on_verdict = False
    for cc in checker_canaries():
        res = await grade(
            cc.text,
            task,
            config,
            toolchain_check=None,
            skip_guard=True,
            route=route,
            export_edit=cc.export_edit,
            checkers_only=True,
        )
        problems = {p.checker: p for p in judge_checkers(cc, res)}
        runs = {k.name: k for k in res.kernels}
        for checker in kernelsmod.CHECKERS:
            problem = problems.get(checker.name)
            run = runs.get(checker.name)
            outcomes.append(
                CanaryOutcome(
                    name=f"checker {checker.name}: {cc.name}",
                    belief=f"its row ({checker.binary}) predicts: {checker.predicts[cc.case].describe()}",
                    expected=checker.predicts[cc.case].describe(),
                    got=f"{run.kind}: {run.detail}" if run is not None else _got(res),
                    passed=problem is None,
                    seconds=run.seconds if run is not None else res.grader_seconds,
                )
            )
            if problem is None:
                continue
            if checker.name not in failed_checkers:
                failed_checkers.append(checker.name)
            on_verdict = on_verdict or not problem.transient
            if not failure:
                failure = (
                    f"toolchain self-test failed ({route.label}): checker {checker.name} failed its "
                    f"self-test: {cc.name}: {problem.problem}"
                )
    return failure, on_verdict


def _route_unavailable(toolchain: Toolchain, route: Route, res: GradeResult) -> str | None:
    """Why `route` cannot run on this toolchain at all, when a canary's failure was that (a
    replay route graded by `lean --run`, whose interpreter cannot run the route's judge text)."""
    if route.verdict_from is None or res.judged or res.judge_mode != "interpreted":
        return None
    return interpreter_unavailable(toolchain, route.reads)


def route_outcome(report: SelfTestReport) -> dict[str, str]:
    """One route's self-test outcome for a first-contact report (pure): `status` (`passed`,
    `unavailable`, `host faults` or `failed`), the reason, and what to do about it."""
    if report.passed:
        return {"status": "passed", "reason": "", "advice": "nothing: this route grades"}
    if report.unavailable:
        advice = (
            "make the native judge build (the toolchain's `leanc`) or set native_judge = true; "
            "meanwhile `judge = auto`/`replay` grades with the olean route (its warning on every "
            "result), or use `--judge comparator`"
        )
        return {"status": "unavailable", "reason": report.reason, "advice": advice}
    if report.transient:
        advice = "a host fault (see the reason): fix the host and run again; the toolchain is not suspect"
        return {"status": "host faults", "reason": report.reason, "advice": advice}
    advice = (
        "a belief about this toolchain was wrong: grade with another route that passed, or stop "
        "and report the canary table"
    )
    return {"status": "failed", "reason": report.reason, "advice": advice}


# ---- once per process, remembered on disk ------------------------------------------------------


def selftest_key(toolchain: Toolchain, config: GraderConfig, route: Route, verdict_path: str) -> str:
    """What a pass depends on: the toolchain (directory, version, binary), the grader's verdict
    logic (this version, the judge program, the canaries), how verdicts are reached (which form
    of the judge: the compiled executable's hash or `lean --run`; whether bubblewrap is in use,
    in effect rather than as set) and the other settings canaries run under."""
    h = hashlib.sha256()
    stat = toolchain.lean.stat()
    settings = config.model_dump(
        mode="json",
        # grade_in: a pass on the host (an image's warm-cache) holds in the runtime box too.
        exclude={
            "work_root",
            "keep_packages",
            "cache_dir",
            "max_concurrent",
            "toolchain_dir",
            "sandbox",
            "grade_in",
        },
    )
    parts = [
        GRADER_VERSION,
        str(toolchain.dir),
        toolchain.version,
        f"{stat.st_size}:{stat.st_mtime_ns}",
        judge_text(route.reads),
        route.label,
        verdict_path,
        json.dumps([(c.name, c.text, c.expect_stage, c.expect_reason) for c in canaries_for(route)]),
        json.dumps([(c.name, c.text, c.case) for c in checker_canaries()]),
        *_checker_part(toolchain, config),
        json.dumps(settings, sort_keys=True),
    ]
    for part in parts:
        h.update(part.encode("utf-8") + b"\0")
    return h.hexdigest()[:32]


def _checker_part(toolchain: Toolchain, config: GraderConfig) -> list[str]:
    """With `kernels = all`, what a pass also depends on: each checker's row (command line and
    predictions) and its binary (size, mtime), so a changed checker runs the self-test again and a
    failed one stays failed only until it changes."""
    if config.kernels != "all":
        return []
    parts = []
    for c in kernelsmod.CHECKERS:
        try:
            st = kernelsmod.checker_path(toolchain.dir, c).stat()
            binary = f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"
        except OSError:
            binary = "missing"
        predicts = {case: [p.kind, p.status, p.detail_has] for case, p in c.predicts.items()}
        parts.append(json.dumps([c.name, c.args, binary, predicts], sort_keys=True))
    return parts


_memo: dict[str, SelfTestReport] = {}
#: When a self-test that failed only on host faults (`SelfTestReport.transient`) runs again.
retry = Backoff()
_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


def _pass_file(config: GraderConfig, key: str) -> Path:
    from lean_mod_add_proof.grading.cache import cache_root

    return cache_root(config.cache_dir) / "selftest" / f"{key}.json"


def _remembered_pass(path: Path, key: str) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            data = json.loads(f.read(1 << 16))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("key") == key and data.get("passed") is True


def _remember_pass(path: Path, key: str, report: SelfTestReport) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps({"key": key, "passed": True, **report.model_dump(mode="json")}))
        os.replace(tmp, path)
    except OSError:
        pass  # not remembered on disk: the next process runs the canaries again


_on_disk: set[Path] = set()


async def _remembered_here(
    path: Path, key: str, report: SelfTestReport, toolchain: Toolchain, config: GraderConfig
) -> None:
    """Write the pass, and the toolchain's manifest recorded with it, into this cache directory
    once per process, unless they are there."""
    if path not in _on_disk:
        if not await asyncio.to_thread(_remembered_pass, path, key):
            await asyncio.to_thread(_remember_pass, path, key, report)
        m = toolchain_manifest.recorded(toolchain.dir, toolchain.version)
        where = _manifest_file(toolchain, config)
        if m is not None and not where.exists():
            await asyncio.to_thread(toolchain_manifest.store, m, where)
        _on_disk.add(path)


async def ensure_selftest(
    toolchain: Toolchain, config: GraderConfig, network_lean: str, route: Route, verdict_path: str
) -> str | None:
    """None when this toolchain, by this route and judge, passed the self-test (now or before),
    else why that route may not grade. Concurrent first grades wait for one run (a
    `ToolchainCheck`). A failure on host faults alone is run again once its back-off passed."""
    key = selftest_key(toolchain, config, route, verdict_path)
    if (why := await _toolchain_changed(toolchain, config)) is not None:
        return why
    if (known := _settled(key)) is not None:
        if known.passed:  # the key leaves the cache directory out: this one must hold it too
            await _remembered_here(_pass_file(config, key), key, known, toolchain, config)
        return None if known.passed else known.reason
    per_loop = _locks.setdefault(asyncio.get_running_loop(), {})
    async with per_loop.setdefault(key, asyncio.Lock()):
        if (known := _settled(key)) is not None:
            return None if known.passed else known.reason
        path = _pass_file(config, key)
        remembered = await asyncio.to_thread(_remembered_pass, path, key)
        if remembered and await asyncio.to_thread(_load_manifest, toolchain, config) is not None:
            _memo[key] = SelfTestReport(passed=True, reason="", canaries=[])
            return None
        try:
            report = await run_selftest(toolchain, config, network_lean, route)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the self-test itself broke (the grader's fault): fail closed
            report = SelfTestReport(
                passed=False,
                reason=f"toolchain self-test failed: it could not run ({type(exc).__name__}: {exc})",
                canaries=[],
                transient=True,
            )
        _memo[key] = report
        if report.transient:
            wait = retry.failed(key)
            report = report.model_copy(
                update={
                    "reason": report.reason.replace(
                        "self-test failed", f"self-test failed on host faults only (retried in {wait:g} s)", 1
                    )
                }
            )
            _memo[key] = report
        else:
            retry.succeeded(key)
        if report.passed:
            await _record_manifest(toolchain, config)
            await asyncio.to_thread(_remember_pass, path, key, report)
            _on_disk.add(path)
        return None if report.passed else report.reason


def _settled(key: str) -> SelfTestReport | None:
    """The outcome that stands for `key`: a pass, a failure on a verdict, or a failure on host
    faults whose back-off has not passed yet; None when the self-test must run (again)."""
    known = _memo.get(key)
    if known is not None and known.transient and retry.due(key):
        return None
    return known


def forget() -> None:
    """Drop the in-memory outcomes (tests; a long-lived process after a toolchain fix)."""
    _memo.clear()
    _on_disk.clear()
    retry.clear()
    _unchanged_at.clear()
    toolchain_manifest.forget()


# ---- the toolchain's manifest (toolchain_manifest.py) ------------------------------------------


def _manifest_file(toolchain: Toolchain, config: GraderConfig) -> Path:
    from lean_mod_add_proof.grading.cache import cache_root

    name = hashlib.sha256(f"{toolchain.dir}\0{toolchain.version}".encode()).hexdigest()[:32]
    return cache_root(config.cache_dir) / "toolchain-manifest" / f"{name}.json"


def _load_manifest(toolchain: Toolchain, config: GraderConfig) -> toolchain_manifest.Manifest | None:
    """The manifest recorded with the last pass, in memory or in the cache directory."""
    if (m := toolchain_manifest.recorded(toolchain.dir, toolchain.version)) is not None:
        return m
    try:
        m = toolchain_manifest.load(_manifest_file(toolchain, config))
    except (OSError, ValueError):
        return None
    if m.toolchain_dir != str(toolchain.dir) or m.version != toolchain.version:
        return None
    toolchain_manifest.remember(m)
    return m


async def _record_manifest(toolchain: Toolchain, config: GraderConfig) -> None:
    """Record the toolchain as the self-test found it (a pass just now)."""
    m = await asyncio.to_thread(toolchain_manifest.record, toolchain.dir, toolchain.version)
    toolchain_manifest.remember(m)
    await asyncio.to_thread(toolchain_manifest.store, m, _manifest_file(toolchain, config))


#: On a host, a toolchain found unchanged is not walked again for this long: a real toolchain's
#: `lib/lean` holds some ten thousand files (about 130 ms a walk), and on a host only its operator
#: can change it, so a change is noticed within seconds rather than before the very next grade.
#: In the runtime box, where the model's shell may write, every grade walks and re-hashes.
HOST_MANIFEST_RECHECK_S = 5.0
_unchanged_at: dict[tuple[str, str], float] = {}


async def _toolchain_changed(toolchain: Toolchain, config: GraderConfig) -> str | None:
    """Before each grade: has a watched file changed since the self-test passed? In the runtime
    box that is "could not judge" naming the file (the reason returned); on a host the passes
    are forgotten, so the self-test runs again and records the toolchain anew (None returned)."""
    runtime = config.grade_in == "runtime"
    watched = toolchain_manifest.key(toolchain.dir, toolchain.version)
    seen = _unchanged_at.get(watched)
    if not runtime and seen is not None and time.monotonic() - seen < HOST_MANIFEST_RECHECK_S:
        return None
    m = await asyncio.to_thread(_load_manifest, toolchain, config)
    if m is None:
        return None  # no pass recorded yet: the self-test runs and records one
    rehash = ("bin",) if runtime else ()
    started = time.monotonic()
    changed = await asyncio.to_thread(toolchain_manifest.changed_files, m, toolchain.dir, rehash=rehash)
    if not changed:
        _unchanged_at[watched] = started
        return None
    _unchanged_at.pop(watched, None)
    if config.grade_in == "runtime":
        more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
        return f"the toolchain changed after its self-test: {changed[0]}{more}"
    _memo.clear()
    toolchain_manifest.forget(toolchain.dir, toolchain.version)
    with contextlib.suppress(OSError):
        _manifest_file(toolchain, config).unlink()
    _on_disk.clear()
    return None
