"""The per-grade caps and how they are measured, apart from the process tree (the watcher
polls that): `Limits`, the `prlimit` wrapper with its CPU-seconds, file-size and address-space
backstops, the CPU backstop's reason, the disk walk, and the kernel's OOM-kill counter (see the
package docstring's "Caps" and "Residual limits")."""

from __future__ import annotations

import errno
import math
import os
import shutil
import signal
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lean_mod_add_proof.grading.process.proc import _NOT_THERE_ERRNOS, _read_proc

if TYPE_CHECKING:
    from lean_mod_add_proof.grading.result import GraderSettings

#: Added to the CPU-seconds backstop so it only fires when the wall-clock kill somehow did not.
CPU_SLACK_S = 5
#: CPU seconds per wall second one process may use, per thread of the `threads` setting: Lean runs
#: its main thread beside the `-j` workers, so a busy build of `threads` workers may use up to
#: `threads + 1` cores; twice `threads` covers that with room to spare.
CPU_PER_THREAD = 2

#: Far backstop on address space: Lean 4.35 reserves 1 GiB of stack per thread plus allocator
#: arenas, so an address-space cap near real use stops it from starting. Real memory is capped by
#: the live RSS watch (`Limits.memory_mb`).
ADDRESS_SPACE_BACKSTOP_MB = 16 * 1024

_MIB = 1024 * 1024


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
    (for a command whose Lean processes it cannot give LEAN_NUM_THREADS, see routes/comparator/run.py)."""
    cpu_seconds: int | None = None
    """A CPU-seconds budget of its own (RLIMIT_CPU's soft limit; the hard one stays unlimited,
    `cpu_limits`), instead of the backstop derived from the deadline (`cpu_limits`): a bundled checker's
    budget (routes/checkers.py), which host load cannot use up."""

    @classmethod
    def from_settings(
        cls,
        settings: GraderSettings,
        work_dir: Path,
        *,
        memory_mb: int,
        cpu_seconds: int | None = None,
        address_space_cap: bool = True,
    ) -> Limits:
        """A grade's caps from its settings, its disk counted under `work_dir`: the settings'
        processes, disk, file size, directory entries and threads; the memory cap, the CPU budget
        and the address-space backstop as the command's caller decides (routes/core.py
        `CommandEnv.limits`, routes/comparator/run.py `comparator_limits`)."""
        return cls(
            memory_mb=memory_mb,
            max_processes=settings.max_processes,
            max_disk_mb=settings.max_disk_mb,
            max_file_mb=settings.max_file_mb,
            disk_paths=(work_dir,),
            max_files=settings.max_files,
            cpu_threads=settings.threads,
            address_space_cap=address_space_cap,
            cpu_seconds=cpu_seconds,
        )


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


def prlimit_argv(prlimit: str, address_space_mb: int | None, cpu_seconds: int, max_file_mb: int) -> list[str]:
    """`prlimit` sets the limits on itself and execs the command, so every descendant inherits
    them (rlimits survive exec and fork, and bwrap does not reset them). RLIMIT_FSIZE bounds each
    file written (an .olean of a huge term, a flood into a file); it does not apply to pipes.
    `cpu_seconds` is RLIMIT_CPU's soft limit; its hard limit is unlimited (`cpu_limits` says
    why), written `--cpu=soft:unlimited` (util-linux prlimit(1): "soft:hard", "unlimited").
    `address_space_mb` None: RLIMIT_AS unlimited too."""
    mib = 1024 * 1024
    return [
        prlimit,
        f"--as={'unlimited' if address_space_mb is None else address_space_mb * mib}",
        f"--cpu={cpu_seconds}:unlimited",
        f"--fsize={max_file_mb * mib}",
        "--",
    ]


def cpu_limits(remaining_s: float, threads: int) -> int:
    """RLIMIT_CPU's soft limit for a command with `remaining_s` to its deadline whose processes
    may use `threads` threads (pure). RLIMIT_CPU counts one process's CPU time over all its
    threads, so a multi-threaded build reaches a limit of `remaining_s` long before its deadline
    (issue 26: SIGKILLed at 32.6 s of 60 with 2 threads): the limit allows
    `CPU_PER_THREAD * threads` cores for the whole deadline plus `CPU_SLACK_S`.

    Only a soft limit: the kernel sends SIGXCPU at it and once a CPU second after, and SIGKILL
    only at a hard limit that is not RLIM_INFINITY (torvalds/linux kernel/time/posix-cpu-timers.c
    `check_process_timers`: `if (hard != RLIM_INFINITY && check_rlimit(ptime, hardns, SIGKILL,
    ...))`; at 001f7971 `if (psecs >= hard)` then `if (soft < hard) soft++`). A process that
    catches SIGXCPU (Lean code can: lean4 src/Std/Internal/Async/Signal.lean `Signal.sigxcpu`)
    therefore runs on to the deadline, whose kill is the grader's own (a timeout verdict). A hard
    limit's SIGKILL was told from one from outside only by the watcher seeing a process near the
    soft limit, and on a many-core host a build of N spinning threads crosses a few CPU seconds
    faster than one look (the review of the signal filter, finding 5): "SIGKILL from outside",
    could not judge, chosen by the submission. Under the signal filter the soft limit cannot be
    raised (signal_filter.py); without it a process may raise its own, and the deadline still
    kills it. The hard limit never bounded an escaped process anyway: RLIMIT_CPU is counted per
    process, and a fork starts from zero."""
    return max(1, math.ceil(remaining_s)) * CPU_PER_THREAD * max(1, threads) + CPU_SLACK_S


def cpu_cap_reason(signum: int | None, cpu_seconds: int) -> str | None:
    """`CPU time cap exceeded (...)` when the command was ended by the CPU backstop, else None
    (pure): it died of SIGXCPU, the soft limit's signal (default action: terminate), the only
    signal RLIMIT_CPU sends without a hard limit (`cpu_limits`). Any other signal is not the
    cap's."""
    if signum == signal.SIGXCPU:
        return f"CPU time cap exceeded ({cpu_seconds} CPU seconds in one process)"
    return None


