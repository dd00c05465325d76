"""The check after every test that no process it started outlives it (conftest.py, leftovers.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import leftovers
from helpers import marker, processes_with

HERE = Path(__file__).resolve().parent
RUN = os.environ[leftovers.RUN_MARKER_VAR]
SINCE = leftovers.read_stat(os.getpid()).start_ticks  # type: ignore[union-attr]


def _escaped(mark: str, env: dict[str, str]) -> int:
    """A sleeper that left this process's tree (setsid + double fork); its pid."""
    script = f"setsid python3 -c 'import time; time.sleep(300)' {mark} >/dev/null 2>&1 &"
    subprocess.run(["sh", "-c", script], check=True, env=env)
    end = time.monotonic() + 30
    while not (found := processes_with(mark)) and time.monotonic() < end:
        time.sleep(0.05)
    assert len(found) == 1, found
    return found[0]


def test_a_child_counts_until_it_is_reaped() -> None:
    child = subprocess.Popen(["sleep", "300"])
    try:
        assert child.pid in leftovers.run_processes(RUN, SINCE)
    finally:
        child.kill()
        child.wait()
    assert child.pid not in leftovers.run_processes(RUN, SINCE)


def test_an_escaped_process_counts_by_this_runs_marker() -> None:
    mark = marker()
    pid = _escaped(mark, dict(os.environ))
    try:
        assert leftovers.read_stat(pid).ppid != os.getpid()  # type: ignore[union-attr]
        assert pid in leftovers.run_processes(RUN, SINCE)
    finally:
        leftovers.kill([pid])
    assert leftovers.wait_for_none(RUN, SINCE, grace_s=10) == {}


def test_another_runs_process_is_left_alone() -> None:
    mark = marker()
    pid = _escaped(mark, {**os.environ, leftovers.RUN_MARKER_VAR: "another-run"})
    try:
        assert pid not in leftovers.run_processes(RUN, SINCE)
    finally:
        leftovers.kill([pid])


def test_a_test_that_leaves_a_process_fails_and_the_process_is_killed(tmp_path: Path) -> None:
    mark = marker()
    sample = HERE / "samples" / "leaks_a_process.py"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(sample)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=HERE.parent,
        env={**os.environ, "LEAK_MARK": mark},
    )
    try:
        assert done.returncode == 1, done.stdout[-3000:]
        assert "1 passed, 1 error" in done.stdout and "outlived it (now killed)" in done.stdout, done.stdout[
            -3000:
        ]
        assert mark in done.stdout
        end = time.monotonic() + 10
        while processes_with(mark) and time.monotonic() < end:
            time.sleep(0.05)
        assert processes_with(mark) == []
    finally:
        leftovers.kill(processes_with(mark))
