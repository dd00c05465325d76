"""Running one command (`run_command`): its argv (the `prlimit` and bwrap status wrappers), its
marker and environment (`child_env`), the spawn, a watcher to follow it, the wait for its end or
deadline, the uninterruptible clean-up (`_finish`), and what the outcome says: a
`CommandOutcome`, or a `HostFault` when it says nothing about the command. `CommandGroup`: the
commands of one grade running now, for a last-resort watchdog."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import errno
import math
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lean_mod_add_proof.grading.process.discovery import _discovery
from lean_mod_add_proof.grading.process.disk import OwnUse
from lean_mod_add_proof.grading.process.faults import (
    HostFault,
    _last_line,
    _raise_if_host_fault,
    _read_status,
    _spawn_fault,
    host_fault_reason,
    sandbox_exit_code,
)
from lean_mod_add_proof.grading.process.limits import (
    _MIB,
    ADDRESS_SPACE_BACKSTOP_MB,
    Limits,
    cpu_cap_reason,
    cpu_limits,
    prlimit_argv,
)
from lean_mod_add_proof.grading.process.markers import TREE_ENV_VAR, _run_token
from lean_mod_add_proof.grading.process.output import _Capture, _output_pipe, _Run, exit_status
from lean_mod_add_proof.grading.process.proc import _CLK_TCK, _boot_ticks, _killpg
from lean_mod_add_proof.grading.process.watcher import _Watcher, _watcher_threads
from lean_mod_add_proof.grading.result import CommandRecord, Stage

#: After the tree is killed, how long to keep draining the pipe. A process the watcher could not
#: find (see the package docstring) could hold it open forever.
DRAIN_AFTER_KILL_S = 2.0


def command_cpu_limits(limits: Limits, remaining_s: float) -> int:
    """RLIMIT_CPU's soft limit for a command under `limits` (pure; the hard one is unlimited,
    `cpu_limits` says why): its own budget (`Limits.cpu_seconds`), or the backstop `cpu_limits`
    derives from the deadline."""
    if limits.cpu_seconds is not None:
        return limits.cpu_seconds
    return cpu_limits(remaining_s, limits.cpu_threads)


@dataclass(frozen=True)
class CommandOutcome:
    record: CommandRecord
    text: str
    """The captured output (the last `output_cap_bytes` bytes, decoded with replacement)."""
    timed_out: bool
    started: bool = True
    limit_exceeded: str | None = None
    """Set when a per-grade cap stopped the command: `memory cap exceeded (N MiB > M MiB)`,
    `process cap exceeded (more than N processes)`, `disk cap exceeded (N MiB > M MiB)`,
    `file cap exceeded (more than N directory entries)` or
    `CPU time cap exceeded (N CPU seconds in one process)`."""
    peak_rss_mb: int = 0
    """Largest summed resident memory of the tree seen while it ran, in MiB (rounded up)."""
    peak_cpu_s: float = 0.0
    """CPU seconds (user + system, all its threads) of the tree's busiest process, as last seen
    by the watcher (it looks every RSS_POLL_S, so up to that much of the end can be missed)."""
    first_seen: Mapping[bytes, float] | None = None
    """For each of `run_command`'s `watch_for` strings that appeared in the output: when it
    first did, in seconds after the command started (read as the output arrived)."""
    argv_seen_at: float | None = None
    """When a process of the tree was first seen running with one of `run_command`'s
    `watch_argv` as a whole argument, in seconds after the command started (looked for at each
    poll of the tree, so a process that lives less than `RSS_POLL_S` may be missed)."""
    low_free_bytes: int | None = None
    """The least free space (bytes available to the grader) of the disk holding the first of
    `Limits.disk_paths`, seen at each poll while the command ran (None: no disk paths). A
    reading under `workdirs.ENOSPC_MARK_BYTES` counts only once confirmed: the disk still under
    it after the grade's own usage was measured, and that usage within its caps (disk.py)."""
    low_free_inodes: int | None = None
    """The same for free inodes (None also for a filesystem that counts none); 0 only once
    confirmed."""
    low_own: OwnUse | None = None
    """The grade's own usage (bytes and directory entries, the files its tree held with no name
    left included) measured when a low reading was confirmed; None: none was."""


