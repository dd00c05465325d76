"""The cache of prebuilt Network/Weights packages.

An entry `<cache_root>/<key>/` is a package directory (`package/`) in which the grader compiled
Network.lean and Weights.lean with the toolchain's own `lean`, plus `manifest.json` (sha256 and
size of every file). A grade copies an entry (never hard-links it: a hostile build could write
through a hard link into the cache).

The cache is untrusted input like everything on disk (an unsandboxed build can write into it): an
entry is used only after every file re-hashes to its manifest, and checking it never follows a
symlink, never reads anything but a regular file (a FIFO or device counts as corrupt, it is never
opened for reading), reads at most MANIFEST_MAX_BYTES of manifest, and stops at the caller's
deadline. A corrupt or unreadable entry is moved aside and rebuilt. When the cache cannot be used
at all (a corrupt entry that cannot be removed, a check that ran out of time, the cache directory
not writable) `ensure_entry` raises CacheUnusable and the caller builds in place instead.

A grade reads the entry it was given until it ends (issue 26: a grade whose entry was discarded
under it, after its build, was rejected for a "missing" or "changed" trusted output). Each entry
directory is immutable once installed (built under `.build-*`, then renamed into place), and the
grade holds it open with a shared `flock` (`EntryPin`) from the check until it releases it; it
reads the entry through those descriptors, never by path again. A discard renames the entry aside
(`.trash-*`: the key is free at once for a rebuild) and deletes it only under an exclusive
`flock`, so never while any grade, in this process or another, still holds it; what is left
pinned is deleted by this process's next `ensure_entry` that finds it unpinned (`reap_trash`), or
by `sweep_dead` once this process is dead. A host error while checking an entry
(`oserrors.host_errno`: out of descriptors, an I/O error, ...) is no evidence of corruption: the
check is retried, and if it persists the error is raised for this grade only. A filesystem
without `flock` makes the cache unusable (CacheUnusable).

Temporary directories (`.build-*` while building, `.trash-*` while deleting) carry their owner in
their name (see workdirs), so `workdirs.sweep_dead` removes them once their owner is dead.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import json
import logging
import os
import re
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from lean_mod_add_proof.grading import workdirs
from lean_mod_add_proof.grading.hashing import (
    SPECIAL,
    SYMLINK,
    Stopped,
    check_budget,
    hash_tree,
    open_dir,
    read_small_file,
    tree_dirs,
    tree_matches,
)
from lean_mod_add_proof.grading.oserrors import host_errno
from lean_mod_add_proof.grading.package import LAYOUT_VERSION, missing_outputs, write_sources
from lean_mod_add_proof.grading.result import CommandRecord
from lean_mod_add_proof.grading.steps_log import long_step

log = logging.getLogger(__name__)

DEFAULT_CACHE_DIR = Path("~/.cache/lean-mod-add-proof")


def cache_root(configured: Path | None) -> Path:
    """The cache directory a setting names, else the default (pure)."""
    return (configured or DEFAULT_CACHE_DIR).expanduser()


MANIFEST_NAME = "manifest.json"
#: Largest manifest.json read; a real one is a few hundred bytes.
MANIFEST_MAX_BYTES = 1 << 20
#: Largest entry a manifest may describe (sum of file sizes); beyond it the entry is corrupt.
ENTRY_MAX_BYTES = 4 << 30
_SHA256_RE = re.compile(r"[0-9a-f]{64}")
#: How many times a check that hit a host error (`oserrors.host_errno`) is tried in all, and the
#: pause before the first retry (doubled each time): a descriptor shortage under load passes.
CHECK_ATTEMPTS = 3
CHECK_RETRY_S = 0.05


@dataclass(frozen=True)
class PrebuildOutcome:
    ok: bool
    reason: str = ""
    records: list[CommandRecord] = field(default_factory=list)


Prebuild = Callable[[Path], Awaitable[PrebuildOutcome]]
#: What a sound entry must hold: the names of the outputs missing from a manifest (empty if none).
OutputsMissing = Callable[[Mapping[str, str]], list[str]]


class PrebuildFailed(Exception):
    def __init__(self, reason: str, records: list[CommandRecord]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.records = records


class CacheUnusable(Exception):
    """The cache cannot serve this key right now; `reason` says why (one line). The caller should
    build in place (`prebuild_package` into the grade's own directory) and report the reason.
    `records` holds the commands of a build that did run in the cache before it turned out
    unusable (usually empty)."""

    def __init__(self, reason: str, records: list[CommandRecord] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.records = records or []


class EntryPin:
    """A grade's hold on its cache entry: the entry directory open with a shared `flock` (which
    keeps a discard from deleting it), and its `package/` directory open for reading. Read the
    entry through `package_fd` only: the path may name a newer entry, or nothing, meanwhile.
    `release` (idempotent; also on garbage collection) lets a discard delete it."""

    def __init__(self, entry_fd: int, package_fd: int) -> None:
        self._fds: tuple[int, int] | None = (entry_fd, package_fd)
        self.package_fd = package_fd

    @property
    def held(self) -> bool:
        return self._fds is not None

    def release(self) -> None:
        fds, self._fds = self._fds, None
        for fd in fds or ():
            try:
                os.close(fd)  # the flock goes with the last descriptor of the open file
            except OSError:
                pass

    def __del__(self) -> None:
        self.release()


@dataclass(frozen=True)
class CacheEntry:
    package: Path
    manifest: dict[str, str]
    status: Literal["hit", "built"]
    records: list[CommandRecord] = field(default_factory=list)
    pin: EntryPin | None = None
    """The entry held open for this caller (see EntryPin); read it through `pin.package_fd`."""


# One lock per (cache root, key) per event loop: asyncio locks bind to the loop that first uses them.
_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


def _lock_for(root: Path, key: str) -> asyncio.Lock:
    per_loop = _locks.setdefault(asyncio.get_running_loop(), {})
    return per_loop.setdefault((str(root), key), asyncio.Lock())


@dataclass(frozen=True)
class _Checked:
    state: Literal["absent", "ok", "corrupt"]
    manifest: dict[str, str] | None = None
    #: (st_dev, st_ino) of what was checked, so a discard can tell it moved that very entry.
    ident: tuple[int, int] | None = None
    #: For "ok": the entry, held open (the caller owns it).
    pin: EntryPin | None = None


def _lock(fd: int, how: int) -> None:
    """`flock(fd, how)`; BlockingIOError when another holds a conflicting lock (with LOCK_NB).
    A filesystem without flock (some FUSE and network ones) cannot hold an entry for a grade:
    CacheUnusable, and the grade builds in place rather than read an entry a discard could delete
    under it."""
    try:
        fcntl.flock(fd, how)
    except BlockingIOError:
        raise
    except OSError as exc:
        if host_errno(exc) is not None:
            raise
        raise CacheUnusable(f"the cache directory cannot lock an entry (flock: {_why(exc)})") from None


def _pin_shared(fd: int) -> bool:
    """Take a shared flock on the entry directory `fd`; False when a discard holds it exclusively
    (it is deleting that entry: no longer at its name)."""
    try:
        _lock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@dataclass(frozen=True)
class _Manifest:
    files: dict[str, str]
    sizes: dict[str, int]
    dirs: list[str]


def _parse_manifest(
    raw: bytes, key: str, outputs_missing: OutputsMissing = missing_outputs
) -> _Manifest | None:
    """The manifest in manifest.json bytes, or None unless it is exactly what `_seal` writes for
    this key and layout (any JSON value may be there: `[]`, `null`, 100 000 nested lists)."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("layout") != LAYOUT_VERSION or data.get("key") != key:
        return None
    files, sizes, dirs = data.get("files"), data.get("sizes"), data.get("dirs")
    if not isinstance(files, dict) or not isinstance(sizes, dict) or files.keys() != sizes.keys():
        return None
    if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
        return None
    if not all(isinstance(v, str) and _SHA256_RE.fullmatch(v) for v in files.values()):
        return None
    if not all(type(v) is int and v >= 0 for v in sizes.values()) or sum(sizes.values()) > ENTRY_MAX_BYTES:
        return None
    if outputs_missing(files):
        return None
    return _Manifest(files, sizes, dirs)


