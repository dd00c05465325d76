"""Per-grade limits and process handling, through the whole pipeline against the toolchain
double: one deadline, the memory, process, disk, file-size and output caps, cancellation, and
no process or directory left behind."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from helpers import (
    build_output,
    marker,
    needs_bwrap,
    processes_with,
    run_double,
    submission,
    wait_gone,
    work_dirs,
)
from timing import MARGIN_S

from lean_mod_add_proof.grading import workdirs
from lean_mod_add_proof.grading.routes import steps


async def test_memory_cap_is_the_summed_rss_and_names_itself(tmp_path: Path) -> None:
    res = await run_double(submission("build alloc 300"), tmp_path, memory_mb=128)
    assert res.failed_stage == "build" and res.judged and not res.accepted
    assert "memory cap exceeded" in res.reason and "> 128 MiB" in res.reason
    assert res.peak_memory_mb > 128
    small = await run_double(submission("build alloc 16"), tmp_path, memory_mb=256)
    assert small.accepted, small.reason


async def test_process_cap(tmp_path: Path) -> None:
    res = await run_double(submission("build procs 40"), tmp_path, max_processes=16)
    assert res.failed_stage == "build" and res.judged and "process cap exceeded" in res.reason
    ok = await run_double(submission("build procs 3"), tmp_path, max_processes=16)
    assert ok.accepted, ok.reason


async def test_disk_cap(tmp_path: Path) -> None:
    res = await run_double(
        # (the sleep only keeps the build alive until the disk watcher's next look)
        submission("build bigfile 40", "build sleep 60"),
        tmp_path,
        max_disk_mb=16,
        max_file_mb=64,
    )
    assert res.failed_stage == "build" and res.judged and "disk cap exceeded" in res.reason


@pytest.mark.parametrize("mode", ["off", pytest.param("on", marks=needs_bwrap)])
async def test_disk_cap_counts_a_file_held_open_after_its_removal(tmp_path: Path, mode: str) -> None:
    """Build-time code removing a 40 MiB file it keeps open for 2 s: the disk walk cannot see it,
    and under a 16 MiB disk cap the grade was accepted (the review of the signal filter,
    finding 4: 667 MiB under 256). The watcher counts the files the build holds with no name."""
    res = await run_double(submission("build hold-deleted 40 2"), tmp_path, sandbox=mode, max_disk_mb=16)
    assert res.failed_stage == "build" and res.judged and not res.accepted, res.reason
    assert "disk cap exceeded (" in res.reason and "> 16 MiB)" in res.reason, res.reason
    ok = await run_double(submission("build hold-deleted 4 1"), tmp_path, sandbox=mode, max_disk_mb=16)
    assert ok.accepted, ok.reason


async def test_file_size_cap(tmp_path: Path) -> None:
    big = await run_double(submission("build bigfile 16"), tmp_path, max_file_mb=8)
    assert big.failed_stage == "build" and "writing a 16 MiB file failed" in big.reason, big.reason
    small = await run_double(submission("build bigfile 4"), tmp_path, max_file_mb=8)
    assert small.accepted, small.reason


async def test_output_cap(tmp_path: Path) -> None:
    res = await run_double(
        submission("build flood 3000000"), tmp_path, output_cap_bytes=65536, tail_chars=500
    )
    build = next(c for c in res.commands if c.argv[-1].endswith("Submission.lean"))
    assert build.truncated and build.output_bytes > 3_000_000
    assert len(build.output_tail) <= 500
    assert res.accepted


async def test_timeout_kills_grandchildren(tmp_path: Path) -> None:
    mark = marker()
    started = time.monotonic()
    res = await run_double(submission(f"build spawn {mark}", "build sleep 60"), tmp_path, timeout_s=2)
    assert time.monotonic() - started < 15
    assert res.failed_stage == "build" and res.judged and "timed out" in res.reason
    assert res.commands[-1].exit_code is None
    assert await wait_gone(mark) == []
    assert work_dirs(tmp_path) == []


async def test_one_deadline_covers_build_and_judge(tmp_path: Path) -> None:
    """The build and the judge each fit in `timeout_s` with MARGIN_S to spare (plus 2.5 s for the
    double's own work), and overrun it together by MARGIN_S: the judge is stopped (issue 41: a
    1.5 s build against a 3 s deadline had 1.5 s of margin)."""
    timeout_s = 20.0
    step_s = (timeout_s + MARGIN_S) / 2
    assert step_s + MARGIN_S + 2.5 <= timeout_s
    res = await run_double(
        submission(f"build sleep {step_s}", f"judge sleep {step_s}"), tmp_path, timeout_s=timeout_s
    )
    assert res.failed_stage == "leanchecker" and res.judged and "timed out" in res.reason


async def test_lingering_grandchild_is_killed_when_the_command_exits(tmp_path: Path) -> None:
    mark = marker()
    started = time.monotonic()
    res = await run_double(submission(f"build spawn {mark}"), tmp_path)
    assert res.accepted, res.reason
    assert time.monotonic() - started < 15  # did not wait for the 1000 s sleep holding the pipe
    assert await wait_gone(mark) == []


async def test_setsid_grandchild_is_killed_too(tmp_path: Path) -> None:
    # setsid() takes a child out of the process group; the grader kills the whole tracked tree.
    mark = marker()
    try:
        res = await run_double(submission(f"build escape {mark}"), tmp_path)
        assert res.accepted, res.reason
        assert await wait_gone(mark) == []
    finally:
        for pid in processes_with(mark):
            os.kill(pid, 9)


async def test_work_directory_removed_or_kept(tmp_path: Path) -> None:
    await run_double(submission(), tmp_path)
    await run_double(submission("build fail x"), tmp_path)
    assert work_dirs(tmp_path) == []
    kept = await run_double(submission(), tmp_path, keep_packages=True)
    assert kept.package_dir is not None and Path(kept.package_dir).is_dir()
    assert Path(kept.package_dir).name.startswith(workdirs.GRADE_DIR_PREFIX)
    assert work_dirs(tmp_path) == [Path(kept.package_dir)]


async def test_unsandboxed_temp_files_stay_in_the_grade(tmp_path: Path) -> None:
    res = await run_double(submission("build env"), tmp_path, keep_packages=True)
    tmpdir = next(line for line in build_output(res).splitlines() if line.startswith("TMPDIR="))
    assert tmpdir == f"TMPDIR={Path(res.package_dir or '') / 'build-tmp'}"  # the build's own (issue 26)


async def test_cancellation_kills_everything_and_cleans_up(tmp_path: Path) -> None:
    mark = marker()
    job = asyncio.create_task(run_double(submission(f"build spawn {mark}", "build sleep 60"), tmp_path))
    end = time.monotonic() + 10
    while not processes_with(mark) and time.monotonic() < end:
        await asyncio.sleep(0.05)
    assert processes_with(mark), "the double never started"
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    assert await wait_gone(mark) == []
    assert work_dirs(tmp_path) == []


def test_a_killed_unsandboxed_graders_leftovers_are_swept_by_the_next(tmp_path: Path) -> None:
    """SIGKILL a grader mid-build with the sandbox off: its processes and its grade directory
    survive it; the next grader to start ends those processes (their marker names a dead owner)
    and removes the directory, and leaves everything of live graders alone."""
    import signal
    import subprocess
    import sys
    import textwrap

    mark = marker()
    spawned = f"double-spawn-{mark}"  # the build's child (the grader's own argv holds `mark` too)
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from pathlib import Path
        from helpers import double_config, grade_task, submission
        from lean_mod_add_proof.grading.grader import grade
        asyncio.run(grade(submission("build spawn {mark}", "build sleep 60"), grade_task(),
                          double_config(Path({str(tmp_path)!r})), skip_selftest=True))
        """
    )
    grader = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 20
        while not processes_with(spawned) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert processes_with(spawned), "the grader never started its build"
    finally:
        grader.send_signal(signal.SIGKILL)
        grader.wait()
    time.sleep(0.3)
    assert processes_with(spawned) and work_dirs(tmp_path)  # what a killed grader leaves
    steps._swept.clear()  # as in a freshly started grader process
    res = asyncio.run(run_double(submission(), tmp_path))
    assert res.accepted, res.reason
    assert asyncio.run(wait_gone(spawned)) == []
    assert work_dirs(tmp_path) == []


async def test_a_sweep_the_host_cut_short_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first grade's sweep of dead graders' leftovers raising (a HostFault: /proc refused a
    read) leaves the place unswept, so the next grade sweeps it again instead of never."""
    from lean_mod_add_proof.grading.process import HostFault

    calls: list[str] = []

    def refused(scope: str) -> None:
        calls.append(scope)
        if len(calls) == 1:
            raise HostFault("the host refused a /proc read (Too many open files)")

    monkeypatch.setattr(steps, "kill_dead_graders_processes", refused)
    monkeypatch.setattr(steps.workdirs, "sweep_dead", lambda work_root, cache_root: None)
    steps._swept.clear()
    with pytest.raises(HostFault):
        await steps.sweep_once(tmp_path / "work", tmp_path / "cache")
    await steps.sweep_once(tmp_path / "work", tmp_path / "cache")
    await steps.sweep_once(tmp_path / "work", tmp_path / "cache")
    assert len(calls) == 2  # tried again once, then remembered as done
    steps._swept.clear()
