"""The extra checkers of `kernels = all`: after the export route's judge accepted, every
independent checker the toolchain ships (`kernels.py`: which, how each is called, what its exit
statuses mean) reads the same export file, in the sandbox, from the verdict directory.

What crosses into each checker's process: the export's text (and nanoda's config, written by the
grader), nothing else of the submission's.

Verdicts and could-not-judge outcomes are `kernels.classify` and `kernels.combine`: a checker's
rejection is a rejection naming it; a missing checker or a host fault while starting it is could
not judge naming it.
"""

from __future__ import annotations

import asyncio
import os

from lean_mod_add_proof.grading import kernels as kernelsmod
from lean_mod_add_proof.grading import package as pkgmod
from lean_mod_add_proof.grading.lean_names import ALLOWED_AXIOMS, SUBMISSION_MODULE
from lean_mod_add_proof.grading.messages import one_line
from lean_mod_add_proof.grading.process import HostFault
from lean_mod_add_proof.grading.result import KernelRun
from lean_mod_add_proof.grading.routes.core import CommandEnv, Grade, StageFailed, not_judged
from lean_mod_add_proof.grading.routes.replay import run_on_verdict_dir

#: Why a `judge` setting without the export route cannot grade with `kernels = all`.
EXPORT_ROUTE_ONLY = "kernels=all grades on the replay judge's export route only"


async def run_checkers(g: Grade, env: CommandEnv, deadline: float) -> None:
    """`kernels = all`: every bundled checker reads the export the judge accepted, in the
    sandbox, under the grade's limits and deadline, one after another (kernels.py says what
    each exit status means). All of them run, so the result names every one's verdict."""
    assert g.grade_dir is not None
    export = g.verdict_dir / pkgmod.verdict_output(SUBMISSION_MODULE, pkgmod.EXPORT_EXT)
    tmp = g.grade_dir / pkgmod.JUDGE_TMP
    config_path = f"/tmp/{kernelsmod.NANODA_CONFIG}" if env.sandboxed else str(tmp / kernelsmod.NANODA_CONFIG)
    config_text = kernelsmod.nanoda_config(str(export), ALLOWED_AXIOMS)
    await asyncio.to_thread((tmp / kernelsmod.NANODA_CONFIG).write_text, config_text, encoding="utf-8")
    runs: list[KernelRun] = []
    for checker in kernelsmod.CHECKERS:
        binary = kernelsmod.checker_path(env.toolchain.dir, checker)
        if not os.access(binary, os.X_OK):
            runs.append(
                KernelRun(name=checker.name, verdict="not judged", detail=f"missing (bin/{checker.binary})")
            )
            continue
        argv = kernelsmod.checker_argv(binary, checker, str(export), config_path)
        try:
            out = await run_on_verdict_dir(g, env, argv, deadline, search_path=[])
        except HostFault as fault:
            runs.append(
                KernelRun(name=checker.name, verdict="not judged", detail=one_line(fault.reason, 120))
            )
            continue
        verdict, detail = kernelsmod.classify(
            checker,
            exit_code=out.record.exit_code,
            signal_no=out.record.signal,
            timed_out=out.timed_out,
            limit_exceeded=out.limit_exceeded,
        )
        runs.append(KernelRun(name=checker.name, verdict=verdict, seconds=out.record.seconds, detail=detail))
    g.result.kernels.extend(runs)
    verdict, why = kernelsmod.combine(runs)
    if verdict == "rejected":
        raise StageFailed("leanchecker", why)
    if verdict != "accepted":
        raise not_judged("leanchecker", why)