def _check_entry(
    entry_dir: Path,
    key: str,
    deadline: float | None,
    stop: threading.Event | None = None,
    outputs_missing: OutputsMissing = missing_outputs,
) -> _Checked:
    """Whether `entry_dir` is absent, a sound entry for `key` (then held: `pin`), or anything
    else (corrupt). Never follows a symlink or blocks; TimeoutError once `deadline` passes while
    reading the entry. A host error (`oserrors.host_errno`) is raised: it says nothing about the
    entry."""
    check_budget(None, stop)
    try:
        fd = open_dir(entry_dir)
    except FileNotFoundError:
        return _Checked("absent")
    except OSError as exc:  # a symlink (dangling or not), a regular file, unreadable
        if host_errno(exc) is not None:
            raise
        try:
            st = os.lstat(entry_dir)
        except FileNotFoundError:
            return _Checked("absent")
        except OSError as exc2:
            if host_errno(exc2) is not None:
                raise
            return _Checked("corrupt")
        return _Checked("corrupt", ident=(st.st_dev, st.st_ino))
    pkg: int | None = None
    try:
        st = os.fstat(fd)
        ident = (st.st_dev, st.st_ino)
        if not _pin_shared(fd) or st.st_nlink == 0:
            return _Checked("absent")  # a discard moved it aside and is deleting it, or did
        try:
            raw = read_small_file(MANIFEST_NAME, MANIFEST_MAX_BYTES, dir_fd=fd)
            parsed = _parse_manifest(raw, key, outputs_missing)
            if parsed is None:
                return _Checked("corrupt", ident=ident)
            pkg = open_dir("package", dir_fd=fd)
        except TimeoutError:
            raise
        except OSError as exc:  # missing, a FIFO/device/symlink, too large, unreadable
            if host_errno(exc) is not None:
                raise
            return _Checked("corrupt", ident=ident)
        if not tree_matches(pkg, parsed.files, parsed.sizes, parsed.dirs, deadline=deadline, stop=stop):
            return _Checked("corrupt", ident=ident)
        pin = EntryPin(fd, pkg)
        fd = pkg = -1  # the pin owns them now
        if stop is not None and stop.is_set():  # cancelled meanwhile: nobody will take the pin
            pin.release()
            raise Stopped
        return _Checked("ok", parsed.files, ident, pin)
    finally:
        for owned in (fd, pkg):
            if owned is not None and owned >= 0:
                os.close(owned)


