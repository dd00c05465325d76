"""Each grade's own working directory, copying a cache entry into it, and removing it whatever
happened: after a failure, during cancellation, and (through `sweep_dead`) after the grader
process itself was killed.

Owner records. Every directory the grader creates for temporary use (grade directories under the
work root, `.build-*` and `.trash-*` under the cache root) carries its owner in its *name*:

    <prefix><pidns>-<pid>-<start>-<random>
    e.g. lean-mod-add-proof-grade-4026531836-81234-5526061-k2j4x_9a
         .build-4026531836-81234-5526061-3f9c2a1b

`pidns` is the inode of /proc/self/ns/pid, `pid` the owner's pid and `start` its start time (field
22 of /proc/<pid>/stat, clock ticks since boot). The name is written atomically by mkdir/rename
and lives in the parent directory, which an untrusted build cannot write, so there is no window
in which a directory exists without its record and no file inside it that a build could forge.
The owner is dead when no process has that pid, or the process with that pid started at another
time (pid reused), or is a zombie. `sweep_dead` removes only directories whose record parses and
whose owner is dead; a name without a valid record (foreign, kept with keep_packages, or written
by an older version) and an owner in another pid namespace are left alone.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import fcntl
import hashlib
import os
import re
import secrets
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from lean_mod_add_proof.grading.hashing import (
    MAX_DEPTH,
    NotRegularFile,
    check_budget,
    open_dir,
    open_regular,
    read_chunks,
)

GRADE_DIR_PREFIX = "lean-mod-add-proof-grade-"
#: A directory kept for the user (keep_packages): no owner record, so never swept.
KEPT_DIR_PREFIX = GRADE_DIR_PREFIX + "kept-"
#: The self-test's own work root (its canaries' grade directories live inside it).
SELFTEST_DIR_PREFIX = "lean-mod-add-proof-selftest-"
#: What `sweep_dead` removes under the work root once its owner is dead.
WORK_DIR_PREFIXES = (GRADE_DIR_PREFIX, SELFTEST_DIR_PREFIX)
#: Temporary directories in the cache root: a build in progress, an entry being deleted.
CACHE_BUILD_PREFIX = ".build-"
CACHE_TRASH_PREFIX = ".trash-"
CACHE_TEMP_PREFIXES = (CACHE_BUILD_PREFIX, CACHE_TRASH_PREFIX)

_OWNER_RE = re.compile(r"(?P<ns>\d+)-(?P<pid>\d+)-(?P<start>\d+)-[a-z0-9_]+")
_COPY_CHUNK = 4 << 20

T = TypeVar("T")


# ---- owner records -----------------------------------------------------------------------------


def _pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, start time) of a live pid from /proc/<pid>/stat, else None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read(4096)
    except OSError:
        return None
    try:
        fields = data[data.rindex(b")") + 2 :].split()  # comm may hold spaces and parentheses
        return fields[0].decode(), int(fields[19])  # fields 3 (state) and 22 (starttime)
    except (ValueError, IndexError):
        return None


_own: dict[int, str] = {}


def owner_tag() -> str:
    """This process's owner record: `<pidns>-<pid>-<start>` (recomputed after a fork)."""
    pid = os.getpid()
    if pid not in _own:
        found = _proc_stat(pid)
        _own[pid] = f"{_pid_namespace()}-{pid}-{found[1] if found else 0}"
    return _own[pid]


def owned_name(prefix: str) -> str:
    """A fresh directory name carrying this process's owner record."""
    return f"{prefix}{owner_tag()}-{secrets.token_hex(4)}"


def make_owned_dir(parent: Path, prefix: str) -> Path:
    """mkdtemp under `parent` (mode 0o700) whose name records this process as its owner."""
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{owner_tag()}-", dir=parent))


def parse_owner(name: str, prefixes: tuple[str, ...]) -> tuple[int, int, int] | None:
    """(pidns, pid, start) from a name made by `make_owned_dir`/`owned_name`, else None."""
    for prefix in prefixes:
        if name.startswith(prefix) and (m := _OWNER_RE.fullmatch(name[len(prefix) :])):
            return int(m["ns"]), int(m["pid"]), int(m["start"])
    return None


