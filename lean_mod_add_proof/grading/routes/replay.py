"""The replay judge, which both replay routes (`export.py`, `olean.py`) share: `Judge.lean`, run
by the toolchain's own `lean` (or compiled once per toolchain, `native_judge.py`) from a fresh,
read-only verdict directory, replays the submission's declarations through the kernel, then checks
the statement and the axioms, in one trusted process.

What crosses into the verdict process: the toolchain's library, byte-verified copies of the trusted
Network/Weights outputs, the judge's text (or its verified executable), and what the route hands
it (the export's text, or the build's olean).

Verdicts: the judge's own deadline or memory cap (the submission's kernel work was too big); a
failure once it printed its replay marker (it ended on the submission's data); a rejection by the
replay, the statement check or the axiom check; an import outside the allow-list. Could not judge:
a judge that fails before its replay marker or prints no well-formed verdict, a verdict word the
grader does not know, the host's OOM killer, a native judge changed under a sandboxed grade, a
verdict directory the host's errors keep from being assembled, and an interpreted judge whose
`lean --run` cannot run it (no IR for a declaration it imports, in the toolchain's own words at
any phase: native_judge.py `interpreter_lacks_ir`), which also makes the route unavailable.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from lean_mod_add_proof.grading import cache as cachemod
from lean_mod_add_proof.grading import kernels as kernelsmod
from lean_mod_add_proof.grading import package as pkgmod
from lean_mod_add_proof.grading import signals, workdirs
from lean_mod_add_proof.grading.axioms import check_axioms
from lean_mod_add_proof.grading.judge import (
    JUDGE_OUTPUT_CAP,
    JudgeOutputError,
    interpreted_judge,
    judge_argv,
    parse_judge_output,
    replay_started,
)
from lean_mod_add_proof.grading.judge_source import judge_text
from lean_mod_add_proof.grading.lean_names import (
    ALLOWED_IMPORTS,
    CHECK_THEOREM,
    REQUIRED_IMPORT,
    SPEC_CONSTANT,
    SUBMISSION_MODULE,
    theorem_name,
)
from lean_mod_add_proof.grading.native_judge import BUILD_MEMORY_MB as NATIVE_JUDGE_BUILD_MEMORY_MB
from lean_mod_add_proof.grading.native_judge import (
    NativeJudge,
    NoNativeJudge,
    ensure_native_judge,
    interpreter_lacks_ir,
    interpreter_unavailable,
    mark_interpreter_unavailable,
    needs_native_judge,
    unchanged,
)
from lean_mod_add_proof.grading.native_judge import forget as forget_native_judge
from lean_mod_add_proof.grading.oserrors import host_errno
from lean_mod_add_proof.grading.process import CommandOutcome
from lean_mod_add_proof.grading.result import JudgeMode, KernelRun
from lean_mod_add_proof.grading.routes import core, steps
from lean_mod_add_proof.grading.routes.core import CommandEnv, Grade, StageFailed, command_failure, not_judged
from lean_mod_add_proof.grading.routes.protocol import Arm, Route, TestSwitches

#: What a submission may import, as the judge sees it: `Init` is every non-`prelude` file's
#: implicit import (the guard bans `prelude`), and the judge loads exactly these modules.
JUDGE_IMPORTS: tuple[str, ...] = ("Init", *ALLOWED_IMPORTS)
#: The judge's own fixed cost, added to `memory_mb` for the judge alone so that the cap bounds
#: what the submission adds. Estimates, not measurements (no Lean ran here): `lean --run` with
#: `import Lean` elaborates the judge and loads all of Lean (about 1 GB, read in the sources);
#: the native judge loads only Init and the task's two modules. `calibrate` reports the real peak.
JUDGE_MEMORY_MB: dict[str, int] = {"interpreted": 1536, "native": 512}


#: The judge's own environment (`core.run_on_verdict_dir`; the bundled checkers each have theirs,
#: `kernels.checker_env`). A panic aborts instead of printing and going on, as `lake comparator`
#: runs its steps: crafted module data cannot then flood the output with panics (each a "key is
#: not present" lookup in the replay) to push it past its cap.
JUDGE_ENV: Mapping[str, str] = {"LEAN_ABORT_ON_PANIC": "1"}


class ReplayRoute:
    """What both replay routes do: get the judge ready, build the submission in a fresh copy of
    the task's package, hand the judge what the route lets cross (`crossing`), judge, and run
    what follows an accepting judge (`after_judge`)."""

    route: ClassVar[Route]
    runs_checkers: ClassVar[bool] = False

    def __init__(self, g: Grade, env: CommandEnv) -> None:
        self.g = g
        self.env = env
        self.judge: NativeJudge | None = None
        """The compiled judge, when it built and starts; None: `lean --run Judge.lean`."""
        self.self_tested = False

    @property
    def judge_mode(self) -> JudgeMode:
        return "native" if self.judge is not None else "interpreted"

    @property
    def verdict_path(self) -> str:
        """How verdicts are reached, for a remembered self-test pass: the route, the judge (the
        executable's hash, or `lean --run`) and the sandbox in use (in effect, not the setting: a
        pass under `sandbox=auto` with working bwrap holds for `sandbox=on`), with its options and
        its signal filter, whose beliefs about Lean the canaries' builds test."""
        judge = f"native:{self.judge.sha256}" if self.judge is not None else "interpreted"
        return f"{self.route.label};{judge};sandbox={self.env.sandbox_fingerprint}"

    async def prepare(self) -> str | None:
        """The judge made ready; the route is unavailable when only `lean --run` could judge and
        this toolchain's `lean --run` was found unable to run the route's judge text."""
        self.judge = None
        await self.prepare_judge()
        if self.judge is None:
            return interpreter_unavailable(self.env.toolchain, self.route.reads)
        return None

    def chosen(self, skipped: list[str]) -> None:
        """Nothing to add: the result names the route."""

    async def prepare_judge(self) -> None:
        """The compiled judge for this toolchain and route (built once, verified once per
        process), else the reason grading uses `lean --run Judge.lean`. Never a verdict: no
        submission is involved, and an interpreted judge grades just as well."""
        g, env = self.g, self.env
        if not g.config.native_judge:
            g.result.judge_mode = self.judge_mode
            return
        cache_root = cachemod.cache_root(g.config.cache_dir)

        async def run_trusted(
            argv: Sequence[str], cwd: Path, deadline: float, writable: bool, extra_readonly: Sequence[Path]
        ) -> CommandOutcome:
            scratch = workdirs.new_grade_dir(g.config.work_root)
            try:
                (scratch / pkgmod.GRADE_TMP).mkdir(0o700)
                return await env.run(
                    "toolchain",
                    argv,
                    cwd,
                    deadline,
                    search_path=[],
                    grade_dir=scratch,
                    writable=writable,
                    trusted=True,
                    extra_readonly=extra_readonly,
                    memory_floor_mb=NATIVE_JUDGE_BUILD_MEMORY_MB,
                )
            finally:
                workdirs.remove_tree(scratch)

        found = await ensure_native_judge(
            env.toolchain, cache_root, g.config.threads, run_trusted, self.route.reads
        )
        g.result.commands.extend(found.records)  # only on the grade that built or first checked it
        if isinstance(found, NoNativeJudge):
            g.result.judge_note = found.reason
        else:
            self.judge = found
        g.result.judge_mode = self.judge_mode

    async def warm(self) -> None:
        self.g.begin("build")
        await steps.prepare_package(self.g, self.env)

    async def run(self, submission: str, switches: TestSwitches, arm: Arm) -> None:
        g, env, config = self.g, self.env, self.g.config
        # From here on each step has its own deadline: the cache check and the prebuild
        # `timeout_s` each, the build and the judge `timeout_s` together.
        arm(time.monotonic() + 3 * config.timeout_s)
        g.begin("build")
        manifest, trusted_root = await steps.prepare_package(g, env)
        # One deadline for build, export and judge, starting once the package is ready.
        deadline = time.monotonic() + config.timeout_s
        arm(deadline)
        if switches.extra_modules:
            await steps.compile_extra(g, env, switches.extra_modules, deadline)
        await steps.build(g, env, submission, manifest, deadline)
        export = await self.crossing(deadline, switches)
        await self.assemble_verdict_dir(manifest, trusted_root, export)
        if not switches.checkers_only:
            await self.run_judge(deadline)
        await self.after_judge(export, arm)

    async def crossing(self, deadline: float, switches: TestSwitches) -> Path | None:
        """What the route makes of the build for the judge: the export's path, or None (the
        judge reads the build's olean)."""
        return None

    async def after_judge(self, export: Path | None, arm: Arm) -> None:
        """What runs once the judge accepted (or, for the checkers' canaries, in its place), each
        step under its own deadline, armed with `arm`."""

    def accepted_reason(self) -> str:
        # Name the toolchain that said yes rather than asserting "Lean": under test it is a double.
        result = self.g.result
        axioms = ", ".join(result.axioms or []) or "none"
        if len(result.kernels) > 1:
            names = ", ".join(k.name for k in result.kernels)
            axioms += f"; kernels: {names}"
        return (
            f"accepted: build, kernel replay, statement and axiom checks passed (axioms: {axioms}; "
            f"verdict from the {result.verdict_from}; toolchain: {result.toolchain})"
        )

    async def assemble_verdict_dir(
        self, manifest: dict[str, str], trusted_root: Path | int, export: Path | None
    ) -> None:
        g, env = self.g, self.env
        try:
            await workdirs.run_in_thread(
                pkgmod.make_verdict_dir,
                g.verdict_dir,
                trusted_root,
                manifest,
                g.pkg,
                SUBMISSION_MODULE,
                judge_text(self.route.reads).encode("utf-8"),
                export,
                export_is_grader_file=env.sandboxed,
            )
        except pkgmod.VerdictDirError as exc:
            # The trusted outputs come from the pinned cache entry (or the package, which the
            # build can write): only an unsandboxed build can reach the cache, so a cache copy
            # that differs under the sandbox is the host's (a disk fault, another process).
            if exc.trusted and env.sandboxed and trusted_root != g.pkg:
                raise not_judged("build", f"the cached trusted outputs cannot be read: {exc}") from None
            raise StageFailed("build", f"the build's output cannot be judged: {exc}") from None
        except OSError as exc:  # the host's, never the submission's (oserrors.host_errno)
            # Sandboxed, the build reaches nothing in the grade's directory outside its package:
            # a permission error on the grader's own files there is the host's too.
            if (why := host_errno(exc, grader_files=env.sandboxed)) is None:
                raise
            raise not_judged("build", f"the judge's directory could not be assembled: {why}") from None

    async def run_judge(self, deadline: float) -> None:
        """Replay, statement and axioms in one trusted process (stages leanchecker..axioms). Its
        own deadline or memory cap is a verdict (the submission's kernel work was too big), and so
        is a failure once it started on the submission's data; a judge that fails before that,
        or prints no well-formed verdict, means "could not judge"."""
        g, env, config = self.g, self.env, self.g.config
        g.begin("leanchecker")
        extra_readonly: list[Path] = []
        if self.judge is not None:
            # Sandboxed, no build can reach the cache, so the identity check suffices; unsandboxed
            # it could have, so the executable is hashed again in full.
            if not await asyncio.to_thread(unchanged, self.judge, rehash=not env.sandboxed):
                forget_native_judge(self.judge)
                why = "the cached native judge changed after it was verified"
                # Only an unsandboxed build can reach the cache: then it is the submission's doing.
                raise not_judged("leanchecker", why) if env.sandboxed else StageFailed("leanchecker", why)
            program = [str(self.judge.path)]
            extra_readonly.append(self.judge.path.parent)
        else:
            program = interpreted_judge(str(env.toolchain.lean), config.threads)
        ooms = core.oom_kill_count()
        argv = judge_argv(
            program,
            submission_module=SUBMISSION_MODULE,
            theorem=theorem_name(g.task.p),
            spec=SPEC_CONSTANT,
            check=CHECK_THEOREM,
            toolchain_dir=env.toolchain.dir,
            allowed_imports=JUDGE_IMPORTS,
            required_imports=(REQUIRED_IMPORT,),
            verdict_from=self.route.reads,
        )
        out = await core.run_on_verdict_dir(
            g,
            env,
            argv,
            deadline,
            extra_env=JUDGE_ENV,
            search_path=[g.verdict_dir / pkgmod.VERDICT_LIB],
            output_cap_bytes=max(JUDGE_OUTPUT_CAP, config.output_cap_bytes),
            extra_readonly=extra_readonly,
            memory_extra_mb=JUDGE_MEMORY_MB[self.judge_mode],
        )
        if out.timed_out or out.limit_exceeded:
            raise StageFailed("leanchecker", command_failure("the judge", out, config.timeout_s) or "")
        if (signum := out.record.signal) is not None or out.record.exit_code != 0:
            if (
                self.judge is None
                and not self.self_tested
                and (line := interpreter_lacks_ir(out.text, replay_started=replay_started(out.text)))
            ):
                # The toolchain's interpreter cannot run the judge (no IR for a declaration it
                # imports): nothing of the submission's, and no belief about Lean proved wrong.
                # The route is unavailable in interpreted mode from now on (native_judge.py).
                # Only before the route's self-test passed: once it did, this interpreter ran
                # this judge text to its verdict on the reference, so such a line after the
                # replay marker could only be the submission's data printed raw (an uncaught
                # exception's message), and must not let a submission turn the route off.
                why = needs_native_judge(self.route.reads, line, g.result.judge_note)
                mark_interpreter_unavailable(env.toolchain, self.route.reads, why)
                raise not_judged("leanchecker", why)
            # After the self-test, a judge that ended without a verdict once it had started on the
            # submission's data ended on that input (a kernel panic exits outright, a deep term can
            # overflow the stack): a verdict, or a crafted term could dodge its rejection. Any other
            # signal the grader did not send is the host's: the judge is trusted, and nothing makes
            # it kill itself (a SIGKILL of the OOM killer, an operator's or a scheduler's SIGTERM).
            hosts = signum is not None and signals.trusted_signal_is_the_hosts(signum)
            on_input = replay_started(out.text) and not hosts
            what = "the kernel check of this submission" if on_input else "the judge"
            failure = command_failure(what, out, config.timeout_s) or what
            if hosts and signum == signal.SIGKILL and core.oom_killer_acted(ooms):
                failure += "; the host's OOM killer acted meanwhile"
            raise StageFailed("leanchecker", failure) if on_input else not_judged("leanchecker", failure)
        try:
            # The kept output is its last bytes, and the verdict line (bounded, under the cap) is
            # the last line: a longer output still ends in it.
            report = parse_judge_output(out.text)
        except JudgeOutputError as exc:
            if out.record.truncated:
                raise not_judged("leanchecker", "the judge printed more than the output cap") from None
            raise not_judged("leanchecker", f"the judge reached no verdict: {exc}") from None
        if report.verdict == "imports":
            raise StageFailed("leanchecker", f"imports: {report.reason}")
        replayed = report.verdict != "replay"
        g.result.kernels.append(
            KernelRun(
                name=kernelsmod.OFFICIAL,
                verdict="accepted" if replayed else "rejected",
                kind="accepted" if replayed else "rejected",
                seconds=out.record.seconds,
                cpu_seconds=out.peak_cpu_s,
                peak_memory_mb=out.peak_rss_mb,
                detail="accepted" if replayed else "rejected (kernel replay)",
            )
        )
        if report.verdict == "replay":
            raise StageFailed("leanchecker", f"kernel replay: {report.reason}")
        g.begin("statement")
        if report.verdict == "statement":
            raise StageFailed("statement", f"statement check: {report.reason}")
        if report.verdict != "ok":  # accepted only by name: a verdict added later is not a pass
            raise not_judged(
                "statement", f"the judge gave a verdict the grader does not know: {report.verdict}"
            )
        g.begin("axioms")
        g.result.axioms = sorted(report.axioms)
        g.result.check_axioms = sorted(report.check_axioms)
        for name, found in ((theorem_name(g.task.p), report.axioms), (CHECK_THEOREM, report.check_axioms)):
            if (why := check_axioms(found, config.axioms_mode)) is not None:
                raise StageFailed("axioms", f"{name}: {why}")
