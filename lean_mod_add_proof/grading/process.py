"""Running one untrusted command: its own process group, a shared deadline, OS limits, an output
cap, live per-grade caps on its whole process tree, and a kill of that whole tree whatever
happens (normal exit, deadline, a cap, cancellation).

How the tree is followed. A watcher thread per command (threads are reused: `_WatcherThreads`)
looks at /proc every `RSS_POLL_S` (the first look after `FIRST_POLL_S`; the later ones of every
watcher fall due together, on one grid). New pids are found by one look shared by every watcher
of the grader process (`_Discovery`): it reads the stat of just the pids allocated since the last
look (from /proc/sys/kernel/ns_last_pid; a whole listing of /proc when that cannot be read or is
too many), so a look costs the same on a host with thousands of processes, and it files each new
process with the tree of its parent, once, however many commands run. Each watcher then reads
its own members. A tree keeps every process it has ever seen descend from the command, by pid
*and* start time, so a reused pid is never counted or killed, and a process stays tracked after
its parent dies:
`setsid`, `setpgid`, bash job control and a double fork do not hide a process once seen. A process
that leaves the tree before any look (its parent exits within milliseconds, the classic double
fork) is still found: the command runs with a random marker variable (`TREE_ENV_VAR`, visible to
the command) in its environment, and a process started after the command, reparented to init or to
one of the grader's ancestors, and carrying this run's marker, counts as the command's. Processes
inside the bubblewrap sandbox are visible in the host's /proc under their host pids and their
parent chain goes through bwrap, so the same walk covers sandboxed commands. Threads are not
processes: their memory is in their process's RSS.

Caps (`Limits`), checked by polling:
- memory: the summed resident set (RSS) of every live process of the tree, every `RSS_POLL_S`;
- processes: how many processes of the tree exist at once (zombies included, threads not), every
  `RSS_POLL_S` (RLIMIT_NPROC is ignored for root, even inside bwrap, so it cannot do this);
- disk: the allocated size of everything under `Limits.disk_paths` (symlinks not followed, hard
  links counted once), every `DISK_POLL_S` and once more when the command ends;
- directory entries: how many files, directories and links there are under `Limits.disk_paths`,
  in the same walk (an inode flood of empty files fills no blocks but exhausts a disk's inodes);
- file size: RLIMIT_FSIZE via `prlimit` (the kernel stops the write with SIGXFSZ);
- CPU seconds and address space: RLIMIT_CPU / RLIMIT_AS via `prlimit`, far backstops only. RLIMIT_CPU
  counts each process's CPU time over all its threads, so it is sized from the deadline times
  the threads a process may use (`cpu_limits`), with the soft limit below the hard one: the kernel
  sends SIGXCPU at the soft limit (once a second after it) and SIGKILL only at the hard one. No
  RLIMIT_AS at all with `Limits.address_space_cap` off (`lake comparator`, see comparator.py).
When a cap is exceeded the whole tree is SIGKILLed and `CommandOutcome.limit_exceeded` says why,
in exactly one of these forms: `memory cap exceeded (N MiB > M MiB)`,
`process cap exceeded (more than N processes)`, `disk cap exceeded (N MiB > M MiB)`,
`file cap exceeded (more than N directory entries)`. A command ended by the CPU backstop (killed by
SIGXCPU, or by any signal once a process of its tree was seen at its soft limit) gets
`CPU time cap exceeded (N CPU seconds in one process)`: it is the kernel's kill for the cap, not a
SIGKILL from outside.

Residual limits (say these plainly wherever the caps are described):
- Without the sandbox, a process that leaves the command's tree before the watcher has seen it
  (a double fork plus `setsid`, within ~10 ms) *and* drops the marker from its environment
  (`env -i`, an `execve` with a fresh environment) is not found and outlives the grade.
  Unsandboxed is no security boundary anyway: the command runs as the grader's user and can
  signal, ptrace or read the grader. With the sandbox on (bwrap: PID namespace,
  `--die-with-parent`) nothing survives: killing bwrap tears the whole namespace down. But
  bwrap's child takes `--die-with-parent` (PR_SET_PDEATHSIG) only once the sandbox is set up,
  just before it starts the command: killing bwrap *alone* in those first milliseconds leaves
  the child to run the command unwatched. The grader never does that (its kill is the process
  group, which the child is in, and the watcher follows the child); a grader killed outright
  in that window leaves it to the next grader's sweep (the child carries the marker).
- Caps are polled, not enforced by the kernel: memory can overshoot by what the tree touches in
  one poll (~50 ms; the address-space backstop stops any single process at
  `ADDRESS_SPACE_BACKSTOP_MB`), a fork burst can briefly exceed the process cap, and disk can
  overshoot by ~0.5 s of writing (each file stays under RLIMIT_FSIZE).
- Summed RSS counts a page shared by several processes (shared libraries, copy-on-write pages
  after fork, mmapped .olean files) once per process, so it overstates a tree whose processes
  share memory: it errs towards stopping early.
- The disk walk's time grows with the number of files under `disk_paths` (about 5 µs a file;
  the walk at the end of a command is on its critical path).
- With the sandbox, bwrap reports a command killed by signal N as exit 128+N; a command that
  itself exits with 129..192 is therefore reported as killed by a signal too.

Exit status (`CommandRecord`), the same with and without the sandbox: `signal` is the signal
that ended the command and then `exit_code` is None; `exit_code` is also None when the grader
killed the command (deadline, a cap, cancellation; `signal` is then normally 9, SIGKILL).
Otherwise `exit_code` is the command's exit code and `signal` None. A disk cap found only by the
walk at the end leaves the exit code as it was (the command was not killed).

Host faults (`HostFault`): what says nothing about the command, raised instead of an outcome, so
no caller can read it as the command's own failure:
- the sandbox did not run the command. bwrap gets `--json-status-fd`; it writes
  `{"exit-code": N}` there only once the command it started has exited, so no such document
  (and no kill by the grader) means bwrap failed before or while setting up the sandbox, or was
  itself killed from outside (see `sandbox_status`). The command cannot reach that descriptor:
  bwrap does not pass it on. User-
  namespace exhaustion was measured (bubblewrap 0.8.0, kernel limits lowered inside a private
  user namespace: `max_user_namespaces`, `max_pid_namespaces`, `max_mnt_namespaces` or
  `max_net_namespaces` = 0): bwrap exits 1 with "Creating new namespace failed: nesting depth
  or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)" and writes no document at all;
- the command could not be started (a missing program, out of memory, no more processes, file
  descriptors or disk: the errno of the spawn), or its program was gone when it failed (a
  toolchain or bwrap removed while grading);
- the watcher could not watch (out of memory, no thread)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import errno
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from lean_mod_add_proof.grading.oserrors import HOST_ERRNOS, host_errno
from lean_mod_add_proof.grading.result import CommandRecord, Stage
from lean_mod_add_proof.grading.workdirs import owner_is_dead, owner_tag

#: After the tree is killed, how long to keep draining the pipe. A process the watcher could not
#: find (see the module docstring) could hold it open forever.
DRAIN_AFTER_KILL_S = 2.0
#: Added to the CPU-seconds backstop so it only fires when the wall-clock kill somehow did not.
CPU_SLACK_S = 5
#: CPU seconds per wall second one process may use, per thread of the `threads` setting: Lean runs
#: its main thread beside the `-j` workers, so a busy build of `threads` workers may use up to
#: `threads + 1` cores; twice `threads` covers that with room to spare.
CPU_PER_THREAD = 2
#: How far the hard CPU limit (SIGKILL) is above the soft one (SIGXCPU, the kill that is seen).
CPU_HARD_GAP_S = 5
#: A process of the tree seen this close to the soft CPU limit, in a command that then died of a
#: signal, was stopped by the CPU backstop (the watcher looks every RSS_POLL_S, and a process
#: cannot use more than a few CPU seconds between two looks).
CPU_SEEN_MARGIN_S = 2
_CHUNK = 1 << 16
#: The most one read of a command's output takes (asyncio's pipe transports read as much).
_READ_MAX = 1 << 18

#: Far backstop on address space: Lean 4.35 reserves 1 GiB of stack per thread plus allocator
#: arenas, so an address-space cap near real use stops it from starting. Real memory is capped by
#: the live RSS watch (`Limits.memory_mb`).
ADDRESS_SPACE_BACKSTOP_MB = 16 * 1024

#: How often each watcher polls: its tree's memory and process caps, and new members (through the
#: shared look, `_Discovery`). The regular polls of all watchers fall due on one grid of this period.
RSS_POLL_S = 0.05
#: The first look comes a little later, so a command that is over in a few milliseconds costs
#: one listing of /proc (the final sweep), not two. What it started meanwhile is found then.
FIRST_POLL_S = 0.01
#: How often the watcher adds up the disk use under `Limits.disk_paths`.
DISK_POLL_S = 0.5
#: How long the final kill keeps looking for stragglers before giving up.
SWEEP_S = 1.0
#: A look at /proc normally stats just the pids allocated since the last look (read from
#: /proc/sys/kernel/ns_last_pid). It lists all of /proc instead when that is more than
#: `_RANGE_MAX` pids, when more than `_RANGE_GAP_S` passed since the last look (the allocator
#: might have come full circle), or when ns_last_pid cannot be read.
_RANGE_MAX = 4096
_RANGE_GAP_S = 1.0
#: How many more looks an undecided pid gets (see `_Discovery._undecided`).
_RETRIES = 3
#: The environment variable carrying a run's random marker (see the module docstring).
TREE_ENV_VAR = "LEAN_GRADER_TREE"

_MIB = 1024 * 1024
_PAGE = os.sysconf("SC_PAGE_SIZE")
_CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Limits:
    """The per-grade caps every command of a grade runs under."""

    memory_mb: int
    """Summed resident memory of the command's whole process tree."""
    max_processes: int
    """Processes alive at once in the command's tree."""
    max_disk_mb: int
    """Bytes under `disk_paths` (the grade directory and the sandbox /tmp) together."""
    max_file_mb: int
    """Largest single file (RLIMIT_FSIZE)."""
    disk_paths: tuple[Path, ...] = ()
    max_files: int | None = None
    """Directory entries under `disk_paths` together (None: not counted)."""
    cpu_threads: int = 1
    """Threads a process may use (the `threads` setting): sizes the CPU-seconds backstop."""
    address_space_cap: bool = True
    """The far RLIMIT_AS backstop (`ADDRESS_SPACE_BACKSTOP_MB`); off, RLIMIT_AS is unlimited
    (for a command whose Lean processes it cannot give LEAN_NUM_THREADS, see comparator.py)."""


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
    first_seen: Mapping[bytes, float] | None = None
    """For each of `run_command`'s `watch_for` strings that appeared in the output: when it
    first did, in seconds after the command started (read as the output arrived)."""
    argv_seen_at: float | None = None
    """When a process of the tree was first seen running with one of `run_command`'s
    `watch_argv` as a whole argument, in seconds after the command started (looked for at each
    poll of the tree, so a process that lives less than `RSS_POLL_S` may be missed)."""