def child_env(home: Path, toolchain_bin: Path | None, tmpdir: Path) -> dict[str, str]:
    """The complete environment of every Lean process: nothing inherited from the grader (no API
    keys, no ELAN_*, no LEAN_PATH), one thread. `tmpdir` is TMPDIR: `/tmp` inside the sandbox
    (bound to the step's own tmp directory), that directory itself without it, so
    temporary files stay inside the grade directory and count towards its disk cap."""
    path = "/usr/bin:/bin"
    if toolchain_bin is not None:
        path = f"{toolchain_bin}:{path}"
    return {
        "PATH": path,
        "HOME": str(home),
        "LEAN_NUM_THREADS": "1",
        "LANG": "C.UTF-8",
        "TMPDIR": str(tmpdir),
    }


def _marked_env(token: str, env: Mapping[str, str]) -> dict[str, str]:
    """`env` with the run's marker first (so a reader of a long environment finds it early);
    a marker variable already in `env` is dropped, never allowed to replace the run's token
    (its processes would carry a marker naming no tree: review B P-10)."""
    return {TREE_ENV_VAR: token, **{k: v for k, v in env.items() if k != TREE_ENV_VAR}}


async def _uninterruptible(fut: asyncio.Future[Any], timeout: float | None = None) -> bool:
    """Wait for `fut` (never cancelling it) up to `timeout`; True if a cancellation came meanwhile
    (the caller re-raises it once its clean-up is done)."""
    cancelled = False
    end = None if timeout is None else time.monotonic() + timeout
    while not fut.done():
        left = None if end is None else end - time.monotonic()
        if left is not None and left <= 0:
            break
        try:
            await asyncio.wait((fut,), timeout=left)
        except asyncio.CancelledError:
            cancelled = True
    return cancelled


async def _finish(run: _Run, watcher: _Watcher) -> None:
    """Kill the group, wait for the command's exit, kill the rest of the tree, stop reading, and
    reap the command. Uninterruptible: a (second) cancellation is remembered and re-raised at
    the end, never leaves a zombie."""
    _killpg(run.pid)  # (the command is reaped only by `run.close()`: until then its group id is ours)
    cancelled = False
    while not run.exited.done():
        cancelled |= await _uninterruptible(run.exited, 0.5)
        _killpg(run.pid)
    watcher.stop()
    cancelled |= await _uninterruptible(watcher.done)  # it kills every tracked process, then ends
    # A process the watcher could not find (see the package docstring) could hold the pipe open
    # forever: read on for a little while, then let go of it.
    cancelled |= await _uninterruptible(run.eof, DRAIN_AFTER_KILL_S)
    run.close()
    if cancelled:
        raise asyncio.CancelledError


def _abandon(proc: subprocess.Popen[bytes], watcher: _Watcher, run: _Run | None) -> None:
    """Clean up after a command that started but cannot be followed (its `_Run` or its watcher's
    thread could not be made: the host's doing): kill its group, sweep its tree from this thread
    (the event loop's, for up to `SWEEP_S`: there may be no other thread to do it in), then reap
    it and release its pipe. Without the sweep, whatever had left the group already (a `setsid`
    in its first milliseconds) would live on (the review of 2026-12-06, finding 9)."""
    _killpg(proc.pid)
    try:
        watcher.abandon()
    finally:
        proc.wait()
        if run is not None:
            run.close()
        else:
            _output_pipe(proc).close()


class CommandGroup:
    """The commands of one grade that are running now, so a last-resort watchdog can kill them
    all (see `command_group`)."""

    def __init__(self) -> None:
        self.watchers: set[_Watcher] = set()

    def kill_all(self) -> int:
        """SIGKILL every tracked tree and tell its watcher to finish (from the event loop)."""
        watchers = list(self.watchers)
        for watcher in watchers:
            with contextlib.suppress(Exception):
                watcher.kill()
            watcher.stop()
        return len(watchers)


_group: contextvars.ContextVar[CommandGroup | None] = contextvars.ContextVar(
    "lean_grader_command_group", default=None
)


def command_group() -> CommandGroup:
    """A fresh group, current for this context: every `run_command` started in it (and in the
    tasks it creates) registers there while it runs."""
    group = CommandGroup()
    _group.set(group)
    return group


