"""The grade: guard, toolchain, build, then one trusted judge (kernel replay, statement and axiom
checks). The first stage that fails gives reward 0.0 and stops the grade. Nothing but
cancellation escapes `grade`.

No Lake runs while grading on the replay routes: the toolchain's own `lean` compiles the
submission (kernel checks skipped with `-Ddebug.skipKernelTC=true`, set here on the command line).
On the export route (`ROUTES`, tried first) the toolchain's `leanexport` then writes the
submission's declarations as NDJSON text in the same sandbox, and `Judge.lean`, run by the same
`lean` from a fresh directory, reads that text: the single kernel check, with no byte of the
submission's olean crossing into the verdict process. Only on the olean route (the weaker
boundary, named on every result) does the judge read the submission's olean, beside the
toolchain's library and byte-verified copies of the trusted Network/Weights outputs. The
comparator route runs the toolchain's own `lake comparator` instead (`comparator.py`).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import os
import signal
import sys
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lean_mod_add_proof.grading import cache as cachemod
from lean_mod_add_proof.grading import comparator as comparatormod
from lean_mod_add_proof.grading import kernels as kernelsmod
from lean_mod_add_proof.grading import package as pkgmod
from lean_mod_add_proof.grading import workdirs
from lean_mod_add_proof.grading.axioms import check_axioms
from lean_mod_add_proof.grading.extract import Extraction, extract_submission
from lean_mod_add_proof.grading.guard import check_guard
from lean_mod_add_proof.grading.judge import (
    JUDGE_OUTPUT_CAP,
    JudgeOutputError,
    interpreted_judge,
    judge_argv,
    output_lines,
    parse_judge_output,
    replay_started,
)
from lean_mod_add_proof.grading.judge_source import judge_text
from lean_mod_add_proof.grading.lean_names import (
    ALLOWED_AXIOMS,
    ALLOWED_IMPORTS,
    CHECK_THEOREM,
    NETWORK_MODULE,
    REQUIRED_IMPORT,
    SPEC_CONSTANT,
    SUBMISSION_MODULE,
    WEIGHTS_MODULE,
    theorem_name,
)
from lean_mod_add_proof.grading.messages import REASON_MAX_CHARS, error_messages, one_line
from lean_mod_add_proof.grading.native_judge import BUILD_MEMORY_MB as NATIVE_JUDGE_BUILD_MEMORY_MB
from lean_mod_add_proof.grading.native_judge import NativeJudge, NoNativeJudge, ensure_native_judge, unchanged
from lean_mod_add_proof.grading.native_judge import forget as forget_native_judge
from lean_mod_add_proof.grading.oserrors import host_errno
from lean_mod_add_proof.grading.process import (
    CommandGroup,
    CommandOutcome,
    HostFault,
    Limits,
    child_env,
    command_group,
    find_prlimit,
    host_fault_reason,
    kill_dead_graders_processes,
    oom_kill_count,
    run_command,
)
from lean_mod_add_proof.grading.result import (
    GraderConfig,
    GradeResult,
    JudgeChoice,
    JudgeMode,
    JudgeName,
    KernelRun,
    Stage,
    VerdictFrom,
)
from lean_mod_add_proof.grading.sandbox import (
    bwrap_argv,
    decide_sandbox,
    forget_probe,
    host_layout,
    probe_sandbox,
)
from lean_mod_add_proof.grading.toolchain import Toolchain, locate_toolchain

OnStage = Callable[[str], None]


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
#: What must hold before a route's verdicts count, given (toolchain, config, the task's
#: Network.lean, the route, and how its verdicts are reached: which judge program, and whether
#: the sandbox is in use): None, or the reason that route may not grade.
#: The grader's entry points (grader.py) pass the self-test; the pipeline knows no more of it.
ToolchainCheck = Callable[[Toolchain, GraderConfig, str, Route, str], Awaitable[str | None]]
#: A test-only edit of the submission's export before the judge reads it (the self-test's
#: crafted-export canaries): exported text in, the text the judge gets out.
ExportEdit = Callable[[str], str]
#: What a submission may import, as the judge sees it: `Init` is every non-`prelude` file's
#: implicit import (the guard bans `prelude`), and the judge loads exactly these modules.
JUDGE_IMPORTS: tuple[str, ...] = ("Init", *ALLOWED_IMPORTS)
_REASON_MAX = REASON_MAX_CHARS
#: Set by the grader on the build's command line, never by the submission (the guard bans
#: `set_option debug.*`): the judge's replay is then the single kernel check.
SKIP_KERNEL_OPTION = "-Ddebug.skipKernelTC=true"
#: How many of the build's Lean error messages the result keeps (for feedback to the model).
LEAN_ERRORS_KEPT = 10
#: Memory cap floor for compiling the task's own trusted files.
PREBUILD_MEMORY_MB = 2048
#: The judge's own fixed cost, added to `memory_mb` for the judge alone so that the cap bounds
#: what the submission adds. Estimates, not measurements (no Lean ran here): `lean --run` with
#: `import Lean` elaborates the judge and loads all of Lean (about 1 GB, read in the sources);
#: the native judge loads only Init and the task's two modules. `calibrate` reports the real peak.
JUDGE_MEMORY_MB: dict[str, int] = {"interpreted": 1536, "native": 512}
SANDBOX_FIX = (
    "install bubblewrap (`apt-get install bubblewrap`), or set sandbox=off to accept running "
    "untrusted code unsandboxed"
)

# One semaphore per (event loop, size): asyncio primitives bind to the loop that first uses them.
_semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)


def _semaphore(size: int) -> asyncio.Semaphore:
    per_loop = _semaphores.setdefault(asyncio.get_running_loop(), {})
    return per_loop.setdefault(size, asyncio.Semaphore(size))


@dataclass(frozen=True)
class GradeTask:
    """What a grade needs to know about its task: the id, the modulus and the two trusted texts."""

    task_id: str
    p: int
    network_lean: str
    weights_lean: str


class _Failed(Exception):
    """A stage failed; carries the one-line reason (control flow inside this module only).
    `judged=False` when the failure says nothing about the submission (could not judge)."""

    def __init__(self, stage: Stage, reason: str, *, judged: bool = True) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason
        self.judged = judged


def _not_judged(stage: Stage, reason: str) -> _Failed:
    return _Failed(stage, reason, judged=False)


def summarize_output(text: str) -> str:
    """The most telling line of a failed command's output: the first error, else the last line."""
    if errors := error_messages(text):
        return one_line(errors[0])
    lines = output_lines(text)
    for ln in lines:
        if "error" in ln.lower():
            return one_line(ln)
    return one_line(lines[-1]) if lines else "(no output)"


def command_failure(what: str, outcome: CommandOutcome, timeout_s: float) -> str | None:
    """Why a command counts as failed, or None when it exited 0 (pure)."""
    rec = outcome.record
    if outcome.limit_exceeded:
        return f"{what} stopped: {outcome.limit_exceeded}"
    if outcome.timed_out:
        return f"{what} timed out: the {timeout_s:g} s limit for build, replay and check together ran out"
    if rec.signal is not None:
        return f"{what} failed (killed by signal {rec.signal}): {summarize_output(outcome.text)}"
    if rec.exit_code != 0:
        return f"{what} failed (exit {rec.exit_code}): {summarize_output(outcome.text)}"
    return None


