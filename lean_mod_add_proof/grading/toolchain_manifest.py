"""A toolchain that cannot change under the grader: its manifest, recorded when its self-test
passes, compared before every grade.

The self-test proves a toolchain once; after that nothing else would notice a file of it
changing (in `grade_in = runtime` the grader runs in the rollout's own box, where a model with a
shell may have written files). So when the self-test passes, the size, mtime, ctime, inode and
sha256 of every file under `bin/` and `lib/lean` are recorded, keyed by the toolchain's path and
version. Before each grade the cheap part (size, mtime, ctime, inode, and no file added or removed)
is compared; with `grade_in = runtime` the files under `bin/` are also hashed again in full. The
mtime can be set back (`utime`) and an in-place rewrite keeps the size and the inode, but the
ctime cannot be set back by anyone without changing the clock: every write, `utime`, `chmod` or
new link sets it to now (inode(7), "st_ctime"), so a file of `lib/lean` rewritten in place (the Init
oleans the judge trusts, `libleanshared.so`) is noticed without hashing ten thousand files. A
change is "could not judge" naming the file in the runtime box, and on a host the self-test pass is
forgotten and the self-test runs again (selftest.py).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

#: What is recorded, relative to the toolchain directory.
WATCHED: tuple[str, ...] = ("bin", "lib/lean")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class FileEntry:
    size: int
    mtime_ns: int
    inode: int
    sha256: str
    ctime_ns: int


@dataclass
class Manifest:
    """Every watched file of one toolchain, by path relative to its directory."""

    toolchain_dir: str
    version: str
    files: dict[str, FileEntry] = field(default_factory=dict)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _walk(root: Path) -> dict[str, os.stat_result]:
    """Every non-directory entry under the watched directories, by its own stat (a symlink is
    not followed). `os.scandir` without `os.walk`'s extra work: this runs before every grade."""
    found: dict[str, os.stat_result] = {}
    stack = [(str(root / top), top) for top in WATCHED]
    while stack:
        path, rel = stack.pop()
        try:
            entries = os.scandir(path)
        except (FileNotFoundError, NotADirectoryError):
            continue
        with entries:
            for entry in entries:
                child = f"{rel}/{entry.name}"
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, child))
                else:
                    found[child] = entry.stat(follow_symlinks=False)
    return found


def identity(st: os.stat_result) -> tuple[int, int, int, int]:
    """What is compared without reading a file: size, mtime, inode and ctime (pure)."""
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def record(toolchain_dir: Path, version: str) -> Manifest:
    """Stat and hash every watched file (blocking: call it off the event loop)."""
    manifest = Manifest(str(toolchain_dir), version)
    for rel, st in sorted(_walk(toolchain_dir).items()):
        path = toolchain_dir / rel
        digest = "" if path.is_symlink() else _sha256(path)
        manifest.files[rel] = FileEntry(st.st_size, st.st_mtime_ns, st.st_ino, digest, st.st_ctime_ns)
    return manifest


def changed_files(manifest: Manifest, toolchain_dir: Path, *, rehash: tuple[str, ...] = ()) -> list[str]:
    """The watched files that differ from `manifest` (added, removed, or another size, mtime,
    ctime or inode), and, for files under a directory in `rehash`, another sha256. Empty: unchanged."""
    now = _walk(toolchain_dir)
    changed = sorted(set(now) ^ set(manifest.files))
    for rel, st in now.items():
        entry = manifest.files.get(rel)
        if entry is None:
            continue
        if identity(st) != (entry.size, entry.mtime_ns, entry.inode, entry.ctime_ns):
            changed.append(rel)
        elif entry.sha256 and any(rel.startswith(d + "/") for d in rehash):
            if _sha256(toolchain_dir / rel) != entry.sha256:
                changed.append(rel)
    return sorted(set(changed))


#: Largest manifest file read back (a real toolchain's lib/lean has some ten thousand files).
MAX_MANIFEST_BYTES = 64 << 20


def store(manifest: Manifest, path: Path) -> None:
    """Write it atomically beside the self-test's pass; a failure only means it is not kept."""
    data = {
        "toolchain_dir": manifest.toolchain_dir,
        "version": manifest.version,
        "files": {
            rel: [e.size, e.mtime_ns, e.inode, e.sha256, e.ctime_ns] for rel, e in manifest.files.items()
        },
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass


def load(path: Path) -> Manifest:
    """Read one back; OSError or ValueError when it is absent or not one (a manifest written
    before the ctime was recorded is not one: the self-test then runs and records it anew)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        data = json.loads(f.read(MAX_MANIFEST_BYTES))
    try:
        files = {
            str(rel): FileEntry(int(v[0]), int(v[1]), int(v[2]), str(v[3]), int(v[4]))
            for rel, v in data["files"].items()
        }
        return Manifest(str(data["toolchain_dir"]), str(data["version"]), files)
    except (KeyError, TypeError, IndexError, AttributeError) as exc:
        raise ValueError(f"not a toolchain manifest: {exc}") from None


_manifests: dict[tuple[str, str], Manifest] = {}


def key(toolchain_dir: Path, version: str) -> tuple[str, str]:
    return (str(toolchain_dir), version)


def remember(manifest: Manifest) -> None:
    _manifests[(manifest.toolchain_dir, manifest.version)] = manifest


def recorded(toolchain_dir: Path, version: str) -> Manifest | None:
    return _manifests.get(key(toolchain_dir, version))


def forget(toolchain_dir: Path | None = None, version: str | None = None) -> None:
    """Drop one toolchain's manifest, or all (tests)."""
    if toolchain_dir is None or version is None:
        _manifests.clear()
    else:
        _manifests.pop(key(toolchain_dir, version), None)
