"""The export route (tried first): the toolchain's `leanexport` writes the submission's theorem
and everything it depends on as NDJSON text, in the build's sandbox; the replay judge
(`replay.py`, the export text of `Judge.lean`) reads that text from a fresh directory.

What crosses into the verdict process: the export's text only, in a file the grader created
(never a byte of the submission's olean), beside the toolchain's library and byte-verified copies
of the trusted Network/Weights outputs. With `kernels = all`, every checker the toolchain ships
then reads the same text (`checkers.py`).

Verdicts: the exporter failing, stopped by a cap or the deadline, or killed by a SIGKILL that
neither the grader nor the OOM killer sent (it reads the build's olean: the submission's doing,
like the build); everything `replay.py` and `checkers.py` call a verdict. Could not judge: a
toolchain without `leanexport` (the route is then unavailable), a full disk, the host's OOM
killer, and what `replay.py` and `checkers.py` call could not judge.

Without the native judge (`native_judge = false`, or a judge that did not build), the export text
runs under `lean --run`, whose interpreter must run `LeanExport.parseStream` from its IR: the
`lean` binary carries native code for Init, Std and Lean only. The stored sources say a non-module
root such as Judge.lean gets that IR (native_judge.py); if the toolchain says otherwise, in its
own words, the route is unavailable in interpreted mode, "needs the native judge", and `auto` and
`replay` go on to the olean route (which imports no LeanExport).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import ClassVar

from lean_mod_add_proof.grading import package as pkgmod
from lean_mod_add_proof.grading.lean_names import SUBMISSION_MODULE, theorem_name
from lean_mod_add_proof.grading.routes import checkers, core, steps
from lean_mod_add_proof.grading.routes.core import StageFailed
from lean_mod_add_proof.grading.routes.protocol import EXPORT_ROUTE, Arm, ExportEdit, Route, TestSwitches
from lean_mod_add_proof.grading.routes.replay import JUDGE_MEMORY_MB, ReplayRoute


class ExportRoute(ReplayRoute):
    route: ClassVar[Route] = EXPORT_ROUTE
    runs_checkers: ClassVar[bool] = True

    @property
    def leanexport(self) -> Path:
        return self.env.toolchain.dir / "bin" / "leanexport"

    async def prepare(self) -> str | None:
        if not os.access(self.leanexport, os.X_OK):
            return f"the toolchain has no {self.leanexport.name} ({self.leanexport})"
        return await super().prepare()

    async def crossing(self, deadline: float, switches: TestSwitches) -> Path | None:
        return await self.export(deadline, switches.export_edit)

    async def after_judge(self, export: Path | None, arm: Arm) -> None:
        if self.g.config.kernels == "all" and export is not None:
            extra = JUDGE_MEMORY_MB[self.judge_mode]  # each checker gets at least the judge's memory
            await checkers.run_checkers(self.g, self.env, arm=arm, judge_memory_extra_mb=extra)

    async def export(self, deadline: float, edit: ExportEdit | None) -> Path:
        """`leanexport Submission -- <theorem>` in the build's sandbox (the theorem and what it
        depends on, as `lake comparator` exports: lean4 src/lake/Lake/CLI/Check.lean
        `safeExport`), its stdout into a file the grader created and hands it open, the package
        read-only. It reads the build's olean, so it is the submission's doing like the build:
        its failures and caps are verdicts. Returns the export's path (outside the package)."""
        g, env = self.g, self.env
        assert g.grade_dir is not None
        g.fresh_tmp(pkgmod.EXPORT_TMP)
        path = g.grade_dir / pkgmod.EXPORT_FILE
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = await asyncio.to_thread(os.open, path, flags, 0o600)
        except FileExistsError:  # only an unsandboxed build can reach the grade directory
            why = f"{path.name} exists already: the build wrote outside its package"
            raise StageFailed("build", why) from None
        argv = [str(self.leanexport), SUBMISSION_MODULE, "--", theorem_name(g.task.p)]
        ooms = core.oom_kill_count()
        try:
            out = g.record(
                await env.run(
                    "build",
                    argv,
                    g.pkg,
                    deadline,
                    search_path=[g.pkg / pkgmod.LIB_DIR],
                    grade_dir=g.grade_dir,
                    writable=False,
                    tmp_name=pkgmod.EXPORT_TMP,
                    # A panic aborts, as `lake comparator` exports; LEAN_SYSROOT spares the
                    # exporter's `findSysroot` a `lean --print-prefix` child (lean4
                    # src/Lean/Util/Path.lean: "LEAN_SYSROOT ... takes precedence").
                    extra_env={"LEAN_ABORT_ON_PANIC": "1", "LEAN_SYSROOT": str(env.toolchain.dir)},
                    stdout_fd=fd,
                    untrusted=True,
                )
            )
        finally:
            os.close(fd)
        failure = await steps.untrusted_failure(g, env, f"leanexport {SUBMISSION_MODULE}", out, ooms)
        await steps.raise_build_failure(g, failure, out)
        if edit is not None:  # the self-test's crafted exports only
            text = await asyncio.to_thread(path.read_text, encoding="utf-8")
            await asyncio.to_thread(path.write_text, edit(text), encoding="utf-8")
        return path