def owner_is_dead(ns: int, pid: int, start: int) -> bool:
    """True only when certain: same pid namespace, and the pid is gone, reused or a zombie."""
    if ns != _pid_namespace():
        return False  # another container's process: we cannot see it, so we cannot tell
    if pid == os.getpid():
        return owner_tag() != f"{ns}-{pid}-{start}"
    found = _proc_stat(pid)
    if found is None:
        return _proc_stat(os.getpid()) is not None  # no /proc at all: cannot tell
    state, started = found
    return started != start or state in ("Z", "X")


def sweep_dead(work_root: Path | None, cache_root: Path | None) -> list[Path]:
    """Remove grade and self-test directories (under `work_root`, or the system temp dir when
    None, like `new_grade_dir`) and cache temp directories (`.build-*`, `.trash-*` under `cache_root`; none
    when None) whose owner record names a dead process. Returns what was removed; never raises.
    Call once per process before the first grade."""
    roots: list[tuple[Path, tuple[str, ...]]] = [
        (work_root if work_root is not None else Path(tempfile.gettempdir()), WORK_DIR_PREFIXES)
    ]
    if cache_root is not None:
        roots.append((cache_root, CACHE_TEMP_PREFIXES))
    removed: list[Path] = []
    for root, prefixes in roots:
        try:
            names = os.listdir(root)
        except OSError:
            continue
        for name in names:
            owner = parse_owner(name, prefixes)
            if owner is None or not owner_is_dead(*owner):
                continue
            # A cache entry moved aside may still be read by a live grade (cache.EntryPin).
            if remove_unless_pinned(root / name):
                removed.append(root / name)
    return removed


def remove_unless_pinned(path: Path) -> bool:
    """Remove the tree at `path` unless a reader holds a shared `flock` on its top directory
    (`cache.EntryPin`): deleted only while holding the exclusive lock, so never under a reader.
    True when nothing is left at `path`; never raises."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):  # a file or a symlink: nobody holds it
            return remove_tree(path)
        return False  # cannot tell whether it is held (out of descriptors, ...): leave it
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # pinned (or locks refused): left for a later sweep
        return remove_tree(path)
    finally:
        os.close(fd)


# ---- grade directories ---------------------------------------------------------------------------


def work_scope(work_root: Path | None) -> str:
    """The work root a grader sweeps, as a string (the system temp dir when None, as in
    `new_grade_dir`): the scope of its processes' markers (`process.kill_dead_graders_processes`)."""
    return os.path.abspath(work_root if work_root is not None else tempfile.gettempdir())


#: Below this much free space (or with no free inode) the work disk counts as full: a build that
#: failed there may have failed for want of room, which says nothing about the submission.
FULL_DISK_BYTES = 64 << 20


def disk_full(path: Path) -> str | None:
    """Why the filesystem holding `path` counts as full ("the work disk is full: ..."), or None
    (also when it cannot be asked)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    if free < FULL_DISK_BYTES:
        return f"the work disk is full ({free >> 20} MiB free under {path})"
    if st.f_files and st.f_favail == 0:
        return f"the work disk is full (no free inode under {path})"
    return None


#: Below this much free space at any moment while an untrusted command ran, with Lean's own
#: "no space left on device" in its output, its failure is the host's (steps.raise_build_failure).
ENOSPC_MARK_BYTES = 256 << 20


def room_for_caps(path: Path, max_disk_mb: int, max_files: int) -> str | None:
    """Why the disk holding `path` cannot hold one more grade's caps, or None (also when it
    cannot be asked). Checked before the submission's build, so that its own caps bind first:
    writing up to `max_disk_mb` cannot bring the disk to either mark of full (`FULL_DISK_BYTES`,
    `ENOSPC_MARK_BYTES`), nor `max_files` entries to its last free inode. Otherwise a submission
    could choose "could not judge" by filling the disk within its caps (issue 39)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    need = (max_disk_mb << 20) + ENOSPC_MARK_BYTES
    if free < need:
        return (
            f"the work disk is full for this grade's caps ({free >> 20} MiB free under {path}, "
            f"less than max_disk_mb {max_disk_mb} MiB + {ENOSPC_MARK_BYTES >> 20} MiB): free some "
            f"space or lower max_disk_mb"
        )
    if st.f_files and st.f_favail < max_files:
        return (
            f"the work disk is full for this grade's caps ({st.f_favail} inodes free under {path}, "
            f"fewer than max_files {max_files}): free some inodes or lower max_files"
        )
    return None


