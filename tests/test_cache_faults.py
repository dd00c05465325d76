"""The cache of prebuilt packages as untrusted input: every corruption an unsandboxed build (or a
crash, or a person) can leave in it is rebuilt or reported as CacheUnusable, never an internal
error, a hang or an unbounded read. Real files, FIFOs, device nodes and chattr where possible."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import needs_bwrap, run_double, submission
from timing import MARGIN_S

from lean_mod_add_proof.grading import cache as cachemod
from lean_mod_add_proof.grading import hashing, workdirs
from lean_mod_add_proof.grading.package import LIB_DIR, package_sources

SOURCES = package_sources(b"-- network\n", "-- weights\n")
KEY = "k" * 64
OLEANS = f"{LIB_DIR}/LeanCheckedNetwork"
IS_ROOT = os.geteuid() == 0
#: A cache check's budget in the tests that bound how long a check may take: what must end
#: before it ends at least MARGIN_S before it (issue 41: bounds of 1 s failed under load).
BUDGET_S = 6 * MARGIN_S
#: A sparse file of this size (1 TiB) takes far longer than BUDGET_S to read and hash.
SPARSE_BYTES = 1 << 40


class FakePrebuild:
    """Writes the two outputs `missing_outputs` asks for; counts its calls."""

    def __init__(self, delay: float = 0.0, extra: dict[str, bytes] | None = None) -> None:
        self.calls = 0
        self.delay = delay
        self.extra = extra or {}

    async def __call__(self, where: Path) -> cachemod.PrebuildOutcome:
        self.calls += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        out = where / OLEANS
        out.mkdir(parents=True, exist_ok=True)
        (out / "Network.olean").write_bytes(b"network olean")
        (out / "Weights.olean").write_bytes(b"weights olean " * 100)
        for rel, data in self.extra.items():
            (where / rel).parent.mkdir(parents=True, exist_ok=True)
            (where / rel).write_bytes(data)
        return cachemod.PrebuildOutcome(True)


def temp_dirs(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith((".build-", ".trash-")))


async def fresh(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "cache"
    entry = await cachemod.ensure_entry(root, KEY, SOURCES, FakePrebuild())
    assert entry.status == "built" and entry.pin is not None
    # Released here, as a grade releases its pin (routes/core.py), not whenever the collector
    # gets to it: a pin still held makes a discard leave `.trash-*` for the next call (by design).
    entry.pin.release()
    return root, root / KEY


def write_manifest(entry: Path, text: str | bytes) -> None:
    path = entry / "manifest.json"
    path.unlink()
    path.write_bytes(text.encode() if isinstance(text, str) else text)


def _rewrite_manifest(entry: Path, change: Callable[[dict], None]) -> None:
    data = json.loads((entry / "manifest.json").read_text())
    change(data)
    write_manifest(entry, json.dumps(data))


# Each corruption takes a freshly built entry and breaks it one way.
CORRUPTIONS: dict[str, Callable[[Path, Path], None]] = {
    "manifest-list": lambda e, t: write_manifest(e, "[]"),
    "manifest-null": lambda e, t: write_manifest(e, "null"),
    "manifest-string": lambda e, t: write_manifest(e, '"files"'),
    "manifest-truncated": lambda e, t: write_manifest(e, '{"layout": '),
    "manifest-not-utf8": lambda e, t: write_manifest(e, b"\xff\xfe{}"),
    "manifest-deeply-nested": lambda e, t: write_manifest(e, "[" * 100_000 + "]" * 100_000),
    "manifest-files-list": lambda e, t: _rewrite_manifest(e, lambda d: d.update(files=[])),
    "manifest-bad-digest": lambda e, t: _rewrite_manifest(
        e, lambda d: d["files"].update({k: "symlink" for k in d["files"]})
    ),
    "manifest-no-sizes": lambda e, t: _rewrite_manifest(e, lambda d: d.pop("sizes")),
    "manifest-wrong-key": lambda e, t: _rewrite_manifest(e, lambda d: d.update(key="other")),
    "manifest-too-large": lambda e, t: write_manifest(e, " " * (2 << 20) + "{}"),
    "manifest-missing": lambda e, t: (e / "manifest.json").unlink(),
    "manifest-is-dir": lambda e, t: ((e / "manifest.json").unlink(), (e / "manifest.json").mkdir()),
    "manifest-symlink-dev-zero": lambda e, t: (
        (e / "manifest.json").unlink(),
        (e / "manifest.json").symlink_to("/dev/zero"),
    ),
    "manifest-fifo": lambda e, t: ((e / "manifest.json").unlink(), os.mkfifo(e / "manifest.json")),
    "entry-dangling-symlink": lambda e, t: (shutil.rmtree(e), e.symlink_to(t / "nowhere")),
    "entry-symlink-to-sound-copy": lambda e, t: (
        shutil.copytree(e, t / "elsewhere", symlinks=True),
        shutil.rmtree(e),
        e.symlink_to(t / "elsewhere"),
    ),
    "entry-regular-file": lambda e, t: (shutil.rmtree(e), e.write_text("not an entry")),
    "entry-fifo": lambda e, t: (shutil.rmtree(e), os.mkfifo(e)),
    "entry-empty-dir": lambda e, t: (shutil.rmtree(e), e.mkdir()),
    "package-missing": lambda e, t: shutil.rmtree(e / "package"),
    "package-symlink": lambda e, t: (
        shutil.move(e / "package", t / "pkg"),
        (e / "package").symlink_to(t / "pkg"),
    ),
    "olean-changed": lambda e, t: (e / "package" / OLEANS / "Weights.olean").write_bytes(b"x" * 1400),
    "olean-truncated": lambda e, t: (e / "package" / OLEANS / "Weights.olean").write_bytes(b""),
    "olean-missing": lambda e, t: (e / "package" / OLEANS / "Network.olean").unlink(),
    "olean-fifo": lambda e, t: (
        (e / "package" / OLEANS / "Network.olean").unlink(),
        os.mkfifo(e / "package" / OLEANS / "Network.olean"),
    ),
    "olean-symlink-dev-zero": lambda e, t: (
        (e / "package" / OLEANS / "Network.olean").unlink(),
        (e / "package" / OLEANS / "Network.olean").symlink_to("/dev/zero"),
    ),
    "olean-dir-symlink": lambda e, t: (
        shutil.move(e / "package" / OLEANS, t / "oleans"),
        (e / "package" / OLEANS).symlink_to(t / "oleans"),
    ),
    "extra-file": lambda e, t: (e / "package" / OLEANS / "Evil.olean").write_bytes(b"evil"),
    "extra-dir": lambda e, t: (e / "package" / "extra").mkdir(),
    "extra-empty-dir-at-an-output-path": lambda e, t: (e / "package" / OLEANS / "Submission.olean").mkdir(),
    "manifest-dirs-missing": lambda e, t: _rewrite_manifest(e, lambda d: d.pop("dirs")),
    "manifest-dir-missing-on-disk": lambda e, t: _rewrite_manifest(e, lambda d: d["dirs"].append("ghost")),
    "manifest-unknown-file": lambda e, t: _rewrite_manifest(
        e, lambda d: (d["files"].update(ghost="0" * 64), d["sizes"].update(ghost=0))
    ),
    "deep-nesting": lambda e, t: os.makedirs(e / "package" / "/".join(["d"] * 200)),
    "unreadable-dir": lambda e, t: (e / "package" / OLEANS).chmod(0o000),
}
#: As root a 0o000 directory is still readable: that entry is sound, not corrupt.
_CASES = [
    pytest.param(h, marks=pytest.mark.skipif(IS_ROOT, reason="root reads 0o000 directories"))
    if h == "unreadable-dir"
    else h
    for h in sorted(CORRUPTIONS)
]


@pytest.mark.parametrize("how", _CASES)
async def test_corrupt_entry_is_rebuilt_then_hit(tmp_path: Path, how: str) -> None:
    root, entry = await fresh(tmp_path)
    CORRUPTIONS[how](entry, tmp_path)
    prebuild = FakePrebuild()
    started = time.monotonic()
    rebuilt = await asyncio.wait_for(
        cachemod.ensure_entry(root, KEY, SOURCES, prebuild, deadline=time.monotonic() + BUDGET_S),
        2 * BUDGET_S,
    )
    assert time.monotonic() - started < BUDGET_S - MARGIN_S  # not by running out its budget
    assert (rebuilt.status, prebuild.calls) == ("built", 1)
    assert rebuilt.package == entry / "package" and entry.is_dir() and not entry.is_symlink()
    assert temp_dirs(root) == []
    again = await cachemod.ensure_entry(root, KEY, SOURCES, prebuild)
    assert (again.status, prebuild.calls) == ("hit", 1)
    assert again.manifest == rebuilt.manifest


@pytest.mark.skipif(not IS_ROOT, reason="mknod needs root")
async def test_device_node_manifest_is_never_read(tmp_path: Path) -> None:
    root, entry = await fresh(tmp_path)
    (entry / "manifest.json").unlink()
    os.mknod(entry / "manifest.json", 0o644 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero
    rebuilt = await asyncio.wait_for(cachemod.ensure_entry(root, KEY, SOURCES, FakePrebuild()), BUDGET_S)
    assert rebuilt.status == "built"
    assert temp_dirs(root) == []


async def test_fifo_manifest_with_deadline_returns_promptly(tmp_path: Path) -> None:
    root, entry = await fresh(tmp_path)
    write_manifest(entry, "")
    (entry / "manifest.json").unlink()
    os.mkfifo(entry / "manifest.json")
    started = time.monotonic()
    rebuilt = await cachemod.ensure_entry(
        root, KEY, SOURCES, FakePrebuild(), deadline=time.monotonic() + BUDGET_S
    )
    assert time.monotonic() - started < BUDGET_S - MARGIN_S  # not by running out its budget
    assert rebuilt.status == "built"


def test_sha256_file_refuses_fifo_and_devices(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "zero"
    link.symlink_to("/dev/zero")
    for path in (fifo, link, Path("/dev/zero"), tmp_path):
        with pytest.raises(OSError):
            hashing.sha256_file(path)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_bytes(b"abc")
    (tmp_path / "d" / "fifo").symlink_to(fifo)
    assert hashing.hash_files(tmp_path, ["fifo", "zero", "d/f", "d/fifo", "../x", "nope"]) == {
        "fifo": None,
        "zero": None,
        "d/f": hashing.sha256_file(tmp_path / "d" / "f"),
        "d/fifo": None,
        "../x": None,
        "nope": None,
    }
    (tmp_path / "dirlink").symlink_to(tmp_path / "d")
    assert hashing.hash_files(tmp_path, ["dirlink/f"]) == {"dirlink/f": None}


def test_hash_tree_records_links_and_special_files_without_following(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("s")
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "f").write_text("f")
    os.mkfifo(root / "fifo")
    (root / "zero").symlink_to("/dev/zero")
    (root / "dirlink").symlink_to(tmp_path / "outside")
    started = time.monotonic()
    tree = hashing.hash_tree(root)
    assert time.monotonic() - started < 2 * MARGIN_S  # /dev/zero was not read
    assert tree == {
        "sub/f": hashing.sha256_file(root / "sub" / "f"),
        "fifo": hashing.SPECIAL,
        "zero": hashing.SYMLINK,
        "dirlink": hashing.SYMLINK,
    }
    with pytest.raises(TimeoutError):
        hashing.hash_tree(root, deadline=time.monotonic() - 1)


def test_hash_tree_stops_at_the_deadline_inside_a_large_file(tmp_path: Path) -> None:
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.truncate(SPARSE_BYTES)  # sparse: hashing it all would take many minutes
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        hashing.hash_tree(tmp_path, deadline=time.monotonic() + 1)
    assert time.monotonic() - started < 1 + 2 * MARGIN_S
    stop = threading.Event()
    stop.set()
    with pytest.raises(hashing.Stopped):
        hashing.sha256_file(big, stop=stop)


async def test_check_out_of_time_is_cache_unusable_and_keeps_the_entry(tmp_path: Path) -> None:
    root, _ = await fresh(tmp_path)
    with pytest.raises(cachemod.CacheUnusable, match="cache check ran out of time"):
        await cachemod.ensure_entry(root, KEY, SOURCES, FakePrebuild(), deadline=time.monotonic() - 1)
    again = await cachemod.ensure_entry(
        root, KEY, SOURCES, FakePrebuild(), deadline=time.monotonic() + BUDGET_S
    )
    assert again.status == "hit"


async def test_huge_planted_file_fails_fast_on_its_size(tmp_path: Path) -> None:
    root, entry = await fresh(tmp_path)
    olean = entry / "package" / OLEANS / "Weights.olean"
    olean.unlink()
    with open(olean, "wb") as f:
        f.truncate(SPARSE_BYTES)
    started = time.monotonic()
    rebuilt = await cachemod.ensure_entry(
        root, KEY, SOURCES, FakePrebuild(), deadline=time.monotonic() + BUDGET_S
    )
    # Hashing it would outlast the budget and end as CacheUnusable, not "built".
    assert rebuilt.status == "built" and time.monotonic() - started < BUDGET_S - MARGIN_S


async def test_waiting_for_our_own_build_does_not_count_against_the_deadline(tmp_path: Path) -> None:
    """The second call waits MARGIN_S longer than its check's budget for the first call's build,
    and its check, of a fresh entry, has MARGIN_S (and more) to spare."""
    root = tmp_path / "cache"
    prebuild = FakePrebuild(delay=2 * MARGIN_S + 1)
    deadline = time.monotonic() + MARGIN_S + 1
    first, second = await asyncio.gather(
        cachemod.ensure_entry(root, KEY, SOURCES, prebuild, deadline=deadline),
        cachemod.ensure_entry(root, KEY, SOURCES, prebuild, deadline=deadline),
    )
    assert sorted((first.status, second.status)) == ["built", "hit"] and prebuild.calls == 1


async def test_a_sound_entry_is_a_hit_without_waiting_for_the_keys_lock(tmp_path: Path) -> None:
    """Checking a sound entry takes no lock: concurrent grades of one task do not take turns
    hashing it (the lock is only for building). Held here as a build of this process would."""
    root, _ = await fresh(tmp_path)
    lock = cachemod._lock_for(root, KEY)
    async with lock:
        hit = asyncio.ensure_future(cachemod.ensure_entry(root, KEY, SOURCES, FakePrebuild()))
        done, _ = await asyncio.wait({hit}, timeout=30)  # (a hang guard only: it never waits)
        assert hit in done and hit.result().status == "hit"


def _chattr(flag: str, path: Path) -> bool:
    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


async def test_immutable_corrupt_entry_is_cache_unusable_every_time(tmp_path: Path) -> None:
    root, entry = await fresh(tmp_path)
    (entry / "package" / OLEANS / "Weights.olean").write_bytes(b"corrupt")
    if not _chattr("+i", entry):
        pytest.skip("chattr +i not possible here (see the monkeypatched variant)")
    try:
        for _ in range(2):
            prebuild = FakePrebuild()
            with pytest.raises(cachemod.CacheUnusable, match="corrupt cache entry cannot be removed"):
                await cachemod.ensure_entry(root, KEY, SOURCES, prebuild)
            assert prebuild.calls == 0 and temp_dirs(root) == []
    finally:
        _chattr("-i", entry)
    assert (await cachemod.ensure_entry(root, KEY, SOURCES, FakePrebuild())).status == "built"


async def test_unremovable_corrupt_entry_simulated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, entry = await fresh(tmp_path)
    (entry / "manifest.json").write_text("[]")
    real_rename = os.rename

    def rename(src: object, dst: object, **kw: object) -> None:
        if Path(str(src)) == entry:
            raise PermissionError(1, "Operation not permitted")
        real_rename(src, dst, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(cachemod.os, "rename", rename)
    monkeypatch.setattr(cachemod.workdirs, "remove_tree", lambda path: False)
    with pytest.raises(cachemod.CacheUnusable, match="Operation not permitted"):
        await cachemod.ensure_entry(root, KEY, SOURCES, FakePrebuild())
    assert temp_dirs(root) == [] and entry.is_dir()


async def test_immutable_file_inside_corrupt_entry_still_frees_the_name(tmp_path: Path) -> None:
    root, entry = await fresh(tmp_path)
    olean = entry / "package" / OLEANS / "Weights.olean"
    olean.write_bytes(b"corrupt")
    if not _chattr("+i", olean):
        pytest.skip("chattr +i not possible here")
    try:
        rebuilt = await cachemod.ensure_entry(root, KEY, SOURCES, FakePrebuild())
        assert rebuilt.status == "built"
        (trash,) = [root / n for n in temp_dirs(root)]  # left for sweep_dead, owned by us
        assert trash.name.startswith(".trash-" + workdirs.owner_tag() + "-")
        # A private, empty work root: with None the sweep reads (and clears) the system temp
        # dir, where another run's dead owner's directory may lie (seen on CI, issue 41).
        work_root = tmp_path / "work"
        work_root.mkdir()
        assert workdirs.sweep_dead(work_root, root) == []  # we are alive: not swept
    finally:
        for p in root.glob(".trash-*/package/" + OLEANS + "/Weights.olean"):
            _chattr("-i", p)
    assert workdirs.remove_tree(trash)


async def test_cancelled_build_leaves_no_build_dir(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    for delay in (0.0, 0.001, 0.01, 0.05):
        task = asyncio.create_task(cachemod.ensure_entry(root, KEY, SOURCES, FakePrebuild(delay=0.2)))
        await asyncio.sleep(delay)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.05)
        assert temp_dirs(root) == [] and not (root / KEY).exists()


async def test_prebuild_leaving_a_fifo_fails_cleanly(tmp_path: Path) -> None:
    class FifoPrebuild(FakePrebuild):
        async def __call__(self, where: Path) -> cachemod.PrebuildOutcome:
            outcome = await super().__call__(where)
            os.mkfifo(where / "pipe")
            return outcome

    root = tmp_path / "cache"
    with pytest.raises(cachemod.PrebuildFailed, match="FIFO"):
        await asyncio.wait_for(cachemod.ensure_entry(root, KEY, SOURCES, FifoPrebuild()), 5)
    assert temp_dirs(root) == [] and not (root / KEY).exists()


async def test_unwritable_cache_root_is_cache_unusable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(cachemod.CacheUnusable, match="cannot create the cache directory"):
        await cachemod.ensure_entry(blocker / "cache", KEY, SOURCES, FakePrebuild())


async def test_copy_of_a_hit_is_a_real_copy(tmp_path: Path) -> None:
    root, _ = await fresh(tmp_path)
    hit = await cachemod.ensure_entry(root, KEY, SOURCES, FakePrebuild())
    dest = tmp_path / "grade" / "package"
    dest.parent.mkdir()
    await workdirs.copy_entry(hit.package, dest)
    assert hashing.hash_tree(dest) == hit.manifest
    src_olean = hit.package / OLEANS / "Weights.olean"
    dst_olean = dest / OLEANS / "Weights.olean"
    assert os.stat(dst_olean).st_ino != os.stat(src_olean).st_ino and os.stat(src_olean).st_nlink == 1
    assert os.stat(dst_olean).st_mtime_ns == os.stat(src_olean).st_mtime_ns
    dst_olean.write_bytes(b"written by the build")
    assert (await cachemod.ensure_entry(root, KEY, SOURCES, FakePrebuild())).status == "hit"


async def test_an_unusable_cache_always_says_why(tmp_path: Path) -> None:
    """cache=off comes with the reason (it used to come with an empty cache_note)."""
    from helpers import run_double, submission

    blocker = tmp_path / "file"
    blocker.write_text("")
    res = await run_double(submission(), tmp_path, cache_dir=blocker / "cache")
    assert res.accepted and res.cache == "off", res.reason
    assert res.cache_note.startswith("cache unusable: cannot create the cache directory"), res.cache_note
    assert "Not a directory" in res.cache_note


# ---- pinned entries and host errors (issue 26) -----------------------------------------------


def package_files(fd: int) -> dict[str, bytes]:
    """Every file of a package read through its directory descriptor (as a pinned grade reads)."""
    out: dict[str, bytes] = {}
    for rel in hashing.hash_tree(fd):
        src = hashing.open_beneath(".", rel, root_fd=fd)
        with os.fdopen(src, "rb") as f:
            out[rel] = f.read()
    return out


async def test_an_entry_a_grade_holds_survives_its_discard_and_goes_once_released(tmp_path: Path) -> None:
    """A grade holds its entry (`EntryPin`) from the check on; the entry is then found corrupt
    (a file appended to) and discarded and rebuilt for the next grade. The holder still reads
    every byte it was given, through its descriptor; the discarded copy is deleted only once it
    is released, by the next `ensure_entry`."""
    root, entry_dir = await fresh(tmp_path)
    held = await cachemod.ensure_entry(root, KEY, SOURCES, FakePrebuild())
    assert held.status == "hit" and held.pin is not None and held.pin.held
    before = package_files(held.pin.package_fd)
    with open(entry_dir / "package" / "stray", "wb") as f:  # corrupt: an extra file
        f.write(b"x")
    rebuilt = await cachemod.ensure_entry(root, KEY, SOURCES, FakePrebuild())
    assert rebuilt.status == "built"
    trash = [n for n in temp_dirs(root) if n.startswith(".trash-")]
    assert len(trash) == 1  # kept: a grade still holds it
    after = package_files(held.pin.package_fd)
    assert after == {**before, "stray": b"x"}  # the very directory it held, nothing deleted
    held.pin.release()
    assert not held.pin.held
    again = await cachemod.ensure_entry(root, KEY, SOURCES, FakePrebuild())
    assert again.status == "hit" and temp_dirs(root) == []


@pytest.mark.parametrize("code", [errno.EMFILE, errno.ENFILE, errno.EIO, errno.ENOMEM])
def test_a_host_error_while_matching_a_tree_is_raised_not_a_mismatch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    (tmp_path / "f").write_bytes(b"data")
    manifest = hashing.hash_tree(tmp_path)
    assert hashing.tree_matches(tmp_path, manifest)

    def refused(*_: object, **__: object) -> int:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(hashing, "open_regular", refused)
    with pytest.raises(OSError) as raised:
        hashing.tree_matches(tmp_path, manifest)
    assert raised.value.errno == code
    with pytest.raises(OSError):
        hashing.hash_files(tmp_path, ["f"])


def test_what_the_input_did_is_still_a_mismatch(tmp_path: Path) -> None:
    """A file missing, replaced by a symlink or made unreadable by mode is the input's doing."""
    (tmp_path / "f").write_bytes(b"data")
    manifest = hashing.hash_tree(tmp_path)
    (tmp_path / "f").unlink()
    assert not hashing.tree_matches(tmp_path, manifest)
    assert hashing.hash_files(tmp_path, ["f"]) == {"f": None}
    (tmp_path / "f").symlink_to("/etc/hostname")
    assert not hashing.tree_matches(tmp_path, manifest)
    assert hashing.hash_files(tmp_path, ["f"]) == {"f": None}