class HostFault(Exception):
    """Something of the host or the grader, not of the command, stopped it: "could not judge".
    `reason` names it (one line); `sandbox` says the sandbox itself failed (probe it again)."""

    def __init__(self, reason: str, *, sandbox: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.sandbox = sandbox


#: Only when starting a program (anywhere else a missing file may be a build's doing).
_SPAWN_ERRNOS: dict[int, str] = {
    errno.ENOENT: "a program the grader runs is missing",
    errno.EACCES: "a program the grader runs is not executable",
    errno.ENOEXEC: "a program the grader runs is not executable",
}


def oom_kill_count(vmstat: str = "/proc/vmstat") -> int | None:
    """How many processes the kernel's OOM killer has killed since boot (`oom_kill` in
    /proc/vmstat, Linux 4.13+), or None where it cannot be read. A SIGKILL the grader did not
    send is the host's only if this moved meanwhile; otherwise the command's own code sent it.
    Read as bytes and searched, not decoded and split line by line: a grade reads it around each
    command, and the text loop cost about 1 ms of the grader's CPU each time (0.6 ms this way,
    most of it the kernel writing the file)."""
    try:
        fd = os.open(vmstat, os.O_RDONLY | os.O_CLOEXEC)
        try:
            chunks = []
            while chunk := os.read(fd, 1 << 16):
                chunks.append(chunk)
        finally:
            os.close(fd)
    except OSError:
        return None
    data = b"\n" + b"".join(chunks)
    at = data.find(b"\noom_kill ")
    if at < 0:
        return None
    end = data.find(b"\n", at + 1)
    try:
        return int(data[at + len(b"\noom_kill ") : None if end < 0 else end])
    except ValueError:
        return None


def host_fault_reason(exc: BaseException) -> str | None:
    """The named host fault behind `exc` (itself, its cause or its context), or None: a full disk
    (ENOSPC, EDQUOT), out of memory (MemoryError, ENOMEM), a process or descriptor limit, a
    missing program (ENOENT), a `HostFault`. Pure."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, HostFault):
            return cur.reason
        if isinstance(cur, MemoryError):
            return "out of memory (MemoryError in the grader)"
        if isinstance(cur, OSError) and (why := host_errno(cur)) is not None:
            return why
        if isinstance(cur, RuntimeError) and "can't start new thread" in str(cur):
            return "the host refused a new thread (can't start new thread)"
        cur = cur.__cause__ or cur.__context__
    return None


def prlimit_argv(
    prlimit: str, address_space_mb: int | None, cpu_seconds: tuple[int, int], max_file_mb: int
) -> list[str]:
    """`prlimit` sets the limits on itself and execs the command, so every descendant inherits
    them (rlimits survive exec and fork, and bwrap does not reset them). RLIMIT_FSIZE bounds each
    file written (an .olean of a huge term, a flood into a file); it does not apply to pipes.
    `cpu_seconds` is (soft, hard), written `--cpu=soft:hard` (prlimit(1): "soft:hard").
    `address_space_mb` None: RLIMIT_AS unlimited (util-linux prlimit(1): "unlimited")."""
    mib = 1024 * 1024
    soft, hard = cpu_seconds
    return [
        prlimit,
        f"--as={'unlimited' if address_space_mb is None else address_space_mb * mib}",
        f"--cpu={soft}:{hard}",
        f"--fsize={max_file_mb * mib}",
        "--",
    ]


def cpu_limits(remaining_s: float, threads: int) -> tuple[int, int]:
    """(soft, hard) RLIMIT_CPU for a command with `remaining_s` to its deadline whose processes
    may use `threads` threads (pure). RLIMIT_CPU counts one process's CPU time over all its
    threads, so a multi-threaded build reaches a limit of `remaining_s` long before its deadline
    (issue 26: SIGKILLed at 32.6 s of 60 with 2 threads): the soft limit allows
    `CPU_PER_THREAD * threads` cores for the whole deadline plus `CPU_SLACK_S`, and the hard limit
    is `CPU_HARD_GAP_S` above it, so the kernel's SIGXCPU comes first and names the cause."""
    soft = max(1, math.ceil(remaining_s)) * CPU_PER_THREAD * max(1, threads) + CPU_SLACK_S
    return soft, soft + CPU_HARD_GAP_S


def cpu_cap_reason(signum: int | None, peak_cpu_ticks: int, limits: tuple[int, int]) -> str | None:
    """`CPU time cap exceeded (...)` when the command was ended by the CPU backstop, else None
    (pure): it died of SIGXCPU (the soft limit's signal, default action: terminate), or of another
    signal (the hard limit's SIGKILL, or a shell of the tree reporting its child's death) while a
    process of its tree had been seen within CPU_SEEN_MARGIN_S of the soft limit."""
    soft, _ = limits
    seen = peak_cpu_ticks / _CLK_TCK
    if signum == signal.SIGXCPU or (signum is not None and seen >= soft - CPU_SEEN_MARGIN_S):
        return f"CPU time cap exceeded ({soft} CPU seconds in one process)"
    return None


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


def find_prlimit() -> str | None:
    return shutil.which("prlimit", path="/usr/bin:/bin:/usr/sbin:/sbin")


def exit_status(returncode: int, *, sandboxed: bool) -> tuple[int | None, int | None]:
    """(exit_code, signal) from a returncode, the same with and without the sandbox (pure).
    Popen reports death by signal N as -N; bwrap exits 128+N when its child dies of signal N."""
    if returncode < 0:
        return None, -returncode
    if sandboxed and 128 < returncode < 128 + signal.NSIG:
        return None, returncode - 128
    return returncode, None


# -- the process tree -------------------------------------------------------------------------


def _read_proc(pid: int, name: str, most: int = 4096) -> bytes | None:
    """Up to `most` bytes of /proc/<pid>/<name>, or None when the process is gone."""
    try:
        fd = os.open(f"/proc/{pid}/{name}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.read(fd, min(most, 4096))
        if len(data) == 4096 and most > 4096:  # rare: a long environment
            parts = [data]
            size = len(data)
            while size < most and (chunk := os.read(fd, min(1 << 16, most - size))):
                parts.append(chunk)
                size += len(chunk)
            data = b"".join(parts)
        return data
    except OSError:
        return None
    finally:
        os.close(fd)


def _stat(pid: int) -> tuple[int, int, int, bool, int] | None:
    """(ppid, start time in clock ticks since boot, RSS in pages, zombie, CPU time in clock ticks)
    from /proc/<pid>/stat, or None when the process is gone."""
    data = _read_proc(pid, "stat")
    if not data:
        return None
    fields = data[data.rfind(b")") + 2 :].split()  # after the command name, which may hold ")"
    try:  # field 3 state, 4 ppid, 14 utime, 15 stime, 22 starttime, 24 rss (proc(5)); fields[0] is field 3
        cpu = int(fields[11]) + int(fields[12])
        return int(fields[1]), int(fields[19]), int(fields[21]), fields[0] in (b"Z", b"X"), cpu
    except (IndexError, ValueError):
        return None


class _Discovery:
    """The one look at new pids for every watcher of this grader process (issue 29).

    Why one: when each watcher looked at every pid allocated since its own last look, whoever's
    it was, and read the environment of every new child of the grader (every command's first
    process is one), a grader running N commands did the classifying work N times over: its
    watchers' CPU per grade grew with N, under one GIL. Now a look reads ns_last_pid once, stats
    each new pid once, reads an orphan's environment once (its marker names its tree), retries an
    undecided pid once per look, and files each new process with the tree of its parent. A
    watcher's own poll then reads only its members.

    Freshness: a watcher's poll asks for a look that began after the poll did (`look`), so what
    it finds is what a look of its own would have found; a look in progress that began earlier
    does not count, and the watcher looks again. Looks, the tree maps and the undecided pids are
    guarded by `lock`. A tree is registered before its command is spawned (so nothing the
    command starts is looked at before its tree is known) and unregistered once its watcher has
    swept it. With no tree registered there is nothing to follow, so the next registration
    starts the pid range afresh (from ns_last_pid read then)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._trees: dict[bytes, _Watcher] = {}  # marker token -> its watcher
        self._owner: dict[int, _Watcher] = {}  # every member pid of a registered tree -> its tree
        self._last_pid: int | None = None
        self._looked_at = -math.inf  # when the last look began
        self._other: set[int] = set()  # in whole listings: pids known to belong to no tree
        self._retry: dict[int, int] = {}  # undecided pids to look at again -> retries left
        self.waiting: set[int] = set()  # of those, the ones a final sweep waits for

    def register(self, watcher: _Watcher) -> None:
        with self.lock:
            if not self._trees:  # nothing followed until now: no pid before this one can matter
                self._last_pid = _last_pid()
                self._looked_at = time.monotonic()
                self._other.clear()
                self._retry.clear()
                self.waiting.clear()
            self._trees[watcher.token] = watcher

    def unregister(self, watcher: _Watcher) -> None:
        with self.lock:
            if self._trees.get(watcher.token) is watcher:
                del self._trees[watcher.token]
            for pid in watcher.seen:
                if self._owner.get(pid) is watcher:
                    del self._owner[pid]

    def adopt(self, watcher: _Watcher, pid: int, start: int) -> None:
        """File `pid` (started at `start`) as a member of `watcher`'s tree (`lock` held)."""
        old = self._owner.get(pid)
        if old is not None and old is not watcher:
            old.ours.pop(pid, None)  # a reused pid: the old process is gone
        self._owner[pid] = watcher
        watcher.ours[pid] = start
        watcher.seen.add(pid)

    def forget(self, watcher: _Watcher, pid: int, start: int) -> None:
        """`pid` of `watcher`'s tree is gone, or is another process now (`lock` held)."""
        if watcher.ours.get(pid) == start:
            del watcher.ours[pid]
            if self._owner.get(pid) is watcher:
                del self._owner[pid]

    def look(self, asked_at: float) -> None:
        """Find the new members of every registered tree, unless a look that began after
        `asked_at` did already (`lock` held)."""
        if self._looked_at > asked_at:
            return
        candidates, listing = self._candidates()
        retry_left, self._retry, self.waiting = self._retry, {}, set()
        if retry_left:
            candidates = [*candidates, *(pid for pid in retry_left if pid not in candidates)]
        adopters = _ancestors()
        pending: dict[int, tuple[int, int, int, bool, int]] = {}
        for pid in candidates:
            st = _stat(pid)
            if st is None:
                self._undecided(pid, retry_left, exec_=False)
                continue
            owner = self._owner.get(pid)
            if owner is not None and owner.ours.get(pid) == st[1]:
                continue  # a member already
            pending[pid] = st
        progress = True
        while pending and progress:  # parents before children
            progress = False
            for pid, st in list(pending.items()):
                ppid = st[0]
                if ppid in pending:
                    continue
                del pending[pid]
                progress = True
                tree: _Watcher | None = self._owner.get(ppid)
                if tree is None and ppid in self._retry:  # its parent is undecided: so is it
                    self._undecided(pid, retry_left, exec_=False)
                    continue
                if tree is None and ppid in adopters:  # an orphan, or a child of the grader or above
                    environ = _read_proc(pid, "environ", 1 << 20)
                    if not environ:  # in the middle of an exec, or a zombie: ask again next look
                        self._undecided(pid, retry_left, exec_=True)
                        continue
                    tree = self._marked(environ)
                if tree is not None and st[1] >= tree.not_before and _is_process(pid):
                    self.adopt(tree, pid, st[1])
                elif listing:
                    self._other.add(pid)

    def _marked(self, environ: bytes) -> _Watcher | None:
        """The registered tree whose marker the environment carries, if any."""
        for token in _MARKER.findall(b"\0" + environ):
            if (tree := self._trees.get(token)) is not None:
                return tree
        return None

    def _undecided(self, pid: int, retry_left: Mapping[int, int], *, exec_: bool) -> None:
        """Look at `pid` again next time (at most `_RETRIES` times): its pid was allocated but its
        process not visible (a fork in flight, or it is gone), or its environment read empty (an
        exec in progress, or a zombie). Only the latter keeps a final sweep going: a fork in
        flight has a live parent, which keeps its tree's sweep going anyway."""
        left = retry_left.get(pid, _RETRIES)
        if left > 0 and pid not in self._owner:
            self._retry[pid] = left - 1
            if exec_:
                self.waiting.add(pid)

    def _candidates(self) -> tuple[Sequence[int] | set[int], bool]:
        """(pids that may have joined a tree since the last look, whether from a listing)."""
        now = time.monotonic()
        last = _last_pid()
        prev, self._last_pid = self._last_pid, last
        gap, self._looked_at = now - self._looked_at, now
        if last is not None and prev is not None and gap < _RANGE_GAP_S:
            span = _pids_after(prev, last)
            if span is not None:
                return span, False
        listed = set(map(int, filter(str.isdigit, os.listdir("/proc"))))
        if gap < _RANGE_GAP_S:
            self._other &= listed
        else:
            self._other.clear()  # a pid seen before may belong to someone else by now
        return listed - self._owner.keys() - self._other, True


#: A marker in an environment (read with a leading NUL): its token, the key of its tree.
_MARKER = re.compile(rb"\0" + TREE_ENV_VAR.encode() + rb"=([^\0]*)")
_discovery = _Discovery()


def _is_process(pid: int) -> bool:
    """Whether `pid` is a process (thread-group leader), not another thread of one. A thread's
    /proc/<tid> is reachable though not listed, and its stat shows its process's parent."""
    data = _read_proc(pid, "status", 1024)
    if not data:
        return False
    at = data.find(b"\nTgid:")
    if at < 0:
        return False
    end = data.find(b"\n", at + 1)
    try:
        return int(data[at + 6 : end if end >= 0 else None]) == pid
    except ValueError:
        return False


def _boot_ticks() -> int:
    """Now, in the unit and clock of /proc/<pid>/stat's start time."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * _CLK_TCK)


_ancestors_cache: tuple[int, int, frozenset[int]] = (0, 0, frozenset())


def _ancestors() -> frozenset[int]:
    """The grader and its ancestors up to init: where an orphan of the command can be reparented
    (init of our PID namespace or the nearest child-subreaper ancestor). Cached per (pid, ppid)."""
    global _ancestors_cache
    me, parent, chain_ = _ancestors_cache
    if me == os.getpid() and parent == os.getppid():
        return chain_
    chain = {1}
    pid = os.getpid()
    while pid > 1 and pid not in chain and len(chain) < 64:
        chain.add(pid)
        st = _stat(pid)
        if st is None:
            break
        pid = st[0]
    _ancestors_cache = (os.getpid(), os.getppid(), frozenset(chain))
    return _ancestors_cache[2]


def _read_int(path: str) -> int | None:
    try:
        with open(path, "rb") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def _last_pid() -> int | None:
    """The pid allocated last in our PID namespace (new pids follow it, cyclically)."""
    return _read_int("/proc/sys/kernel/ns_last_pid")


def _pids_after(prev: int, last: int) -> range | list[int] | None:
    """The pids allocated after `prev` up to `last`, cyclically; None when that is too many."""
    if last >= prev:
        span: range | list[int] = range(prev + 1, last + 1)
    else:  # the allocator wrapped around pid_max
        top = _read_int("/proc/sys/kernel/pid_max") or 1 << 22
        span = [*range(prev + 1, top), *range(1, last + 1)]
    return span if len(span) <= _RANGE_MAX else None


def _kill_exact(pid: int, start: int) -> None:
    """SIGKILL `pid` only if it is still the process that started at `start` (pidfd: no race)."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        st = _stat(pid)
        if st is not None and st[1] == start:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        return
    try:
        st = _stat(pid)
        if st is not None and st[1] == start:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
    finally:
        os.close(fd)


def _killpg(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


_MARKER_RE = re.compile(
    rb"(?:^|\0)"
    + re.escape(TREE_ENV_VAR).encode()
    + rb"=(\d+)-(\d+)-(\d+)-(?:([0-9a-f]{8})-)?[0-9a-f]+(?:\0|$)"
)


def scope_tag(scope: str) -> str:
    """The part of a run's marker that names its grader's scope (the work root), so a grader
    sweeping what dead graders left behind ends only the processes of its own scope (pure)."""
    return hashlib.sha256(scope.encode("utf-8", "surrogateescape")).hexdigest()[:8]


def kill_dead_graders_processes(scope: str | None = None) -> int:
    """SIGKILL every process whose marker names a grader that is dead (pid gone or reused): what
    survives a grader killed outright without the sandbox (with it, bwrap's `--die-with-parent`
    and the pid namespace already end everything). With `scope` (the work root, as given to
    `run_command`), only processes started with that scope: graders of other work roots on the
    same machine sweep their own. Run once when a grader starts; returns how many it killed. A
    process that dropped its environment (`env -i`) is not found."""
    killed = 0
    me = os.getpid()
    want = None if scope is None else scope_tag(scope).encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        pid = int(entry.name)
        data = _read_proc(pid, "environ", 1 << 20)
        if not data or (m := _MARKER_RE.search(data)) is None:
            continue
        if want is not None and m.group(4) != want:
            continue
        ns, owner, started = (int(g) for g in m.groups()[:3])
        st = _stat(pid)
        if st is not None and owner_is_dead(ns, owner, started):
            _kill_exact(pid, st[1])
            killed += 1
    return killed


#: What each directory entry costs the disk cap at least: an empty file holds no blocks but an
#: inode, and millions of them would exhaust the inodes or stall the walk and the removal.
ENTRY_MIN_BYTES = 4096
#: What a directory the walk cannot read costs: more than any cap (a build that hides its files
#: from the walk, e.g. by `chmod 000`, is over its cap).
UNREADABLE_BYTES = 1 << 50


def disk_usage(
    paths: Sequence[Path], *, stop_above: int | None = None, tick: Callable[[], bool] | None = None
) -> int:
    """Allocated bytes of everything under `paths` (symlinks not followed, hard links once), each
    entry at least ENTRY_MIN_BYTES, an unreadable directory UNREADABLE_BYTES. Stops early once
    past `stop_above`, or when `tick` (called every 256 entries) returns True."""
    return disk_and_entries(paths, stop_above=stop_above, tick=tick)[0]


def disk_and_entries(
    paths: Sequence[Path],
    *,
    stop_above: int | None = None,
    entries_above: int | None = None,
    tick: Callable[[], bool] | None = None,
) -> tuple[int, int]:
    """(`disk_usage`'s bytes, how many directory entries) under `paths`, in one walk: every name
    is an entry (a second hard link too; its bytes count once). Stops early as `disk_usage` does,
    and once past `entries_above` entries."""
    total = 0
    seen: set[tuple[int, int]] = set()
    stack = [str(p) for p in paths]
    n = 0  # directory entries: every name, a second hard link too (the walk's cost is per name)
    while stack:
        path = stack.pop()
        try:
            it = os.scandir(path)
        except PermissionError:
            total += UNREADABLE_BYTES
            continue
        except OSError:  # gone meanwhile
            continue
        with it:
            for entry in it:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                n += 1
                if st.st_nlink > 1 and not entry.is_dir(follow_symlinks=False):
                    key = (st.st_dev, st.st_ino)
                    if key in seen:
                        continue
                    seen.add(key)
                total += max(st.st_blocks * 512, ENTRY_MIN_BYTES)
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                if n % 256 == 0:
                    if stop_above is not None and total > stop_above:
                        return total, n
                    if entries_above is not None and n > entries_above:
                        return total, n
                    if tick is not None and tick():
                        return total, n
    return total, n


#: How long a watcher thread waits, idle, for the next command before it ends.
WATCHER_IDLE_S = 0.2


class _WatcherThreads:
    """Threads that run watchers, reused from one command to the next: starting a thread per
    command (a clone and a GIL hand-off before the command is watched) was the largest cost of
    the grader's event-loop thread after the spawn itself (py-spy at concurrency 16). Never a
    queue: a watcher is handed only to a thread that is idle, else a new thread is started for
    it, so no command waits unwatched. An idle thread ends after `WATCHER_IDLE_S`, so none is
    left once grading stops. A running thread is named `lean-grader-watch-<pid>`, an idle one
    `lean-grader-watch-idle`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handed: list[_Watcher] = []  # given to an idle thread, not yet taken
        self._wake = threading.Condition(self._lock)
        self._idle = 0  # threads waiting in `_worker` and not yet given a watcher

    def start(self, watcher: _Watcher) -> None:
        """Run `watcher.run` in an idle thread, or in a new one (RuntimeError if none can start)."""
        with self._lock:
            if self._idle > len(self._handed):
                self._handed.append(watcher)
                self._wake.notify()
                return
        threading.Thread(
            target=self._worker, args=(watcher,), name=f"lean-grader-watch-{watcher.root}", daemon=True
        ).start()

    def _worker(self, watcher: _Watcher) -> None:
        me = threading.current_thread()
        while True:
            me.name = f"lean-grader-watch-{watcher.root}"
            try:
                watcher.run()
            finally:
                me.name = "lean-grader-watch-idle"
                watcher.returned.set()
            with self._lock:
                self._idle += 1
                self._wake.wait_for(lambda: bool(self._handed), WATCHER_IDLE_S)
                self._idle -= 1
                if not self._handed:
                    return  # idle for WATCHER_IDLE_S: (start() hands out only what `_idle` covers)
                watcher = self._handed.pop()


_watcher_threads = _WatcherThreads()


def _new_watcher_threads_in_child() -> None:
    global _watcher_threads, _discovery
    _watcher_threads = _WatcherThreads()  # a forked child has none of its parent's threads
    _discovery = _Discovery()  # nor its commands (and the lock may have been held at the fork)


os.register_at_fork(after_in_child=_new_watcher_threads_in_child)


class _Watcher:
    """Follows one command's process tree, enforces the caps, and kills the tree at the end.

    Made before the command is spawned (its tree is registered with `_discovery` then, so every
    look files what the command starts), given the command's first process by `attach`, and
    unregistered when `run` ends."""

    def __init__(
        self,
        token: str,
        spawned_ticks: int,
        limits: Limits | None,
        loop: asyncio.AbstractEventLoop,
        argv_marks: frozenset[bytes] = frozenset(),
    ) -> None:
        self.returned = threading.Event()  # set once `run` has returned (`_WatcherThreads`)
        self.root = 0  # the command's first process (`attach`)
        self.token = token.encode()
        self.limits = limits
        self.argv_marks = argv_marks
        self.argv_seen_at: float | None = None  # when a tree process first had one of them in argv
        # Written under `_discovery.lock` (by any watcher's look); read by this watcher's thread,
        # and by `kill` from the event loop (a copy, taken at once under the GIL).
        self.ours: dict[int, int] = {}  # pid -> start time, every live process of the tree seen
        self.seen: set[int] = set()  # every pid ever in `ours`
        self.live: dict[int, tuple[int, bool]] = {}  # from the last poll: pid -> (ppid, zombie)
        self.not_before = spawned_ticks - 1  # nothing of the tree started earlier
        self.peak_rss = 0
        self.peak_cpu_ticks = 0
        """The most CPU time (clock ticks) any one process of the tree was seen to have used."""
        self.reason: str | None = None
        self.error: BaseException | None = None
        self._halt = threading.Event()
        self._loop = loop
        self.done: asyncio.Future[None] = loop.create_future()
        self._next_poll = time.monotonic() + FIRST_POLL_S
        self._ending = False
        self.started = False  # handed to a thread (`_WatcherThreads.start`), whose `run` closes it
        _discovery.register(self)

    def attach(self, root: int) -> None:
        """The command is spawned: `root` is its first process (`_discovery.lock` held)."""
        self.root = root
        st = _stat(root)
        if st is not None:
            self.not_before = min(self.not_before, st[1])
            _discovery.adopt(self, root, st[1])

    def close(self) -> None:
        """Stop following the tree (its watcher is done, or never started)."""
        _discovery.unregister(self)

    # -- following the tree --
    def poll(self, asked_at: float | None = None) -> None:
        """One look at /proc: new members (found by the shared look), and the memory and process
        caps. `asked_at`: the time the poll was due (default now); a shared look that began
        after it serves this poll.

        The regular polls of every watcher fall due together, on one grid of `RSS_POLL_S` (the
        first, `FIRST_POLL_S` after the spawn, excepted): the first watcher to wake looks for
        all, so the looks per second stay the same however many commands run, and so does the
        grader's CPU per grade when the commands outnumber the cores and take longer."""
        if asked_at is None:
            asked_at = time.monotonic()
        self._next_poll = (math.floor(time.monotonic() / RSS_POLL_S) + 1) * RSS_POLL_S
        with _discovery.lock:
            _discovery.look(asked_at)
            members = list(self.ours.items())
        rss = 0
        live: dict[int, tuple[int, bool]] = {}
        gone: list[tuple[int, int]] = []
        for pid, start in members:
            st = _stat(pid)
            if st is None or st[1] != start:
                gone.append((pid, start))
                continue
            live[pid] = (st[0], st[3])
            rss += st[2]
            self.peak_cpu_ticks = max(self.peak_cpu_ticks, st[4])
        if gone:
            with _discovery.lock:
                for pid, start in gone:
                    _discovery.forget(self, pid, start)
        self.live = live
        if self.argv_marks and self.argv_seen_at is None:
            self._look_for_argv(live)
        rss *= _PAGE
        self.peak_rss = max(self.peak_rss, rss)
        lim = self.limits
        if lim is None or self.reason is not None or self._ending:
            return  # (while ending, what is left is being killed anyway)
        if rss > lim.memory_mb * _MIB:
            self.exceeded(f"memory cap exceeded ({math.ceil(rss / _MIB)} MiB > {lim.memory_mb} MiB)")
        elif len(live) > lim.max_processes:
            self.exceeded(f"process cap exceeded (more than {lim.max_processes} processes)")

    def _look_for_argv(self, live: Mapping[int, tuple[int, bool]]) -> None:
        """Note when a live process of the tree first runs with one of `argv_marks` as a whole
        argument (read from /proc/PID/cmdline at each look: an exec changes it)."""
        for pid in live:
            data = _read_proc(pid, "cmdline", 1 << 16)
            if data and not self.argv_marks.isdisjoint(data.split(b"\0")):
                self.argv_seen_at = time.monotonic()
                return

    def _walk_tick(self) -> bool:
        """Between disk-walk steps: keep polling, and say whether to abandon the walk."""
        if self._ending:
            return False  # the final walk runs to the end
        if time.monotonic() >= self._next_poll:
            self.poll(self._next_poll)
        return self.reason is not None or self._halt.is_set()

    def check_disk(self) -> None:
        lim = self.limits
        if lim is None or not lim.disk_paths or self.reason is not None:
            return
        cap = lim.max_disk_mb * _MIB
        used, entries = disk_and_entries(
            lim.disk_paths, stop_above=cap, entries_above=lim.max_files, tick=self._walk_tick
        )
        if self.reason is not None:
            return
        if used > cap:
            self.exceeded(f"disk cap exceeded ({math.ceil(used / _MIB)} MiB > {lim.max_disk_mb} MiB)")
        elif lim.max_files is not None and entries > lim.max_files:
            self.exceeded(f"file cap exceeded (more than {lim.max_files} directory entries)")

    # -- killing --
    def exceeded(self, reason: str) -> None:
        self.reason = reason
        self.kill()

    def kill(self) -> None:
        _killpg(self.root)
        for pid, start in list(self.ours.items()):
            _kill_exact(pid, start)

    def sweep(self) -> None:
        """Kill the tree until nothing of it is left alive (bounded by `SWEEP_S`)."""
        give_up = time.monotonic() + SWEEP_S
        delay = 0.001
        while True:
            _killpg(self.root)
            self.poll()
            alive = [pid for pid, (_, zombie) in self.live.items() if not zombie]
            # (an exec in progress anywhere may be an orphan of this tree: wait for it)
            if (not alive and not _discovery.waiting) or time.monotonic() > give_up:
                break
            for pid in alive:
                if (start := self.ours.get(pid)) is not None:  # (not refiled since the poll)
                    _kill_exact(pid, start)
            time.sleep(delay)
            delay = min(delay * 2, 0.02)
        me = os.getpid()
        for pid, (ppid, zombie) in self.live.items():  # orphans adopted by the grader itself
            if zombie and ppid == me and pid != self.root:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)

    # -- the thread --
    def run(self) -> None:
        try:
            next_disk = time.monotonic() + DISK_POLL_S
            while True:
                if self._halt.wait(max(0.0, self._next_poll - time.monotonic())):
                    break
                self.poll(self._next_poll)
                if self.reason is not None:
                    self.kill()  # anything born since the cap fired
                elif time.monotonic() >= next_disk:
                    self.check_disk()
                    next_disk = time.monotonic() + DISK_POLL_S
            self._ending = True
            self.sweep()
            self.check_disk()  # once more at the end: a fast writer may have finished already
        except BaseException as exc:  # fail closed: a watcher that cannot watch kills the command
            self.error = exc
            with contextlib.suppress(BaseException):
                self.kill()
        finally:
            self.close()
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
                self._loop.call_soon_threadsafe(self._set_done)

    def _set_done(self) -> None:
        if not self.done.done():
            self.done.set_result(None)

    def stop(self) -> None:
        self._halt.set()


# -- output -----------------------------------------------------------------------------------


class _Capture:
    """Keeps the last `cap` bytes of a stream and counts all of them, and notes when each of
    `watch` first appears (across chunk boundaries)."""

    def __init__(self, cap: int, watch: Sequence[bytes] = ()) -> None:
        self.cap = cap
        self.buf = bytearray()
        self.total = 0
        self.watch = [w for w in dict.fromkeys(watch) if w]
        self.seen: dict[bytes, float] = {}
        self._carry = b""

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if len(self.seen) < len(self.watch):
            window = self._carry + chunk
            now = time.monotonic()
            for w in self.watch:
                if w not in self.seen and w in window:
                    self.seen[w] = now
            keep = max(len(w) for w in self.watch) - 1
            self._carry = window[-keep:] if keep else b""
        self.buf += chunk
        if len(self.buf) > 2 * self.cap:  # trim in bulk, amortised
            del self.buf[: len(self.buf) - self.cap]

    def text(self) -> str:
        return bytes(self.buf[-self.cap :]).decode("utf-8", errors="replace")

    @property
    def truncated(self) -> bool:
        return self.total > self.cap


def _output_pipe(proc: subprocess.Popen[bytes]) -> IO[bytes]:
    """The pipe the grader reads: stdout and stderr together, or stderr alone when stdout goes
    to a file (`run_command`'s `stdout_fd`)."""
    pipe = proc.stdout if proc.stdout is not None else proc.stderr
    assert pipe is not None
    return pipe


class _Run:
    """One started command's output and exit, followed from the event loop by callbacks only: a
    reader on its stdout pipe and one on a pidfd (a 10 ms poll where there is no pidfd). Nothing
    here awaits, so no cancellation can land between starting the command and following it, and
    nothing waits on the pipe's writers: the grader reaps the command itself (not asyncio's child
    watcher, whose `wait()` also waits for the pipe to close)."""

    def __init__(self, proc: subprocess.Popen[bytes], capture: _Capture, loop: asyncio.AbstractEventLoop):
        self.proc = proc
        self.capture = capture
        self.loop = loop
        self.exited: asyncio.Future[int] = loop.create_future()
        self.eof: asyncio.Future[None] = loop.create_future()
        self._out = _output_pipe(proc).fileno()
        os.set_blocking(self._out, False)
        loop.add_reader(self._out, self._on_output)
        self._pidfd: int | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._started = False
        try:
            self._pidfd = os.pidfd_open(proc.pid)  # ours until we reap it: no pid reuse
        except (AttributeError, OSError):
            self._timer = loop.call_later(0.01, self._poll_exit)
        else:
            loop.add_reader(self._pidfd, self._on_exit)
        self._on_exit()  # it may be over already
        self._started = True

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def _on_output(self) -> None:
        try:
            chunk = os.read(self._out, _READ_MAX)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""  # a read error ends the capture
        if chunk:
            self.capture.feed(chunk)
        else:
            self._stop_reading()

    def _stop_reading(self) -> None:
        if not self.eof.done():
            self.loop.remove_reader(self._out)
            self.eof.set_result(None)

    def _on_exit(self) -> None:
        if self.exited.done():
            return
        code = self.proc.poll()  # reaps it (WNOHANG) once it is a zombie
        if code is None:
            if self._pidfd is not None and self._timer is None and self._started:
                # Readable yet not reapable (an old kernel's view of a leader whose threads
                # live on): poll instead of spinning on a level-triggered reader.
                self.loop.remove_reader(self._pidfd)
                os.close(self._pidfd)
                self._pidfd = None
                self._timer = self.loop.call_later(0.01, self._poll_exit)
            return
        if self._pidfd is not None:
            self.loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        self.exited.set_result(code)

    def _poll_exit(self) -> None:
        self._on_exit()
        if not self.exited.done():
            self._timer = self.loop.call_later(0.01, self._poll_exit)

    def close(self) -> None:
        """Stop reading and release the pipe and the pidfd (the command has been reaped)."""
        self._stop_reading()
        if self._timer is not None:
            self._timer.cancel()
        if self._pidfd is not None:
            self.loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        _output_pipe(self.proc).close()


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
    """Kill the group, reap, kill the rest of the tree, and stop reading. Uninterruptible: a
    (second) cancellation is remembered and re-raised at the end, never leaves a zombie."""
    _killpg(run.pid)  # (the command is not reaped before `run.exited`: its pid is not reused)
    cancelled = False
    while not run.exited.done():
        cancelled |= await _uninterruptible(run.exited, 0.5)
        _killpg(run.pid)
    watcher.stop()
    cancelled |= await _uninterruptible(watcher.done)  # it kills every tracked process, then ends
    watcher.returned.wait(1.0)  # it has signalled its last act: returning
    # A process the watcher could not find (see the module docstring) could hold the pipe open
    # forever: read on for a little while, then let go of it.
    cancelled |= await _uninterruptible(run.eof, DRAIN_AFTER_KILL_S)
    run.close()
    if cancelled:
        raise asyncio.CancelledError


def sandbox_exit_code(status: bytes) -> int | None:
    """The command's exit code from what bwrap wrote to `--json-status-fd` (pure), or None when
    there is no `exit-code` document: the command never ran to its end inside the sandbox.

    bubblewrap 0.8.0, measured (`bwrap --json-status-fd 3 ... 3>st`):
    - the command ran and exited 7: `{ "child-pid": N, ... }` then `{ "exit-code": 7 }`, exit 7;
    - the command killed itself with SIGKILL: child-pid, then `{ "exit-code": 137 }`, exit 137;
    - a bind source is missing (set-up fails): child-pid only, exit 1;
    - a namespace limit reached (`max_user_namespaces`, `max_pid_namespaces`, ... = 0): nothing
      at all, exit 1, "bwrap: Creating new namespace failed: ... (ENOSPC)";
    - bwrap itself SIGKILLed from outside while the command ran: child-pid only.
    `child-pid` is written before anything is mounted, so it does not mean the command started."""
    decoder = json.JSONDecoder()
    text = status.decode("utf-8", "replace")
    at = 0
    found: int | None = None
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return found
        try:
            doc, at = decoder.raw_decode(text, at)
        except ValueError:
            return found  # a torn last document: what came before still counts
        if isinstance(doc, dict) and isinstance(doc.get("exit-code"), int):
            found = doc["exit-code"]


def _read_status(fd: int) -> bytes:
    """What is in the status pipe now (never blocks: a process that kept the write end open
    cannot hold the grade; bwrap wrote its last document before it exited)."""
    os.set_blocking(fd, False)
    parts: list[bytes] = []
    size = 0
    while size < _CHUNK:
        try:
            chunk = os.read(fd, _CHUNK)
        except (BlockingIOError, InterruptedError):
            break
        if not chunk:
            break
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " ".join(lines[-1].split())[:300] if lines else "(no output)"


def _raise_if_host_fault(exc: BaseException) -> None:
    """A watcher that could not be made or started for the host's reason (out of memory, no
    thread) is a HostFault; anything else is re-raised by the caller as it is."""
    if isinstance(exc, Exception) and (why := host_fault_reason(exc)) is not None:
        raise HostFault(f"the process watcher could not start: {why}") from exc


def _spawn_fault(exc: OSError, program: str) -> str:
    what = _SPAWN_ERRNOS.get(exc.errno or 0) or HOST_ERRNOS.get(exc.errno or 0) or "the host refused it"
    return f"could not start {exc.filename or program}: {what} ({exc.strerror or exc})"


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
) -> CommandOutcome:
    """Run `argv` until it exits or `deadline` (a `time.monotonic()` value) passes.

    With `limits` the command runs under `prlimit` (a far address-space backstop, the file size
    and a CPU-seconds backstop) and under the live caps on its process tree (memory, processes,
    disk; see the module docstring). Its whole tree is SIGKILLed when the command ends, when the
    deadline passes, when a cap is exceeded, and on cancellation (which is re-raised after the
    tree is reaped). `record_argv` is what goes on the record (the command without the
    sandbox/limit wrappers), default `argv`. `sandboxed` says `argv` starts with bwrap, whose
    exit 128+N means its command died of signal N (reported as `signal`, see `exit_status`);
    bwrap then reports on a status pipe whether the command ran at all. `scope` (the grader's
    work root) goes into the run's marker (see `kill_dead_graders_processes`). `stdout_fd`, a file
    the caller opened, takes the command's stdout (uncapped in memory; the file-size cap bounds
    it), and then only its stderr is captured. `watch_for`: strings whose first appearance in the
    output is timed (`CommandOutcome.first_seen`); `watch_argv`: arguments whose first appearance
    in a process of the tree is timed (`CommandOutcome.argv_seen_at`).

    Raises `HostFault` when the outcome says nothing about the command (see the module
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
        cpu = cpu_limits(remaining, limits.cpu_threads)
        full = prlimit_argv(prlimit, address_space, cpu, limits.max_file_mb) + full
    # The grader's owner record first (pid namespace, pid, start time), so a later grader can tell
    # the processes of one that was killed outright (see `kill_dead_graders_processes`).
    token = f"{owner_tag()}-{scope_tag(scope)}-{secrets.token_hex(8)}"
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
        try:
            # Under the look's lock, up to the first process's filing (`attach`): a look between
            # the two would see the command's first children with no tree to file them with.
            with _discovery.lock:
                proc = subprocess.Popen(
                    full,
                    cwd=str(cwd),
                    env={TREE_ENV_VAR: token, **env},  # first, so a reader of a long environment finds it
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE if stdout_fd is None else stdout_fd,
                    stderr=subprocess.STDOUT if stdout_fd is None else subprocess.PIPE,
                    process_group=0,  # its own group: one killpg reaches every descendant that stays in it
                    pass_fds=() if status_w is None else (status_w,),
                )
                watcher.attach(proc.pid)
        except OSError as exc:
            raise HostFault(
                _spawn_fault(exc, full[0]), sandbox=sandboxed and exc.errno == errno.ENOENT
            ) from exc
        finally:
            if status_w is not None:
                os.close(status_w)  # the child has its copy; EOF once bwrap is gone
        try:
            run = _Run(proc, capture, loop)
        except BaseException:
            _killpg(proc.pid)
            proc.wait()
            _output_pipe(proc).close()
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
            else:  # bwrap's own message: it ran nothing of the command
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
        _killpg(run.pid)
        run.proc.wait()
        run.close()
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
        limit_exceeded = cpu_cap_reason(
            signum, watcher.peak_cpu_ticks, cpu_limits(remaining, limits.cpu_threads)
        )
    text = capture.text()
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
        first_seen={w: round(at - start, 3) for w, at in capture.seen.items()} if capture.watch else None,
        argv_seen_at=None if watcher.argv_seen_at is None else round(watcher.argv_seen_at - start, 3),
    )
