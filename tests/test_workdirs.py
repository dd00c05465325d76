"""Work directories: the cancellable copy of a cache entry, robust removal, and sweeping what a
killed grader left behind. Real files, real threads, real processes killed with SIGKILL."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest
from timing import MARGIN_S

from lean_mod_add_proof.grading import hashing, workdirs

IS_ROOT = os.geteuid() == 0
REPO = Path(__file__).resolve().parents[1]


def make_tree(root: Path, files: int = 320, size: int = 128 << 10) -> None:
    """40 MiB in 320 files over 16 directories (incompressible, so the copy does real work)."""
    blob = os.urandom(size)
    for i in range(files):
        path = root / f"d{i % 16}" / f"sub{i % 3}" / f"f{i}.olean"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(blob[i:] + blob[:i])


@pytest.fixture(scope="module")
def big_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("entry") / "package"
    make_tree(src)
    return src


# ---- copy_entry and cancellation ---------------------------------------------------------------


async def test_cancelled_copies_leave_no_directories(big_tree: Path, tmp_path: Path) -> None:
    """The grade's pattern: new_grade_dir, copy the entry, remove_tree in `finally` (synchronous,
    as during cancellation). 8 concurrent grades cancelled at random over 6 rounds: nothing may
    be left, also after the worker threads had time to run on."""
    work = tmp_path / "work"
    loop = asyncio.get_running_loop()
    started = time.monotonic()
    await workdirs.copy_entry(big_tree, tmp_path / "probe")
    one_copy = time.monotonic() - started
    workdirs.remove_tree(tmp_path / "probe")
    completed = cancelled = 0
    rng = random.Random(1234)

    async def one_grade() -> None:
        nonlocal completed
        grade_dir = workdirs.new_grade_dir(work)
        try:
            await workdirs.copy_entry(big_tree, grade_dir / "package")
            assert len(hashing.hash_tree(grade_dir / "package")) == 320
            completed += 1
        finally:
            workdirs.remove_tree(grade_dir)

    for _ in range(6):
        tasks = [asyncio.create_task(one_grade()) for _ in range(8)]
        for task in tasks:
            loop.call_later(rng.uniform(0, 4 * one_copy), task.cancel)
        for outcome in await asyncio.gather(*tasks, return_exceptions=True):
            if isinstance(outcome, asyncio.CancelledError):
                cancelled += 1
            elif isinstance(outcome, BaseException):
                raise outcome
        assert list(work.iterdir()) == []
    await asyncio.sleep(0.3)  # a thread that outlived its cancellation would write now
    assert list(work.iterdir()) == []
    assert cancelled >= 10, (completed, cancelled)


async def test_repeated_cancellation_still_waits_for_the_copy(big_tree: Path, tmp_path: Path) -> None:
    dest = tmp_path / "package"
    task = asyncio.create_task(workdirs.copy_entry(big_tree, dest))
    await asyncio.sleep(0.01)
    for _ in range(5):
        task.cancel()
        await asyncio.sleep(0)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not dest.exists()
    await asyncio.sleep(0.2)
    assert not dest.exists()


async def test_copy_entry_copies_bytes_modes_and_mtimes(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "a" / "b").mkdir(parents=True)
    (src / "a" / "b" / "x.olean").write_bytes(b"x" * 10_000_000)
    (src / "top").write_bytes(b"")
    (src / "run").write_bytes(b"#!/bin/sh\n")
    os.chmod(src / "run", 0o4755)  # a set-uid bit in the cache is not copied
    os.utime(src / "top", ns=(1_000_000_000, 1_234_567_891_000))
    dest = tmp_path / "dest"
    await workdirs.copy_entry(src, dest)
    assert hashing.hash_tree(dest) == hashing.hash_tree(src)
    assert os.stat(dest / "top").st_mtime_ns == 1_234_567_891_000
    assert stat.S_IMODE(os.stat(dest / "run").st_mode) == 0o755
    assert os.stat(dest / "a" / "b" / "x.olean").st_ino != os.stat(src / "a" / "b" / "x.olean").st_ino
    assert os.stat(src / "a" / "b" / "x.olean").st_nlink == 1  # copied, never hard-linked


def _plant_fifo(src: Path) -> None:
    os.mkfifo(src / "d" / "pipe")


def _plant_link(src: Path) -> None:
    (src / "d" / "link").symlink_to("/etc/passwd")


def _plant_dir_link(src: Path) -> None:
    (src / "d" / "dirlink").symlink_to("/etc")


def _plant_device(src: Path) -> None:
    os.mknod(src / "d" / "zero", 0o644 | stat.S_IFCHR, os.makedev(1, 5))


@pytest.mark.parametrize(
    "plant",
    [
        _plant_fifo,
        _plant_link,
        _plant_dir_link,
        pytest.param(_plant_device, marks=pytest.mark.skipif(not IS_ROOT, reason="mknod needs root")),
    ],
)
async def test_copy_entry_refuses_links_and_special_files(tmp_path: Path, plant: object) -> None:
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    (src / "d" / "f").write_text("f")
    plant(src)  # type: ignore[operator]
    dest = tmp_path / "dest"
    with pytest.raises(hashing.NotRegularFile):  # (following /dev/zero or a FIFO would hang)
        await asyncio.wait_for(workdirs.copy_entry(src, dest), 6 * MARGIN_S)
    assert not dest.exists()


async def test_copy_entry_never_touches_an_existing_dest(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "dest").mkdir()
    (tmp_path / "dest" / "keep").write_text("mine")
    with pytest.raises(FileExistsError):
        await workdirs.copy_entry(tmp_path / "src", tmp_path / "dest")
    assert (tmp_path / "dest" / "keep").read_text() == "mine"


# ---- remove_tree ---------------------------------------------------------------------------------


def _hostile_tree(root: Path, outside: Path) -> None:
    (root / "locked" / "inner").mkdir(parents=True)
    (root / "locked" / "inner" / "f").write_text("x")
    (root / "readonly").mkdir()
    (root / "readonly" / "g").write_text("y")
    os.mkfifo(root / "pipe")
    (root / "escape").symlink_to(outside)
    deep = root / "deep"
    deep.mkdir()
    fd = os.open(deep, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(3000):  # deeper than recursion limits and PATH_MAX
        os.mkdir("d", dir_fd=fd)
        nxt = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nxt
    os.close(fd)
    os.chmod(root / "readonly", 0o555)
    os.chmod(root / "locked" / "inner", 0o000)
    os.chmod(root / "locked", 0o000)


def test_remove_tree_handles_a_hostile_tree(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep")
    root = tmp_path / "grade"
    _hostile_tree(root, outside)
    assert workdirs.remove_tree(root) is True
    assert not os.path.lexists(root)
    assert (outside / "precious").read_text() == "keep"


@pytest.mark.skipif(not IS_ROOT, reason="needs root to drop to another user")
def test_remove_tree_opens_up_locked_directories_as_their_owner() -> None:
    """As root, modes never stop a removal: drop to `nobody` in a forked child to prove the
    chmod path works for an ordinary user."""
    nobody = 65534
    base = Path(tempfile.mkdtemp())
    try:
        outside = base / "outside"
        outside.mkdir()
        (outside / "precious").write_text("keep")
        root = base / "grade"
        _hostile_tree(root, outside)
        subprocess.run(["chown", "-R", "-h", f"{nobody}:{nobody}", str(base)], check=True)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            code = 2
            try:
                os.setgid(nobody)
                os.setuid(nobody)
                with contextlib.suppress(PermissionError):
                    os.listdir(root / "locked")
                    os._exit(3)  # the test would prove nothing: modes do not bind this user
                code = 0 if workdirs.remove_tree(root) else 1
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert not os.path.lexists(root)
        assert (outside / "precious").read_text() == "keep"
    finally:
        workdirs.remove_tree(base)


def test_remove_tree_of_files_links_and_nothing(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (tmp_path / "file").write_text("x")
    (tmp_path / "link").symlink_to(target)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    for name in ("file", "link", "dangling", "missing"):
        assert workdirs.remove_tree(tmp_path / name) is True
        assert not os.path.lexists(tmp_path / name)
    assert target.is_dir()


def test_remove_tree_reports_an_immutable_file(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    stuck = tmp_path / "d" / "stuck"
    stuck.write_text("x")
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(stuck)]).returncode:
        pytest.skip("chattr +i not possible here")
    try:
        assert workdirs.remove_tree(tmp_path / "d") is False
    finally:
        subprocess.run(["chattr", "-i", str(stuck)], check=False)
    assert workdirs.remove_tree(tmp_path / "d") is True


# ---- owner records and sweep_dead ----------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from lean_mod_add_proof.grading import workdirs
    work, cache = Path(sys.argv[1]), Path(sys.argv[2])
    grade = workdirs.new_grade_dir(work)
    locked = grade / "package" / "locked"
    locked.mkdir(parents=True)
    (locked / "f").write_text("x")
    os.chmod(locked, 0)
    build = workdirs.make_owned_dir(cache, workdirs.CACHE_BUILD_PREFIX)
    (build / "package").mkdir()
    trash = cache / workdirs.owned_name(workdirs.CACHE_TRASH_PREFIX)
    trash.write_text("a discarded entry that was a regular file")
    print(grade, build, trash, sep="\\n", flush=True)
    time.sleep(120)
    """
)


