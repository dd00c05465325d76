"""The per-grade caps on a command's whole process tree, the kill of that tree, and how signals
are reported: real processes (sh, python, dd, sleep), with and without bubblewrap. No Lean."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import mmap
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import types
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from helpers import processes_with

from lean_mod_add_proof.grading import process, sandbox
from lean_mod_add_proof.grading.process import Limits, child_env, exit_status, find_prlimit, run_command
from lean_mod_add_proof.grading.process import commands as commandsmod
from lean_mod_add_proof.grading.process import discovery as discoverymod
from lean_mod_add_proof.grading.process import limits as limitsmod
from lean_mod_add_proof.grading.process import proc as procmod
from lean_mod_add_proof.grading.process import watcher as watchermod

PRLIMIT = find_prlimit()
PROBE = sandbox.probe_sandbox()
#: A Python the sandbox can see (it binds only the system directories).
SYSTEM_PYTHON = next((p for p in ("/usr/bin/python3", "/bin/python3") if os.path.exists(p)), None)

pytestmark = pytest.mark.skipif(PRLIMIT is None, reason="prlimit (util-linux) is not installed")
needs_bwrap = pytest.mark.skipif(not PROBE.available, reason=f"sandbox variant: {PROBE.reason}")
MODES = [pytest.param(False, id="plain"), pytest.param(True, id="bwrap", marks=needs_bwrap)]


def marker() -> str:
    """A unique `sleep` duration: its argv finds the process in /proc."""
    return f"{1000 + uuid.uuid4().int % 10**6 / 10**6 + 1e-7:.7f}"


def left_over(mark: str) -> list[int]:
    """The processes carrying `mark` still alive, killed now (so a failing test leaves none to
    outlive it): a test asserts this is empty."""
    survivors = processes_with(mark)
    for pid in survivors:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
    return survivors


def limits(tmp_path: Path, **overrides: object) -> Limits:
    base: dict[str, object] = {
        "memory_mb": 2048,
        "max_processes": 64,
        "max_disk_mb": 1024,
        "max_file_mb": 512,
        "disk_paths": (tmp_path,),
    }
    base.update(overrides)
    return Limits(**base)  # type: ignore[arg-type]


def python_for(sandboxed: bool) -> str:
    if sandboxed:
        if SYSTEM_PYTHON is None:
            pytest.skip("no /usr/bin/python3 for use inside the sandbox")
        return SYSTEM_PYTHON
    return SYSTEM_PYTHON or sys.executable


async def run(
    tmp_path: Path,
    argv: Sequence[str],
    *,
    sandboxed: bool = False,
    lim: Limits | None = None,
    seconds: float = 30.0,
) -> process.CommandOutcome:
    """Run `argv` the way the pipeline does: under prlimit, optionally inside bwrap, with the
    grade's package and tmp directories under `tmp_path`."""
    pkg, tmp = tmp_path / "package", tmp_path / "tmp"
    pkg.mkdir(exist_ok=True)
    tmp.mkdir(exist_ok=True)
    env = child_env(pkg, None, Path("/tmp") if sandboxed else tmp)
    full = list(argv)
    if sandboxed:
        assert PROBE.bwrap is not None
        prefix = sandbox.bwrap_argv(
            PROBE.bwrap,
            layout=sandbox.host_layout(),
            toolchain_dir=None,
            package_dir=pkg,
            readonly_files=(),
            env=env,
            tmp_dir=tmp,
        )
        full = prefix + full
    return await run_command(
        full,
        stage="build",
        cwd=pkg,
        env=env,
        deadline=time.monotonic() + seconds,
        output_cap_bytes=1 << 16,
        tail_chars=2000,
        limits=lim if lim is not None else limits(tmp_path),
        prlimit=PRLIMIT,
        record_argv=argv,
        sandboxed=sandboxed,
    )


def hog(python: str, mib: int, mark: str) -> str:
    """Shell text starting a python that holds `mib` MiB of touched memory, then sleeps."""
    code = f"import time; x = b'a' * ({mib} << 20); time.sleep({mark})"
    return f'{python} -S -c "{code}" &'


async def release_once_seen(go: Path, seen: Callable[[watchermod._Watcher], bool]) -> None:
    """Create `go` (which the command waits for) once the watcher of the one command running
    has seen what the test needs (`seen`), however long a loaded host makes that: a test whose
    command held its state for a fixed time failed when no poll came within it."""
    end = time.monotonic() + 60
    started = False
    while time.monotonic() < end:
        trees = list(discoverymod._discovery._trees.values())
        if trees and all(seen(t) for t in trees):  # type: ignore[arg-type]
            break
        if started and not trees:
            break  # the command is over already (a cap stopped it: the test says so)
        started |= bool(trees)
        await asyncio.sleep(0.02)
    go.touch()


# ---- memory ----------------------------------------------------------------------------------


@pytest.mark.parametrize("sandboxed", MODES)
async def test_memory_cap_sums_the_whole_tree(tmp_path: Path, sandboxed: bool) -> None:
    """Three children of 100 MiB each, every one far below the 200 MiB cap: only their sum is
    over it, and the whole tree is stopped with the memory reason."""
    py, mark = python_for(sandboxed), marker()
    script = " ".join(hog(py, 100, mark) for _ in range(3)) + " wait"
    out = await run(tmp_path, ["sh", "-c", script], sandboxed=sandboxed, lim=limits(tmp_path, memory_mb=200))
    assert out.limit_exceeded is not None
    found = re.fullmatch(r"memory cap exceeded \((\d+) MiB > 200 MiB\)", out.limit_exceeded)
    assert found and int(found.group(1)) > 200
    assert out.record.exit_code is None and out.record.signal == 9
    assert not out.timed_out and out.record.seconds < 5
    assert out.peak_rss_mb > 200
    assert processes_with(mark) == []


async def test_memory_under_the_cap_reports_the_summed_peak(tmp_path: Path) -> None:
    """Six children of 60 MiB under a 512 MiB cap run to the end; the peak is their sum."""
    py, mark, go = python_for(False), marker(), tmp_path / "go"
    code = f"import os, time; x = b'a' * (60 << 20)\nwhile not os.path.exists('{go}'): time.sleep(0.02)"
    script = " ".join(f'{py} -S -c "{code}" &' for _ in range(6)) + f" wait; echo {mark}"
    out, _ = await asyncio.gather(
        run(tmp_path, ["sh", "-c", script], lim=limits(tmp_path, memory_mb=512)),
        release_once_seen(go, lambda t: t.peak_rss >= 6 * 60 << 20),
    )
    assert out.limit_exceeded is None, out.limit_exceeded
    assert out.record.exit_code == 0 and out.record.signal is None
    assert 6 * 60 <= out.peak_rss_mb < 512


async def test_threads_are_not_counted_as_processes_or_memory(tmp_path: Path) -> None:
    """A thread's /proc/<tid>/stat shows its process's parent and the whole process's RSS:
    counted as a process it would multiply the memory and trip the process cap."""
    py, go = python_for(False), tmp_path / "go"
    code = (  # the threads first: a poll that sees the memory sees them too
        "import os, threading, time; e = threading.Event(); "
        "ts = [threading.Thread(target=e.wait) for _ in range(12)]; [t.start() for t in ts]; "
        f"x = b'a' * (100 << 20)\nwhile not os.path.exists('{go}'): time.sleep(0.02)\n"
        "e.set(); print('done')"
    )
    out, _ = await asyncio.gather(
        run(tmp_path, [py, "-S", "-c", code], lim=limits(tmp_path, memory_mb=300, max_processes=3)),
        release_once_seen(go, lambda t: t.peak_rss >= 100 << 20),
    )
    assert out.limit_exceeded is None, out.limit_exceeded
    assert out.record.exit_code == 0 and out.text == "done\n"
    assert 100 <= out.peak_rss_mb < 200


# ---- processes -------------------------------------------------------------------------------


@pytest.mark.parametrize("sandboxed", MODES)
async def test_process_cap_stops_a_fork_loop(tmp_path: Path, sandboxed: bool) -> None:
    """RLIMIT_NPROC does nothing for root (even inside bwrap): the tree walk is the cap. Inside
    bwrap this also shows the walk sees through the PID namespace (host pids, parent chain
    through bwrap)."""
    mark = marker()
    script = f"for i in $(seq 200); do sleep {mark} & done; wait"
    out = await run(
        tmp_path, ["sh", "-c", script], sandboxed=sandboxed, lim=limits(tmp_path, max_processes=20)
    )
    assert out.limit_exceeded == "process cap exceeded (more than 20 processes)"
    assert out.record.exit_code is None and out.record.signal == 9
    assert processes_with(mark) == []


async def test_concurrent_commands_keep_their_trees_apart(tmp_path: Path) -> None:
    """Two grades at once: one forks past its cap and is stopped; the other, started by the
    same grader (same parent), neither counts those processes nor is killed with them."""
    mark = marker()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    bomb = run(
        tmp_path / "a",
        ["sh", "-c", f"sleep 0.1; for i in $(seq 60); do sleep {mark} & done; wait"],
        lim=limits(tmp_path / "a", max_processes=20),
    )
    calm = run(
        tmp_path / "b",
        ["sh", "-c", "for i in 1 2 3 4 5; do sleep 0.3 & done; wait; echo ok"],
        lim=limits(tmp_path / "b", max_processes=8),
    )
    a, b = await asyncio.gather(bomb, calm)
    assert a.limit_exceeded == "process cap exceeded (more than 20 processes)"
    assert b.limit_exceeded is None and b.record.exit_code == 0 and b.text == "ok\n"
    assert processes_with(mark) == []


async def test_process_cap_leaves_a_small_tree_alone(tmp_path: Path) -> None:
    out = await run(
        tmp_path, ["sh", "-c", "sleep 0.2 & sleep 0.2 & wait; echo ok"], lim=limits(tmp_path, max_processes=5)
    )
    assert out.limit_exceeded is None and out.record.exit_code == 0 and out.text == "ok\n"