async def run_command(
    argv: Sequence[str],
    *,
    stage: Stage,
    cwd: Path,
    env: Mapping[str, str],
    deadline: float,
    output_cap_bytes: int,
    tail_chars: int,
    limits: Limits | None,
    prlimit: str | None,
    record_argv: Sequence[str] | None = None,
    sandboxed: bool = False,
    scope: str = "",
    stdout_fd: int | None = None,
    watch_for: Sequence[bytes] = (),
    watch_argv: Sequence[str] = (),
    pass_fds: Sequence[int] = (),
) -> CommandOutcome:
    """Run `argv` until it exits or `deadline` (a `time.monotonic()` value) passes.

    With `limits` the command runs under `prlimit` (a far address-space backstop, the file size
    and a CPU-seconds backstop) and under the live caps on its process tree (memory, processes,
    disk; see the package docstring). Its whole tree is SIGKILLed when the command ends, when the
    deadline passes, when a cap is exceeded, and on cancellation (which is re-raised after the
    tree is reaped). `record_argv` is what goes on the record (the command without the
    sandbox/limit wrappers), default `argv`. `sandboxed` says `argv` starts with bwrap, whose
    exit 128+N means its command died of signal N (reported as `signal`, see `exit_status`);
    bwrap then reports on a status pipe whether the command ran at all. `scope` (the grader's
    work root) goes into the run's marker (see `kill_dead_graders_processes`). `stdout_fd`, a file
    the caller opened, takes the command's stdout (uncapped in memory; the file-size cap bounds
    it), and then only its stderr is captured. `watch_for`: strings whose first appearance in the
    output is timed (`CommandOutcome.first_seen`); `watch_argv`: arguments whose first appearance
    in a process of the tree is timed (`CommandOutcome.argv_seen_at`). `pass_fds`: descriptors
    the command inherits (bwrap's `--add-seccomp-fd`, grading/signal_filter.py).

    Raises `HostFault` when the outcome says nothing about the command (see the package
    docstring): the sandbox did not run it, it could not be started, its program vanished."""
    shown = list(record_argv if record_argv is not None else argv)
    start = time.monotonic()
    remaining = deadline - start
    if remaining <= 0:
        record = CommandRecord(
            stage=stage,
            argv=shown,
            exit_code=None,
            seconds=0.0,
            output_tail="",
            output_bytes=0,
            truncated=False,
        )
        return CommandOutcome(record, "", timed_out=True, started=False)
    full = list(argv)
    status_r = status_w = None
    if sandboxed:
        try:
            status_r, status_w = os.pipe()
        except OSError as exc:
            raise HostFault(host_fault_reason(exc) or f"cannot make a pipe: {exc}") from exc
        full = [full[0], "--json-status-fd", str(status_w), *full[1:]]
    if limits is not None:
        if prlimit is None:
            raise RuntimeError("prlimit not found; it is needed for the file-size cap")
        address_space = max(ADDRESS_SPACE_BACKSTOP_MB, limits.memory_mb) if limits.address_space_cap else None
        cpu = command_cpu_limits(limits, remaining)
        full = prlimit_argv(prlimit, address_space, cpu, limits.max_file_mb) + full
    token = _run_token(scope)
    capture = _Capture(output_cap_bytes, watch_for)
    loop = asyncio.get_running_loop()
    argv_marks = frozenset(a.encode() for a in watch_argv)
    try:
        watcher = _Watcher(token, _boot_ticks(), limits, loop, argv_marks)
    except BaseException as exc:
        for fd in (status_r, status_w):
            if fd is not None:
                os.close(fd)
        _raise_if_host_fault(exc)
        raise
    try:
        # Started synchronously, as asyncio's own subprocess support does, but followed by `_Run`:
        # asyncio's transport, cancelled before its pipe is connected, kills just the command's
        # first process and then waits for the pipe to close. In the sandbox that first process
        # is bwrap, whose child is not yet bound to it by --die-with-parent while it sets the
        # sandbox up (bwrap calls PR_SET_PDEATHSIG only just before exec): the child lives on,
        # runs the command, holds the pipe, and the cancelled grade waits for as long as it runs.
        # No preexec_fn, user, group or extra_groups: CPython then spawns with vfork (3.10+,
        # Modules/_posixsubprocess.c: vfork only when `preexec_fn == Py_None` and no setuid/
        # setgid/setgroups), so a big grader process does not pay for copying its page tables.
        unfollowed: BaseException | None = None  # why `attach` failed (the host's doing)
        try:
            # Under the look's lock, up to the first process's filing (`attach`): a look between
            # the two would see the command's first children with no tree to file them with.
            with _discovery.lock:
                proc = subprocess.Popen(
                    full,
                    cwd=str(cwd),
                    env=_marked_env(token, env),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE if stdout_fd is None else stdout_fd,
                    stderr=subprocess.STDOUT if stdout_fd is None else subprocess.PIPE,
                    process_group=0,  # its own group: one killpg reaches every descendant that stays in it
                    pass_fds=(*pass_fds, *(() if status_w is None else (status_w,))),
                )
                try:
                    watcher.attach(proc.pid)
                except BaseException as exc:  # started, but not followed: swept below, not leaked
                    unfollowed = exc
        except OSError as exc:
            raise HostFault(
                _spawn_fault(exc, full[0]), sandbox=sandboxed and exc.errno == errno.ENOENT
            ) from exc
        finally:
            if status_w is not None:
                os.close(status_w)  # the child has its copy; EOF once bwrap is gone
        if unfollowed is not None:
            _abandon(proc, watcher, None)
            _raise_if_host_fault(unfollowed)
            raise unfollowed
        try:
            run = _Run(proc, capture, loop)
        except BaseException:
            _abandon(proc, watcher, None)
            raise
        outcome = await _watch(run, watcher, shown, stage, start, remaining, limits, sandboxed, tail_chars)
        status = _read_status(status_r) if status_r is not None else b""
    finally:
        if not watcher.started:
            watcher.close()  # (a started watcher unregisters itself once it has swept)
        if status_r is not None:
            os.close(status_r)
    if sandboxed and not outcome.timed_out and outcome.limit_exceeded is None:
        if sandbox_exit_code(status) is None:
            returncode = proc.returncode
            assert returncode is not None
            if returncode < 0:
                why = f"the sandbox (bwrap) was killed by signal {-returncode} from outside the grader"
                raise HostFault(why, sandbox=True, signal=-returncode)
            # bwrap's own message: it ran nothing of the command
            why = f"the sandbox (bwrap) did not start: {_last_line(outcome.text)} (exit {returncode})"
            raise HostFault(why, sandbox=True)
    rec = outcome.record
    if (rec.exit_code or 0) != 0 and not outcome.timed_out and outcome.limit_exceeded is None:
        program = shown[0] if shown else ""
        if os.path.isabs(program) and not os.access(program, os.X_OK):
            raise HostFault(f"{program} is missing or not executable (it exited {rec.exit_code})")
    return outcome