@pytest.mark.parametrize("times", [1, cachemod.CHECK_ATTEMPTS])
async def test_a_host_error_in_a_check_is_retried_never_a_discard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, times: int
) -> None:
    root, entry_dir = await fresh(tmp_path)
    ident = os.stat(entry_dir).st_ino
    real = cachemod.read_small_file
    calls = [0]

    def flaky(*args: object, **kwargs: object) -> bytes:
        calls[0] += 1
        if calls[0] <= times:
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(cachemod, "read_small_file", flaky)
    prebuild = FakePrebuild()
    if times < cachemod.CHECK_ATTEMPTS:
        hit = await cachemod.ensure_entry(root, KEY, SOURCES, prebuild)
        assert hit.status == "hit"
    else:
        with pytest.raises(OSError) as raised:
            await cachemod.ensure_entry(root, KEY, SOURCES, prebuild)
        assert raised.value.errno == errno.EMFILE
    assert prebuild.calls == 0 and os.stat(entry_dir).st_ino == ident  # never discarded
    assert temp_dirs(root) == []


HOLDER = """
import asyncio, sys
from pathlib import Path
from lean_mod_add_proof.grading import cache
sys.path.insert(0, sys.argv[2])
from test_cache_faults import KEY, SOURCES, FakePrebuild
entry = asyncio.run(cache.ensure_entry(Path(sys.argv[1]), KEY, SOURCES, FakePrebuild()))
assert entry.status == "hit" and entry.pin is not None
print("held", flush=True)
sys.stdin.read()  # holds the entry until the parent closes our stdin (or kills us)
"""