# ---- disk ------------------------------------------------------------------------------------


@pytest.mark.parametrize("sandboxed", MODES)
async def test_disk_cap_sums_files_under_the_grade(tmp_path: Path, sandboxed: bool) -> None:
    """Four 4 MiB files, each under the 8 MiB file cap, add up past the 10 MiB disk cap; inside
    the sandbox half of them go to /tmp, which is the grade's tmp directory on disk."""
    writes = "; ".join(
        f"dd if=/dev/zero of={where}/f{i} bs=1M count=4 2>/dev/null"
        for i, where in enumerate(["/tmp" if sandboxed else ".", "."] * 2)
    )
    mark = marker()
    out = await run(
        tmp_path,
        ["sh", "-c", f"{writes}; sleep {mark}"],
        sandboxed=sandboxed,
        lim=limits(tmp_path, max_disk_mb=10, max_file_mb=8),
    )
    assert out.limit_exceeded is not None
    found = re.fullmatch(r"disk cap exceeded \((\d+) MiB > 10 MiB\)", out.limit_exceeded)
    assert found and int(found.group(1)) > 10
    assert out.record.exit_code is None and not out.timed_out and out.record.seconds < 20
    assert processes_with(mark) == []
    if sandboxed:
        assert (tmp_path / "tmp" / "f0").stat().st_size == 4 << 20  # /tmp is the grade's tmp dir


async def test_disk_cap_is_checked_when_the_command_ends(tmp_path: Path) -> None:
    """A writer faster than the disk poll is still caught: one more walk at the end."""
    script = "for i in 1 2 3; do dd if=/dev/zero of=f$i bs=1M count=4 2>/dev/null; done"
    out = await run(tmp_path, ["sh", "-c", script], lim=limits(tmp_path, max_disk_mb=10))
    assert out.limit_exceeded is not None and out.limit_exceeded.startswith("disk cap exceeded (")
    assert out.record.exit_code == 0  # it was not killed; the cap still fails it


async def test_disk_walk_does_not_follow_symlinks_and_counts_hard_links_once(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a").write_bytes(b"x" * (1 << 20))
    os.link(tmp_path / "d" / "a", tmp_path / "d" / "b")
    (tmp_path / "d" / "up").symlink_to(tmp_path)
    (tmp_path / "d" / "usr").symlink_to("/usr")
    used = process.disk_usage([tmp_path / "d"])
    assert 1 << 20 <= used < 2 << 20


# ---- file size -------------------------------------------------------------------------------


@pytest.mark.parametrize("sandboxed", MODES)
async def test_file_size_cap_still_stops_one_big_file(tmp_path: Path, sandboxed: bool) -> None:
    """RLIMIT_FSIZE: the kernel kills the writer with SIGXFSZ, reported alike in both modes."""
    argv = ["dd", "if=/dev/zero", "of=big", "bs=1M", "count=8"]
    out = await run(tmp_path, argv, sandboxed=sandboxed, lim=limits(tmp_path, max_file_mb=2))
    assert out.record.exit_code is None and out.record.signal == 25  # SIGXFSZ
    assert out.limit_exceeded is None
    assert (tmp_path / "package" / "big").stat().st_size == 2 << 20


# ---- escapees --------------------------------------------------------------------------------

#: Ways a child leaves the command's process group (and often its tree) before the command ends.
#: Most are found through the run's marker variable (their parent is gone before the first look);
#: "tracked-then-orphaned" clears its environment, so only the tree walk can find it.
SETPGID = '{py} -S -c \'import os; os.setpgid(0, 0); os.execvp("sleep", ["sleep", "{m}"])\''
ESCAPES = {
    "setsid": "setsid sleep {m} & exit 0",
    "double-fork-setsid": "(setsid sleep {m} &); exit 0",
    "setsid-fork": "setsid -f sleep {m}; exit 0",
    "setpgid-orphan": f"({SETPGID} &); sleep 0.15",
    "setpgid-child": f"{SETPGID} & sleep 0.15",
    "tracked-then-orphaned": "(setsid env -i sleep {m} & sleep 0.1) & sleep 0.2",
    "late-double-fork": "setsid sh -c 'sleep 0.3; setsid sleep {m} &' & exit 0",
    "nested-daemon": "sh -c '(setsid sh -c \"sleep {m}\" &) ; exit 0' ; sleep 0.1",
}


@pytest.mark.parametrize("sandboxed", MODES)
@pytest.mark.parametrize("how", sorted(ESCAPES))
async def test_escapees_are_dead_when_run_command_returns(tmp_path: Path, how: str, sandboxed: bool) -> None:
    mark = marker()
    script = ESCAPES[how].format(m=mark, py=python_for(sandboxed))
    out = await run(tmp_path, ["sh", "-c", script], sandboxed=sandboxed)
    assert out.record.exit_code == 0, out.text
    assert processes_with(mark) == []  # right away, not eventually


@pytest.mark.parametrize("why", ["no ns_last_pid", "too many new pids"])
async def test_the_whole_listing_fallback_finds_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, why: str
) -> None:
    """Without /proc/sys/kernel/ns_last_pid (or after a burst of new pids) each look lists all
    of /proc instead of just the new pids: escapees, threads and caps work the same."""
    if why == "no ns_last_pid":
        monkeypatch.setattr(discoverymod, "_last_pid", lambda: None)
    else:
        monkeypatch.setattr(discoverymod, "_RANGE_MAX", 0)
    mark = marker()
    out = await run(tmp_path, ["sh", "-c", ESCAPES["double-fork-setsid"].format(m=mark)])
    assert out.record.exit_code == 0 and processes_with(mark) == []
    out = await run(tmp_path, ["sh", "-c", ESCAPES["tracked-then-orphaned"].format(m=mark)])
    assert out.record.exit_code == 0 and processes_with(mark) == []
    script = f"for i in $(seq 40); do sleep {mark} & done; wait"
    out = await run(tmp_path, ["sh", "-c", script], lim=limits(tmp_path, max_processes=20))
    assert out.limit_exceeded == "process cap exceeded (more than 20 processes)"
    assert processes_with(mark) == []


@pytest.mark.parametrize("looks", ["range", "listing"])
async def test_many_concurrent_commands_share_looks_and_still_find_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, looks: str
) -> None:
    """Eight commands at once (one look, shared by their watchers, files every new pid): each
    one's escapees die with it, the fork bombs among them are stopped at their own cap, and the
    calm ones are left alone (two are over at once, two run beside the fork bombs); also when
    every look lists all of /proc."""
    if looks == "listing":
        monkeypatch.setattr(discoverymod, "_last_pid", lambda: None)
    mark = marker()
    runs = []
    for i in range(8):
        (tmp_path / str(i)).mkdir()
        if i % 2:
            script = f"sleep 0.05; for i in $(seq 40); do sleep {mark} & done; wait"
            lim = limits(tmp_path / str(i), max_processes=20)
        elif i % 4 == 0:  # over at once: its escapee races the final sweep
            script = ESCAPES["double-fork-setsid"].format(m=mark)
            lim = limits(tmp_path / str(i))
        else:  # runs beside the fork bombs, then ends with a sleeper of its own group
            script = f"(setsid sleep {mark} &); sleep 0.3; sleep {mark} & exit 0"
            lim = limits(tmp_path / str(i))
        runs.append(run(tmp_path / str(i), ["sh", "-c", script], lim=lim))
    outs = await asyncio.gather(*runs)
    assert left_over(mark) == []
    for i, out in enumerate(outs):
        if i % 2:
            assert out.limit_exceeded == "process cap exceeded (more than 20 processes)", out
        else:
            assert out.limit_exceeded is None and out.record.exit_code == 0, out


