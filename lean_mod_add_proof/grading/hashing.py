"""Hashing files that an untrusted build may have touched: never follow a symlink, never block.

Every open here is `O_NOFOLLOW | O_NONBLOCK` and is followed by an `fstat`: only regular files are
read. A FIFO, socket or device node is never read (it counts as a mismatch), so a build that
planted `/dev/zero` or a FIFO cannot make the grader read forever or hang. Directories are walked
by file descriptor (each component opened with `O_NOFOLLOW | O_DIRECTORY`), so a directory swapped
for a symlink mid-walk is refused rather than followed. Long walks take a `deadline`
(time.monotonic value; TimeoutError once it passes) and a `stop` flag (Stopped once set), checked
between files and between 1 MiB chunks.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path

from lean_mod_add_proof.grading.oserrors import host_errno

CHUNK = 1 << 20
#: Deepest directory nesting hash_tree/tree_matches walk; deeper counts as a bad tree.
MAX_DEPTH = 64
#: hash_tree's value for a symlink (never followed) and for a FIFO, socket or device node.
SYMLINK = "symlink"
SPECIAL = "special"

_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NONBLOCK


class NotRegularFile(OSError):
    """The path is a symlink, directory, FIFO, socket or device, not a regular file."""


class FileTooLarge(OSError):
    """A file that must be small is larger than its cap."""


class TreeTooDeep(OSError):
    """Directories nested deeper than MAX_DEPTH."""


class Stopped(Exception):
    """The caller's stop flag was set (cancellation of the thread doing the work)."""


def check_budget(deadline: float | None, stop: threading.Event | None) -> None:
    """Raise Stopped once `stop` is set, TimeoutError once `deadline` has passed."""
    if stop is not None and stop.is_set():
        raise Stopped
    if deadline is not None and time.monotonic() > deadline:
        raise TimeoutError("ran out of time")