def _spawn(work: Path, cache: Path) -> tuple[subprocess.Popen[str], list[Path]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(work), str(cache)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert proc.stdout is not None
    paths = [Path(proc.stdout.readline().strip()) for _ in range(3)]
    assert all(os.path.lexists(p) for p in paths), paths
    return proc, paths


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def test_sweep_removes_only_what_dead_graders_owned(tmp_path: Path) -> None:
    work, cache = tmp_path / "work", tmp_path / "cache"
    work.mkdir()
    cache.mkdir()
    dead, dead_paths = _spawn(work, cache)
    live, live_paths = _spawn(work, cache)
    try:
        dead.kill()
        end = time.monotonic() + 5
        while _state(dead.pid) not in ("Z", None) and time.monotonic() < end:
            time.sleep(0.01)
        assert _state(dead.pid) == "Z"  # killed, not yet reaped: a zombie is dead too

        ours = workdirs.new_grade_dir(work)
        our_build = workdirs.make_owned_dir(cache, workdirs.CACHE_BUILD_PREFIX)
        kept = workdirs.new_grade_dir(work, keep=True)
        ns, pid, start = workdirs.parse_owner(ours.name, (workdirs.GRADE_DIR_PREFIX,)) or (0, 0, 0)
        assert pid == os.getpid()
        reused = work / f"{workdirs.GRADE_DIR_PREFIX}{ns}-{pid}-{start + 1}-abcd1234"  # pid reused
        other_ns = work / f"{workdirs.GRADE_DIR_PREFIX}{ns + 1}-{dead.pid}-1-abcd1234"
        foreign = [
            work / f"{workdirs.GRADE_DIR_PREFIX}k2j4x_9a",  # an older version's name: no record
            work / "unrelated-1-2-3-abcd",
            work / f"{ns}-{dead.pid}-1-abcd1234",  # a record but not our prefix
            cache / ".build-legacy",
            cache / ".trash-x",
            cache / ("k" * 64),  # a cache entry
            other_ns,
        ]
        for path in [reused, *foreign]:
            path.mkdir()
        removed = workdirs.sweep_dead(work, cache)
        assert sorted(removed) == sorted([*dead_paths, reused])
        for path in [*dead_paths, reused]:
            assert not os.path.lexists(path)
        for path in [*live_paths, ours, our_build, kept, *foreign]:
            assert os.path.lexists(path), path
        dead.wait()
        assert workdirs.sweep_dead(work, cache) == []  # reaped: still nothing of the living
    finally:
        for proc in (dead, live):
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGKILL)
            proc.wait()
    assert sorted(workdirs.sweep_dead(work, cache)) == sorted(live_paths)