@dataclass
class _Env:
    """What every command of one grade shares."""

    toolchain: Toolchain
    config: GraderConfig
    sandboxed: bool
    bwrap: str | None
    prlimit: str
    judge: NativeJudge | None = None
    """The compiled judge, when it built and starts; None: `lean --run Judge.lean`."""
    judge_note: str = ""
    """Why the judge runs interpreted (empty when native, or when native_judge is off)."""
    route: Route = EXPORT_ROUTE
    comparator: comparatormod.ComparatorProbe | None = None
    """The comparator's probe, once the comparator route was considered."""

    @property
    def judge_mode(self) -> JudgeMode:
        return "native" if self.judge is not None else "interpreted"

    @property
    def leanexport(self) -> Path:
        return self.toolchain.dir / "bin" / "leanexport"

    @property
    def verdict_path(self) -> str:
        """How verdicts are reached, for a remembered self-test pass: the route, the judge (the
        executable's hash, `lean --run`, or the comparator's Lake) and whether bubblewrap is in
        use (in effect, not the setting: a pass under `sandbox=auto` with working bwrap holds for
        `sandbox=on`)."""
        if self.route.judge == "comparator":
            probe = self.comparator
            judge = f"lake:{probe.lake}:{probe.subcommand}" if probe is not None else "lake:?"
        else:
            judge = f"native:{self.judge.sha256}" if self.judge is not None else "interpreted"
        return f"{self.route.label};{judge};sandboxed={self.sandboxed}"

    def limits(
        self, grade_dir: Path, *, trusted: bool = False, memory_floor_mb: int = 0, memory_extra_mb: int = 0
    ) -> Limits:
        """The per-grade caps. The trusted prebuild gets at least PREBUILD_MEMORY_MB (or
        `memory_floor_mb`), so a small cap meant for submissions cannot turn into "the task's own
        files do not build"; the judge gets `memory_extra_mb` on top, its own fixed cost, so the
        cap bounds what the submission adds."""
        c = self.config
        floor = max(PREBUILD_MEMORY_MB, memory_floor_mb) if trusted else 0
        return Limits(
            memory_mb=max(c.memory_mb + memory_extra_mb, floor),
            max_processes=c.max_processes,
            max_disk_mb=c.max_disk_mb,
            max_file_mb=c.max_file_mb,
            disk_paths=(grade_dir,),
            max_files=c.max_files,
            cpu_threads=c.threads,
        )

    async def run(
        self,
        stage: Stage,
        argv: Sequence[str],
        cwd: Path,
        deadline: float,
        *,
        search_path: Sequence[Path],
        grade_dir: Path,
        writable: bool,
        trusted: bool = False,
        tmp_name: str = pkgmod.GRADE_TMP,
        output_cap_bytes: int | None = None,
        extra_readonly: Sequence[Path] = (),
        memory_floor_mb: int = 0,
        memory_extra_mb: int = 0,
        extra_env: Mapping[str, str] | None = None,
        stdout_fd: int | None = None,
    ) -> CommandOutcome:
        """Run `argv` in `cwd` with LEAN_PATH = toolchain library + `search_path`. `writable`
        binds `cwd` read-write (the build) or read-only (the judge); the sources stay read-only.
        Temporary files go to the grade's own `tmp_name` directory (bound as /tmp in the
        sandbox), so the disk cap counts them and nothing is left on the host."""
        tmp_dir = grade_dir / tmp_name
        env = child_env(cwd, self.toolchain.dir / "bin", tmpdir=Path("/tmp") if self.sandboxed else tmp_dir)
        env["LEAN_PATH"] = pkgmod.lean_path(self.toolchain.dir, *search_path)
        env["LEAN_NUM_THREADS"] = str(self.config.threads)  # read by compiled executables only
        env.update(extra_env or {})
        full = list(argv)
        if self.sandboxed:
            assert self.bwrap is not None
            if writable:
                ro = [cwd / r for r in pkgmod.SANDBOX_READONLY if (cwd / r).exists()]
            else:
                ro = [cwd]  # a later bind over the same path wins: the whole directory read-only
            ro += list(extra_readonly)
            full = (
                bwrap_argv(
                    self.bwrap,
                    layout=host_layout(),
                    toolchain_dir=self.toolchain.dir,
                    package_dir=cwd,
                    readonly_files=ro,
                    env=env,
                    tmp_dir=tmp_dir,
                )
                + full
            )
        try:
            return await run_command(
                full,
                stage=stage,
                cwd=cwd,
                env=env,
                deadline=deadline,
                output_cap_bytes=output_cap_bytes or self.config.output_cap_bytes,
                tail_chars=self.config.tail_chars,
                limits=self.limits(
                    grade_dir,
                    trusted=trusted,
                    memory_floor_mb=memory_floor_mb,
                    memory_extra_mb=memory_extra_mb,
                ),
                prlimit=self.prlimit,
                sandboxed=self.sandboxed,
                record_argv=argv,
                scope=workdirs.work_scope(self.config.work_root),
                stdout_fd=stdout_fd,
            )
        except HostFault as fault:
            if fault.sandbox:
                forget_probe()  # the next grade probes bwrap again before it trusts it
            raise


#: (pid, work root, cache root) already swept of what killed graders left behind.
_swept: set[tuple[int, str, str]] = set()


async def _sweep_once(work_root: Path | None, cache_root: Path) -> None:
    """Once per process and place, before the first grade: remove the work and cache temp
    directories whose owner (recorded in their names) is a dead process, and end the processes
    a killed unsandboxed grader left running."""
    key = (os.getpid(), str(work_root), str(cache_root))
    if key not in _swept:
        _swept.add(key)
        await workdirs.run_in_thread(kill_dead_graders_processes, workdirs.work_scope(work_root))
        await workdirs.run_in_thread(workdirs.sweep_dead, work_root, cache_root)


def _oom_killer_acted(before: int | None) -> bool:
    """Whether the kernel's OOM killer killed anything since `before` was read; True when it
    cannot be told (the host's fault is the safe reading of an unknown SIGKILL)."""
    after = oom_kill_count()
    return before is None or after is None or after > before