async def _watch(
    run: _Run,
    watcher: _Watcher,
    shown: list[str],
    stage: Stage,
    start: float,
    remaining: float,
    limits: Limits | None,
    sandboxed: bool,
    tail_chars: int,
) -> CommandOutcome:
    """Follow the started command to its end, kill its tree, and say how it ended."""
    try:
        _watcher_threads.start(watcher)
        watcher.started = True
    except BaseException as exc:
        _abandon(run.proc, watcher, run)
        _raise_if_host_fault(exc)
        raise
    group = _group.get()
    if group is not None:
        group.watchers.add(watcher)
    timed_out = False
    try:
        done, _ = await asyncio.wait((run.exited,), timeout=remaining)
        timed_out = not done
    finally:
        # Runs on normal exit, deadline, caps and cancellation alike; re-raises cancellation.
        try:
            await _finish(run, watcher)
        finally:
            if group is not None:
                group.watchers.discard(watcher)
    capture = run.capture
    if watcher.error is not None:
        if (why := host_fault_reason(watcher.error)) is not None:
            raise HostFault(f"the process watcher stopped: {why}") from watcher.error
        raise RuntimeError(f"the process watcher failed: {watcher.error!r}") from watcher.error
    returncode = run.returncode
    assert returncode is not None
    exit_code, signum = exit_status(returncode, sandboxed=sandboxed)
    if timed_out:
        exit_code = None  # killed by the grader (or it exited just as the deadline passed)
    limit_exceeded = watcher.reason
    if limit_exceeded is None and not timed_out and limits is not None:
        limit_exceeded = cpu_cap_reason(signum, command_cpu_limits(limits, remaining))
    text = capture.text()
    disk = watcher.disk
    record = CommandRecord(
        stage=stage,
        argv=shown,
        exit_code=exit_code,
        signal=signum,
        seconds=round(time.monotonic() - start, 3),
        output_tail=text[-tail_chars:] if tail_chars else "",
        output_bytes=capture.total,
        truncated=capture.truncated,
    )
    return CommandOutcome(
        record,
        text,
        timed_out=timed_out,
        limit_exceeded=limit_exceeded,
        peak_rss_mb=math.ceil(watcher.peak_rss / _MIB),
        peak_cpu_s=round(watcher.peak_cpu_ticks / _CLK_TCK, 2),
        first_seen={w: round(at - start, 3) for w, at in capture.seen.items()} if capture.watch else None,
        argv_seen_at=None if watcher.argv_seen_at is None else round(watcher.argv_seen_at - start, 3),
        low_free_bytes=None if disk is None else disk.low_free_bytes,
        low_free_inodes=None if disk is None else disk.low_free_inodes,
        low_own=None if disk is None else disk.low_own,
    )
