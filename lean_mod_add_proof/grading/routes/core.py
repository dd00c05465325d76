"""What every route of a grade shares: the task, the grade's lifecycle (stages begun and ended,
commands recorded, the failure that ends it, its work directory), how a stage fails, and how the
grade's commands run (toolchain, sandbox, limits).

A failed stage raises `StageFailed`: a verdict (`judged=True`, reward 0.0) for what the
submission's text, build or proof caused, or could not judge (`not_judged`) for what the host or
the grader caused. Nothing here decides which; each step says so where it raises.
"""

from __future__ import annotations

import hashlib
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lean_mod_add_proof.grading import cache as cachemod
from lean_mod_add_proof.grading import package as pkgmod
from lean_mod_add_proof.grading import workdirs
from lean_mod_add_proof.grading.judge import output_lines
from lean_mod_add_proof.grading.lean_names import theorem_name
from lean_mod_add_proof.grading.messages import REASON_MAX_CHARS, error_messages, one_line
from lean_mod_add_proof.grading.process import (
    CommandOutcome,
    HostFault,
    Limits,
    child_env,
    oom_kill_count,
    run_command,
)
from lean_mod_add_proof.grading.result import GraderConfig, GradeResult, Stage
from lean_mod_add_proof.grading.sandbox import bwrap_argv, forget_probe, host_layout, options_fingerprint
from lean_mod_add_proof.grading.signal_filter import program_fd as signal_filter_fd
from lean_mod_add_proof.grading.signals import sent_only_from_outside
from lean_mod_add_proof.grading.toolchain import Toolchain

OnStage = Callable[[str], None]
#: Memory cap floor for compiling the task's own trusted files.
PREBUILD_MEMORY_MB = 2048


@dataclass(frozen=True)
class GradeTask:
    """What a grade needs to know about its task: the id, the modulus and the two trusted texts."""

    task_id: str
    p: int
    network_lean: str
    weights_lean: str


class StageFailed(Exception):
    """A stage failed; carries the one-line reason (control flow inside the grade only).
    `judged=False` when the failure says nothing about the submission (could not judge)."""

    def __init__(self, stage: Stage, reason: str, *, judged: bool = True) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason
        self.judged = judged


def not_judged(stage: Stage, reason: str) -> StageFailed:
    return StageFailed(stage, reason, judged=False)


def summarize_output(text: str) -> str:
    """The most telling line of a failed command's output: the first error, else the last line."""
    if errors := error_messages(text):
        return one_line(errors[0])
    lines = output_lines(text)
    for ln in lines:
        if "error" in ln.lower():
            return one_line(ln)
    return one_line(lines[-1]) if lines else "(no output)"


def signal_name(signum: int) -> str:
    """`signal 15, SIGTERM` (pure; a number Python does not name stays a number)."""
    try:
        return f"signal {signum}, {signal.Signals(signum).name}"
    except ValueError:
        return f"signal {signum}"


def command_failure(what: str, outcome: CommandOutcome, timeout_s: float) -> str | None:
    """Why a command counts as failed, or None when it exited 0 (pure)."""
    rec = outcome.record
    if outcome.limit_exceeded:
        return f"{what} stopped: {outcome.limit_exceeded}"
    if outcome.timed_out:
        return f"{what} timed out: the {timeout_s:g} s limit for build, replay and check together ran out"
    if rec.signal is not None:
        return f"{what} failed (killed by {signal_name(rec.signal)}): {summarize_output(outcome.text)}"
    if rec.exit_code != 0:
        return f"{what} failed (exit {rec.exit_code}): {summarize_output(outcome.text)}"
    return None


def oom_killer_acted(before: int | None) -> bool:
    """Whether the kernel's OOM killer killed anything since `before` was read; True when it
    cannot be told (the host's fault is the safe reading of an unknown SIGKILL)."""
    after = oom_kill_count()
    return before is None or after is None or after > before


def bwrap_killed_by(fault: HostFault) -> int | None:
    """The signal bwrap itself died of, when that is the fault (pure): process/commands.py
    `run_command` sets it on the HostFault (no status document, bwrap killed by a signal)."""
    return fault.signal if fault.sandbox else None