def default_concurrency(threads: int) -> int:
    """How many grades run Lean at once when `max_concurrent` is unset: one per `threads` cores."""
    return max(1, (os.cpu_count() or 1) // threads)


def cache_key_for(task: GradeTask, toolchain: Toolchain) -> str:
    """The key the task's prebuilt package is filed under in the cache (pure)."""
    return pkgmod.cache_key(toolchain.version, toolchain.dir, task_sources(task))


def task_sources(task: GradeTask) -> dict[str, bytes]:
    return pkgmod.package_sources(task.network_lean.encode("utf-8"), task.weights_lean)


class _Grade:
    """One grade's mutable state; the stages are methods so the flow reads top to bottom."""

    def __init__(self, task: GradeTask, config: GraderConfig, on_stage: OnStage | None):
        self.task = task
        self.config = config
        self.on_stage = on_stage
        self.result = GradeResult(task_id=task.task_id, theorem=theorem_name(task.p))
        self.grade_dir: Path | None = None
        self.entry_pin: cachemod.EntryPin | None = None
        """The cache entry this grade reads its trusted outputs from, held until it ends."""
        self._stage_start = time.monotonic()
        self._current: Stage | None = None

    @property
    def pkg(self) -> Path:
        assert self.grade_dir is not None
        return self.grade_dir / "package"

    @property
    def verdict_dir(self) -> Path:
        assert self.grade_dir is not None
        return self.grade_dir / "verdict"

    # -- bookkeeping --
    def begin(self, stage: Stage) -> None:
        self.end()
        self._current = stage
        self._stage_start = time.monotonic()
        self.result.stage_reached = stage
        if self.on_stage is not None:
            self.on_stage(stage)

    def end(self) -> None:
        if self._current is not None:
            elapsed = time.monotonic() - self._stage_start
            key = self._current
            self.result.stage_seconds[key] = round(self.result.stage_seconds.get(key, 0.0) + elapsed, 4)
            self._current = None

    def record(self, outcome: CommandOutcome) -> CommandOutcome:
        self.result.commands.append(outcome.record)
        self.result.peak_memory_mb = max(self.result.peak_memory_mb, outcome.peak_rss_mb)
        return outcome

    async def run_on_verdict_dir(
        self,
        env: _Env,
        argv: Sequence[str],
        deadline: float,
        *,
        search_path: Sequence[Path],
        output_cap_bytes: int | None = None,
        extra_readonly: Sequence[Path] = (),
        memory_extra_mb: int = 0,
    ) -> CommandOutcome:
        """One command of the verdict step (the judge, or a bundled checker), recorded: in the
        verdict directory, read-only, with the judge's own /tmp. A panic aborts instead of
        printing and going on, as `lake comparator` runs its steps: crafted module data cannot
        then flood the output with panics (each a "key is not present" lookup in the replay) to
        push it past its cap."""
        return self.record(
            await env.run(
                "leanchecker",
                argv,
                self.verdict_dir,
                deadline,
                search_path=search_path,
                grade_dir=self.grade_dir,
                writable=False,
                tmp_name=pkgmod.JUDGE_TMP,
                output_cap_bytes=output_cap_bytes,
                extra_readonly=extra_readonly,
                memory_extra_mb=memory_extra_mb,
                extra_env={"LEAN_ABORT_ON_PANIC": "1"},
            )
        )

    def fail(self, stage: Stage, reason: str, *, judged: bool = True) -> None:
        self.end()
        self.result.failed_stage = stage
        self.result.judged = judged
        prefix = "" if judged else "could not judge: "
        self.result.reason = one_line(prefix + reason, 2 * _REASON_MAX)

    # -- stages --
    async def guard(self, submission: str, skip: bool) -> None:
        self.begin("guard")
        if skip:
            self.result.guard_skipped = True  # test-only path: the result shows it never ran
            return
        verdict = await asyncio.to_thread(check_guard, submission)  # off the event loop
        if not verdict.passed:
            raise _Failed("guard", f"guard: {verdict.reason}")

    async def locate(self) -> _Env:
        self.begin("toolchain")
        found = await asyncio.to_thread(
            locate_toolchain, self.config.toolchain_dir, None, self.config.lean_toolchain
        )
        if not isinstance(found, Toolchain):
            raise _not_judged("toolchain", f"Lean toolchain not found: {found.reason}; {found.fix}")
        self.result.toolchain = f"{found.dir} ({found.version})"
        probe = None if self.config.sandbox == "off" else await asyncio.to_thread(probe_sandbox)
        use, error = decide_sandbox(self.config.sandbox, probe)
        if error is not None:
            raise _not_judged("toolchain", f"{error}; {SANDBOX_FIX}")
        prlimit = find_prlimit()
        if prlimit is None:
            raise _not_judged("toolchain", "prlimit (util-linux) not found; it enforces the file-size cap")
        self.result.sandboxed = use
        return _Env(found, self.config, use, probe.bwrap if probe else None, prlimit)

    async def choose_route(
        self, env: _Env, toolchain_check: ToolchainCheck | None, forced: Route | None
    ) -> None:
        """Set `env.route`: the first route of the `judge` setting that is available here and
        passes `toolchain_check` (the self-test), or `forced` (the self-test's own canaries).
        None passing is "could not judge", with each route's reason. Grading from the olean
        puts a one-line warning naming the weaker boundary on every result."""
        skipped: list[str] = []
        routes = (forced,) if forced is not None else ROUTES[self.config.judge]
        if self.config.kernels == "all":
            # Lake's `--paranoid` reports a missing or crashed checker as a rejection (kernels.py),
            # so the external checkers run on the export route only.
            routes = tuple(r for r in routes if r == EXPORT_ROUTE)
            if not routes:
                raise _not_judged("toolchain", "kernels=all grades on the replay judge's export route only")
        for route in routes:
            env.route = route
            if (why := await self.prepare_route(env)) is None and toolchain_check is not None:
                why = await toolchain_check(
                    env.toolchain, self.config, self.task.network_lean, route, env.verdict_path
                )
            if why is not None:  # each route's reason short enough that all of them show
                skipped.append(f"{route.label}: {one_line(why, 170)}")
                continue
            self.result.judge = route.judge
            self.result.verdict_from = route.verdict_from
            if route == OLEAN_ROUTE:
                weaker = (
                    "warning: verdicts come from the build's olean, mapped into the judge (the "
                    "weaker boundary), because the export judge is unavailable"
                )
                notes = [weaker + (f" ({skipped[0]})" if skipped else ""), self.result.judge_note]
                self.result.judge_note = one_line("; ".join(n for n in notes if n), 2 * _REASON_MAX)
            return
        raise _not_judged("toolchain", "; ".join(skipped))

    async def prepare_route(self, env: _Env) -> str | None:
        """Get the route's judge ready; None, or why the route cannot grade here (never a
        verdict: no submission is involved)."""
        route = env.route
        # What an earlier route's judge left on the result says nothing about this one.
        self.result.judge_mode, self.result.judge_note = None, ""
        if route.judge == "comparator":
            env.comparator = await asyncio.to_thread(comparatormod.probe_comparator, env.toolchain.dir)
            return None if env.comparator.available else env.comparator.reason
        if route.verdict_from == "export" and not os.access(env.leanexport, os.X_OK):
            return f"the toolchain has no {env.leanexport.name} ({env.leanexport})"
        env.judge, env.judge_note = None, ""
        await self.prepare_judge(env)
        return None

    async def prepare_judge(self, env: _Env) -> None:
        """The compiled judge for this toolchain and route (built once, verified once per
        process), else the reason grading uses `lean --run Judge.lean`. Never a verdict: no
        submission is involved, and an interpreted judge grades just as well."""
        if not self.config.native_judge:
            self.result.judge_mode = env.judge_mode
            return
        cache_root = cachemod.cache_root(self.config.cache_dir)

        async def run_trusted(
            argv: Sequence[str], cwd: Path, deadline: float, writable: bool, extra_readonly: Sequence[Path]
        ) -> CommandOutcome:
            scratch = workdirs.new_grade_dir(self.config.work_root)
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
            env.toolchain, cache_root, self.config.threads, run_trusted, env.route.reads
        )
        self.result.commands.extend(found.records)  # only on the grade that built or first checked it
        if isinstance(found, NoNativeJudge):
            env.judge_note = found.reason
            self.result.judge_note = found.reason
        else:
            env.judge = found
        self.result.judge_mode = env.judge_mode

    async def compile(
        self,
        env: _Env,
        where: Path,
        module: str,
        deadline: float,
        options: tuple[str, ...] = (),
        *,
        trusted: bool = False,
        tmp_name: str = pkgmod.GRADE_TMP,
    ) -> CommandOutcome:
        """`lean -o/-i` one module inside package `where`, the package's own lib on the path."""
        # Waited for even when cancelled, so it cannot recreate a directory after clean-up.
        await workdirs.run_in_thread(
            (where / pkgmod.module_output(module, "olean")).parent.mkdir, parents=True, exist_ok=True
        )
        argv = pkgmod.compile_argv(str(env.toolchain.lean), module, options, threads=self.config.threads)
        assert self.grade_dir is not None
        return await env.run(
            "build",
            argv,
            where,
            deadline,
            search_path=[where / pkgmod.LIB_DIR],
            grade_dir=self.grade_dir,
            writable=True,
            trusted=trusted,
            tmp_name=tmp_name,
        )

    def fresh_tmp(self, name: str) -> None:
        """Make an untrusted step's own /tmp just before it starts (see `package.BUILD_TMP`).
        Only an unsandboxed step before it can have made it: the submission's doing."""
        assert self.grade_dir is not None
        try:
            (self.grade_dir / name).mkdir(0o700)
        except FileExistsError:
            raise _Failed("build", f"{name} exists already: the build wrote outside its package") from None

    async def prepare(self, env: _Env) -> tuple[dict[str, str], Path | int]:
        """Fresh package = a copy of the prebuilt cache entry (built on first use). Returns the
        manifest and where the trusted outputs are copied from for the verdict: the cache entry,
        held (`entry_pin`) and read through its descriptor until the grade ends, so a discard of
        that entry by another grade cannot change what this one reads; or the package itself."""
        cache_root = cachemod.cache_root(self.config.cache_dir)
        await _sweep_once(self.config.work_root, cache_root)
        # Synchronous on purpose: a cancelled thread would create the directory after cleanup ran.
        self.grade_dir = workdirs.new_grade_dir(self.config.work_root, keep=self.config.keep_packages)
        (self.grade_dir / pkgmod.GRADE_TMP).mkdir(0o700)
        if self.config.keep_packages:
            self.result.package_dir = str(self.grade_dir)
        sources = task_sources(self.task)
        key = pkgmod.cache_key(env.toolchain.version, env.toolchain.dir, sources)

        async def prebuild(where: Path) -> cachemod.PrebuildOutcome:
            # Trusted files only, but under the same limits and sandbox, with its own deadline: a
            # slow first build of the weights must not eat the submission's time.
            deadline = time.monotonic() + self.config.timeout_s
            records = []
            for module in (NETWORK_MODULE, WEIGHTS_MODULE):
                out = await self.compile(env, where, module, deadline, trusted=True)
                records.append(out.record)
                if failure := command_failure(f"lean {module}", out, self.config.timeout_s):
                    return cachemod.PrebuildOutcome(False, failure, records)
            return cachemod.PrebuildOutcome(True, "", records)

        try:
            unusable = ""  # why the cache cannot be used, for cache_note
            try:
                cache_root.mkdir(parents=True, exist_ok=True, mode=0o700)
                usable = os.access(cache_root, os.W_OK)
                if not usable:
                    unusable = f"the cache directory {cache_root} is not writable"
            except OSError as exc:
                usable = False
                unusable = f"cannot create the cache directory {cache_root}: {exc.strerror or exc}"
            if usable:
                try:
                    entry = await cachemod.ensure_entry(
                        cache_root, key, sources, prebuild, deadline=time.monotonic() + self.config.timeout_s
                    )
                except cachemod.CacheUnusable as exc:
                    self.result.commands.extend(exc.records)
                    self.result.cache_note = one_line(f"cache unusable: {exc.reason}")
                except OSError as exc:  # a host error that persisted through the check's retries
                    if (why := host_errno(exc)) is None:
                        raise
                    raise _not_judged("build", f"the cache entry could not be checked: {why}") from None
                else:
                    self.result.commands.extend(entry.records)
                    self.result.cache = entry.status
                    self.entry_pin = entry.pin
                    source: Path | int = entry.package if entry.pin is None else entry.pin.package_fd
                    await workdirs.copy_entry(source, self.pkg)
                    return entry.manifest, source
            self.result.cache = "off"  # no usable cache: prebuild in place, same checks
            if not self.result.cache_note:
                self.result.cache_note = one_line(f"cache unusable: {unusable or 'no reason given'}")
            manifest, records = await cachemod.prebuild_package(self.pkg, sources, prebuild)
            self.result.commands.extend(records)
            return manifest, self.pkg
        except cachemod.PrebuildFailed as exc:
            self.result.commands.extend(exc.records)
            raise _not_judged("build", f"could not prebuild Network/Weights: {exc.reason}") from None

    async def compile_extra(self, env: _Env, modules: Mapping[str, str], deadline: float) -> None:
        """Self-test only: compile extra modules into the package before the submission, as if
        the build had made them (the judge must refuse a submission that imports one)."""
        for module, text in modules.items():
            await workdirs.run_in_thread(pkgmod.write_fresh, self.pkg, pkgmod.module_source(module), text)
            out = self.record(await self.compile(env, self.pkg, module, deadline, trusted=True))
            if failure := command_failure(f"lean {module}", out, self.config.timeout_s):
                raise _not_judged("build", f"could not build the self-test module: {failure}")

    async def build(self, env: _Env, submission: str, manifest: dict[str, str], deadline: float) -> None:
        await workdirs.run_in_thread(pkgmod.write_submission, self.pkg, submission)
        self.fresh_tmp(pkgmod.BUILD_TMP)
        ooms = oom_kill_count()
        out = self.record(
            await self.compile(
                env, self.pkg, SUBMISSION_MODULE, deadline, (SKIP_KERNEL_OPTION,), tmp_name=pkgmod.BUILD_TMP
            )
        )
        errors = error_messages(out.text)
        self.result.lean_errors = errors[:LEAN_ERRORS_KEPT]
        what = f"lean {pkgmod.SUBMISSION_PATH}"
        failure = await self.untrusted_failure(env, what, out, ooms)
        if failure is None and errors:  # exit 0 is not enough: the olean may be missing parts
            failure = f"build reported an error: {one_line(errors[0])}"
        await self.raise_build_failure(failure, out)
        try:
            changed = await asyncio.to_thread(pkgmod.verify_trusted, self.pkg, manifest)
        except OSError as exc:  # only the host's errors escape the re-hash (oserrors.host_errno)
            why = host_fault_reason(exc) or str(exc)
            raise _not_judged("build", f"the trusted files could not be re-hashed: {why}") from None
        if changed:
            raise _Failed("build", f"trusted file changed during the build: {', '.join(changed[:5])}")

    async def export(self, env: _Env, deadline: float, edit: ExportEdit | None) -> Path:
        """`leanexport Submission -- <theorem>` in the build's sandbox (the theorem and what it
        depends on, as `lake comparator` exports: lean4 src/lake/Lake/CLI/Check.lean
        `safeExport`), its stdout into a file the grader created and hands it open, the package
        read-only. It reads the build's olean, so it is the submission's doing like the build:
        its failures and caps are verdicts. Returns the export's path (outside the package)."""
        assert self.grade_dir is not None
        self.fresh_tmp(pkgmod.EXPORT_TMP)
        path = self.grade_dir / pkgmod.EXPORT_FILE
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = await asyncio.to_thread(os.open, path, flags, 0o600)
        except FileExistsError:  # only an unsandboxed build can reach the grade directory
            why = f"{path.name} exists already: the build wrote outside its package"
            raise _Failed("build", why) from None
        argv = [str(env.leanexport), SUBMISSION_MODULE, "--", theorem_name(self.task.p)]
        ooms = oom_kill_count()
        try:
            out = self.record(
                await env.run(
                    "build",
                    argv,
                    self.pkg,
                    deadline,
                    search_path=[self.pkg / pkgmod.LIB_DIR],
                    grade_dir=self.grade_dir,
                    writable=False,
                    tmp_name=pkgmod.EXPORT_TMP,
                    # A panic aborts, as `lake comparator` exports; LEAN_SYSROOT spares the
                    # exporter's `findSysroot` a `lean --print-prefix` child (lean4
                    # src/Lean/Util/Path.lean: "LEAN_SYSROOT ... takes precedence").
                    extra_env={"LEAN_ABORT_ON_PANIC": "1", "LEAN_SYSROOT": str(env.toolchain.dir)},
                    stdout_fd=fd,
                )
            )
        finally:
            os.close(fd)
        failure = await self.untrusted_failure(env, f"leanexport {SUBMISSION_MODULE}", out, ooms)
        await self.raise_build_failure(failure, out)
        if edit is not None:  # the self-test's crafted exports only
            text = await asyncio.to_thread(path.read_text, encoding="utf-8")
            await asyncio.to_thread(path.write_text, edit(text), encoding="utf-8")
        return path

    async def untrusted_failure(
        self, env: _Env, what: str, out: CommandOutcome, ooms: int | None
    ) -> str | None:
        """Why a command that ran the submission's code (the build, the export) failed, or None;
        raises for a SIGKILL the grader did not send (the host's, or the submission's own)."""
        if out.record.signal == signal.SIGKILL and not out.timed_out and not out.limit_exceeded:
            # The grader's own kills are its deadline and its caps (cancellation propagates): this
            # SIGKILL came from outside. A tree seen over its memory cap makes it the submission's
            # doing; so does a SIGKILL while the kernel's OOM killer did not act (build-time code
            # killing itself, to dodge its verdict). The OOM killer acting is the host's.
            assert self.grade_dir is not None
            cap = env.limits(self.grade_dir).memory_mb
            if out.peak_rss_mb > cap:
                over = f"memory cap exceeded ({out.peak_rss_mb} MiB > {cap} MiB)"
                raise _Failed("build", f"{what} stopped: {over}")
            if _oom_killer_acted(ooms):
                raise _not_judged(
                    "build",
                    f"{what} was killed by the host's OOM killer, at {out.peak_rss_mb} MiB of its "
                    f"{cap} MiB memory cap",
                )
            raise _Failed(
                "build", f"{what} was killed by a SIGKILL that neither the grader nor the OOM killer sent"
            )
        return command_failure(what, out, self.config.timeout_s)

    async def raise_build_failure(self, failure: str | None, out: CommandOutcome) -> None:
        """A failed build step is the submission's, unless the grade's disk is full."""
        if failure is not None:
            if not out.timed_out and not out.limit_exceeded:
                assert self.grade_dir is not None
                if (full := await asyncio.to_thread(workdirs.disk_full, self.grade_dir)) is not None:
                    raise _not_judged("build", f"{full}; {failure}")
            raise _Failed("build", failure)

    async def assemble_verdict_dir(
        self, env: _Env, manifest: dict[str, str], trusted_root: Path | int, export: Path | None
    ) -> None:
        try:
            await workdirs.run_in_thread(
                pkgmod.make_verdict_dir,
                self.verdict_dir,
                trusted_root,
                manifest,
                self.pkg,
                SUBMISSION_MODULE,
                judge_text(env.route.reads).encode("utf-8"),
                export,
                export_is_grader_file=env.sandboxed,
            )
        except pkgmod.VerdictDirError as exc:
            # The trusted outputs come from the pinned cache entry (or the package, which the
            # build can write): only an unsandboxed build can reach the cache, so a cache copy
            # that differs under the sandbox is the host's (a disk fault, another process).
            if exc.trusted and env.sandboxed and trusted_root != self.pkg:
                raise _not_judged("build", f"the cached trusted outputs cannot be read: {exc}") from None
            raise _Failed("build", f"the build's output cannot be judged: {exc}") from None
        except OSError as exc:  # the host's, never the submission's (oserrors.host_errno)
            # Sandboxed, the build reaches nothing in the grade's directory outside its package:
            # a permission error on the grader's own files there is the host's too.
            if (why := host_errno(exc, grader_files=env.sandboxed)) is None:
                raise
            raise _not_judged("build", f"the judge's directory could not be assembled: {why}") from None

    async def judge(self, env: _Env, deadline: float) -> None:
        """Replay, statement and axioms in one trusted process (stages leanchecker..axioms). Its
        own deadline or memory cap is a verdict (the submission's kernel work was too big), and so
        is a failure once it started on the submission's data; a judge that fails before that,
        or prints no well-formed verdict, means "could not judge"."""
        self.begin("leanchecker")
        assert self.grade_dir is not None
        extra_readonly: list[Path] = []
        if env.judge is not None:
            # Sandboxed, no build can reach the cache, so the identity check suffices; unsandboxed
            # it could have, so the executable is hashed again in full.
            if not await asyncio.to_thread(unchanged, env.judge, rehash=not env.sandboxed):
                forget_native_judge(env.judge)
                why = "the cached native judge changed after it was verified"
                # Only an unsandboxed build can reach the cache: then it is the submission's doing.
                raise _not_judged("leanchecker", why) if env.sandboxed else _Failed("leanchecker", why)
            program = [str(env.judge.path)]
            extra_readonly.append(env.judge.path.parent)
        else:
            program = interpreted_judge(str(env.toolchain.lean), self.config.threads)
        ooms = oom_kill_count()
        argv = judge_argv(
            program,
            submission_module=SUBMISSION_MODULE,
            theorem=theorem_name(self.task.p),
            spec=SPEC_CONSTANT,
            check=CHECK_THEOREM,
            toolchain_dir=env.toolchain.dir,
            allowed_imports=JUDGE_IMPORTS,
            required_imports=(REQUIRED_IMPORT,),
            verdict_from=env.route.reads,
        )
        out = await self.run_on_verdict_dir(
            env,
            argv,
            deadline,
            search_path=[self.verdict_dir / pkgmod.VERDICT_LIB],
            output_cap_bytes=max(JUDGE_OUTPUT_CAP, self.config.output_cap_bytes),
            extra_readonly=extra_readonly,
            memory_extra_mb=JUDGE_MEMORY_MB[env.judge_mode],
        )
        if out.timed_out or out.limit_exceeded:
            raise _Failed("leanchecker", command_failure("the judge", out, self.config.timeout_s) or "")
        if out.record.signal is not None or out.record.exit_code != 0:
            # After the self-test, a judge that ended without a verdict once it had started on the
            # submission's data ended on that input (a kernel panic exits outright, a deep term can
            # overflow the stack): a verdict, or a crafted term could dodge its rejection. A SIGKILL
            # the grader did not send (the host's OOM killer) says nothing about the input.
            host_killed = out.record.signal == signal.SIGKILL and _oom_killer_acted(ooms)
            on_input = replay_started(out.text) and not host_killed
            what = "the kernel check of this submission" if on_input else "the judge"
            failure = command_failure(what, out, self.config.timeout_s) or what
            raise _Failed("leanchecker", failure) if on_input else _not_judged("leanchecker", failure)
        try:
            # The kept output is its last bytes, and the verdict line (bounded, under the cap) is
            # the last line: a longer output still ends in it.
            report = parse_judge_output(out.text)
        except JudgeOutputError as exc:
            if out.record.truncated:
                raise _not_judged("leanchecker", "the judge printed more than the output cap") from None
            raise _not_judged("leanchecker", f"the judge reached no verdict: {exc}") from None
        if report.verdict == "imports":
            raise _Failed("leanchecker", f"imports: {report.reason}")
        replayed = report.verdict != "replay"
        self.result.kernels.append(
            KernelRun(
                name=kernelsmod.OFFICIAL,
                verdict="accepted" if replayed else "rejected",
                seconds=out.record.seconds,
                detail="accepted" if replayed else "rejected (kernel replay)",
            )
        )
        if report.verdict == "replay":
            raise _Failed("leanchecker", f"kernel replay: {report.reason}")
        self.begin("statement")
        if report.verdict == "statement":
            raise _Failed("statement", f"statement check: {report.reason}")
        if report.verdict != "ok":  # accepted only by name: a verdict added later is not a pass
            raise _not_judged(
                "statement", f"the judge gave a verdict the grader does not know: {report.verdict}"
            )
        self.begin("axioms")
        self.result.axioms = sorted(report.axioms)
        self.result.check_axioms = sorted(report.check_axioms)
        for name, found in ((theorem_name(self.task.p), report.axioms), (CHECK_THEOREM, report.check_axioms)):
            if (why := check_axioms(found, self.config.axioms_mode)) is not None:
                raise _Failed("axioms", f"{name}: {why}")

    async def prepare_comparator(self, env: _Env) -> comparatormod.PrebuiltChallenge | None:
        """The trusted challenge, built (or found) in the cache before the run, so that its build
        does not eat the submission's time; None when the cache cannot be used (the run then
        builds it, and gets the time for that). A failed trusted build is "could not judge"."""
        self.begin("build")
        assert self.grade_dir is not None and env.comparator is not None
        scratch = self.grade_dir / "comparator-prebuild"
        await workdirs.run_in_thread(scratch.mkdir, 0o700)
        try:
            prebuilt = await comparatormod.ensure_prebuilt_challenge(
                p=self.task.p,
                network_lean=self.task.network_lean,
                weights_lean=self.task.weights_lean,
                toolchain_dir=env.toolchain.dir,
                toolchain_version=env.toolchain.version,
                probe=env.comparator,
                cache_root=cachemod.cache_root(self.config.cache_dir),
                scratch=scratch,
                settings=self.config,
                prlimit=env.prlimit,
                scope=workdirs.work_scope(self.config.work_root),
            )
        except cachemod.PrebuildFailed as exc:
            self.result.commands.extend(exc.records)
            why = f"could not prebuild the comparator's challenge: {exc.reason}"
            raise _not_judged("build", why) from None
        except cachemod.CacheUnusable as exc:
            self.result.commands.extend(exc.records)
            self.result.cache_note = one_line(f"cache unusable: {exc.reason}")
            self.result.cache = "off"
            return None
        self.result.commands.extend(prebuilt.records)
        self.result.cache = "built" if prebuilt.records else "hit"
        return prebuilt

    async def compare(
        self,
        env: _Env,
        submission: str,
        deadline: float,
        prebuilt: comparatormod.PrebuiltChallenge | None = None,
    ) -> None:
        """The toolchain's own judge (`lake comparator`) on a package it builds itself: exit 0
        accepted, 1 rejected once the solution's build began, anything else not judged
        (comparator.py). Every rejection is reported at the leanchecker stage: its output does
        not say reliably which of its steps refused."""
        self.begin("leanchecker")
        assert self.grade_dir is not None
        outcome = await comparatormod.run_comparator(
            submission,
            p=self.task.p,
            network_lean=self.task.network_lean,
            weights_lean=self.task.weights_lean,
            toolchain_dir=env.toolchain.dir,
            work_dir=self.grade_dir,
            deadline=deadline,
            limits=comparatormod.comparator_limits(self.config, self.grade_dir),  # no address-space cap
            prlimit=env.prlimit,
            axioms_mode=self.config.axioms_mode,
            output_cap_bytes=self.config.output_cap_bytes,
            tail_chars=self.config.tail_chars,
            timeout_s=self.config.timeout_s,
            scope=workdirs.work_scope(self.config.work_root),
            probe=env.comparator,
            prebuilt=prebuilt,
            lean_toolchain=self.config.lean_toolchain,
        )
        self.result.commands.extend(outcome.commands)
        self.result.peak_memory_mb = max(self.result.peak_memory_mb, outcome.peak_rss_mb)
        if outcome.verdict in ("accepted", "rejected"):
            seconds = sum(c.seconds for c in outcome.commands)
            self.result.kernels.append(
                KernelRun(
                    name=f"{kernelsmod.OFFICIAL} (lake comparator)", verdict=outcome.verdict, seconds=seconds
                )
            )
        if outcome.verdict == "rejected":
            raise _Failed("leanchecker", outcome.reason)
        if outcome.verdict != "accepted":
            raise _not_judged("leanchecker", outcome.reason)
        for stage in ("statement", "axioms"):
            self.begin(stage)

    def release_entry(self) -> None:
        """Let go of the cache entry this grade read (a discard may delete it from now on)."""
        if self.entry_pin is not None:
            self.entry_pin.release()

    async def external_kernels(self, env: _Env, deadline: float) -> None:
        """`kernels = all`: every bundled checker reads the export the judge accepted, in the
        sandbox, under the grade's limits and deadline, one after another (kernels.py says what
        each exit status means). All of them run, so the result names every one's verdict."""
        assert self.grade_dir is not None
        export = self.verdict_dir / pkgmod.verdict_output(SUBMISSION_MODULE, pkgmod.EXPORT_EXT)
        tmp = self.grade_dir / pkgmod.JUDGE_TMP
        config_path = (
            f"/tmp/{kernelsmod.NANODA_CONFIG}" if env.sandboxed else str(tmp / kernelsmod.NANODA_CONFIG)
        )
        config_text = kernelsmod.nanoda_config(str(export), ALLOWED_AXIOMS)
        await asyncio.to_thread((tmp / kernelsmod.NANODA_CONFIG).write_text, config_text, encoding="utf-8")
        runs: list[KernelRun] = []
        for checker in kernelsmod.CHECKERS:
            binary = kernelsmod.checker_path(env.toolchain.dir, checker)
            if not os.access(binary, os.X_OK):
                runs.append(
                    KernelRun(
                        name=checker.name, verdict="not judged", detail=f"missing (bin/{checker.binary})"
                    )
                )
                continue
            argv = kernelsmod.checker_argv(binary, checker, str(export), config_path)
            try:
                out = await self.run_on_verdict_dir(env, argv, deadline, search_path=[])
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
            runs.append(
                KernelRun(name=checker.name, verdict=verdict, seconds=out.record.seconds, detail=detail)
            )
        self.result.kernels.extend(runs)
        verdict, why = kernelsmod.combine(runs)
        if verdict == "rejected":
            raise _Failed("leanchecker", why)
        if verdict != "accepted":
            raise _not_judged("leanchecker", why)

    def accept(self) -> None:
        self.end()
        # Name the toolchain that said yes rather than asserting "Lean": under test it is a double.
        if self.result.judge == "comparator":
            self.result.reason = f"accepted by lake comparator (toolchain: {self.result.toolchain})"
            return
        axioms = ", ".join(self.result.axioms or []) or "none"
        if len(self.result.kernels) > 1:
            names = ", ".join(k.name for k in self.result.kernels)
            axioms += f"; kernels: {names}"
        self.result.reason = (
            f"accepted: build, kernel replay, statement and axiom checks passed (axioms: {axioms}; "
            f"verdict from the {self.result.verdict_from}; toolchain: {self.result.toolchain})"
        )


