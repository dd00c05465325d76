"""`doctor`'s machine budget: cores as threads x concurrent grades, memory with the judge's own
allowance, and which judge grades here."""

from __future__ import annotations

import os
from pathlib import Path

from helpers import DOUBLE_DIR

from lean_mod_add_proof.cli.doctor import doctor_checks
from lean_mod_add_proof.grading.result import GraderConfig


def _checks(tmp_path: Path, **settings: object) -> dict[str, object]:
    config = GraderConfig(
        toolchain_dir=DOUBLE_DIR, cache_dir=tmp_path / "cache", work_root=tmp_path / "work", **settings
    )
    return {c.name: c for c in doctor_checks(config)}


def test_the_cores_budget_is_threads_times_concurrent_grades(tmp_path: Path) -> None:
    row = _checks(tmp_path, threads=3, max_concurrent=4)["cores budget"]
    assert "threads 3 x 4 concurrent grades = 12 cores" in row.detail  # type: ignore[attr-defined]
    assert row.ok is (12 <= (os.cpu_count() or 1))  # type: ignore[attr-defined]
    fits = _checks(tmp_path, threads=1, max_concurrent=1)["cores budget"]
    assert fits.ok and "= 1 cores" in fits.detail  # type: ignore[attr-defined]


def test_the_memory_budget_counts_the_judges_allowance_and_the_judge_is_named(tmp_path: Path) -> None:
    checks = _checks(tmp_path, memory_mb=1000, max_concurrent=2, sandbox="off")
    judge = checks["judge"]
    assert judge.ok and judge.detail.startswith("replay from the export; native:")  # type: ignore[attr-defined]
    memory = checks["memory budget"]
    assert "(memory_mb 1000 + the judge's own 512, an estimate) x 2 concurrent grades = 3024 MiB" in (
        memory.detail  # type: ignore[attr-defined]
    )
    off = _checks(tmp_path, memory_mb=1000, max_concurrent=2, sandbox="off", native_judge=False)
    assert off["judge"].detail.startswith("replay from the export; interpreted:")  # type: ignore[attr-defined]
    assert "+ the judge's own 1536" in off["memory budget"].detail  # type: ignore[attr-defined]


def test_the_work_disk_must_hold_every_grade_directory_it_may_hold_at_once(tmp_path: Path) -> None:
    """Each running grade's disk cap and its verdict copies (an export, or the olean and ilean, up to
    256 MiB each), for the grades running and for the finished ones the reaper has queued (issue 39:
    neither was counted), and the low-water mark a grade needs beyond its cap."""
    free_mb = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize >> 20
    fits = _checks(tmp_path, max_disk_mb=16, max_concurrent=1)["work disk"]
    # the backlog: as many finished directories of 528 MiB as fit in 8 GiB (15), not 64 of them
    assert (
        "(max_disk_mb 16 + verdict copies 512) x (1 concurrent grades + 15 finished, awaiting removal) "
        "+ 256 = 8704 MiB" in fits.detail  # type: ignore[attr-defined]
    )
    assert fits.ok is (free_mb >= 8704)  # type: ignore[attr-defined]
    # at the default cap (4096 MiB) one finished directory is budgeted: the ask was ~300 GB
    default = _checks(tmp_path, max_concurrent=4)["work disk"]
    assert "x (4 concurrent grades + 1 finished, awaiting removal) + 256 = 23296 MiB" in default.detail  # type: ignore[attr-defined]
    too_big = max(16, free_mb + 1024)
    short = _checks(tmp_path, max_disk_mb=too_big, max_concurrent=1)["work disk"]
    assert not short.ok  # type: ignore[attr-defined]


def test_the_work_disk_must_have_inodes_for_every_concurrent_grades_file_cap(tmp_path: Path) -> None:
    """The disk cap charges bytes; an inode flood within it needs the file cap, and the work disk
    needs `max_files` x concurrent grades free inodes (issue 26)."""
    st = os.statvfs(tmp_path)
    row = _checks(tmp_path, max_files=100, max_concurrent=2)["work disk inodes"]
    if not st.f_files:
        assert row.ok and "reports no inode limit" in row.detail  # type: ignore[attr-defined]
        return
    needed = 100 * (2 + 1)  # the finished directories awaiting removal count too (issue 39)
    assert f"max_files 100 x (2 concurrent grades + 1 finished, awaiting removal) = {needed}" in (
        row.detail  # type: ignore[attr-defined]
    )
    assert "inodes free" in row.detail and row.ok is (st.f_favail >= needed)  # type: ignore[attr-defined]
    # Far past what is free: other processes on this disk create and delete files meanwhile.
    short = _checks(tmp_path, max_files=2 * st.f_favail + 10**6, max_concurrent=1)["work disk inodes"]
    assert not short.ok  # type: ignore[attr-defined]


def test_doctor_says_whether_the_signal_filter_is_in_force_and_what_holds_without_it(tmp_path: Path) -> None:
    """Issue 39: without libseccomp (or without the sandbox, which loads the filter) a SIGKILL
    from outside the build is scored as the submission's; doctor says so, and why."""
    from lean_mod_add_proof.cli.doctor import signal_filter_check
    from lean_mod_add_proof.grading.sandbox import FilterProof
    from lean_mod_add_proof.grading.signal_filter import SignalFilter, signal_filter

    row = _checks(tmp_path, sandbox="off")["signal filter"]
    assert not row.ok and "the sandbox is not in force" in row.detail  # type: ignore[attr-defined]
    missing = signal_filter_check(SignalFilter(None, "libseccomp cannot be loaded (x)"), True, None)
    assert not missing.ok and not missing.required
    assert "libseccomp cannot be loaded" in missing.detail
    assert "the kernel's OOM killer) or a SIGTERM" in missing.detail
    made = signal_filter()
    if made.program is not None:
        seen = FilterProof(True, "a shell could not send itself SIGTERM")
        here = signal_filter_check(made, True, seen)
        assert here.ok and f"libseccomp {made.libseccomp}" in here.detail and seen.why in here.detail
        # made is not applied: a filter nobody saw refusing a signal is not claimed
        for proof in (FilterProof(False, "the shell died of SIGTERM (exit 143)"), None):
            unseen = signal_filter_check(made, True, proof)
            assert not unseen.ok and "made, but not seen in force" in unseen.detail
            assert "the kernel's OOM killer) or a SIGTERM" in unseen.detail
        assert "exit 143" in signal_filter_check(made, True, FilterProof(False, "exit 143")).detail