def bwrap_death_verdict(argv: Sequence[str], signum: int) -> str:
    """The reason for a submission's command whose sandbox died of a signal it could have sent."""
    what = os.path.basename(argv[0]) if argv else "the command"
    return (
        f"{what} failed: its sandbox (bwrap) was killed by {signal_name(signum)}, a signal the"
        " submission's code could send, so it counts as the submission's"
    )


@dataclass
class CommandEnv:
    """What every command of one grade shares: the toolchain, the settings, the sandbox."""

    toolchain: Toolchain
    config: GraderConfig
    sandboxed: bool
    bwrap: str | None
    prlimit: str
    signal_filter: bytes | None = None
    """The seccomp program the sandbox loads for the submission's own commands
    (`signal_filter.py`); None without the sandbox, or where libseccomp cannot make it."""

    @property
    def sandbox_fingerprint(self) -> str:
        """How the submission's commands are confined, for a remembered self-test pass: bwrap's
        options and the filter's program (it changes with the rules and with libseccomp), so
        the canaries run again under any change of either."""
        if not self.sandboxed:
            return "unsandboxed"
        program = self.signal_filter
        filtered = hashlib.sha256(program).hexdigest()[:16] if program is not None else "none"
        return f"bwrap {options_fingerprint()}, filter {filtered}"

    @property
    def filters_signals(self) -> bool:
        """The submission's own commands run under the signal filter: a signal from outside that
        ends one of them is provably not its own doing."""
        return self.sandboxed and self.signal_filter is not None

    def bwrap_death_is_the_hosts(self, signum: int, ooms_before: int | None) -> bool:
        """bwrap itself, running the submission's code, died of `signum`: the host's only if no
        process in the sandbox could have sent it. No route from inside to bwrap is
        known (it is outside the PID namespace, and in another session and process group:
        sandbox.py `--new-session`); but before `--new-session`, `kill(0, SIGALRM)` from the
        build reached it, so without proof the signal is the submission's: under the filter,
        every signal but those it refuses to every target (`signals.OUTSIDE_ONLY`); without the filter,
        every signal but a SIGKILL while the kernel's OOM killer acted. That exception is kept for
        bwrap, not for the command (steps.py `untrusted_failure`): the command can SIGKILL itself,
        but nothing inside can signal bwrap or end it without its status document (measured,
        docs/readings/no-filter-reading.md), and the OOM killer takes the largest process, which
        bwrap, a few MiB, is not."""
        if self.filters_signals:
            return sent_only_from_outside(signum)
        return signum == signal.SIGKILL and oom_killer_acted(ooms_before)

    def limits(
        self,
        grade_dir: Path,
        *,
        trusted: bool = False,
        memory_floor_mb: int = 0,
        memory_extra_mb: int = 0,
        cpu_seconds: int | None = None,
    ) -> Limits:
        """The per-grade caps. The trusted prebuild gets at least PREBUILD_MEMORY_MB (or
        `memory_floor_mb`), so a small cap meant for submissions cannot turn into "the task's own
        files do not build"; the judge gets `memory_extra_mb` on top, its own fixed cost, so the
        cap bounds what the submission adds; `cpu_seconds`, a CPU budget of the command's own
        (`Limits.cpu_seconds`)."""
        c = self.config
        floor = max(PREBUILD_MEMORY_MB, memory_floor_mb) if trusted else 0
        return Limits.from_settings(
            c, grade_dir, memory_mb=max(c.memory_mb + memory_extra_mb, floor), cpu_seconds=cpu_seconds
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
        untrusted: bool = False,
        cpu_seconds: int | None = None,
    ) -> CommandOutcome:
        """Run `argv` in `cwd` with LEAN_PATH = toolchain library + `search_path`. `writable`
        binds `cwd` read-write (the build) or read-only (the judge); the sources stay read-only.
        Temporary files go to the grade's own `tmp_name` directory (bound as /tmp in the
        sandbox), so the disk cap counts them and nothing is left on the host. `untrusted`: the
        command runs the submission's code (the build, the export): the sandbox loads the signal
        filter for it (`filters_signals`), and bwrap's own death by a signal that code could
        have sent is the submission's (`bwrap_death_is_the_hosts`)."""
        tmp_dir = grade_dir / tmp_name
        env = child_env(cwd, self.toolchain.dir / "bin", tmpdir=Path("/tmp") if self.sandboxed else tmp_dir)
        env["LEAN_PATH"] = pkgmod.lean_path(self.toolchain.dir, *search_path)
        env["LEAN_NUM_THREADS"] = str(self.config.threads)  # read by compiled executables only
        env.update(extra_env or {})
        full = list(argv)
        seccomp_fd = None
        if self.sandboxed and untrusted and self.signal_filter is not None:
            seccomp_fd = signal_filter_fd(self.signal_filter)
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
                    seccomp_fd=seccomp_fd,
                )
                + full
            )
        ooms = oom_kill_count() if untrusted and self.sandboxed and not self.filters_signals else None
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
                    cpu_seconds=cpu_seconds,
                ),
                prlimit=self.prlimit,
                sandboxed=self.sandboxed,
                record_argv=argv,
                scope=workdirs.work_scope(self.config.work_root),
                stdout_fd=stdout_fd,
                pass_fds=() if seccomp_fd is None else (seccomp_fd,),
            )
        except HostFault as fault:
            if untrusted and (signum := bwrap_killed_by(fault)) is not None:
                if not self.bwrap_death_is_the_hosts(signum, ooms):
                    raise StageFailed(stage, bwrap_death_verdict(argv, signum)) from None
            if fault.sandbox:
                forget_probe()  # the next grade probes bwrap again before it trusts it
            raise
        finally:
            if seccomp_fd is not None:
                os.close(seccomp_fd)  # bwrap has its own copy (read and closed there)