def open_regular(path: Path | str, *, dir_fd: int | None = None, max_bytes: int | None = None) -> int:
    """An fd of the regular file at `path` (relative to `dir_fd` if given), opened without
    following a symlink or blocking on a FIFO. NotRegularFile for anything else (a symlink gives
    it too), FileTooLarge above `max_bytes`."""
    try:
        fd = os.open(path, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularFile(errno.ELOOP, "is a symlink", str(path)) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", str(path))
        if max_bytes is not None and st.st_size > max_bytes:
            raise FileTooLarge(errno.EFBIG, f"larger than {max_bytes} bytes", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_small_file(path: Path | str, max_bytes: int, *, dir_fd: int | None = None) -> bytes:
    """The bytes of a regular file of at most `max_bytes` (it may not grow past the cap while read)."""
    fd = open_regular(path, dir_fd=dir_fd, max_bytes=max_bytes)
    with os.fdopen(fd, "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileTooLarge(errno.EFBIG, f"larger than {max_bytes} bytes", str(path))
    return data


def read_chunks(fd: int, size: int, deadline: float | None, stop: threading.Event | None) -> Iterator[bytes]:
    """The rest of `fd`, at most `size` bytes a read, the budget checked before each read."""
    while True:
        check_budget(deadline, stop)
        chunk = os.read(fd, size)
        if not chunk:
            return
        yield chunk


def _sha256_fd(fd: int, deadline: float | None, stop: threading.Event | None) -> str:
    h = hashlib.sha256()
    for chunk in read_chunks(fd, CHUNK, deadline, stop):
        h.update(chunk)
    return h.hexdigest()


def sha256_file(
    path: Path | str,
    *,
    dir_fd: int | None = None,
    deadline: float | None = None,
    stop: threading.Event | None = None,
) -> str:
    """sha256 of a regular file; NotRegularFile (an OSError) for a symlink, FIFO, socket or device."""
    fd = open_regular(path, dir_fd=dir_fd)
    try:
        return _sha256_fd(fd, deadline, stop)
    finally:
        os.close(fd)


def open_dir(path: Path | str, *, dir_fd: int | None = None) -> int:
    """An fd of the directory at `path`, refusing a symlink (ELOOP) or non-directory (ENOTDIR)."""
    return os.open(path, _DIR_FLAGS, dir_fd=dir_fd)


def open_beneath(root: Path | str, rel: str, *, root_fd: int | None = None) -> int:
    """Open the regular file root/rel without following a symlink at any component."""
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise NotRegularFile(errno.EINVAL, "not a plain relative path", rel)
    fd = open_dir(root) if root_fd is None else os.dup(root_fd)
    try:
        for part in parts[:-1]:
            nxt = open_dir(part, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return open_regular(parts[-1], dir_fd=fd)
    finally:
        os.close(fd)


def _walk(
    dir_fd: int,
    prefix: str,
    depth: int,
    visit_file: Callable[[int, str, str, str], None],
    deadline: float | None,
    stop: threading.Event | None,
) -> None:
    """Call visit_file(dir_fd, name, rel, kind) for everything under dir_fd, where kind is
    "dir" (called before descending), "file", SYMLINK or SPECIAL; recurse into real directories
    only (opened by fd)."""
    if depth > MAX_DEPTH:
        raise TreeTooDeep(errno.ELOOP, f"directories nested deeper than {MAX_DEPTH}", prefix)
    with os.scandir(dir_fd) as it:  # d_type: no stat per entry; a vanished entry reads as SPECIAL
        entries = [(e.name, _kind(e)) for e in it]
    for name, kind in entries:
        check_budget(deadline, stop)
        rel = prefix + name
        if kind == "dir":
            visit_file(dir_fd, name, rel, kind)
            try:
                sub = open_dir(name, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # swapped since the listing
                    visit_file(dir_fd, name, rel, SPECIAL)
                    continue
                raise
            try:
                _walk(sub, rel + "/", depth + 1, visit_file, deadline, stop)
            finally:
                os.close(sub)
        else:
            visit_file(dir_fd, name, rel, kind)


def _kind(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return SYMLINK
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    if entry.is_file(follow_symlinks=False):
        return "file"
    return SPECIAL


def _root_fd(root: Path | str | int) -> int:
    return os.dup(root) if isinstance(root, int) else open_dir(root)


def hash_tree(
    root: Path | str | int,
    *,
    deadline: float | None = None,
    stop: threading.Event | None = None,
) -> dict[str, str]:
    """sha256 of every regular file under root (a path or a directory fd), by relative POSIX
    path. A symlink is recorded as SYMLINK and never followed; a FIFO, socket or device as
    SPECIAL and never opened; a file swapped for one of those mid-walk likewise."""
    out: dict[str, str] = {}

    def visit(dir_fd: int, name: str, rel: str, kind: str) -> None:
        if kind == "dir":
            return
        if kind != "file":
            out[rel] = kind
            return
        try:
            out[rel] = sha256_file(name, dir_fd=dir_fd, deadline=deadline, stop=stop)
        except NotRegularFile as exc:
            out[rel] = SYMLINK if exc.errno == errno.ELOOP else SPECIAL

    _walk_root(root, visit, deadline, stop)
    return out


def _walk_root(
    root: Path | str | int,
    visit: Callable[[int, str, str, str], None],
    deadline: float | None,
    stop: threading.Event | None,
) -> None:
    """`_walk` over the whole tree at `root`, opening and closing its descriptor."""
    fd = _root_fd(root)
    try:
        _walk(fd, "", 0, visit, deadline, stop)
    finally:
        os.close(fd)


class _Mismatch(Exception):
    pass


def tree_dirs(root: Path | str | int) -> list[str]:
    """Every directory under root (not following symlinks), by relative POSIX path."""
    out: list[str] = []

    def visit(dir_fd: int, name: str, rel: str, kind: str) -> None:
        if kind == "dir":
            out.append(rel)

    _walk_root(root, visit, None, None)
    return out


def tree_matches(
    root: Path | str | int,
    manifest: Mapping[str, str],
    sizes: Mapping[str, int] | None = None,
    dirs: Collection[str] | None = None,
    *,
    deadline: float | None = None,
    stop: threading.Event | None = None,
) -> bool:
    """Whether the tree under root holds exactly the regular files of `manifest` with those
    hashes (and, with `sizes`, those sizes; with `dirs`, exactly those directories, so not even
    an empty directory can be planted). Stops at the first difference: an unexpected name, a
    non-regular file or a wrong size is found without reading any file's bytes. An error that is
    the host's (`oserrors.host_errno`) is raised: it is no evidence that the tree differs."""
    seen = 0
    seen_dirs = 0
    dir_set = None if dirs is None else frozenset(dirs)

    def visit(dir_fd: int, name: str, rel: str, kind: str) -> None:
        nonlocal seen, seen_dirs
        if kind == "dir":
            if dir_set is not None and rel not in dir_set:
                raise _Mismatch
            seen_dirs += 1
            return
        expected = manifest.get(rel)
        if kind != "file" or expected is None:
            raise _Mismatch
        try:
            fd = open_regular(name, dir_fd=dir_fd)
        except (NotRegularFile, FileNotFoundError):
            raise _Mismatch from None
        try:
            if sizes is not None and os.fstat(fd).st_size != sizes.get(rel):
                raise _Mismatch
            if _sha256_fd(fd, deadline, stop) != expected:
                raise _Mismatch
        finally:
            os.close(fd)
        seen += 1

    try:
        fd = _root_fd(root)
        try:
            _walk(fd, "", 0, visit, deadline, stop)
        finally:
            os.close(fd)
    except _Mismatch:
        return False
    except TimeoutError:
        raise
    except OSError as exc:  # unreadable, vanished, too deep: not the tree the manifest describes
        if host_errno(exc) is not None:
            raise  # out of descriptors, memory, an I/O error: says nothing about the tree
        return False
    return seen == len(manifest) and (dir_set is None or seen_dirs == len(dir_set))


def hash_files(root: Path, rels: list[str]) -> dict[str, str | None]:
    """Hash the given files under root; None for anything missing, not a regular file (a FIFO or
    device is never opened for reading), or reached through a symlinked directory. An error that
    is the host's (`oserrors.host_errno`: out of descriptors, an I/O error, ...) is raised, not
    read as a changed file."""
    out: dict[str, str | None] = {}
    for rel in rels:
        try:
            fd = open_beneath(root, rel)
            try:
                out[rel] = _sha256_fd(fd, None, None)
            finally:
                os.close(fd)
        except OSError as exc:
            if host_errno(exc) is not None:
                raise
            out[rel] = None
    return out