@dataclass(frozen=True)
class TestSwitches:
    """`grade`'s test-only switches (see its docstring), reachable from no setting."""

    extra_modules: Mapping[str, str]
    route: Route | None
    export_edit: ExportEdit | None
    checkers_only: bool = False
    """The self-test's checker canaries: the external checkers read the (edited) export and
    decide alone; the grader's own judge does not run."""


#: The last-resort watchdog's slack: how long past its own deadlines a grade may still run before
#: it is ended as "could not judge: the grader stalled" (killing its processes, removing its
#: directory). Its deadlines: once it holds a slot, 3 x timeout_s (cache check, prebuild, build
#: and judge, each bounded by timeout_s), then, once its package is ready, the build-and-judge
#: deadline. Waiting for a slot is not a stall: each grade ahead holds its slot for a bounded time.
STALL_SLACK_S = 60.0
#: After a stall, how long the grade's own clean-up (cancellation) gets before it is abandoned.
STALL_GRACE_S = 5.0
#: Grades abandoned by the watchdog, kept referenced until they end (a task is only weakly held).
_abandoned: set[asyncio.Future[None]] = set()


class _Watchdog:
    """When a grade counts as stalled: `STALL_SLACK_S` past the deadline last armed (none while it
    waits for a slot)."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.deadline: float | None = None
        self.cancelled = False
        """A cancellation came during an uninterruptible wait."""
        self.commands: CommandGroup | None = None
        """The grade's running commands (set by the grade's own task)."""
        self._rearmed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def arm(self, deadline: float) -> None:
        self.deadline = deadline + STALL_SLACK_S
        if not self._rearmed.done():
            self._rearmed.set_result(None)

    async def wait(self, run: asyncio.Future[None], *, uninterruptible: bool = False) -> bool:
        """Wait for `run`: True once it is done, False once it stalled. `uninterruptible` (the
        caller is being cancelled): a further cancellation is ignored, and the wait ends no later
        than `STALL_GRACE_S` past the deadline, or from now while none is armed."""
        if uninterruptible:
            end = max(self.deadline or 0.0, time.monotonic()) + STALL_GRACE_S
            while not run.done() and time.monotonic() < end:
                try:
                    await asyncio.wait((run,), timeout=end - time.monotonic())
                except asyncio.CancelledError:
                    self.cancelled = True  # the caller re-raises it once done
            return run.done()
        while not run.done():
            left = None if self.deadline is None else self.deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            rearmed = self._rearmed
            await asyncio.wait((run, rearmed), timeout=left, return_when=asyncio.FIRST_COMPLETED)
            if rearmed.done():
                self._rearmed = asyncio.get_running_loop().create_future()
        return True


async def _abandon(g: _Grade, run: asyncio.Future[None], watchdog: _Watchdog) -> None:
    """Give up on a grade that does not end: kill every process it still runs, keep its task
    referenced until it ends, and remove its directory."""
    if watchdog.commands is not None:
        watchdog.commands.kill_all()
    _abandoned.add(run)
    run.add_done_callback(_abandoned.discard)
    run.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved: no warning
    if g.grade_dir is not None and not g.config.keep_packages:
        await workdirs.remove_tree_off_loop(g.grade_dir)


async def _stalled(g: _Grade, run: asyncio.Future[None], watchdog: _Watchdog, started: float) -> GradeResult:
    """The watchdog fired: cancel the grade, give its clean-up `STALL_GRACE_S`, then abandon it;
    the result is "could not judge: the grader stalled" either way."""
    stage = g.result.stage_reached
    run.cancel()
    cleaned = await watchdog.wait(run, uninterruptible=True)
    if not cleaned:
        await _abandon(g, run, watchdog)
    result = g.result.model_copy(deep=True)  # an abandoned grade may still write to its own
    result.failed_stage = stage
    result.judged = False
    how = "it ended when cancelled" if cleaned else "it was abandoned, its processes killed"
    result.reason = one_line(
        f"could not judge: the grader stalled: no result {STALL_SLACK_S:g} s past the grade's "
        f"deadline (stage {stage}); {how} and its directory removed",
        2 * _REASON_MAX,
    )
    result.grader_seconds = round(time.monotonic() - started, 4)
    if watchdog.cancelled:
        raise asyncio.CancelledError
    return result


async def grade(
    submission: str,
    task: GradeTask,
    config: GraderConfig,
    *,
    toolchain_check: ToolchainCheck | None,
    on_stage: OnStage | None = None,
    skip_guard: bool = False,
    extra_modules: Mapping[str, str] | None = None,
    route: Route | None = None,
    export_edit: ExportEdit | None = None,
    checkers_only: bool = False,
) -> GradeResult:
    """Grade `submission` (the whole text of LeanCheckedNetwork/Submission.lean) for `task`.

    `toolchain_check` runs once the toolchain and judge are known, before anything is built;
    it has no default, so no caller skips it by omission (`grader.grade` passes the self-test;
    None is for the self-test's own canaries and the orchestration tests, whose double acts
    out only what each test scripts).

    Test-only switches, reachable from no config field and no command line; never set them when
    grading rollouts:
    - `skip_guard`: the later stages must be shown to catch what the guard would catch first
      (the Lean integration tests and the self-test's canaries use it);
    - `extra_modules`: modules compiled into the package before the submission (a canary);
    - `route`: grade by this route, untried by `toolchain_check` (the self-test's canaries);
    - `export_edit`: rewrite the export before the judge reads it (crafted-export canaries);
    - `checkers_only`: with `kernels = all`, only the external checkers judge the export (the
      self-test's per-checker canaries).

    Returns a GradeResult for every outcome, including toolchain problems and internal errors
    ("internal grader error: ..."). Only cancellation propagates, after every process this grade
    started has been killed and its directory removed."""
    started = time.monotonic()
    g = _Grade(task, config, on_stage)
    watchdog = _Watchdog(config.timeout_s)
    run = asyncio.ensure_future(
        _grade_body(
            g,
            watchdog,
            submission,
            toolchain_check,
            skip_guard,
            TestSwitches(extra_modules or {}, route, export_edit, checkers_only),
            started,
        )
    )
    try:
        finished = await watchdog.wait(run)
    except asyncio.CancelledError:
        # Cancelled: the grade's own clean-up kills its processes and removes its directory; the
        # watchdog still bounds the wait for it.
        run.cancel()
        if not await watchdog.wait(run, uninterruptible=True):
            await _abandon(g, run, watchdog)
        raise
    if not finished:
        return await _stalled(g, run, watchdog, started)
    if not run.cancelled():
        run.result()  # (the body catches everything but cancellation)
    return g.result


async def _grade_body(
    g: _Grade,
    watchdog: _Watchdog,
    submission: str,
    toolchain_check: ToolchainCheck | None,
    skip_guard: bool,
    switches: TestSwitches,
    started: float,
) -> None:
    """`grade` itself, run as a task the watchdog looks after."""
    config = g.config
    watchdog.commands = command_group()  # this task's commands, for the watchdog to kill
    try:
        await g.guard(submission, skip_guard)
        env = await g.locate()
        await g.choose_route(env, toolchain_check, switches.route)
        limit = config.max_concurrent or default_concurrency(config.threads)
        queued = time.monotonic()
        async with _semaphore(limit):
            g.result.queued_seconds = round(time.monotonic() - queued, 4)
            if env.route.judge == "comparator":
                g.grade_dir = workdirs.new_grade_dir(config.work_root, keep=config.keep_packages)
                # The trusted challenge first, with its own deadline (the cache check and the
                # build `timeout_s` each); then the run: the submission's `timeout_s` plus an
                # allowance for the run's trusted steps (comparator.py, the deadline).
                watchdog.arm(time.monotonic() + 2 * config.timeout_s)
                prebuilt = await g.prepare_comparator(env)
                allowance = comparatormod.prebuild_allowance(prebuilt, config.timeout_s)
                deadline = time.monotonic() + config.timeout_s + allowance
                watchdog.arm(deadline)
                await g.compare(env, submission, deadline, prebuilt)
            else:
                # From here on each step has its own deadline: the cache check and the prebuild
                # `timeout_s` each, the build and the judge `timeout_s` together.
                watchdog.arm(time.monotonic() + 3 * config.timeout_s)
                g.begin("build")
                manifest, trusted_root = await g.prepare(env)
                # One deadline for build, export and judge, starting once the package is ready.
                deadline = time.monotonic() + config.timeout_s
                watchdog.arm(deadline)
                if switches.extra_modules:
                    await g.compile_extra(env, switches.extra_modules, deadline)
                await g.build(env, submission, manifest, deadline)
                export = None
                if env.route.verdict_from == "export":
                    export = await g.export(env, deadline, switches.export_edit)
                await g.assemble_verdict_dir(env, manifest, trusted_root, export)
                if not switches.checkers_only:
                    await g.judge(env, deadline)
                if config.kernels == "all" and export is not None:
                    await g.external_kernels(env, deadline)
        g.accept()
    except _Failed as failed:
        g.fail(failed.stage, failed.reason, judged=failed.judged)
    except asyncio.CancelledError:
        g.fail(g.result.stage_reached, "cancelled", judged=False)
        raise
    except HostFault as fault:  # the host or the grader, never the submission
        g.fail(g.result.stage_reached, fault.reason, judged=False)
    except Exception as exc:  # a grader bug must not crash the rollout, nor look like a verdict
        why = host_fault_reason(exc)  # a full disk, out of memory, ...: named, not a "bug"
        reason = why or f"internal grader error: {type(exc).__name__}: {exc}"
        g.fail(g.result.stage_reached, reason, judged=False)
    finally:
        g.end()
        g.release_entry()
        try:
            if g.grade_dir is not None and not config.keep_packages:
                # Queued for the reaper threads (the result does not wait for it; why that is
                # safe: `workdirs.reap_later`), or, past the backlog, removed here off the loop.
                await workdirs.remove_grade_dir(g.grade_dir)
        finally:
            g.result.grader_seconds = round(time.monotonic() - started, 4)


#: Replies longer than this (in characters) are scanned in a child process: extraction is a few
#: whole-text regex passes, each one C call that holds the GIL (83 ms for 5 MB of prose), so a
#: thread would not free the event loop. Shorter replies are scanned in a thread.
EXTRACT_IN_CHILD_CHARS = 256 * 1024
_CHUNK_CHARS = 1 << 20
_EXTRACT_CHILD = """
import codecs, json, sys
sys.path.insert(0, sys.argv[1])  # where this grader's own package is
from lean_mod_add_proof.grading.extract import extract_submission
reply = codecs.decode(sys.stdin.buffer.read(), "utf-8", "surrogatepass")
ex = extract_submission(reply)
head = {"code": ex.code is not None, "reason": ex.reason, "blocks": ex.blocks_found}
sys.stdout.buffer.write(json.dumps(head).encode() + b"\\n")
if ex.code is not None:
    sys.stdout.buffer.write(ex.code.encode("utf-8", "surrogatepass"))
"""


async def _extract_off_loop(reply: str) -> Extraction:
    """`extract_submission(reply)` without holding the event loop: a thread for a short reply, a
    child process for a long one (the reply goes to it and the code comes back in pieces of at
    most 1 Mi characters, so no single step holds the loop long). A child that cannot do it
    (cannot start, crashes, answers garbage) changes nothing but speed: the thread does it."""
    if len(reply) <= EXTRACT_IN_CHILD_CHARS:
        return await asyncio.to_thread(extract_submission, reply)
    here = Path(extract_submission.__code__.co_filename).resolve().parents[2]
    try:
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _EXTRACT_CHILD,
            str(here),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
    except OSError:
        return await asyncio.to_thread(extract_submission, reply)
    assert child.stdin is not None and child.stdout is not None
    stdin, stdout = child.stdin, child.stdout

    async def feed() -> None:
        try:
            for at in range(0, len(reply), _CHUNK_CHARS):
                stdin.write(reply[at : at + _CHUNK_CHARS].encode("utf-8", "surrogatepass"))
                await stdin.drain()
        finally:
            stdin.close()

    feeding = asyncio.ensure_future(feed())
    try:
        head = json.loads(await stdout.readline())
        decoder = codecs.getincrementaldecoder("utf-8")("surrogatepass")
        parts = []
        while chunk := await stdout.read(1 << 16):
            parts.append(decoder.decode(chunk))
        parts.append(decoder.decode(b"", final=True))
        await feeding
        if await child.wait() != 0 or not isinstance(head, dict):
            raise ValueError("the extraction child failed")
        code = "".join(parts) if head["code"] else None
        return Extraction(code, str(head["reason"]), int(head["blocks"]))
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return await asyncio.to_thread(extract_submission, reply)
    finally:
        if not feeding.done():
            feeding.cancel()
        feeding.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved
        if child.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                child.kill()
            await child.wait()


async def grade_reply(
    reply: str,
    task: GradeTask,
    config: GraderConfig,
    *,
    toolchain_check: ToolchainCheck | None,
    on_stage: OnStage | None = None,
    skip_guard: bool = False,
) -> GradeResult:
    """Extract the one ```lean block from a model reply, then `grade` it."""
    started = time.monotonic()
    if on_stage is not None:
        on_stage("extract")
    try:
        extraction = await _extract_off_loop(reply)
    except Exception as exc:
        extraction = None
        why = host_fault_reason(exc)
        reason = why or f"internal grader error: {type(exc).__name__}: {exc}"
    else:
        reason = extraction.reason
    extract_s = round(time.monotonic() - started, 4)
    if extraction is None or extraction.code is None:
        result = GradeResult(
            task_id=task.task_id,
            theorem=theorem_name(task.p),
            stage_reached="extract",
            failed_stage="extract",
            judged=extraction is not None,
            reason=one_line(f"extract: {reason}" if extraction is not None else f"could not judge: {reason}"),
        )
        result.stage_seconds["extract"] = extract_s
        result.grader_seconds = extract_s
        return result
    result = await grade(
        extraction.code,
        task,
        config,
        toolchain_check=toolchain_check,
        on_stage=on_stage,
        skip_guard=skip_guard,
    )
    result.stage_seconds = {"extract": extract_s, **result.stage_seconds}
    result.grader_seconds = round(result.grader_seconds + extract_s, 4)
    return result


async def _get_ready(g: _Grade, toolchain_check: ToolchainCheck | None, *, task_entry: bool) -> None:
    """What a first grade does before it builds anything of the submission's: locate the
    toolchain, get the judge ready, run `toolchain_check`, and (`task_entry`) build or verify the
    task's cache entry. Every failure is `judged=False` (nothing was graded)."""
    try:
        env = await g.locate()
        await g.choose_route(env, toolchain_check, None)
        if task_entry and env.route.judge == "replay":
            g.begin("build")
            await g.prepare(env)
        elif task_entry:  # the comparator's prebuilt challenge
            g.grade_dir = workdirs.new_grade_dir(g.config.work_root)
            await g.prepare_comparator(env)
    except _Failed as failed:
        g.fail(failed.stage, failed.reason, judged=False)
    except HostFault as fault:
        g.fail(g.result.stage_reached, fault.reason, judged=False)
    except Exception as exc:
        why = host_fault_reason(exc) or f"internal grader error: {type(exc).__name__}: {exc}"
        g.fail(g.result.stage_reached, why, judged=False)
    finally:
        g.end()
        g.release_entry()
        if g.grade_dir is not None:
            workdirs.remove_tree(g.grade_dir)


async def warm_cache(
    task: GradeTask, config: GraderConfig, *, toolchain_check: ToolchainCheck | None
) -> GradeResult:
    """Build or verify what a first grade of `task` would (same toolchain, sandbox and limits):
    the compiled judge, the task's prebuilt Network/Weights cache entry, and, with
    `toolchain_check`, the toolchain's check (a self-test pass is remembered on disk), without
    grading anything. `result.cache` says `built` or `hit`; a failure is `judged=False` with the
    reason (`warm-cache`, image builds)."""
    started = time.monotonic()
    g = _Grade(task, config, None)
    await _get_ready(g, toolchain_check, task_entry=True)
    g.result.grader_seconds = round(time.monotonic() - started, 4)
    if g.result.failed_stage is None:
        judge = g.result.judge if g.result.judge != "replay" else f"replay from the {g.result.verdict_from}"
        g.result.reason = f"cache {g.result.cache}; judge {judge}" + (
            f" ({g.result.judge_mode})" if g.result.judge_mode else ""
        )
    return g.result


async def prepare_judge_only(config: GraderConfig) -> GradeResult:
    """Locate the toolchain and get its judge ready exactly as a grade would (built once per
    toolchain, else `lean --run`), grading nothing: `judge_mode` and `judge_note` say which
    judge grades on this machine and why (`doctor`). A failure is `judged=False` with the reason."""
    g = _Grade(GradeTask(task_id="", p=0, network_lean="", weights_lean=""), config, None)
    await _get_ready(g, None, task_entry=False)
    return g.result