def test_owner_records(tmp_path: Path) -> None:
    grade = workdirs.new_grade_dir(tmp_path)
    assert grade.name.startswith(workdirs.GRADE_DIR_PREFIX + workdirs.owner_tag() + "-")
    owner = workdirs.parse_owner(grade.name, (workdirs.GRADE_DIR_PREFIX,))
    assert owner is not None and owner[1] == os.getpid()
    assert workdirs.owner_is_dead(*owner) is False
    kept = workdirs.new_grade_dir(tmp_path, keep=True)
    assert kept.name.startswith(workdirs.GRADE_DIR_PREFIX)
    assert workdirs.parse_owner(kept.name, (workdirs.GRADE_DIR_PREFIX,)) is None
    assert stat.S_IMODE(os.stat(grade).st_mode) == 0o700


# ---- removal off the event loop ------------------------------------------------------------------


async def test_removal_off_the_loop_finishes_before_a_cancellation_propagates(tmp_path: Path) -> None:
    """The end of every grade removes its directory in a thread (the loop stays free), and a
    cancelled grade still leaves nothing: the cancellation waits for the removal (twice over)."""
    tree = tmp_path / "grade"
    make_tree(tree, files=400, size=4 << 10)
    job = asyncio.ensure_future(workdirs.remove_tree_off_loop(tree))
    await asyncio.sleep(0)
    job.cancel()
    await asyncio.sleep(0)
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    assert not tree.exists()