def _pin_fresh(tmp: Path) -> EntryPin:
    """Hold a just-built entry (still at its `.build-*` name) before it is renamed into place."""
    fd = open_dir(tmp)
    try:
        _lock(fd, fcntl.LOCK_SH)  # nobody else knows this directory yet: never blocks
        return EntryPin(fd, open_dir("package", dir_fd=fd))
    except BaseException:
        os.close(fd)
        raise


def _discard(path: Path, ident: tuple[int, int] | None) -> str | None:
    """Move `path` aside (atomic, so no reader sees a half-deleted entry), then delete it unless a
    grade still holds it (`EntryPin`; then `reap_trash` deletes it later). Returns None when the
    caller may go on building, else why the entry could not be removed. If what was moved is not
    what was checked (another grader installed a fresh entry meanwhile), it is put back and None
    returned: the caller's rename then loses to it and re-checks it."""
    trash = path.with_name(workdirs.owned_name(workdirs.CACHE_TRASH_PREFIX))
    try:
        os.rename(path, trash)
    except FileNotFoundError:
        return None
    except OSError as exc:  # immutable, a mount point, ...: try in place, then give up
        return None if workdirs.remove_unless_pinned(path) else (exc.strerror or str(exc))
    try:
        st = os.lstat(trash)
        if ident is not None and (st.st_dev, st.st_ino) != ident and not os.path.lexists(path):
            os.rename(trash, path)
            return None
    except OSError:
        pass
    reap_trash(path.parent)
    return None if not os.path.lexists(path) else "it came back while being removed"