class Grade:
    """One grade's mutable state and lifecycle: the result, the stage running, the commands
    recorded, the work directory and the cache entry it reads."""

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

    def fail(self, stage: Stage, reason: str, *, judged: bool = True) -> None:
        self.end()
        self.result.failed_stage = stage
        self.result.judged = judged
        prefix = "" if judged else "could not judge: "
        self.result.reason = one_line(prefix + reason, 2 * REASON_MAX_CHARS)

    def fresh_tmp(self, name: str) -> None:
        """Make an untrusted step's own /tmp just before it starts (see `package.BUILD_TMP`).
        Only an unsandboxed step before it can have made it: the submission's doing."""
        assert self.grade_dir is not None
        try:
            (self.grade_dir / name).mkdir(0o700)
        except FileExistsError:
            raise StageFailed(
                "build", f"{name} exists already: the build wrote outside its package"
            ) from None

    def release_entry(self) -> None:
        """Let go of the cache entry this grade read (a discard may delete it from now on)."""
        if self.entry_pin is not None:
            self.entry_pin.release()


async def run_on_verdict_dir(
    g: Grade,
    env: CommandEnv,
    argv: Sequence[str],
    deadline: float,
    *,
    extra_env: Mapping[str, str],
    search_path: Sequence[Path] = (),
    output_cap_bytes: int | None = None,
    extra_readonly: Sequence[Path] = (),
    memory_extra_mb: int = 0,
    cpu_seconds: int | None = None,
) -> CommandOutcome:
    """A command that reads the verdict directory (the replay judge, a bundled checker), recorded:
    run there, read-only, with the judge's own /tmp (`package.JUDGE_TMP`: nanoda's config is
    there), in the stage `leanchecker`, with its own `extra_env`."""
    assert g.grade_dir is not None
    return g.record(
        await env.run(
            "leanchecker",
            argv,
            g.verdict_dir,
            deadline,
            search_path=search_path,
            grade_dir=g.grade_dir,
            writable=False,
            tmp_name=pkgmod.JUDGE_TMP,
            output_cap_bytes=output_cap_bytes,
            extra_readonly=extra_readonly,
            memory_extra_mb=memory_extra_mb,
            extra_env=extra_env,
            cpu_seconds=cpu_seconds,
        )
    )
