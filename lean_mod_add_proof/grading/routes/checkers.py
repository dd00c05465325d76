"""The extra checkers of `kernels = all`: after the export route's judge accepted, every
independent checker the toolchain ships (`kernels.py`: which, how each is called, what each of its
exit statuses means, by cause) reads the same export file, in the sandbox, from the verdict
directory, one after another.

What crosses into each checker's process: the export's text (and nanoda's config, written by the
grader), nothing else of the submission's.

Each checker runs under its own limits, never under what is left of the judge's:
- a budget of its own in CPU seconds, `kernels.budget_s`: its time factor times the CPU seconds
  of the official judge's replay of this export, never less than `timeout_s` (the judge's own
  allowance), as its RLIMIT_CPU (`Limits.cpu_seconds`); running out of it is a rejection. A
  wall-clock backstop of `kernels.WALL_PER_CPU_S` times that, whose expiry is the host's load
  (could not judge); the grade's watchdog is re-armed for it (`arm`);
- at least the judge's memory: `memory_mb` plus the judge's own fixed cost
  (`replay.JUDGE_MEMORY_MB`, passed in as `judge_memory_extra_mb`), or twice the official judge's
  peak on this export if that is more (`kernels.memory_extra_mb`);
- LEAN_ABORT_ON_PANIC as its row says (`kernels.checker_env`), not the verdict step's blanket one.

Verdicts and could-not-judge outcomes are `kernels.classify` and `kernels.combine`: what the
export causes is a rejection naming the checker; a missing checker, a host fault while starting
it, a signal from outside its run, a host errno on our files or our own setup refused is could
not judge naming it.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from pathlib import Path

from lean_mod_add_proof.grading import kernels as kernelsmod
from lean_mod_add_proof.grading import package as pkgmod
from lean_mod_add_proof.grading.lean_names import ALLOWED_AXIOMS, SUBMISSION_MODULE
from lean_mod_add_proof.grading.messages import one_line
from lean_mod_add_proof.grading.process import HostFault
from lean_mod_add_proof.grading.result import KernelRun
from lean_mod_add_proof.grading.routes import core
from lean_mod_add_proof.grading.routes.core import CommandEnv, Grade, StageFailed, not_judged
from lean_mod_add_proof.grading.routes.protocol import Arm

#: Why a `judge` setting without the export route cannot grade with `kernels = all`.
EXPORT_ROUTE_ONLY = "kernels=all grades on the replay judge's export route only"


async def run_checkers(g: Grade, env: CommandEnv, *, arm: Arm, judge_memory_extra_mb: int) -> None:
    """`kernels = all`: every bundled checker reads the export the judge accepted, each under its
    own budget (see the module docstring). All of them run, so the result names every one's
    verdict, class and time."""
    assert g.grade_dir is not None
    export = g.verdict_dir / pkgmod.verdict_output(SUBMISSION_MODULE, pkgmod.EXPORT_EXT)
    tmp = g.grade_dir / pkgmod.JUDGE_TMP
    config_path = f"/tmp/{kernelsmod.NANODA_CONFIG}" if env.sandboxed else str(tmp / kernelsmod.NANODA_CONFIG)
    config_text = kernelsmod.nanoda_config(str(export), ALLOWED_AXIOMS, g.config.threads)
    await asyncio.to_thread(_write_config, tmp / kernelsmod.NANODA_CONFIG, config_text)
    official = next((k for k in g.result.kernels if k.name == kernelsmod.OFFICIAL), None)
    official_s = official.cpu_seconds if official is not None else None
    extra_mb = kernelsmod.memory_extra_mb(
        judge_extra_mb=judge_memory_extra_mb,
        memory_mb=g.config.memory_mb,
        official_peak_mb=official.peak_memory_mb if official is not None else 0,
    )
    runs: list[KernelRun] = []
    for checker in kernelsmod.CHECKERS:
        binary = kernelsmod.checker_path(env.toolchain.dir, checker)
        if not os.access(binary, os.X_OK):
            runs.append(
                KernelRun(
                    name=checker.name,
                    verdict="not judged",
                    kind="missing",
                    detail=f"missing (bin/{checker.binary})",
                )
            )
            continue
        budget = math.ceil(kernelsmod.budget_s(checker, official_s=official_s, floor_s=g.config.timeout_s))
        wall_s = kernelsmod.wall_backstop_s(budget)
        deadline = time.monotonic() + wall_s
        arm(deadline)
        argv = kernelsmod.checker_argv(binary, checker, str(export), config_path)
        ooms = core.oom_kill_count()
        try:
            out = await core.run_on_verdict_dir(
                g,
                env,
                argv,
                deadline,
                extra_env=kernelsmod.checker_env(checker),
                memory_extra_mb=extra_mb,
                cpu_seconds=budget,
            )
        except HostFault as fault:
            runs.append(
                KernelRun(
                    name=checker.name,
                    verdict="not judged",
                    kind="host fault",
                    budget_s=budget,
                    detail=f"could not run: {one_line(fault.reason, 120)}",
                )
            )
            continue
        found = kernelsmod.classify(
            checker,
            exit_code=out.record.exit_code,
            signal_no=out.record.signal,
            timed_out=out.timed_out,
            limit_exceeded=out.limit_exceeded,
            output=out.text,
            truncated=out.record.truncated,
            oom_killer_acted=core.oom_killer_acted(ooms),
            budget=budget,
            wall_s=wall_s,
            our_paths=(str(export), config_path),
        )
        runs.append(
            KernelRun(
                name=checker.name,
                verdict=found.verdict,
                kind=found.kind,
                status=kernelsmod.run_status(out.record.exit_code, out.record.signal),
                seconds=out.record.seconds,
                cpu_seconds=out.peak_cpu_s,
                budget_s=budget,
                peak_memory_mb=out.peak_rss_mb,
                detail=found.detail,
            )
        )
    g.result.kernels.extend(runs)
    verdict, why = kernelsmod.combine(runs)
    if verdict == "rejected":
        raise StageFailed("leanchecker", why)
    if verdict != "accepted":
        raise not_judged("leanchecker", why)


def _write_config(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