async def test_an_entry_held_by_another_process_is_not_deleted_under_it(tmp_path: Path) -> None:
    """The hold is a `flock`, so it works across grader processes: a discard in this process
    leaves the entry another process holds, and deletes it once that process is gone."""
    root, entry_dir = await fresh(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root), str(Path(__file__).parent)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        (entry_dir / "manifest.json").write_text("[]")  # corrupt: the next check discards it
        assert (await cachemod.ensure_entry(root, KEY, SOURCES, FakePrebuild())).status == "built"
        trash = [n for n in temp_dirs(root) if n.startswith(".trash-")]
        assert len(trash) == 1 and (root / trash[0] / "package").is_dir()
    finally:
        holder.kill()
        holder.wait()
    assert (await cachemod.ensure_entry(root, KEY, SOURCES, FakePrebuild())).status == "hit"
    assert temp_dirs(root) == []


@pytest.mark.parametrize("code", [errno.ENOLCK, errno.EOPNOTSUPP])
async def test_a_cache_without_flock_is_unusable_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    """Where the cache's filesystem cannot lock, no grade can hold an entry: the cache is not
    used (the caller builds in place), rather than read an entry a discard could delete."""
    root, _ = await fresh(tmp_path)

    def no_locks(fd: int, how: int) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(cachemod.fcntl, "flock", no_locks)
    with pytest.raises(cachemod.CacheUnusable, match="cannot lock an entry"):
        await cachemod.ensure_entry(root, KEY, SOURCES, FakePrebuild())
    shutil.rmtree(root)
    with pytest.raises(cachemod.CacheUnusable, match="cannot lock an entry"):
        await cachemod.ensure_entry(root, KEY, SOURCES, FakePrebuild())  # a fresh build too
    assert temp_dirs(root) == []