async def test_each_new_process_is_classified_once_whatever_the_number_of_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`_Discovery`: with eight commands running at once, the environment of a new child of the
    grader (each command's first process is one) is read by one shared look, and again only
    while it reads empty (an exec in progress), not once per watcher: each environment is read
    whole at most once; and every command still finds its own escapees."""
    reads: dict[int, int] = {}
    real = procmod._read_proc

    def counting(pid: int, name: str, most: int = 4096) -> bytes | None:
        data = real(pid, name, most)
        if name == "environ" and data:
            reads[pid] = reads.get(pid, 0) + 1
        return data

    monkeypatch.setattr(discoverymod, "_read_proc", counting)
    mark = marker()
    script = ESCAPES["double-fork-setsid"].format(m=mark) + " ; sleep 0.3"
    for i in range(8):
        (tmp_path / str(i)).mkdir()
    outs = await asyncio.gather(*(run(tmp_path / str(i), ["sh", "-c", script]) for i in range(8)))
    assert all(out.record.exit_code == 0 for out in outs), outs
    assert processes_with(mark) == []
    assert reads, "no orphan's environment was read: the marker path was not exercised"
    assert max(reads.values()) == 1, reads


def test_a_poll_takes_a_look_only_if_none_began_after_it_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A look that began after a watcher's poll asked serves that poll; one that began earlier
    (or none) does not: the poll looks itself, so what it finds is never older than its asking."""
    clock = [1000.0]
    looks: list[float] = []
    monkeypatch.setattr(discoverymod.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(discoverymod, "_last_pid", lambda: looks.append(clock[0]) or 500)
    discovery = discoverymod._Discovery()
    discovery.look(asked_at=clock[0] - 0.1)  # nothing since registration here: looks
    assert looks == [1000.0]
    clock[0] += 0.01
    discovery.look(asked_at=999.99)  # asked before the last look began: served by it
    assert looks == [1000.0]
    discovery.look(asked_at=clock[0])  # asked after: looks again
    assert looks == [1000.0, 1000.01]


class FakeProc:
    """A /proc of made-up processes for one `_Discovery` (the module's own, for the test):
    `stats` (pid -> ppid, start, rss, zombie, cpu), `environ` (pid -> bytes; a pid without one
    cannot be read), `last_pid` (what ns_last_pid reads; `listing`: none, so each look lists
    the pids of `stats`), `env_state` (what `_environ_state` says of a pid whose environment
    reads empty; default: an exec in progress), `not_processes` (pids `_is_process` denies: gone
    since their stat), `failing` (pids whose environment read raises MemoryError), `clock` (the
    look's `time.monotonic()`, a millisecond on at each `look`), and `statted` (every pid a stat
    was asked for)."""

    def __init__(
        self,
        monkeypatch: pytest.MonkeyPatch,
        stats: dict,
        environ: dict,
        last_pid: int,
        *,
        listing: bool = False,
    ) -> None:
        self.stats, self.environ, self.last_pid = stats, environ, last_pid
        self.statted: list[int] = []
        self.env_state: dict[int, str] = {}
        self.not_processes: set[int] = set()
        self.failing: set[int] = set()
        self.clock = [1000.0]
        monkeypatch.setattr(discoverymod, "time", types.SimpleNamespace(monotonic=lambda: self.clock[0]))
        monkeypatch.setattr(
            discoverymod, "_stat", lambda pid: self.statted.append(pid) or self.stats.get(pid)
        )
        monkeypatch.setattr(discoverymod, "_read_proc", self._read_proc)
        monkeypatch.setattr(discoverymod, "_environ_state", self._environ_state, raising=False)
        monkeypatch.setattr(discoverymod, "_is_process", lambda pid: pid not in self.not_processes)
        monkeypatch.setattr(discoverymod, "_ancestors", lambda: frozenset({1, os.getpid()}))
        monkeypatch.setattr(discoverymod, "_last_pid", lambda: None if listing else self.last_pid)
        monkeypatch.setattr(discoverymod, "_listed_pids", lambda: set(self.stats), raising=False)
        self.discovery = discoverymod._Discovery()
        monkeypatch.setattr(watchermod, "_discovery", self.discovery)

    def _read_proc(self, pid: int, name: str, most: int = 4096) -> bytes | None:
        if pid in self.failing:
            raise MemoryError
        return self.environ.get(pid)

    def _environ_state(self, pid: int) -> str:
        st = self.stats.get(pid)
        if st is None or st[3]:
            return "gone"
        return self.env_state.get(pid, "changing")

    def trees(self, *tokens: str) -> list[watchermod._Watcher]:
        """Watchers registered for `tokens` (made in a loop of their own, never run)."""

        async def made() -> list[watchermod._Watcher]:
            return [watchermod._Watcher(tok, 10, None, asyncio.get_running_loop()) for tok in tokens]

        return asyncio.run(made())

    def look(self, after: float = 0.001) -> None:
        self.clock[0] += after
        self.discovery.look(asked_at=self.clock[0])

    def marked(self, token: str) -> bytes:
        return b"A=1\0" + process.TREE_ENV_VAR.encode() + b"=" + token.encode() + b"\0"


def test_a_new_pid_is_filed_with_the_tree_of_its_parent_or_of_its_marker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One look files each new process: a child of a member with that member's tree, an orphan
    (a child of the grader or above) with the tree its environment's marker names, anything
    else with no tree; and a pid is statted once however many trees are registered."""
    me = os.getpid()
    stats = {  # pid -> (ppid, start, rss, zombie, cpu)
        101: (me, 50, 1, False, 0),  # tree A's first process
        102: (101, 51, 1, False, 0),  # its child
        103: (me, 52, 1, False, 0),  # an orphan carrying B's marker
        104: (me, 53, 1, False, 0),  # an orphan with no marker
        105: (9999, 54, 1, False, 0),  # someone else's
    }
    environ = {103: b"A=1\0" + process.TREE_ENV_VAR.encode() + b"=tok-b\0", 104: b"A=1\0"}
    proc = FakeProc(monkeypatch, stats, environ, last_pid=100)
    a, b, c = proc.trees("tok-a", "tok-b", "tok-c")
    with proc.discovery.lock:
        proc.discovery.adopt(a, 101, 50)
    proc.last_pid = 105
    proc.statted.clear()
    proc.look()
    assert a.ours == {101: 50, 102: 51}
    assert b.ours == {103: 52}
    assert c.ours == {}
    # Each once for all three trees; an orphan once more, after its environment is read
    # (without the lock: it may have changed meanwhile).
    assert sorted(proc.statted) == [101, 102, 103, 103, 104, 104, 105]


@needs_bwrap
async def test_in_the_sandbox_even_an_unmarked_double_fork_dies(tmp_path: Path) -> None:
    """The residual gap without the sandbox (a double fork that also clears its environment)
    does not exist inside it: killing bwrap tears the PID namespace down."""
    mark = marker()
    out = await run(tmp_path, ["sh", "-c", f"(setsid env -i sleep {mark} &); exit 0"], sandboxed=True)
    assert out.record.exit_code == 0
    assert processes_with(mark) == []


@pytest.mark.parametrize("sandboxed", MODES)
async def test_deadline_kills_the_tree_escapees_included(tmp_path: Path, sandboxed: bool) -> None:
    mark = marker()
    script = f"(setsid sleep {mark} &); sleep {mark}"
    out = await run(tmp_path, ["sh", "-c", script], sandboxed=sandboxed, seconds=0.5)
    assert out.timed_out and out.record.exit_code is None and out.record.signal == 9
    assert out.limit_exceeded is None
    assert processes_with(mark) == []


async def test_a_reused_pid_is_never_killed(tmp_path: Path) -> None:
    """Kills go by pid and start time: a stale (pid, start) pair kills nothing."""
    victim = await asyncio.create_subprocess_exec("sleep", "30")
    try:
        st = procmod._stat(victim.pid)
        assert st is not None
        procmod._kill_exact(victim.pid, st[1] + 1)  # "the process that used to have this pid"
        await asyncio.sleep(0.5)  # (time for a kill, had there been one, to be seen)
        assert victim.returncode is None
        procmod._kill_exact(victim.pid, st[1])
        assert await asyncio.wait_for(victim.wait(), 30) == -9
    finally:
        if victim.returncode is None:
            victim.kill()
            await victim.wait()


# ---- exit status and signals -----------------------------------------------------------------


def test_exit_status_is_one_representation() -> None:
    assert exit_status(0, sandboxed=False) == (0, None)
    assert exit_status(-11, sandboxed=False) == (None, 11)
    assert exit_status(-11, sandboxed=True) == (None, 11)  # bwrap itself killed (by the grader)
    assert exit_status(139, sandboxed=True) == (None, 11)
    assert exit_status(139, sandboxed=False) == (139, None)  # a shell's own exit code
    assert exit_status(255, sandboxed=True) == (255, None)  # 127 is no signal
    assert exit_status(128, sandboxed=True) == (128, None)


@pytest.mark.parametrize("sandboxed", MODES)
@pytest.mark.parametrize(
    ("script", "exit_code", "signum"),
    [("kill -SEGV $$", None, 11), ("kill -TERM $$", None, 15), ("exit 3", 3, None), ("true", 0, None)],
)
async def test_signals_are_reported_the_same_with_and_without_bwrap(
    tmp_path: Path, sandboxed: bool, script: str, exit_code: int | None, signum: int | None
) -> None:
    out = await run(tmp_path, ["sh", "-c", script], sandboxed=sandboxed)
    assert (out.record.exit_code, out.record.signal) == (exit_code, signum)
    assert not out.timed_out and out.limit_exceeded is None


# ---- TMPDIR ----------------------------------------------------------------------------------


def test_child_env_sets_tmpdir(tmp_path: Path) -> None:
    env = child_env(tmp_path, Path("/tc/bin"), tmp_path / "tmp")
    assert env["TMPDIR"] == str(tmp_path / "tmp")
    assert env["PATH"] == "/tc/bin:/usr/bin:/bin" and env["HOME"] == str(tmp_path)


async def test_unsandboxed_temp_files_stay_in_the_grade(tmp_path: Path) -> None:
    out = await run(tmp_path, ["mktemp"])
    made = Path(out.text.strip())
    assert out.record.exit_code == 0 and made.parent == tmp_path / "tmp" and made.exists()


# ---- cancellation and clean-up ---------------------------------------------------------------


def sleepers(mark: str) -> list[int]:
    return [p for p in processes_with(mark) if Path(f"/proc/{p}/cmdline").read_bytes().startswith(b"sleep")]


def watcher_threads() -> list[threading.Thread]:
    """Threads running a watcher (an idle one, kept for reuse, is named `...-idle`)."""
    return [
        t
        for t in threading.enumerate()
        if t.name.startswith("lean-grader-watch-") and t.name != "lean-grader-watch-idle"
    ]


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("sandboxed", MODES)
async def test_cancellation_during_a_watched_run_leaves_nothing(tmp_path: Path, sandboxed: bool) -> None:
    """Cancel twice while the watcher is running: the tree (escapee included) is dead, the
    watcher thread has ended and no file descriptor is left open."""
    await run(tmp_path, ["true"], sandboxed=sandboxed)  # warm up lazily opened fds
    fds = open_fds()
    mark = marker()
    script = f"(setsid sleep {mark} &); sleep {mark} & sleep {mark}; wait"
    job = asyncio.create_task(run(tmp_path, ["sh", "-c", script], sandboxed=sandboxed))
    end = time.monotonic() + 30
    while len(sleepers(mark)) < 3 and time.monotonic() < end:
        await asyncio.sleep(0.02)
    assert len(sleepers(mark)) == 3
    job.cancel()
    await asyncio.sleep(0)
    job.cancel()  # a second cancel while it is cleaning up
    with pytest.raises(asyncio.CancelledError):
        await job
    assert processes_with(mark) == []
    assert watcher_threads() == []
    assert open_fds() == fds


async def test_watchers_end_and_release_everything(tmp_path: Path) -> None:
    await run(tmp_path, ["true"])
    fds = open_fds()
    for script in ("true", "exit 2", "kill -KILL $$", "sleep 0.06 & echo hi"):
        await run(tmp_path, ["sh", "-c", script])
    out = await run(tmp_path, ["sh", "-c", "sleep 5"], seconds=0.2)
    assert out.timed_out
    assert watcher_threads() == []
    assert open_fds() == fds


def idle_watcher_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "lean-grader-watch-idle"]


async def test_watcher_threads_are_reused_then_end_when_idle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command's watcher thread waits, idle, for the next command and runs it; commands at
    once get a thread each; idle threads end. Each thread is preempted for 0.3 s just after it
    said its command was done: the flake seen at load 12 (a thread that had not yet counted
    itself idle when the next command came, so that command got a new thread) made certain.
    Which thread ran which watcher is recorded, not read from thread names at some moment."""
    ran_on: list[int] = []
    real_run, real_finished = watchermod._Watcher.run, watchermod._Watcher.finished

    def recorded(self: watchermod._Watcher) -> None:
        ran_on.append(threading.get_ident())
        real_run(self)

    def preempted(self: watchermod._Watcher) -> None:
        real_finished(self)
        time.sleep(0.3)

    monkeypatch.setattr(watchermod._Watcher, "run", recorded)
    monkeypatch.setattr(watchermod._Watcher, "finished", preempted)
    end = time.monotonic() + 60  # first, the idle threads of earlier tests end (any may take a command)
    while idle_watcher_threads() and time.monotonic() < end:
        await asyncio.sleep(0.05)
    assert idle_watcher_threads() == []
    monkeypatch.setattr(watchermod, "WATCHER_IDLE_S", 10.0)  # no expiry between the runs on a slow host
    await run(tmp_path, ["true"])
    await run(tmp_path, ["true"])
    assert len(ran_on) == 2 and ran_on[0] == ran_on[1]  # the first command's thread ran the second
    monkeypatch.setattr(watchermod, "WATCHER_IDLE_S", 0.5)
    outs = await asyncio.gather(*(run(tmp_path, ["sh", "-c", "sleep 0.2"]) for _ in range(3)))
    assert all(o.record.exit_code == 0 for o in outs)
    assert len(set(ran_on[2:])) == 3 and ran_on[0] in ran_on[2:]  # a thread each, the idle one reused
    end = time.monotonic() + 60
    while (idle_watcher_threads() or watcher_threads()) and time.monotonic() < end:
        await asyncio.sleep(0.05)
    assert idle_watcher_threads() == [] and watcher_threads() == []


async def test_output_cap_and_tail_still_work(tmp_path: Path) -> None:
    out = await run(tmp_path, ["sh", "-c", "head -c 200000 /dev/zero | tr '\\0' a; echo END"])
    assert out.record.output_bytes == 200004 and out.record.truncated
    assert out.text.endswith("aEND\n") and len(out.text) == 1 << 16
    assert out.record.output_tail == out.text[-2000:]


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap is not installed")
def test_probe_is_cached() -> None:
    assert sandbox.probe_sandbox() is sandbox.probe_sandbox()


# ---- cancelled at the start (the sandboxed soak's hang, issue 18) -------------------------------


@needs_bwrap
@pytest.mark.parametrize("delay_ms", [0.5, 1, 2, 3, 5, 8, 12, 20])
async def test_cancelled_just_after_the_spawn_nothing_runs_on(tmp_path: Path, delay_ms: float) -> None:
    """The soak's lost wake-up: a grade cancelled between the spawn and the moment asyncio had
    connected the command's pipe. asyncio's own clean-up then SIGKILLed bwrap alone; bwrap's
    child, still setting the sandbox up (it takes --die-with-parent only just before exec), lived
    on, ran the command and held the pipe, and the cancelled grade waited for that pipe to close
    (as long as the command ran: the soak's `sleep 1000`). The pipe is connected late here, as
    on a busy loop, to open the window wide; the grader now follows the command with callbacks
    only, so there is no window: the cancellation ends, and nothing of the command runs on."""
    loop = asyncio.get_running_loop()
    real = loop.connect_read_pipe

    async def busy_loop(*args: object, **kwargs: object) -> object:
        await asyncio.sleep(0.3)
        return await real(*args, **kwargs)  # type: ignore[arg-type]

    loop.connect_read_pipe = busy_loop  # type: ignore[method-assign]
    mark = marker()
    try:
        job = asyncio.create_task(run(tmp_path, ["sh", "-c", f"sleep {mark}"], sandboxed=True, seconds=60))
        await asyncio.sleep(delay_ms / 1000)
        job.cancel()
        # (a hang guard, not a timing assertion: the old code waited for the command's 1000 s)
        done, _ = await asyncio.wait({job}, timeout=30)
    finally:
        loop.connect_read_pipe = real  # type: ignore[method-assign]
        survivors = processes_with(mark)
        for pid in survivors:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
    assert done, "the cancelled command is still being waited for"
    assert job.cancelled()
    assert survivors == []


# ---- host faults: what says nothing about the command -----------------------------------------


@needs_bwrap
async def test_a_sandbox_set_up_failure_is_a_host_fault(tmp_path: Path) -> None:
    """bwrap exits 1 before its command ran (no `exit-code` on its status pipe): not the
    command's exit 1. And a command's own exit 1 inside the sandbox stays the command's."""
    out = await run(tmp_path, ["sh", "-c", "exit 1"], sandboxed=True)
    assert out.record.exit_code == 1
    assert PROBE.bwrap is not None
    pkg = tmp_path / "package"
    prefix = sandbox.bwrap_argv(
        PROBE.bwrap,
        layout=sandbox.host_layout(),
        toolchain_dir=None,
        package_dir=pkg,
        readonly_files=(tmp_path / "no-such-file",),
        env={},
        tmp_dir=tmp_path / "tmp",
    )
    with pytest.raises(
        process.HostFault, match=r"the sandbox \(bwrap\) did not start: bwrap: Can't find"
    ) as exc:
        await run_command(
            [*prefix, "true"],
            stage="build",
            cwd=pkg,
            env={},
            deadline=time.monotonic() + 10,
            output_cap_bytes=1 << 16,
            tail_chars=100,
            limits=limits(tmp_path),
            prlimit=PRLIMIT,
            record_argv=["true"],
            sandboxed=True,
        )
    assert exc.value.sandbox


@needs_bwrap
async def test_bwrap_killed_from_outside_is_a_host_fault(tmp_path: Path) -> None:
    mark = marker()
    job = asyncio.create_task(run(tmp_path, ["sh", "-c", f"sleep {mark}"], sandboxed=True))
    me = os.getpid()
    end = time.monotonic() + 10
    while not (outer := [p for p in processes_with(mark) if _ppid(p) == me]):
        assert time.monotonic() < end
        await asyncio.sleep(0.02)
    os.kill(outer[0], 9)  # bwrap itself (the command the grader started), not its command
    with pytest.raises(process.HostFault, match=r"the sandbox \(bwrap\) was killed by signal 9 from outside"):
        await job
    assert await _gone(mark)


async def test_a_program_that_cannot_be_started_is_a_host_fault(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-program"
    with pytest.raises(process.HostFault, match="a program the grader runs is missing"):
        await run_command(  # spawned directly (no limits, no prlimit): ENOENT from exec
            [str(missing)],
            stage="build",
            cwd=tmp_path,
            env={},
            deadline=time.monotonic() + 10,
            output_cap_bytes=1 << 16,
            tail_chars=100,
            limits=None,
            prlimit=None,
        )
    with pytest.raises(process.HostFault, match=f"{missing} is missing or not executable"):
        await run(tmp_path, [str(missing)])  # through prlimit: its exit 127


def test_host_fault_reasons_name_the_fault() -> None:
    assert process.host_fault_reason(MemoryError()) == "out of memory (MemoryError in the grader)"
    full = process.host_fault_reason(OSError(28, "No space left on device", "/w/x.olean"))
    assert full == "the work disk is full (No space left on device: /w/x.olean)"
    wrapped = RuntimeError("copy failed")
    wrapped.__cause__ = OSError(12, "Cannot allocate memory")
    assert process.host_fault_reason(wrapped) == "out of memory (Cannot allocate memory)"
    assert process.host_fault_reason(FileNotFoundError(2, "gone", "/w/x")) is None  # maybe a build's doing
    assert process.host_fault_reason(ValueError("a bug")) is None


# ---- the orphan sweep keeps to its own scope ---------------------------------------------------


def test_the_orphan_sweep_ends_only_its_own_scopes_processes(tmp_path: Path) -> None:
    """Graders of other work roots on the same machine (another test session, another
    evaluation) keep their killed graders' processes for their own sweep."""
    child = subprocess.Popen(["true"])
    child.wait()
    ns = os.stat("/proc/self/ns/pid").st_ino
    owner = f"{ns}-{child.pid}-1"  # that pid, started at tick 1: gone or reused, certainly dead
    mine, theirs = marker(), marker()
    procs = {}
    for name, scope in ((mine, "/work/mine"), (theirs, "/work/theirs")):
        token = f"{owner}-{process.scope_tag(scope)}-{'0' * 16}"
        procs[name] = subprocess.Popen(
            ["sleep", name], env={process.TREE_ENV_VAR: token, "PATH": "/usr/bin:/bin"}
        )
    try:
        end = time.monotonic() + 30
        while not all(processes_with(n) for n in procs) and time.monotonic() < end:
            time.sleep(0.01)
        assert process.kill_dead_graders_processes("/work/mine") >= 1
        assert procs[mine].wait(30) == -9
        assert procs[theirs].poll() is None  # another scope's: left alone
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.wait()


def _ppid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


async def _gone(mark: str) -> bool:
    end = time.monotonic() + 30
    while processes_with(mark) and time.monotonic() < end:
        await asyncio.sleep(0.05)
    return processes_with(mark) == []


# ---- the CPU backstop and the file cap (issue 26) ----------------------------------------------


@pytest.mark.parametrize("threads", [1, 2, 8])
def test_the_cpu_backstop_allows_every_thread_the_whole_deadline_with_no_hard_limit(threads: int) -> None:
    """RLIMIT_CPU counts one process's CPU time over all its threads: a limit of the deadline
    alone SIGKILLed a 2-thread build at about half its deadline. Only the soft limit is set: the
    kernel sends SIGXCPU there and never SIGKILL (the review of the signal filter, finding 5)."""
    soft = process.cpu_limits(60.0, threads)
    assert soft >= 60 * (threads + 1)  # Lean's main thread beside `threads` workers, all busy
    argv = process.prlimit_argv("/usr/bin/prlimit", 16384, soft, 8)
    assert f"--cpu={soft}:unlimited" in argv


def burner(python: str, *, ignore_xcpu: bool) -> list[str]:
    """One process burning CPU until its CPU limit ends it (or 60 s pass)."""
    code = (
        "import signal, time\n"
        + ("signal.signal(signal.SIGXCPU, signal.SIG_IGN)\n" if ignore_xcpu else "")
        + "end = time.monotonic() + 60\nwhile time.monotonic() < end: pass\n"
    )
    return [python, "-S", "-c", code]


@pytest.mark.parametrize("sandboxed", MODES)
@pytest.mark.parametrize("ignore_xcpu", [False, True], ids=["sigxcpu", "ignored-runs-to-deadline"])
async def test_a_kill_by_the_cpu_backstop_is_named_as_such(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandboxed: bool, ignore_xcpu: bool
) -> None:
    """The real kernel's RLIMIT_CPU (made small here): the soft limit's SIGXCPU is reported as the
    CPU cap. A process that ignores it is not killed by the kernel at all (no hard limit): it runs
    on to the deadline, whose kill is the grader's own, never a SIGKILL from outside."""
    monkeypatch.setattr(commandsmod, "cpu_limits", lambda remaining, threads: 3 if not ignore_xcpu else 1)
    seconds = 8 if ignore_xcpu else 60
    out = await run(
        tmp_path, burner(python_for(sandboxed), ignore_xcpu=ignore_xcpu), sandboxed=sandboxed, seconds=seconds
    )
    if ignore_xcpu:
        assert out.timed_out and out.limit_exceeded is None, out
        assert out.record.exit_code is None and out.record.seconds >= seconds - 1, out.record
    else:
        assert not out.timed_out
        assert out.record.signal == 24, out.record
        assert out.limit_exceeded == "CPU time cap exceeded (3 CPU seconds in one process)", out


def test_a_command_s_own_cpu_budget_replaces_the_backstop(tmp_path: Path) -> None:
    assert process.command_cpu_limits(limits(tmp_path, cpu_seconds=7), 100.0) == 7
    assert process.command_cpu_limits(limits(tmp_path), 100.0) == process.cpu_limits(100.0, 1)
    assert process.command_cpu_limits(limits(tmp_path, cpu_threads=2), 10.0) == process.cpu_limits(10.0, 2)


async def test_a_command_stopped_by_its_own_cpu_budget_says_so_and_its_cpu_time(tmp_path: Path) -> None:
    """A checker's budget (routes/checkers.py): RLIMIT_CPU set to `Limits.cpu_seconds`, however
    far its wall-clock deadline; the outcome reports the CPU seconds its busiest process used."""
    argv = burner(python_for(False), ignore_xcpu=False)
    out = await run(tmp_path, argv, lim=limits(tmp_path, cpu_seconds=2), seconds=60)
    assert not out.timed_out and out.record.signal == 24  # SIGXCPU, out.record
    assert out.limit_exceeded == "CPU time cap exceeded (2 CPU seconds in one process)"
    assert 1.5 <= out.peak_cpu_s <= 2.5, out.peak_cpu_s


def test_the_cpu_cap_reason_is_sigxcpu_alone() -> None:
    assert process.cpu_cap_reason(24, 100) == "CPU time cap exceeded (100 CPU seconds in one process)"
    assert process.cpu_cap_reason(9, 100) is None  # no hard limit: a SIGKILL is never the cap's
    assert process.cpu_cap_reason(None, 100) is None  # it exited by itself


# ---- files held open with no name left (the review of the signal filter, finding 4) ----------


def _hold_removed(
    python: str, mib: int, mark: str, *, fork: bool = False, tmpfile: bool = False
) -> list[str]:
    """A python that takes `mib` MiB for a file it removed (or made with O_TMPFILE) and keeps
    open, optionally shared with a forked child, then sleeps `mark` seconds."""
    code = (
        "import os, time\n"
        + (
            "fd = os.open('.', os.O_TMPFILE | os.O_RDWR, 0o600)\n"
            if tmpfile
            else "fd = os.open('held', os.O_CREAT | os.O_RDWR, 0o600); os.unlink('held')\n"
        )
        + f"os.posix_fallocate(fd, 0, {mib} << 20)\n"
        + ("os.fork()\n" if fork else "")
        + f"time.sleep({mark})\n"
    )
    return [python, "-S", "-c", code]


@pytest.mark.parametrize("sandboxed", MODES)
@pytest.mark.parametrize("how", ["unlinked", "shared-by-a-fork", "o-tmpfile"])
async def test_a_file_held_open_with_no_name_counts_in_the_disk_cap(
    tmp_path: Path, sandboxed: bool, how: str
) -> None:
    """A 24 MiB file removed while open (or never named) is invisible to the disk walk but takes
    its blocks until closed: under a 16 MiB disk cap it was not seen at all. It counts now, once
    even when two processes hold it."""
    mark = marker()
    argv = _hold_removed(
        python_for(sandboxed), 24, mark, fork=how == "shared-by-a-fork", tmpfile=how == "o-tmpfile"
    )
    out = await run(tmp_path, argv, sandboxed=sandboxed, lim=limits(tmp_path, max_disk_mb=16, max_file_mb=32))
    assert out.limit_exceeded is not None, out
    found = re.fullmatch(r"disk cap exceeded \((\d+) MiB > 16 MiB\)", out.limit_exceeded)
    assert found and 24 <= int(found.group(1)) < 40, out.limit_exceeded  # once, not once per holder
    assert left_over(mark) == []


def test_held_deleted_counts_each_removed_file_once_on_the_given_disks_only(tmp_path: Path) -> None:
    """The scan itself, on this process (which holds other removed files already: pytest's
    capture files): a removed open file adds itself once for two descriptors, a named open file
    adds nothing (the walk counts it), nor does anything on another disk."""
    mib = 1 << 20
    here = os.stat(tmp_path).st_dev
    before = process.held_deleted([os.getpid()], {here})
    removed = os.open(tmp_path / "r", os.O_CREAT | os.O_RDWR, 0o600)
    os.unlink(tmp_path / "r")
    os.posix_fallocate(removed, 0, 3 * mib)
    again = os.dup(removed)
    named = os.open(tmp_path / "n", os.O_CREAT | os.O_RDWR, 0o600)
    os.posix_fallocate(named, 0, 5 * mib)
    try:
        held = process.held_deleted([os.getpid()], {here})
        assert held.inodes == before.inodes + 1, (before, held)
        assert 3 * mib <= held.bytes - before.bytes < 4 * mib, (before, held)
        assert process.held_deleted([os.getpid()], {here + 1}) == process.HeldFiles(0, 0)
    finally:
        for fd in (removed, again, named):
            os.close(fd)
    assert process.held_deleted([os.getpid()], {here}) == before


def test_a_removed_file_held_by_a_mapping_is_unseen_space(tmp_path: Path) -> None:
    """A removed file held only by a mapping keeps its blocks, but neither the walk nor the
    descriptor scan can size it: `holds_unseen_space` says so for its disk only, and no more once
    it is unmapped (a low work disk is then not counted as the host's: disk.py)."""
    here = os.stat(tmp_path).st_dev
    assert not process.holds_unseen_space([os.getpid()], {here})
    fd = os.open(tmp_path / "m", os.O_CREAT | os.O_RDWR, 0o600)
    os.posix_fallocate(fd, 0, 1 << 20)
    mapped = mmap.mmap(fd, 4096)
    os.close(fd)
    try:
        assert not process.holds_unseen_space([os.getpid()], {here})  # named: the walk sees it
        os.unlink(tmp_path / "m")
        assert process.holds_unseen_space([os.getpid()], {here})
        assert not process.holds_unseen_space([os.getpid()], {here + 1})
    finally:
        mapped.close()
    assert not process.holds_unseen_space([os.getpid()], {here})


def test_descriptors_hidden_from_the_grader_are_over_every_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process of the grader's own user whose /proc/PID/fd cannot be read (made undumpable, as
    seen by a grader that is not root) is hiding what it holds: over every cap, as a directory the
    walk cannot read. Another user's (a setuid bwrap's monitor) is not the submission's."""
    real = os.listdir

    def refused(path: str) -> list[str]:
        if path.startswith("/proc/") and path.endswith("/fd"):
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(os, "listdir", refused)
    held = process.held_deleted([os.getpid()], {0})
    assert held.bytes >= process.UNREADABLE_BYTES
    monkeypatch.setattr(limitsmod, "_same_user", lambda pid: False)
    assert process.held_deleted([os.getpid()], {0}).bytes == 0


def test_a_flood_of_descriptors_is_over_every_cap_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each descriptor costs the scan a readlink, and a tree may hold max_processes x
    RLIMIT_NOFILE of them (seconds per look, the watcher's polls stalled): past
    HELD_SCAN_MAX_FDS in all (made this process's own count + 60 here) they are not read, and the
    tree is over every cap. Below it, the same descriptors cost nothing."""
    base = len(os.listdir("/proc/self/fd"))
    fds = [os.open("/", os.O_RDONLY) for _ in range(80)]
    try:
        assert process.held_deleted([os.getpid()], {0}).bytes == 0  # (the real bound: not reached)
        monkeypatch.setattr(limitsmod, "HELD_SCAN_MAX_FDS", base + 60)
        assert process.held_deleted([os.getpid()], {0}).bytes >= process.UNREADABLE_BYTES
        for fd in fds[:40]:
            os.close(fd)
        fds = fds[40:]
        assert process.held_deleted([os.getpid()], {0}).bytes == 0
        # The bound is for the whole tree: two processes of base + 40 each are over it.
        assert process.held_deleted([os.getpid(), os.getpid()], {0}).bytes >= process.UNREADABLE_BYTES
    finally:
        for fd in fds:
            os.close(fd)


@pytest.mark.parametrize("sandboxed", MODES)
async def test_a_flood_of_empty_files_stops_at_the_file_cap(tmp_path: Path, sandboxed: bool) -> None:
    """Empty files hold no blocks: under a 1 GiB disk cap, 3000 of them (12 MiB charged) pass,
    but the file cap counts every directory entry under the grade (issue 26: an inode flood)."""
    script = 'mkdir -p many && i=0; while [ "$i" -lt 3000 ]; do : > "many/f$i"; i=$((i + 1)); done; sleep 2'
    out = await run(tmp_path, ["sh", "-c", script], sandboxed=sandboxed, lim=limits(tmp_path, max_files=1000))
    assert out.limit_exceeded == "file cap exceeded (more than 1000 directory entries)", out
    other = tmp_path / "uncapped"
    other.mkdir()
    fine = await run(other, ["sh", "-c", script], sandboxed=sandboxed)  # no file cap: the disk cap is plenty
    assert fine.limit_exceeded is None and fine.record.exit_code == 0, fine
    used, entries = process.disk_and_entries([other])
    assert entries > 3000 and used >= 3000 * process.ENTRY_MIN_BYTES


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("nr_free_pages 5\noom_kill 12\nnr_foo 3\n", 12),
        ("oom_kill 7\nnr_free_pages 5\n", 7),  # the first line
        ("nr_free_pages 5\noom_kill 9", 9),  # the last line, no newline
        ("nr_free_pages 5\noom_kill_other 4\n", None),  # another counter's name starts the same
        ("nr_free_pages 5\n", None),  # a kernel before 4.13
        ("oom_kill x\n", None),
    ],
)
def test_the_oom_kill_counter_is_read_from_vmstat(tmp_path: Path, text: str, expected: int | None) -> None:
    vmstat = tmp_path / "vmstat"
    vmstat.write_text(text)
    assert process.oom_kill_count(str(vmstat)) == expected
    assert process.oom_kill_count(str(tmp_path / "missing")) is None


async def test_no_tree_stays_registered_once_its_command_is_over(tmp_path: Path) -> None:
    """Every tree leaves the shared look when its command is over, however it ended (normal exit,
    escapees swept, a cap, a spawn that failed): none is left for looks to file pids with, and
    no member pid stays owned."""
    mark = marker()
    await run(tmp_path, ["sh", "-c", ESCAPES["double-fork-setsid"].format(m=mark)])
    await run(
        tmp_path,
        ["sh", "-c", f"for i in $(seq 40); do sleep {mark} & done; wait"],
        lim=limits(tmp_path, max_processes=20),
    )
    await test_a_program_that_cannot_be_started_is_a_host_fault(tmp_path)  # a spawn that fails
    assert processes_with(mark) == []
    assert discoverymod._discovery._trees == {}
    assert discoverymod._discovery._owner == {}


def test_a_child_of_an_undecided_orphan_is_decided_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """An orphan caught in the middle of an exec (its environment reads empty) is looked at again;
    so is the child it started just before, which is filed with the orphan's tree once the
    orphan's marker is read, not dropped for having no known parent."""
    me = os.getpid()
    stats = {201: (me, 60, 1, False, 0), 202: (201, 61, 1, False, 0)}  # orphan, its child
    proc = FakeProc(monkeypatch, stats, {201: b""}, last_pid=200)
    (t,) = proc.trees("tok-t")
    proc.last_pid = 202
    proc.look()
    assert t.ours == {} and set(proc.discovery.waiting) == {201, 202}  # (a sweep waits for both)
    proc.environ[201] = process.TREE_ENV_VAR.encode() + b"=tok-t\0"
    proc.look()
    assert t.ours == {201: 60, 202: 61}


# ---- the shared look: the review of 2026-12-06 ---------------------------------------------------


def test_an_orphan_in_the_middle_of_an_exec_is_looked_at_for_a_time_not_a_number_of_looks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Finding 1: a final sweep looks every few milliseconds, and so does every other watcher's,
    so an orphan preempted in the middle of an exec (its environment reads empty) used to run out
    of its three more looks within milliseconds and be dropped for good. It is looked at, and a
    sweep waits for it, until it is decided or `_UNDECIDED_S` has passed."""
    me = os.getpid()
    stats = {301: (me, 70, 1, False, 0), 302: (me, 71, 1, False, 0)}
    proc = FakeProc(monkeypatch, stats, {301: b"", 302: b""}, last_pid=300)
    (t,) = proc.trees("tok-t")
    proc.last_pid = 302
    for _ in range(20):  # a sweep's looks, a millisecond apart
        proc.look()
        assert set(proc.discovery.waiting) == {301, 302}
    proc.environ[301] = proc.marked("tok-t")  # its exec is over
    proc.look()
    assert t.ours == {301: 70} and set(proc.discovery.waiting) == {302}
    proc.look(after=discoverymod._UNDECIDED_S)  # never decided: given up in the end
    assert proc.discovery.waiting == {} and 302 not in proc.discovery._retry


@pytest.mark.parametrize("listing", [False, True], ids=["range", "listing"])
def test_a_child_whose_parent_died_during_the_look_is_decided_later_not_dropped(
    monkeypatch: pytest.MonkeyPatch, listing: bool
) -> None:
    """Finding 2: a look stats a subshell (a child of the command) and its child; the subshell
    exits and is reaped before the look files it. Its child, an orphan now, used to be dropped
    for having no known parent (and, in a listing, never looked at again): it is undecided, a
    sweep waits for it, and the next look reads its marker."""
    me = os.getpid()
    stats = {
        401: (me, 80, 1, False, 0),  # the command's first process
        402: (401, 81, 1, False, 0),  # a subshell
        403: (402, 82, 1, False, 0),  # its child, about to escape
    }
    proc = FakeProc(monkeypatch, stats, {403: b""}, last_pid=400, listing=listing)
    (t,) = proc.trees("tok-t")
    with proc.discovery.lock:
        proc.discovery.adopt(t, 401, 80)
    proc.last_pid = 403
    proc.not_processes.add(402)  # reaped between its stat and its filing
    proc.look()
    assert t.ours == {401: 80} and set(proc.discovery.waiting) == {403}
    del stats[402]
    stats[403] = (me, 82, 1, False, 0)  # reparented
    proc.environ[403] = proc.marked("tok-t")
    proc.look()
    assert t.ours == {401: 80, 403: 82}


def test_a_child_of_a_parent_gone_before_its_stat_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding 3: the child is statted while its parent lives; the parent is gone by its own
    stat. The child was looked at again but no sweep waited for it: a sweep could end first."""
    me = os.getpid()
    stats = {502: (501, 91, 1, False, 0)}  # 501: its parent, gone
    proc = FakeProc(monkeypatch, stats, {502: b""}, last_pid=500)
    (t,) = proc.trees("tok-t")
    proc.last_pid = 502
    proc.look()
    assert set(proc.discovery.waiting) == {502}
    stats[502] = (me, 91, 1, False, 0)
    proc.environ[502] = proc.marked("tok-t")
    proc.look()
    assert t.ours == {502: 91}


def test_a_dead_members_pid_taken_by_another_process_brings_none_of_its_children(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Finding 6: a member died, and before its watcher forgot it another process took its pid.
    That process's children are not the tree's (they used to be filed with it, and killed). A
    child of a member that is gone, and that started before the child, still is."""
    stats = {
        601: (9999, 105, 1, False, 0),  # someone else's, under a dead member's pid
        602: (601, 106, 1, False, 0),  # its child
        612: (611, 106, 1, False, 0),  # the child of member 611, which has exited since
    }
    proc = FakeProc(monkeypatch, stats, {}, last_pid=601)
    (t,) = proc.trees("tok-t")
    with proc.discovery.lock:
        proc.discovery.adopt(t, 601, 100)
        proc.discovery.adopt(t, 611, 100)
    proc.last_pid = 612
    proc.look()
    assert 602 not in t.ours
    assert t.ours[612] == 106


def test_a_look_that_fails_loses_nothing_for_the_other_trees(monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding 8: a look that raised (out of memory here) used to have moved the pid range on
    and dropped every undecided pid already: the other trees' new processes in that range were
    never looked at. The next look covers the range again and keeps the undecided pids."""
    me = os.getpid()
    stats = {701: (me, 60, 1, False, 0), 702: (me, 61, 1, False, 0), 703: (me, 62, 1, False, 0)}
    proc = FakeProc(monkeypatch, stats, {701: b""}, last_pid=700)
    a, b = proc.trees("tok-a", "tok-b")
    proc.last_pid = 701
    proc.look()
    assert set(proc.discovery.waiting) == {701}  # in the middle of an exec
    proc.last_pid = 703
    proc.environ.update({702: b"A=1\0", 703: proc.marked("tok-b")})
    proc.failing.add(702)
    with pytest.raises(MemoryError):
        proc.look()
    proc.failing.clear()
    proc.look()
    assert b.ours == {703: 62}
    proc.environ[701] = proc.marked("tok-a")
    proc.look()
    assert a.ours == {701: 60}


def test_an_orphan_with_no_environment_at_all_is_decided_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """`env -i`: an environment that reads empty because there is none (env_start == env_end) is
    no exec in progress: no marker, decided, and no sweep waits for it."""
    me = os.getpid()
    proc = FakeProc(monkeypatch, {801: (me, 70, 1, False, 0)}, {801: b""}, last_pid=800)
    (t,) = proc.trees("tok-t")
    proc.last_pid = 801
    proc.env_state[801] = "empty"
    proc.look()
    assert t.ours == {} and proc.discovery.waiting == {} and proc.discovery._retry == {}


def test_a_sweep_waits_only_for_processes_that_may_be_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding 11: an undecided process started before a tree's first process cannot be of that
    tree: that tree's sweep does not wait for it (another tree's, started earlier, does)."""
    me = os.getpid()
    proc = FakeProc(monkeypatch, {901: (me, 70, 1, False, 0)}, {901: b""}, last_pid=900)
    proc.trees("tok-t")
    proc.last_pid = 901
    proc.look()
    assert proc.discovery.waiting_for(70) and proc.discovery.waiting_for(9)
    assert not proc.discovery.waiting_for(71)


# ---- the group, and a command that cannot be followed: the review of 2026-12-06 ------------------


async def test_a_commands_group_is_never_signalled_once_the_command_is_reaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 7: every command leads a group of its own, under its pid. Once the command is
    reaped and its group is empty, that number may be given to a new process, another
    command's first one; a kill of the old group id would reach it. The command is reaped only
    after the last kill of its group."""
    late: list[int] = []

    def checked(real: Callable[[int], None]) -> Callable[[int], None]:
        def killpg(pgid: int) -> None:
            try:  # (WNOWAIT: looks without reaping)
                os.waitid(os.P_PID, pgid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:  # reaped already
                late.append(pgid)
            real(pgid)

        return killpg

    monkeypatch.setattr(commandsmod, "_killpg", checked(commandsmod._killpg))
    monkeypatch.setattr(watchermod, "_killpg", checked(watchermod._killpg))
    mark = marker()
    for script in ("true", "sleep 0.1 & exit 0", ESCAPES["double-fork-setsid"].format(m=mark)):
        out = await run(tmp_path, ["sh", "-c", script])
        assert out.record.exit_code == 0
    out = await run(tmp_path, ["sh", "-c", f"sleep {mark}"], seconds=0.3)
    assert left_over(mark) == []
    assert out.timed_out
    assert late == []


@pytest.mark.parametrize("what", ["no _Run", "no watcher thread"])
async def test_a_command_that_cannot_be_followed_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    """Finding 9: when the command started but its `_Run` or its watcher's thread could not be
    made (out of memory, no thread), its group was killed but its tree not swept: a process that
    had left the group already lived on."""
    mark = marker()

    def once_escaped() -> None:
        end = time.monotonic() + 10
        while not sleepers(mark) and time.monotonic() < end:  # `sleep`: setsid has run
            time.sleep(0.01)

    if what == "no _Run":

        def no_run(*args: object) -> None:
            once_escaped()
            raise MemoryError

        monkeypatch.setattr(commandsmod, "_Run", no_run)
        fault: type[BaseException] = MemoryError
    else:

        class NoThreads:
            def start(self, watcher: object) -> None:
                once_escaped()
                raise RuntimeError("can't start new thread")

        monkeypatch.setattr(commandsmod, "_watcher_threads", NoThreads())
        fault = process.HostFault
    try:
        with pytest.raises(fault):
            await run(tmp_path, ["sh", "-c", f"(setsid sleep {mark} &); exec sleep {mark}"])
    finally:
        survivors = left_over(mark)
    assert survivors == []
    assert discoverymod._discovery._trees == {}


def test_what_an_empty_environment_means_is_read_from_the_kernel() -> None:
    """`_environ_state` on real processes: one with an environment, one started with none at all
    (`env -i`: no exec in progress, nothing to wait for), a zombie, and no process."""
    mark = marker()
    plain = subprocess.Popen(["sleep", mark])
    bare = subprocess.Popen(["env", "-i", "sleep", mark])
    done = subprocess.Popen(["true"])
    try:
        end = time.monotonic() + 10
        while len(sleepers(mark)) < 2 and time.monotonic() < end:
            time.sleep(0.01)
        while procmod._stat(done.pid) is not None and not procmod._stat(done.pid)[3]:  # type: ignore[index]
            time.sleep(0.01)
        assert procmod._read_proc(bare.pid, "environ") == b""
        assert procmod._environ_state(bare.pid) == "empty"
        assert procmod._environ_state(plain.pid) == "set"
        assert procmod._environ_state(done.pid) == "gone"  # a zombie
    finally:
        for p in (plain, bare, done):
            p.kill()
            p.wait()
    assert procmod._environ_state(1 << 23) == "gone"  # past any pid_max (PID_MAX_LIMIT is 1 << 22)


# ---- the shared look: reviews A and B of 2026-12-06 (notes/review-A.md, notes/review-B.md) ---------


@pytest.mark.parametrize(
    ("code", "gone"),
    [
        (errno.ENOENT, True),
        (errno.ESRCH, True),
        (errno.EACCES, True),
        (errno.EMFILE, False),
        (errno.ENFILE, False),
        (errno.ENOMEM, False),
    ],
)
def test_only_a_gone_or_forbidden_process_reads_as_none(
    monkeypatch: pytest.MonkeyPatch, code: int, gone: bool
) -> None:
    """Review A3 / B P-4: every OSError opening /proc/<pid>/... read as "the process is gone", so
    a grader out of descriptors or memory forgot live members (uncounted, never killed). Only
    ENOENT and ESRCH (gone) and EACCES/EPERM (not ours to read) are None; the rest is raised."""
    real_open = os.open

    def refusing(path: object, *args: object, **kwargs: object) -> int:
        if isinstance(path, str) and path.startswith(f"/proc/{os.getpid()}/"):
            raise OSError(code, os.strerror(code), path)
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refusing)
    if gone:
        assert procmod._read_proc(os.getpid(), "stat") is None
    else:
        with pytest.raises(OSError) as raised:
            procmod._stat(os.getpid())
        assert raised.value.errno == code


def fail_next_open_with_emfile(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """Patch `os.open`: a path put in the returned set fails its next open with EMFILE (the host
    out of file descriptors), once; every other open is the real one."""
    real_open = os.open
    armed: set[str] = set()

    def refusing(path: object, *args: object, **kwargs: object) -> int:
        if isinstance(path, str) and path in armed:
            armed.discard(path)
            raise OSError(errno.EMFILE, "Too many open files", path)
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refusing)
    return armed


async def test_a_member_the_host_would_not_let_us_read_is_a_host_fault_not_forgotten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review A3 / B P-4, end to end: the watcher's read of a setsid'd member's stat fails with
    EMFILE once. It used to forget the member (gone from the caps, never killed: it outlived
    the grade, and the command ran on to its deadline); now the watcher fails closed: the
    command is a HostFault (could not judge) and its whole tree is dead."""
    mark = marker()
    armed = fail_next_open_with_emfile(monkeypatch)
    job = asyncio.create_task(
        run(tmp_path, ["sh", "-c", f"(setsid sleep {mark} &); exec sleep {mark}"], seconds=15)
    )
    escapee = None
    end = time.monotonic() + 30
    while escapee is None and time.monotonic() < end:
        await asyncio.sleep(0.02)
        trees = list(discoverymod._discovery._trees.values())
        pids = sleepers(mark)
        if len(trees) == 1 and len(pids) == 2 and all(p in trees[0].ours for p in pids):
            escapee = next(p for p in pids if p != trees[0].root)  # type: ignore[attr-defined]
    try:
        assert escapee is not None, "the escapee was never a member"
        armed.add(f"/proc/{escapee}/stat")
        with pytest.raises(process.HostFault, match="out of file descriptors"):
            await job
    finally:
        job.cancel()
        with contextlib.suppress(BaseException):
            await job
        survivors = left_over(mark)
    assert survivors == []


async def test_a_command_whose_first_process_cannot_be_read_is_a_host_fault_and_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review B P-4: when the stat of the command's first process could not be read just after
    the spawn (EMFILE here), the tree silently had no root: nothing the command started was
    found by its parent, and the command ran on unwatched. Now that is a HostFault, and what the
    command started is swept (here a setsid'd escapee, found by its marker)."""
    mark = marker()
    armed = fail_next_open_with_emfile(monkeypatch)

    class Spawn(subprocess.Popen):  # type: ignore[type-arg]
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            armed.add(f"/proc/{self.pid}/stat")  # the next read of it, `attach`'s, fails

    monkeypatch.setattr(commandsmod.subprocess, "Popen", Spawn)
    try:
        with pytest.raises(process.HostFault, match="out of file descriptors"):
            await run(tmp_path, ["sh", "-c", f"(setsid sleep {mark} &); exec sleep {mark}"], seconds=10)
    finally:
        survivors = left_over(mark)
    assert survivors == []
    assert discoverymod._discovery._trees == {}


def watcher_on(monkeypatch: pytest.MonkeyPatch, discovery: discoverymod._Discovery) -> watchermod._Watcher:
    """A watcher registered with `discovery` (made in a loop of its own, never run)."""
    monkeypatch.setattr(watchermod, "_discovery", discovery)

    async def made() -> watchermod._Watcher:
        return watchermod._Watcher("tok-w", procmod._boot_ticks(), None, asyncio.get_running_loop())

    return asyncio.run(made())


def test_a_kill_reads_the_tree_under_the_looks_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review A7: `kill` (from the event loop by the watchdog's `kill_all`, or from the watcher's
    thread on a cap) copied the tree's members without the look's lock, while any watcher's look
    may file a new member into it. On CPython 3.11 the GIL can pass in the middle of that copy
    (a collection started by an allocation runs finalizers); the copy then fails ("dictionary
    changed size during iteration") and the kill is skipped (`kill_all` suppresses it) or the
    grade crashes. Here the copy is made slow, to give the look its moment for certain."""
    discovery = discoverymod._Discovery()
    w = watcher_on(monkeypatch, discovery)
    copying = threading.Event()

    class SlowToCopy(dict):  # type: ignore[type-arg]
        def items(self):  # type: ignore[no-untyped-def, override]
            for item in dict.items(self):
                copying.set()
                time.sleep(0.05)  # the GIL passes to the look's thread here
                yield item

    w.ours = SlowToCopy({1001: 5, 1002: 6})
    killed: list[tuple[int, int]] = []
    monkeypatch.setattr(watchermod, "_killpg", lambda pgid: None)
    monkeypatch.setattr(watchermod, "_kill_exact", lambda pid, start: killed.append((pid, start)))

    def look_files_a_new_member() -> None:
        copying.wait(10)
        with discovery.lock:
            discovery.adopt(w, 1003, 7)

    looker = threading.Thread(target=look_files_a_new_member)
    looker.start()
    try:
        w.kill()
    finally:
        looker.join(10)
    assert killed == [(1001, 5), (1002, 6)]
    assert dict(w.ours) == {1001: 5, 1002: 6, 1003: 7}


def test_the_first_poll_is_served_only_by_a_look_begun_after_the_spawn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Review A10 / B P-6: the first poll fell due `FIRST_POLL_S` after the watcher was made,
    before the spawn. When the spawn waited longer than that for the look's lock (another
    watcher's look running), or `register` ran late, a look begun before the spawn served the
    first poll, which then found nothing the command had started. It falls due after the spawn."""
    discovery = discoverymod._Discovery()
    w = watcher_on(monkeypatch, discovery)  # made, and registered, before the spawn
    time.sleep(2 * watchermod.FIRST_POLL_S)  # the spawn waits for the lock: another watcher's look
    discovery.look(time.monotonic())
    mark = marker()
    with discovery.lock:
        proc = subprocess.Popen(["sh", "-c", f"sleep {mark} & wait"], process_group=0)
        w.attach(proc.pid)
    try:
        end = time.monotonic() + 30
        while not sleepers(mark) and time.monotonic() < end:
            time.sleep(0.01)
        (child,) = sleepers(mark)
        w.poll(w._next_poll)  # the first poll, as `run` makes it
        assert child in w.ours
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()


def test_in_a_listing_a_process_never_to_be_decided_is_given_up_for_good(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Review A4 / B P-7: in whole listings, an orphan whose environment can never be read
    (another user's child of init) was read again at every look, for ever: given up after its
    time, it was put nowhere, so the next listing began it afresh. A zombie child of the grader
    too (its environment reads empty). Now the first is given up for good (filed as of no
    tree, with its start time) and a zombie's environment is never read."""
    me = os.getpid()
    stats = {
        1101: (1, 70, 1, False, 0),  # another user's child of init: not ours to read
        1102: (me, 71, 1, True, 0),  # a zombie child of the grader
    }
    proc = FakeProc(monkeypatch, stats, {}, last_pid=1100, listing=True)
    reads: list[int] = []
    unreadable = proc._read_proc
    monkeypatch.setattr(discoverymod, "_read_proc", lambda pid, *a: reads.append(pid) or unreadable(pid, *a))
    proc.trees("tok-t")
    for _ in range(20):  # 0.4 s of looks: past `_UNSEEN_S`
        proc.look(after=0.02)
    assert 1102 not in reads and 1101 in reads and proc.discovery.waiting == {}
    reads.clear()
    for _ in range(60):  # 1.2 s more, past `_RANGE_GAP_S` (when what was filed so is checked again)
        proc.look(after=0.02)
    assert reads == []


@pytest.mark.parametrize("between", ["listings", "range looks"])
def test_a_pid_of_no_tree_taken_by_a_new_member_is_found_within_a_second(
    monkeypatch: pytest.MonkeyPatch, between: str
) -> None:
    """Reviews A6 and B P-8: a whole listing files the pids of no tree so it need not stat them
    again, by pid alone, and forgot them only on a listing more than `_RANGE_GAP_S` after the
    last look. A pid of no tree that exits and is taken by a member's child (missed by the range
    looks, or between two listings) was never looked at while it stayed listed: not between
    listings 50 ms apart, nor after seconds of range looks. Each is now filed with its start
    time and checked again once `_RANGE_GAP_S` old."""
    me = os.getpid()
    stats = {1200: (me, 79, 1, False, 0), 1201: (9999, 80, 1, False, 0)}  # a member; someone else's
    proc = FakeProc(monkeypatch, stats, {}, last_pid=1201)
    (t,) = proc.trees("tok-t")
    with proc.discovery.lock:
        proc.discovery.adopt(t, 1200, 79)
    monkeypatch.setattr(discoverymod, "_RANGE_MAX", -1)  # every look a listing
    proc.look()
    assert t.ours == {1200: 79}
    stats[1201] = (1200, 90, 1, False, 0)  # gone, and its pid taken by the member's child
    if between == "range looks":
        monkeypatch.setattr(discoverymod, "_RANGE_MAX", 4096)
        for _ in range(40):  # two seconds of them; none sees the child (its pid is not new to them)
            proc.look(after=0.05)
        monkeypatch.setattr(discoverymod, "_RANGE_MAX", -1)
        proc.look(after=0.05)
    else:
        for _ in range(25):
            proc.look(after=0.05)
    assert t.ours == {1200: 79, 1201: 90}


def test_an_environment_read_that_blocks_holds_up_no_other_look(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review A8 / B P-9: a look read orphans' environments holding the lock every watcher's
    poll and every spawn wait for. Reading another process's environment takes that process's
    memory-map lock, which it (or a writer queued on it, a hung filesystem, an unsandboxed root
    with userfaultfd) can hold: one stuck read paused every watcher's caps and every spawn. The
    read is made without the lock now: other looks go on (and leave that orphan to the look
    reading it, waited for by sweeps), and the look that read it files it once it has."""
    me = os.getpid()
    stats = {1301: (me, 60, 1, False, 0), 1302: (me, 61, 1, False, 0)}  # two orphans
    proc = FakeProc(monkeypatch, stats, {}, last_pid=1300)
    monkeypatch.setattr(watchermod, "_stat", stats.get)  # (the watchers' own reads of their members)
    proc.environ[1302] = proc.marked("tok-b")
    a, b = proc.trees("tok-a", "tok-b")
    blocked, release = threading.Event(), threading.Event()
    reads: list[int] = []

    def read(pid: int, name: str, most: int = 4096) -> bytes | None:
        reads.append(pid)
        if pid == 1301:
            blocked.set()
            release.wait(30)  # its memory map's lock is held
            return proc.marked("tok-a")
        return proc.environ.get(pid)

    monkeypatch.setattr(discoverymod, "_read_proc", read)
    proc.last_pid = 1301
    proc.clock[0] += 0.001
    stuck = threading.Thread(target=a.poll, args=(proc.clock[0],))
    stuck.start()
    try:
        assert blocked.wait(30)
        assert proc.discovery.lock.acquire(timeout=2), "a blocked read holds the look's lock"
        proc.discovery.lock.release()
        proc.last_pid = 1302
        proc.clock[0] += 0.001
        b.poll(proc.clock[0])  # another watcher's poll looks, and is not held up
        assert b.ours == {1302: 61}
        assert reads.count(1301) == 1 and 1301 in proc.discovery.waiting  # left to the look reading it
    finally:
        release.set()
        stuck.join(30)
    assert a.ours == {1301: 60}


async def test_a_callers_environment_cannot_replace_the_runs_marker(tmp_path: Path) -> None:
    """Review B P-10: `env={TREE_ENV_VAR: token, **env}` let a caller's environment holding the
    marker variable replace the run's token (its processes' marker then named no tree). The
    run's token wins, and stays first (read from the command's own environment, as spawned)."""
    env = {**child_env(tmp_path, None, tmp_path), process.TREE_ENV_VAR: "not-the-token"}
    out = await run_command(
        ["cat", "/proc/self/environ"],
        stage="build",
        cwd=tmp_path,
        env=env,
        deadline=time.monotonic() + 30,
        output_cap_bytes=1 << 16,
        tail_chars=2000,
        limits=None,
        prlimit=None,
    )
    first, *rest = out.text.split("\0")
    name, _, token = first.partition("=")
    assert name == process.TREE_ENV_VAR, out.text
    assert re.fullmatch(r"\d+-\d+-\d+-[0-9a-f]{8}-[0-9a-f]{16}", token), token
    assert not any(entry.startswith(f"{process.TREE_ENV_VAR}=") for entry in rest), out.text


def test_a_thread_of_a_child_of_the_grader_is_not_read_as_an_orphan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review B P-10: a new thread of a command's first process (each worker thread of an
    unsandboxed Lean) shows the grader as its parent in its stat, so each cost a read of the
    whole environment before it was found to be no process. It is found so first now."""
    me = os.getpid()
    stats = {1401: (me, 60, 1, False, 0)}  # a thread's tid: /proc/<tid> is reachable, not listed
    proc = FakeProc(monkeypatch, stats, {1401: b"A=1\0"}, last_pid=1400)
    proc.not_processes.add(1401)
    reads: list[int] = []
    real = proc._read_proc
    monkeypatch.setattr(discoverymod, "_read_proc", lambda pid, *a: reads.append(pid) or real(pid, *a))
    proc.trees("tok-t")
    proc.last_pid = 1401
    proc.look()
    assert reads == [] and proc.discovery.waiting == {}