def reap_trash(cache_root: Path) -> None:
    """Delete the entries this process moved aside (`.trash-*`) that no grade, here or in another
    process, holds any more, and those of dead owners. Another live process's are left to it: it
    may be between moving one aside and checking what it moved. Never raises."""
    me = workdirs.owner_tag()
    with contextlib.suppress(OSError):
        for name in os.listdir(cache_root):
            owner = workdirs.parse_owner(name, (workdirs.CACHE_TRASH_PREFIX,))
            if owner is None:
                continue
            if "-".join(map(str, owner)) == me or workdirs.owner_is_dead(*owner):
                workdirs.remove_unless_pinned(cache_root / name)


async def prebuild_package(
    package: Path,
    sources: Mapping[str, bytes],
    prebuild: Prebuild,
    outputs_missing: OutputsMissing = missing_outputs,
) -> tuple[dict[str, str], list[CommandRecord]]:
    """Write the trusted sources into `package`, build them, and hash the result: the manifest
    the tamper checks compare against, and the prebuild's command records. PrebuildFailed if the
    build fails, leaves a symlink or special file, or leaves no .olean we would know to re-check.
    Cancellation waits for the worker threads, so nothing is written after it propagates."""
    await workdirs.run_in_thread(write_sources, package, sources)
    outcome = await prebuild(package)
    if not outcome.ok:
        raise PrebuildFailed(outcome.reason, outcome.records)
    manifest = await workdirs.run_in_thread(hash_tree, package, stoppable=True)
    if any(v == SYMLINK for v in manifest.values()):
        raise PrebuildFailed("the prebuilt package contains a symlink", outcome.records)
    if any(v == SPECIAL for v in manifest.values()):
        raise PrebuildFailed("the prebuilt package contains a FIFO, socket or device", outcome.records)
    if missing := outputs_missing(manifest):
        raise PrebuildFailed(f"the prebuild left no output for {', '.join(missing)}", outcome.records)
    return manifest, outcome.records


def _seal(tmp: Path, key: str, manifest: Mapping[str, str]) -> None:
    sizes = {rel: os.lstat(tmp / "package" / rel).st_size for rel in manifest}
    dirs = sorted(tree_dirs(tmp / "package"))
    payload = {"layout": LAYOUT_VERSION, "key": key, "files": dict(manifest), "sizes": sizes, "dirs": dirs}
    data = json.dumps(payload, indent=1, sort_keys=True).encode("utf-8")
    if len(data) > MANIFEST_MAX_BYTES:
        raise OSError(errno.EFBIG, f"the manifest would exceed {MANIFEST_MAX_BYTES} bytes")
    fd = os.open(
        tmp / MANIFEST_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644
    )
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