def find_prlimit() -> str | None:
    return shutil.which("prlimit", path="/usr/bin:/bin:/usr/sbin:/sbin")


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


#: The most descriptors `held_deleted` reads across a tree at one look. Each costs a readlink (a
#: few µs: 16000 took 60-90 ms here under load), and a tree may hold max_processes x RLIMIT_NOFILE
#: of them (64 x 20000 on this host: seconds per look, the watcher's polls stalled meanwhile), so
#: a tree holding more is over every cap, as a directory the walk cannot read is. Lean holds few:
#: it opens an olean only to read or map it (leanprover/lean4 00638b0, src/library/module.cpp
#: `lean_read_module_data_parts`: "file.m_fd does NOT need to outlive buffer"). The bound keeps a
#: scan's cost near the walk's own bound (`max_files` entries at ~5 µs).
HELD_SCAN_MAX_FDS = 16384


@dataclass(frozen=True)
class HeldFiles:
    """Files a process tree holds open that have no name left (`held_deleted`)."""

    bytes: int = 0
    """Their allocated bytes, each file once (UNREADABLE_BYTES for a process whose descriptors
    cannot be read)."""
    inodes: int = 0


def held_deleted(pids: Iterable[int], devices: Collection[int]) -> HeldFiles:
    """The files on one of `devices` (st_dev) that the processes `pids` hold open with no name
    left: unlinked while open (or made by O_TMPFILE). The disk walk cannot find them, yet their
    blocks stay taken until the last descriptor closes, so build-time code could fill the work
    disk with them while its walked usage stays small (the review of the signal filter, finding
    4: 667 MiB held under a 256 MiB cap, and a disk "full" on purpose).

    How: each /proc/PID/fd/N link whose text ends in " (deleted)" (the kernel's `d_path` of an
    unlinked dentry) is stat'ed through the link (no open: the inode the descriptor holds); a
    regular file with no link left (`st_nlink == 0`, so a file merely named "x (deleted)" is not
    one) counts its `st_blocks`, each (dev, inode) once however many descriptors or processes
    hold it. A process of the grader's own user whose fd directory cannot be read is hiding what
    it holds (`prctl(PR_SET_DUMPABLE, 0)` makes it unreadable to a grader that is not root): it
    costs UNREADABLE_BYTES, over every cap, as a directory the walk cannot read does. Another
    user's process (a setuid bwrap's monitor) cannot be the submission's, and is skipped.
    A process gone meanwhile is skipped. A tree holding more than HELD_SCAN_MAX_FDS descriptors
    in all costs UNREADABLE_BYTES too (reading them all would stall the watcher). Not found here
    (the package docstring's residual limits): a file held only by a memory mapping, by
    io_uring, in flight in a unix socket, or in a thread's own descriptor table
    (`unshare(CLONE_FILES)`)."""
    held: dict[tuple[int, int], int] = {}  # (dev, inode) -> allocated bytes
    hidden = 0
    budget = HELD_SCAN_MAX_FDS
    for pid in pids:
        try:
            found, read = _held_by(pid, devices, budget)
            held.update(found)
            budget -= read
            if budget < 0:
                return HeldFiles(UNREADABLE_BYTES + hidden + sum(held.values()), len(held))
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM):
                if _same_user(pid):
                    hidden += UNREADABLE_BYTES
            elif exc.errno not in _NOT_THERE_ERRNOS:
                raise  # the host's (out of descriptors, memory): the watcher fails closed
    return HeldFiles(hidden + sum(held.values()), len(held))