async def test_cancelled_checks_leave_no_entry_held(tmp_path: Path) -> None:
    """A check cancelled at any point holds nothing afterwards: no descriptor stays open, and a
    discard can delete the entry at once."""
    root, entry_dir = await fresh(tmp_path)
    fds = len(os.listdir("/proc/self/fd"))
    for delay in (0.0, 0.0005, 0.001, 0.002, 0.005, 0.01):
        task = asyncio.create_task(cachemod.ensure_entry(root, KEY, SOURCES, FakePrebuild()))
        await asyncio.sleep(delay)
        task.cancel()
        try:
            entry = await task
        except asyncio.CancelledError:
            continue
        assert entry.pin is not None
        entry.pin.release()
    assert len(os.listdir("/proc/self/fd")) <= fds
    (entry_dir / "manifest.json").write_text("[]")
    assert (await cachemod.ensure_entry(root, KEY, SOURCES, FakePrebuild())).status == "built"
    assert temp_dirs(root) == []  # the discarded entry was deleted at once: nobody held it


# ---- the copy into a grade checks what it copies (issue 39 item 3) -------------------------------


@pytest.mark.parametrize("mode", ["off", pytest.param("on", marks=needs_bwrap)])
@pytest.mark.parametrize("change", ["rewritten", "added", "removed"])
async def test_an_entry_changed_between_its_check_and_the_copy_is_not_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, change: str
) -> None:
    """The cache entry is checked (its pin's hash), then a trusted output changes before the grade
    copies it (here the test changes it; a disk fault or another process could). The copy used to
    take whatever was there, and the change was found only after the build, as "trusted file
    changed during the build": a rejection of a correct proof. The copy now hashes what it copies
    against the manifest: a difference is the host's, before anything of the submission ran."""
    assert (await run_double(submission(), tmp_path, sandbox=mode)).accepted  # the entry exists
    real = cachemod.ensure_entry

    async def changed_after_the_check(*args: object, **kwargs: object) -> cachemod.CacheEntry:
        entry = await real(*args, **kwargs)  # type: ignore[arg-type]
        weights = next(entry.package.rglob("Weights.olean"))
        if change == "rewritten":
            with open(weights, "r+b") as f:  # same size, in place
                first = f.read(1)
                f.seek(0)
                f.write(bytes([first[0] ^ 1]))
        elif change == "added":
            weights.with_name("Planted.olean").write_bytes(b"x")
        else:
            weights.with_name("Weights.ilean").unlink()
        return entry

    monkeypatch.setattr(cachemod, "ensure_entry", changed_after_the_check)
    res = await run_double(submission(), tmp_path, sandbox=mode)
    assert res.judged is False and not res.accepted, res.reason
    assert res.reason.startswith("could not judge: the cache entry changed while it was copied"), res.reason
    assert res.failed_stage == "build"
    assert not any(c.argv and c.argv[-1].endswith("Submission.lean") for c in res.commands)  # no build ran
