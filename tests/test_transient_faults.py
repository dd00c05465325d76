"""A failure must not outlive its cause (issue 30 item 5): a self-test whose canaries could not
be judged (a host fault) and a native-judge build stopped by a host fault are tried again after
a back-off, while a failure on a verdict stays. Through real commands against private copies of
the toolchain double (shell scripts, not Lean; nothing here says what Lean accepts)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import copy_double, count_selftest_runs, double_config, grade_task, submission

from lean_mod_add_proof.grading import backoff, native_judge, selftest
from lean_mod_add_proof.grading.grader import grade
from lean_mod_add_proof.grading.result import GradeResult

#: A `leanexport` that, while the file `fault` lies beside bin/, makes itself not executable and
#: fails as the shell does for such a program (exit 126): a host fault, as a toolchain being
#: replaced underneath the grader would cause.
FLAKY_EXPORTER = """#!/bin/sh
here=$(cd "$(dirname "$0")" && pwd)
if [ -f "$here/../fault" ]; then rm -f "$here/../fault"; chmod -x "$0"; exit 126; fi
exec "$here/leanexport.real" "$@"
"""


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    selftest.forget()
    native_judge.forget()
    # No waiting in tests: a transient failure may be retried by the very next grade.
    monkeypatch.setattr(selftest.retry, "first_s", 0.0)
    monkeypatch.setattr(native_judge.retry, "first_s", 0.0)
    yield
    selftest.forget()
    native_judge.forget()


async def _grade(tmp_path: Path, toolchain: Path) -> GradeResult:
    return await grade(submission(), grade_task(), double_config(tmp_path, toolchain_dir=toolchain))


def _flaky_exporter_double(tmp_path: Path) -> Path:
    """`bin/leanexport` is a symlink to the flaky exporter, which lives outside the directories the
    toolchain manifest watches: its mode changes (the fault, and the fault going away) then leave
    every watched file's identity as it was (a change of a watched file's mode changes its ctime,
    which the manifest compares since issue 39, and the self-test would rightly run again)."""
    tc = copy_double(tmp_path / "tc")
    (tc / "bin" / "leanexport").rename(tc / "bin" / "leanexport.real")
    (tc / "flaky").mkdir()
    (tc / "flaky" / "leanexport").write_text(FLAKY_EXPORTER)
    (tc / "flaky" / "leanexport").chmod(0o755)
    (tc / "bin" / "leanexport").symlink_to("../flaky/leanexport")
    return tc


async def test_a_host_fault_in_the_first_selftest_does_not_condemn_the_export_route(tmp_path: Path) -> None:
    tc = _flaky_exporter_double(tmp_path)
    (tc / "fault").write_text("")
    first = await _grade(tmp_path, tc)
    # The export route's canaries could not be judged: this grade is served by the olean route.
    assert first.accepted and first.verdict_from == "olean", first.reason
    assert "could not" in first.judge_note or "not executable" in first.judge_note, first.judge_note
    assert "retried in 0 s" in first.judge_note
    (tc / "bin" / "leanexport").chmod(0o755)  # the fault is gone
    second = await _grade(tmp_path, tc)
    assert second.accepted and second.verdict_from == "export", second.reason
    assert second.judge_note == ""


async def test_a_transient_selftest_failure_waits_for_its_back_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [1000.0]
    monkeypatch.setattr(selftest, "retry", backoff.Backoff(first_s=60.0, clock=lambda: now[0]))
    tc = _flaky_exporter_double(tmp_path)
    (tc / "fault").write_text("")
    assert (await _grade(tmp_path, tc)).verdict_from == "olean"
    (tc / "bin" / "leanexport").chmod(0o755)
    now[0] += 59.0  # not yet: the olean route still grades, with the first failure's reason
    held = await _grade(tmp_path, tc)
    assert held.verdict_from == "olean" and "retried in 60 s" in held.judge_note, held.judge_note
    now[0] += 1.0
    assert (await _grade(tmp_path, tc)).verdict_from == "export"


async def test_a_selftest_failed_on_a_verdict_is_not_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_selftest import _liar

    from lean_mod_add_proof.grading import pipeline, toolchain

    found = toolchain.locate_toolchain(_liar(tmp_path))
    assert isinstance(found, toolchain.Toolchain)
    config = double_config(tmp_path, toolchain_dir=found.dir)
    report = await selftest.run_selftest(found, config, grade_task().network_lean, pipeline.EXPORT_ROUTE)
    assert not report.passed and not report.transient
    calls = count_selftest_runs(monkeypatch)
    for _ in range(2):
        res = await grade(submission(), grade_task(), config)
        assert not res.judged and "a sorry proof was accepted" in res.reason
    assert len(calls) == 2  # once per replay route (the liar has no lake comparator), never again


async def test_a_host_fault_in_the_first_native_build_is_retried(tmp_path: Path) -> None:
    tc = copy_double(tmp_path / "tc")
    (tc / "bin" / "leanc").chmod(0o644)  # leanc cannot be started: a host fault
    first = await _grade(tmp_path, tc)
    assert first.accepted and first.judge_mode == "interpreted", first.reason
    assert "retried in 0 s" in first.judge_note, first.judge_note
    (tc / "bin" / "leanc").chmod(0o755)
    second = await _grade(tmp_path, tc)
    assert second.accepted and second.judge_mode == "native" and second.verdict_from == "export", (
        second.reason
    )


async def test_a_native_build_that_fails_on_its_own_stays_failed(tmp_path: Path) -> None:
    tc = copy_double(tmp_path / "tc")
    (tc / "double-leanc-fails").write_text("")  # the linker's own error: the toolchain's answer
    first = await _grade(tmp_path, tc)
    assert first.accepted and first.judge_mode == "interpreted", first.reason
    assert "scripted link failure" in first.judge_note and "retried" not in first.judge_note
    (tc / "double-leanc-fails").unlink()
    second = await _grade(tmp_path, tc)
    assert second.judge_mode == "interpreted", second.reason


def test_the_back_off_doubles_up_to_its_most() -> None:
    now = [0.0]
    b = backoff.Backoff(first_s=30.0, max_s=100.0, clock=lambda: now[0])
    assert b.due("k")
    assert [b.failed("k") for _ in range(4)] == [30.0, 60.0, 100.0, 100.0]
    assert not b.due("k")
    now[0] = 100.0
    assert b.due("k")
    b.succeeded("k")
    assert b.failed("k") == 30.0