def new_grade_dir(work_root: Path | None, *, keep: bool = False) -> Path:
    """A fresh grade directory (0o700) carrying this process's owner record, so `sweep_dead` can
    remove it if the grader dies. `keep=True` (keep_packages) gives a name without a record:
    the user's kept package is never swept."""
    if work_root is not None:
        work_root.mkdir(parents=True, exist_ok=True)
    if keep:
        return Path(tempfile.mkdtemp(prefix=KEPT_DIR_PREFIX, dir=work_root)).resolve()
    return make_owned_dir(work_root or Path(tempfile.gettempdir()), GRADE_DIR_PREFIX).resolve()


# ---- threads that cancellation waits for ---------------------------------------------------------


async def run_in_thread(fn: Callable[..., T], /, *args: Any, stoppable: bool = False, **kwargs: Any) -> T:
    """`asyncio.to_thread`, except that cancellation does not abandon the thread: it sets the
    stop flag (with `stoppable`, `fn` gets `stop=threading.Event()` and should check it between
    files/chunks), waits until the thread has returned, even if cancelled again, and only then
    re-raises CancelledError. Whatever runs after (cleanup) sees the thread's last write."""
    stop = threading.Event()
    if stoppable:
        kwargs["stop"] = stop
    fut = asyncio.ensure_future(asyncio.to_thread(fn, *args, **kwargs))
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        stop.set()
        while not fut.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({fut})
        if not fut.cancelled():
            fut.exception()  # retrieved: the thread's Stopped (or error) is not news
        raise


# ---- copying a cache entry -----------------------------------------------------------------------


class EntryChanged(Exception):
    """What `copy_package` copied differs from the manifest it was given: a file of another
    hash, one the manifest does not list, or one it lists that is not there."""

    def __init__(self, rel: str, why: str) -> None:
        super().__init__(f"{rel} {why}")
        self.rel = rel


class _Expected:
    """The manifest a copy is held to, and what of it the copy has met so far."""

    def __init__(self, manifest: Mapping[str, str]) -> None:
        self.manifest = manifest
        self.met: set[str] = set()

    def file(self, rel: str, digest: str) -> None:
        want = self.manifest.get(rel)
        if want is None:
            raise EntryChanged(rel, "is not in the manifest")
        if want != digest:
            raise EntryChanged(rel, "does not match the manifest")
        self.met.add(rel)

    def finish(self) -> None:
        if missing := sorted(set(self.manifest) - self.met):
            raise EntryChanged(missing[0], "is missing")


def _copy_hashed(src: int, dst: int, stop: threading.Event | None) -> str:
    """Read, hash and write (no copy_file_range: the bytes written are the bytes hashed)."""
    digest = hashlib.sha256()
    for chunk in read_chunks(src, _COPY_CHUNK, None, stop):
        digest.update(chunk)
        _write_all(dst, chunk)
    return digest.hexdigest()


def _write_all(dst: int, chunk: bytes) -> None:
    """Write all of `chunk` (os.write may write less than it is given)."""
    view = memoryview(chunk)
    while view:
        view = view[os.write(dst, view) :]


def _copy_bytes(src: int, dst: int, stop: threading.Event | None) -> None:
    while True:
        check_budget(None, stop)
        try:
            n = os.copy_file_range(src, dst, _COPY_CHUNK)
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF):
                raise
            break
        if n == 0:
            break  # EOF, or a filesystem that copies nothing: finish by read/write
    for chunk in read_chunks(src, _COPY_CHUNK, None, stop):
        _write_all(dst, chunk)