async def ensure_entry(
    cache_root: Path,
    key: str,
    sources: Mapping[str, bytes],
    prebuild: Prebuild,
    *,
    deadline: float | None = None,
    outputs_missing: OutputsMissing = missing_outputs,
    step: str | None = None,
) -> CacheEntry:
    """The verified cache entry for `key`, building it if absent, corrupt or unreadable.

    `deadline` (a time.monotonic value) bounds checking an existing entry: the check stops there
    and CacheUnusable("cache check ran out of time") is raised (the entry is left alone). Time
    spent waiting for this process's own build of the same key, and any build, does not count:
    each check gets the budget `deadline - (time of the call)`. A build is logged (steps_log.py) as
    `step`, by default `cache build of <sources>`.

    Raises PrebuildFailed if the build fails, CacheUnusable when the cache cannot serve the key
    (see the module docstring): the caller then builds in place. Concurrent first grades in this
    process build once (per-key lock); across processes the atomic rename decides and the loser
    uses the winner's entry. Cancellation leaves no `.build-*`/`.trash-*` behind."""
    called = time.monotonic()
    budget = None if deadline is None else deadline - called
    try:
        cache_root.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise CacheUnusable(f"cannot create the cache directory: {_why(exc)}") from None
    entry_dir = cache_root / key

    async def check() -> _Checked:
        limit = None if budget is None else time.monotonic() + budget
        for attempt in range(CHECK_ATTEMPTS):
            try:
                return await workdirs.run_in_thread(
                    _check_entry, entry_dir, key, limit, stoppable=True, outputs_missing=outputs_missing
                )
            except TimeoutError:
                raise CacheUnusable("cache check ran out of time") from None
            except OSError:  # only a host error escapes the check: not corruption
                if attempt + 1 == CHECK_ATTEMPTS:
                    raise
            await asyncio.sleep(CHECK_RETRY_S * 2**attempt)
        raise AssertionError("unreachable")

    async def clear(checked: _Checked) -> None:
        if checked.state == "corrupt":
            why = await workdirs.run_in_thread(_discard, entry_dir, checked.ident)
            if why is not None:
                raise CacheUnusable(f"a corrupt cache entry cannot be removed: {why}")

    # A sound entry needs no lock: checking only reads it, and other processes may discard or
    # install it at any time anyway. The per-key lock held through every check made concurrent
    # grades of one task (a group of rollouts) take turns hashing the entry (issue 29). What an
    # earlier discard left because a grade still held it (`EntryPin`) goes first, lock or not.
    await workdirs.run_in_thread(reap_trash, cache_root)
    checked = await check()
    if checked.manifest is not None:
        return CacheEntry(entry_dir / "package", checked.manifest, "hit", pin=checked.pin)
    async with _lock_for(cache_root, key):
        checked = await check()  # again: another grade of this process may have built it
        if checked.manifest is not None:
            return CacheEntry(entry_dir / "package", checked.manifest, "hit", pin=checked.pin)
        await clear(checked)
        try:
            tmp = workdirs.make_owned_dir(cache_root, workdirs.CACHE_BUILD_PREFIX)
        except OSError as exc:
            raise CacheUnusable(f"cannot create a build directory in the cache: {_why(exc)}") from None
        records: list[CommandRecord] = []
        try:
            try:
                # A miss compiles (seconds to minutes): one line at its start and end (steps_log.py).
                lean_files = sorted(Path(s).name for s in sources if s.endswith(".lean"))
                what = step or f"cache build of {', '.join(lean_files or sorted(sources))}"
                with long_step(log, what, f"cache key {key[:12]}"):
                    manifest, records = await prebuild_package(
                        tmp / "package", sources, prebuild, outputs_missing
                    )
                await workdirs.run_in_thread(_seal, tmp, key, manifest)
            except OSError as exc:
                raise CacheUnusable(f"cannot build in the cache: {_why(exc)}", records) from None
            for _ in range(2):
                pin = await workdirs.run_in_thread(_pin_fresh, tmp)
                try:
                    os.rename(tmp, entry_dir)
                    return CacheEntry(entry_dir / "package", manifest, "built", records, pin)
                except OSError as exc:
                    pin.release()
                    failure = exc
                # Another process won the race: use its entry if it is sound, else clear it.
                winner = await check()
                if winner.manifest is not None:
                    return CacheEntry(entry_dir / "package", winner.manifest, "hit", records, winner.pin)
                await clear(winner)
            raise CacheUnusable(f"cannot install the cache entry: {_why(failure)}", records)
        except CacheUnusable as exc:
            exc.records = exc.records or records
            raise
        finally:
            workdirs.remove_tree(tmp)  # synchronous: also runs, to the end, during cancellation