async def test_removal_falls_back_to_removing_on_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No thread to run it (the executor is shut down): removed synchronously, not left."""
    tree = tmp_path / "grade"
    make_tree(tree, files=20, size=1 << 10)

    async def no_executor(*_: object, **__: object) -> None:
        raise RuntimeError("cannot schedule new futures after shutdown")

    monkeypatch.setattr(workdirs, "run_in_thread", no_executor)
    assert await workdirs.remove_tree_off_loop(tree) is True
    assert not tree.exists()


async def test_removal_of_a_closed_coroutine_still_happens(tmp_path: Path) -> None:
    """The loop going away closes an unfinished grade's coroutine (GeneratorExit at its await):
    the tree is removed synchronously before the coroutine ends."""
    tree = tmp_path / "grade"
    make_tree(tree, files=200, size=4 << 10)
    coro = workdirs.remove_tree_off_loop(tree)
    coro.send(None)  # it is now waiting for its thread
    coro.close()
    assert not tree.exists()
    await asyncio.sleep(0.2)  # (the thread may still be finishing its own, concurrent removal)


def test_a_nearly_full_work_disk_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert workdirs.disk_full(tmp_path) is None or "full" in str(workdirs.disk_full(tmp_path))
    real = os.statvfs(tmp_path)

    class Full:
        f_bavail, f_frsize, f_files, f_favail = 3, 1 << 20, real.f_files, real.f_favail

    class NoInodes(Full):
        f_bavail, f_favail = 1 << 20, 0

    monkeypatch.setattr(workdirs.os, "statvfs", lambda _: Full)
    assert workdirs.disk_full(tmp_path) == f"the work disk is full (3 MiB free under {tmp_path})"
    monkeypatch.setattr(workdirs.os, "statvfs", lambda _: NoInodes)
    assert workdirs.disk_full(tmp_path) == f"the work disk is full (no free inode under {tmp_path})"


def test_work_scope_is_the_swept_root() -> None:
    assert workdirs.work_scope(None) == os.path.abspath(tempfile.gettempdir())
    assert workdirs.work_scope(Path("rel/w")) == os.path.abspath("rel/w")


def test_a_dead_owners_trash_that_a_live_grade_holds_is_left_until_released(tmp_path: Path) -> None:
    """A discarded cache entry (`.trash-*`) whose discarder died while another grade still reads
    it (a shared flock, `cache.EntryPin`) is not swept; once released it is."""
    cache = tmp_path / "cache"
    cache.mkdir()
    trash = cache / f"{workdirs.CACHE_TRASH_PREFIX}{workdirs._pid_namespace()}-{2**22 + 7}-1-abcd1234"
    (trash / "package").mkdir(parents=True)
    (trash / "package" / "Network.olean").write_bytes(b"still read")
    assert workdirs.owner_is_dead(*(workdirs.parse_owner(trash.name, workdirs.CACHE_TEMP_PREFIXES) or ()))
    work_root = tmp_path / "work"  # private: the system temp dir may hold others' dead owners
    work_root.mkdir()
    reader = os.open(trash, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(reader, fcntl.LOCK_SH)
        assert workdirs.sweep_dead(work_root, cache) == []
        assert not workdirs.remove_unless_pinned(trash)
        assert (trash / "package" / "Network.olean").read_bytes() == b"still read"
    finally:
        os.close(reader)
    assert workdirs.sweep_dead(work_root, cache) == [trash]
    assert not os.path.lexists(trash)
    assert workdirs.remove_unless_pinned(trash)  # nothing there: done


def test_a_pinned_entry_copies_through_its_descriptor(tmp_path: Path) -> None:
    src = tmp_path / "entry" / "package"
    (src / "d").mkdir(parents=True)
    (src / "d" / "f").write_bytes(b"bytes")
    fd = os.open(src, os.O_RDONLY | os.O_DIRECTORY)
    try:
        src.parent.rename(tmp_path / "moved-aside")  # the path no longer names it
        for n in range(2):  # the descriptor stays usable (scandir rewinds a directory fd)
            workdirs.copy_package(fd, tmp_path / f"copy{n}")
            assert (tmp_path / f"copy{n}" / "d" / "f").read_bytes() == b"bytes"
    finally:
        os.close(fd)


# ---- a finished grade's directory, removed by the reaper threads ---------------------------------


async def test_a_queued_removal_ends_and_is_counted_until_then(tmp_path: Path) -> None:
    """`remove_grade_dir` returns before the tree is gone; `wait_reaped` waits for it."""
    trees = [tmp_path / f"grade{i}" for i in range(4)]
    for tree in trees:
        make_tree(tree, files=200, size=4 << 10)
    for tree in trees:
        await workdirs.remove_grade_dir(tree)
    assert workdirs.wait_reaped(timeout=30)
    assert [t for t in trees if t.exists()] == []


async def test_past_the_backlog_a_grade_removes_its_own_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full backlog (here: no room at all) or no reaper thread: the grade removes it itself,
    so it is gone when `remove_grade_dir` returns."""
    tree = tmp_path / "grade"
    make_tree(tree, files=20, size=1 << 10)
    monkeypatch.setattr(workdirs, "REAP_BACKLOG", 0)
    assert workdirs.reap_later(tree) is False
    await workdirs.remove_grade_dir(tree)
    assert not tree.exists()