def _copy_dir(
    sfd: int, dfd: int, rel: str, depth: int, stop: threading.Event | None, expected: _Expected | None
) -> None:
    if depth > MAX_DEPTH:
        raise NotRegularFile(errno.ELOOP, f"directories nested deeper than {MAX_DEPTH}", rel)
    with os.scandir(sfd) as it:
        entries = [(e.name, e.is_dir(follow_symlinks=False) and not e.is_symlink()) for e in it]
    for name, is_dir in entries:
        check_budget(None, stop)
        if is_dir:
            s_sub = open_dir(name, dir_fd=sfd)
            try:
                st = os.fstat(s_sub)
                os.mkdir(name, 0o700, dir_fd=dfd)
                d_sub = open_dir(name, dir_fd=dfd)
                try:
                    _copy_dir(s_sub, d_sub, f"{rel}{name}/", depth + 1, stop, expected)
                    os.fchmod(d_sub, stat.S_IMODE(st.st_mode) & 0o777 | 0o700)
                    os.utime(d_sub, ns=(st.st_atime_ns, st.st_mtime_ns))
                finally:
                    os.close(d_sub)
            finally:
                os.close(s_sub)
            continue
        src = open_regular(name, dir_fd=sfd)  # a symlink, FIFO or device: NotRegularFile
        try:
            st = os.fstat(src)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            dst = os.open(name, flags, 0o600, dir_fd=dfd)
            try:
                if expected is None:
                    _copy_bytes(src, dst, stop)
                else:
                    expected.file(f"{rel}{name}", _copy_hashed(src, dst, stop))
                os.fchmod(dst, stat.S_IMODE(st.st_mode) & 0o777)  # never set-id bits from the cache
                os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))  # Lake compares mtimes
            finally:
                os.close(dst)
        finally:
            os.close(src)


def copy_package(
    src: Path | int,
    dest: Path,
    stop: threading.Event | None = None,
    manifest: Mapping[str, str] | None = None,
) -> None:
    """Copy the tree at `src` (a path, or a directory descriptor, which stays open: a pinned cache
    entry is read through it) into a new directory `dest` (FileExistsError if it exists). Bytes
    are copied, never hard-linked (a hostile build could write through a hard link into the
    cache); mtimes and permission bits are kept. Regular files and directories only: a symlink,
    FIFO, socket or device in `src` raises NotRegularFile (a verified entry holds none), and
    nothing is opened through a symlink. Stops with hashing.Stopped once `stop` is set (checked
    between files and 4 MiB chunks); a partial `dest` is then the caller's to remove.

    With `manifest` (relative path -> sha256 of every file, as `hashing.hash_tree` gives it), each
    file is hashed while it is copied, as `package._copy_out` copies a trusted output, and
    EntryChanged is raised for a file of another hash, a file the manifest does not list, or a
    listed file that is not there: the copy is exactly what was checked, or nothing."""
    check_budget(None, stop)
    expected = None if manifest is None else _Expected(manifest)
    sfd = os.dup(src) if isinstance(src, int) else open_dir(src)
    try:
        st = os.fstat(sfd)
        os.mkdir(dest, 0o700)
        dfd = open_dir(dest)
        try:
            _copy_dir(sfd, dfd, "", 0, stop, expected)
            if expected is not None:
                expected.finish()
            os.fchmod(dfd, stat.S_IMODE(st.st_mode) & 0o777 | 0o700)
            os.utime(dfd, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(dfd)
    finally:
        os.close(sfd)


async def copy_entry(src: Path | int, dest: Path, manifest: Mapping[str, str] | None = None) -> None:
    """`copy_package` in a worker thread, held to `manifest` when given (EntryChanged). On
    cancellation the copy is told to stop, awaited (shielded) until its thread has returned, and
    what it wrote is removed before CancelledError propagates; on any other failure `dest` is
    removed too. `dest` must not exist."""
    existed = os.path.lexists(dest)
    try:
        await run_in_thread(copy_package, src, dest, manifest=manifest, stoppable=True)
    except BaseException:
        if not existed:
            remove_tree(dest)
        raise


# ---- removal -------------------------------------------------------------------------------------


_RD_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: Below this depth a directory being removed is first moved up to the top (renameat), so
#: removing an arbitrarily deep tree holds at most this many fds and never recurses.
_FLATTEN_DEPTH = 32


def _open_for_removal(name: str | Path, dir_fd: int | None) -> int:
    """Open a directory for listing; if its mode shuts the owner out (a build can leave 0o000),
    give the owner rwx through an O_PATH fd (never through a symlink) and retry."""
    try:
        return os.open(name, _RD_DIR, dir_fd=dir_fd)
    except PermissionError:
        pinned = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dir_fd)
        try:
            os.chmod(f"/proc/self/fd/{pinned}", stat.S_IMODE(os.fstat(pinned).st_mode) | 0o700)
            return os.open(f"/proc/self/fd/{pinned}", _RD_DIR & ~os.O_NOFOLLOW)
        finally:
            os.close(pinned)