_S_IFMT, _S_IFREG = 0o170000, 0o100000


def _held_by(pid: int, devices: Collection[int], budget: int) -> tuple[dict[tuple[int, int], int], int]:
    """`held_deleted` for one process: ((dev, inode) -> allocated bytes, how many descriptors it
    has); once it has more than `budget`, they are not read (the count says so). Raises OSError
    (EACCES or EPERM when its descriptors are not ours to read; ENOENT when it is gone)."""
    base = f"/proc/{pid}/fd"
    found: dict[tuple[int, int], int] = {}
    # The directory's size is its number of descriptors (Linux >= 6.2, "fs/proc: report open
    # files as size in stat() for /proc/pid/fd"; 0 before): a flood is refused before listing it.
    if (size := os.stat(base).st_size) > budget:
        return found, size
    names = os.listdir(base)
    if len(names) > budget:
        return found, len(names)
    for name in names:
        path = f"{base}/{name}"
        try:
            if not os.readlink(path).endswith(" (deleted)"):
                continue
            st = os.stat(path)
        except (FileNotFoundError, ProcessLookupError):
            continue  # closed meanwhile
        if st.st_nlink == 0 and (st.st_mode & _S_IFMT) == _S_IFREG and st.st_dev in devices:
            found[(st.st_dev, st.st_ino)] = st.st_blocks * 512
    return found, len(names)


#: PF_EXITING in /proc/PID/stat's flags (include/linux/sched.h): the process is being torn down.
_PF_EXITING = 0x4


def holds_unseen_space(pids: Iterable[int], devices: Collection[int]) -> bool:
    """Whether one of the processes `pids` may hold space on one of `devices` that neither the
    walk nor `held_deleted` can measure:
    - it maps a file there that has no name left (a /proc/PID/maps line with that device whose
      path ends in " (deleted)"): such a file keeps its blocks after its last descriptor
      closed, and its size is in /proc/PID/map_files, which only CAP_CHECKPOINT_RESTORE or
      CAP_SYS_ADMIN may read (fs/proc/base.c `proc_map_files_lookup`);
    - it is exiting (PF_EXITING, not yet a zombie): its mappings and descriptors leave /proc
      before the files they held are freed (kernel/exit.c `do_exit`: `exit_mm`, `exit_files`,
      then `exit_task_work` runs the last `fput`), so for that while its space is unseen;
    - it is of the grader's own user and its maps cannot be read: it is hiding them.
    Read only when a low work disk is confirmed (a Lean process maps an olean per import: lean4
    src/library/module.cpp `lean_read_module_data_parts`)."""
    for pid in pids:
        stat = _read_proc(pid, "stat", 1024)
        if stat is None:
            continue  # gone
        fields = stat.rsplit(b")", 1)[-1].split()
        if len(fields) > 6 and fields[0] != b"Z" and int(fields[6]) & _PF_EXITING:
            return True
        try:
            with open(f"/proc/{pid}/maps", "rb") as maps:
                for line in maps:
                    if not line.endswith(b" (deleted)\n"):
                        continue
                    parts = line.split(maxsplit=5)
                    if len(parts) < 6 or b":" not in parts[3]:
                        continue
                    major, minor = parts[3].split(b":", 1)
                    if os.makedev(int(major, 16), int(minor, 16)) in devices:
                        return True
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM):
                if _same_user(pid):
                    return True
            elif exc.errno not in _NOT_THERE_ERRNOS:
                raise  # the host's: the watcher fails closed
    return False


def _same_user(pid: int) -> bool:
    """Whether `pid` runs with the grader's effective uid (/proc/PID/status, readable for any
    process); False when it is gone."""
    data = _read_proc(pid, "status", 2048)
    if not data:
        return False
    at = data.find(b"\nUid:")
    fields = data[at + 5 : data.find(b"\n", at + 1)].split() if at >= 0 else []
    return len(fields) >= 2 and fields[1] == str(os.geteuid()).encode()