def test_the_backlog_is_bounded_by_what_its_directories_may_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each queued directory counts at its grade's caps (`charge_bytes`); past REAP_BACKLOG_BYTES
    the next one is refused (the grade removes it itself), but one is always let in. doctor
    budgets the disk with `reap_backlog`, the same bound (issue 39's open item)."""
    release = threading.Event()
    monkeypatch.setattr(workdirs, "remove_tree", lambda _path: release.wait(30))
    gib = 1 << 30
    try:
        assert workdirs.reap_later(tmp_path / "a", 20 * gib)  # alone: let in, though past the bound
        assert not workdirs.reap_later(tmp_path / "b", 1)
    finally:
        release.set()
    assert workdirs.wait_reaped(timeout=30)
    release.clear()
    try:
        assert workdirs.reap_later(tmp_path / "a", 4 * gib) and workdirs.reap_later(tmp_path / "b", 4 * gib)
        assert not workdirs.reap_later(tmp_path / "c", 1)  # 8 GiB queued: full
    finally:
        release.set()
    assert workdirs.wait_reaped(timeout=30)
    assert workdirs.reap_backlog(4 * gib) == 2 and workdirs.reap_backlog(20 * gib) == 1
    assert (
        workdirs.reap_backlog(1) == workdirs.REAP_BACKLOG
        and workdirs.reap_backlog(0) == workdirs.REAP_BACKLOG
    )


def test_queued_removals_end_before_the_interpreter_exits(tmp_path: Path) -> None:
    """Nothing queued is abandoned at a normal exit (the executor's threads are joined after
    their queue is empty), even when the process exits right after queueing."""
    trees = [tmp_path / f"grade{i}" for i in range(8)]
    for tree in trees:
        make_tree(tree, files=100, size=4 << 10)
    code = (
        "import sys; from pathlib import Path\n"
        "from lean_mod_add_proof.grading import workdirs\n"
        "queued = [workdirs.reap_later(Path(p)) for p in sys.argv[1:]]\n"
        "assert all(queued), queued\n"
    )
    subprocess.run([sys.executable, "-c", code, *map(str, trees)], check=True, timeout=60)
    assert [t for t in trees if t.exists()] == []


# ---- the self-test's directories (issue 39 item 4) --------------------------------------------------

SELFTEST_CHILD = textwrap.dedent(
    """
    import asyncio, sys
    sys.path.insert(0, sys.argv[2])
    from pathlib import Path
    from helpers import double_config, grade_task, submission
    from lean_mod_add_proof.grading.grader import grade
    # The first grade of this process runs the self-test first (its canaries on the double).
    asyncio.run(grade(submission(), grade_task(), double_config(Path(sys.argv[1]))))
    """
)


def _selftest_dirs(work: Path) -> list[Path]:
    return sorted(p for p in work.glob("lean-mod-add-proof-selftest-*")) if work.exists() else []


def test_a_grader_killed_during_its_first_selftest_has_its_directory_swept(tmp_path: Path) -> None:
    """A grader SIGKILLed while its first self-test runs leaves its `lean-mod-add-proof-selftest-*`
    directory in the work root. It used to stay there forever (the next grade swept only dead
    `...-grade-*` directories); it is now swept by the same rule: its owner is dead."""
    from helpers import double_config, grade_task, submission

    from lean_mod_add_proof.grading import selftest
    from lean_mod_add_proof.grading.grader import grade

    work = tmp_path / "work"
    child = subprocess.Popen(
        [sys.executable, "-c", SELFTEST_CHILD, str(tmp_path), str(REPO / "tests")], cwd=REPO
    )
    try:
        end = time.monotonic() + 120
        while not _selftest_dirs(work):
            assert child.poll() is None and time.monotonic() < end, "the self-test never started"
            time.sleep(0.02)
        time.sleep(0.3)  # well into its canaries
        child.kill()
        child.wait()
    finally:
        with contextlib.suppress(ProcessLookupError):
            child.kill()
        child.wait()
    left = _selftest_dirs(work)
    assert len(left) == 1, left
    selftest.forget()
    res = asyncio.run(grade(submission(), grade_task(), double_config(tmp_path)))
    assert res.accepted, res.reason
    assert workdirs.wait_reaped(timeout=30)
    assert _selftest_dirs(work) == [], "the dead grader's self-test directory is still there"