def _unlink_in(fd: int, name: str, *, is_dir: bool) -> None:
    """unlink/rmdir `name` in the directory `fd`; if the directory is read-only, make it writable
    for the owner and retry once. Errors are left to the caller's final check."""
    for attempt in range(2):
        try:
            if is_dir:
                os.rmdir(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
            return
        except PermissionError:
            if attempt:
                return
            with contextlib.suppress(OSError):
                os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) | 0o700)
        except OSError:
            return


def _list_for_removal(fd: int) -> list[str]:
    """Unlink every non-directory in `fd`; return its subdirectories."""
    try:
        with os.scandir(fd) as it:
            entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
    except OSError:
        return []
    subdirs = []
    for name, is_dir in entries:
        if is_dir:
            subdirs.append(name)
        else:
            _unlink_in(fd, name, is_dir=False)
    return subdirs


def _remove_dir(path: Path) -> None:
    """Iterative, fd-based removal of a directory tree (no recursion, bounded fds, no symlink
    followed): a hostile build's 0o000 directories or 100 000-deep nesting do not stop it."""
    try:
        top = _open_for_removal(path, None)
    except OSError:
        return
    stack: list[tuple[int, list[str], str]] = [(top, _list_for_removal(top), "")]
    flattened = 0
    try:
        while stack:
            fd, pending, name_in_parent = stack[-1]
            if not pending:
                stack.pop()
                os.close(fd)
                if stack:
                    _unlink_in(stack[-1][0], name_in_parent, is_dir=True)
                continue
            name = pending.pop()
            if len(stack) >= _FLATTEN_DEPTH:
                flattened += 1
                hoisted = f".flat-{flattened}-{secrets.token_hex(4)}"
                with contextlib.suppress(OSError):
                    os.rename(name, hoisted, src_dir_fd=fd, dst_dir_fd=top)
                    stack[0][1].append(hoisted)
                continue
            try:
                child = _open_for_removal(name, fd)
            except OSError as exc:
                if exc.errno in (errno.ENOTDIR, errno.ELOOP):  # swapped for a file or link
                    _unlink_in(fd, name, is_dir=False)
                continue
            stack.append((child, _list_for_removal(child), name))
    finally:
        for fd, _, _ in stack:
            os.close(fd)
    with contextlib.suppress(OSError):
        os.rmdir(path)
    if os.path.lexists(path):  # the top itself sits in a directory we may have to open up
        with contextlib.suppress(OSError):
            parent = os.open(path.parent, _RD_DIR & ~os.O_NOFOLLOW)
            try:
                _unlink_in(parent, path.name, is_dir=True)
            finally:
                os.close(parent)


async def remove_tree_off_loop(path: Path) -> bool:
    """`remove_tree` in a worker thread, keeping its guarantee under cancellation: a cancelled
    caller still waits until the thread has removed the tree (`run_in_thread`), then the
    cancellation propagates. Where no thread can run it (the executor is shut down, no thread can
    start) or the coroutine is closed unfinished (its loop is going away), it removes the tree
    synchronously instead."""
    try:
        return await run_in_thread(remove_tree, path)
    except asyncio.CancelledError:
        raise  # (run_in_thread waited for the removal to end)
    except GeneratorExit:
        remove_tree(path)
        raise
    except Exception:
        return remove_tree(path)


def remove_tree(path: Path) -> bool:
    """Remove `path` (directory tree, file or symlink, never following a link) as far as
    possible; directories the owner cannot enter or write are opened up first. Never raises;
    True when nothing is left at `path` (False e.g. for immutable files or a mount point)."""
    for _ in range(2):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        if stat.S_ISDIR(st.st_mode):
            # The common case first: CPython's rmtree works on directory fds and never follows a
            # symlink (`shutil._rmtree_safe_fd`); anything it cannot remove (a 0o000 directory, a
            # tree deeper than its recursion) is left for the robust remover.
            if shutil.rmtree.avoids_symlink_attacks:
                with contextlib.suppress(OSError, RecursionError):
                    shutil.rmtree(path)
                    return True
            _remove_dir(path)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)
    return not os.path.lexists(path)


