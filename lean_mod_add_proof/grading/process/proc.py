"""Reading /proc and killing exactly: the process facts every other module of the package
works from (a pid's stat, status and environment, the grader's ancestors, the last pid
allocated), and the two kills (one process by pid and start time; a process group).
Imports nothing from the package."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time

_PAGE = os.sysconf("SC_PAGE_SIZE")
_CLK_TCK = os.sysconf("SC_CLK_TCK")

#: What a failed open or read of /proc/<pid>/<name> may mean about the process: gone (ENOENT: no
#: such pid; ESRCH: it died while being read), or its file not ours to read (EACCES, EPERM:
#: another user's process, one made undumpable, /proc mounted with hidepid). Any other errno
#: (EMFILE, ENFILE, ENOMEM, EIO, ...) is the host's, and says nothing about the process: it is
#: raised, so the watcher fails closed (a HostFault: could not judge) rather than take a live
#: member for gone, leave it out of the caps and never kill it (reviews A3 and B P-4, 2026-12-06).
_NOT_THERE_ERRNOS = frozenset({errno.ENOENT, errno.ESRCH, errno.EACCES, errno.EPERM})


def _read_proc(pid: int, name: str, most: int = 4096) -> bytes | None:
    """Up to `most` bytes of /proc/<pid>/<name>, or None when the process is gone or the file
    is not ours to read (`_NOT_THERE_ERRNOS`); any other OSError is raised (the host's)."""
    try:
        fd = os.open(f"/proc/{pid}/{name}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in _NOT_THERE_ERRNOS:
            return None
        raise
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
    except OSError as exc:
        if exc.errno in _NOT_THERE_ERRNOS:
            return None
        raise
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


def _environ_state(pid: int) -> str:
    """What an environment that read empty means, from /proc/<pid>/stat read after it: its
    fields 50 and 51, env_start and env_end (proc(5): Linux 3.5+, shown as 0 without ptrace
    access, which reading the environment needs too):
    - "gone": no such process any more, or a zombie;
    - "empty": env_start == env_end, not 0: the process has no environment at all (`env -i`);
    - "set": it has one now (an exec ended since the read: read it again);
    - "changing": env_end is 0: an exec is in progress (its new memory map has no stack yet:
      Linux's `create_elf_tables`, fs/binfmt_elf.c, sets env_start and env_end), or the process
      is exiting. Linux's `environ_read` (fs/proc/base.c) returns nothing then: "Ensure the
      process spawned far enough to have an environment", `if (!mm || !mm->env_end) return 0`.
      Also on a kernel before 3.5, which does not say.
    Seen on Linux 6.18: a process started by `env -i` shows env_start == env_end."""
    data = _read_proc(pid, "stat")
    if not data:
        return "gone"
    fields = data[data.rfind(b")") + 2 :].split()
    if fields[:1] in ([b"Z"], [b"X"]):
        return "gone"
    try:  # fields[0] is field 3 (see `_stat`)
        env_start, env_end = int(fields[47]), int(fields[48])
    except (IndexError, ValueError):
        return "changing"
    if env_end == 0:
        return "changing"
    return "empty" if env_start == env_end else "set"


def _listed_pids() -> set[int]:
    """Every pid /proc lists now (processes, not their other threads)."""
    return set(map(int, filter(str.isdigit, os.listdir("/proc"))))


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


def _kill_exact(pid: int, start: int) -> None:
    """SIGKILL `pid` only if it is still the process that started at `start` (pidfd: no race).
    Raises what `_stat` raises (the host's fault): then it cannot tell, and sends nothing."""
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
    if pgid <= 0:  # (0 or -1 would be the grader's own group, or every process it may signal)
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