# ---- removing a finished grade's directory off the grade's critical path ------------------------

#: Grade directories queued for removal but not yet removed; past this many, a grade removes its
#: own directory before it returns (so a slow disk bounds the backlog instead of filling up).
REAP_BACKLOG = 64
#: And past this many bytes, each queued directory counted at what its grade's caps let it hold
#: (its size is not measured): the disk a host must keep for finished grades (`doctor`) stays a
#: few caps, not 64 of them (issue 39's open item: the count alone asked for ~300 GB).
REAP_BACKLOG_BYTES = 8 << 30
_REAP_THREADS = 2
#: The reaper threads' name prefix: a fixed pool of `_REAP_THREADS` per process, not per grade
#: (a leak check counts threads without them).
REAPER_THREAD_PREFIX = "lmap-reaper"
_reaper: tuple[int, concurrent.futures.ThreadPoolExecutor] | None = None
_reaping: dict[concurrent.futures.Future[bool], int] = {}  # -> the bytes it is counted at
_reaper_lock = threading.Lock()


def _reaper_pool() -> concurrent.futures.ThreadPoolExecutor:
    """This process's reaper threads (a forked child makes its own: threads do not survive fork)."""
    global _reaper
    if _reaper is None or _reaper[0] != os.getpid():
        _reaper = (os.getpid(), concurrent.futures.ThreadPoolExecutor(_REAP_THREADS, REAPER_THREAD_PREFIX))
        _reaping.clear()
    return _reaper[1]


def reap_backlog(charge_bytes: int) -> int:
    """How many finished directories of `charge_bytes` each the reaper may hold at once (pure):
    at least one, at most `REAP_BACKLOG`, within `REAP_BACKLOG_BYTES`."""
    return max(1, min(REAP_BACKLOG, REAP_BACKLOG_BYTES // max(1, charge_bytes)))


def reap_later(path: Path, charge_bytes: int = 0) -> bool:
    """Queue `remove_tree(path)` on the reaper threads and return at once; False (nothing queued) when
    the backlog is full (`REAP_BACKLOG` directories, or `REAP_BACKLOG_BYTES` counting each at
    `charge_bytes`; one is always let in) or no thread can take it (the interpreter is shutting
    down): the caller then removes it itself. Safe for a *finished* grade's directory: its verdict
    is already decided, its processes have ended, nothing reads the directory again (each grade gets
    a fresh 0o700 one with a random name), and it keeps its owner record, so if this process dies
    before the removal `sweep_dead` removes it at the next start. Nothing is left at a normal exit:
    `concurrent.futures` joins an executor's threads at interpreter exit after they have run every
    queued item (CPython Lib/concurrent/futures/thread.py, `_python_exit` and `_worker`)."""
    with _reaper_lock:
        if len(_reaping) >= REAP_BACKLOG:
            return False
        if _reaping and sum(_reaping.values()) + charge_bytes > REAP_BACKLOG_BYTES:
            return False
        try:
            fut = _reaper_pool().submit(remove_tree, path)
        except RuntimeError:  # "cannot schedule new futures after (interpreter) shutdown"
            return False
        _reaping[fut] = charge_bytes
    fut.add_done_callback(_reaped)
    return True


def _reaped(fut: concurrent.futures.Future[bool]) -> None:
    with _reaper_lock:
        _reaping.pop(fut, None)


async def remove_grade_dir(path: Path, charge_bytes: int = 0) -> None:
    """Remove a finished grade's directory: queued (`reap_later`, counted at `charge_bytes`)
    when the backlog allows, else here, off the loop (`remove_tree_off_loop`)."""
    if not reap_later(path, charge_bytes):
        await remove_tree_off_loop(path)


def wait_reaped(timeout: float | None = None) -> bool:
    """Block until every removal queued so far has ended (for a caller about to count what is left
    on disk: tests, benchmarks, a shutdown); True when none is still pending."""
    with _reaper_lock:
        pending = set(_reaping)
    _, not_done = concurrent.futures.wait(pending, timeout=timeout)
    return not not_done
