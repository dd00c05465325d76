"""Issue 37, item 1: a replay route whose `lean --run` cannot run its judge text is unavailable,
never a verdict and never "condemned for the process".

The toolchain double's switch `double-lean-run-export-fails` makes `lean --run` on the export text
of Judge.lean fail as rc2 might (first-contact.md Q1): `after` (the interpreter has only an opaque
extern for `LeanExport.parseStream`: "Could not find native implementation of external
declaration ...", after the replay marker), `unknown` ("(interpreter) unknown declaration ...",
after it) and `header` ("missing IR data file for module LeanExport.Parse", before it). The
native judge (the double's `leanc`) links LeanExport's code, so only the interpreted judge fails.
Everything runs through the real pipeline against the double (shell scripts, not Lean)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import copy_double, double_config, grade_task, run_double, submission

from lean_mod_add_proof.constants import reference_submission
from lean_mod_add_proof.dataset.tasks import NETWORK_LEAN_PATH
from lean_mod_add_proof.grading import native_judge, pipeline, selftest, toolchain
from lean_mod_add_proof.grading.grader import grade
from lean_mod_add_proof.grading.native_judge import interpreter_lacks_ir

pytestmark = pytest.mark.usefixtures("fresh_memos")

NEEDS_NATIVE = "the export route needs the native judge"
WORDING = {
    "after": "Could not find native implementation of external declaration 'LeanExport.parseStream'",
    "unknown": "(interpreter) unknown declaration 'LeanExport.parseStream'",
    "header": "missing IR data file for module LeanExport.Parse",
}


@pytest.fixture(autouse=True)
def _no_judge_memo() -> None:
    native_judge.forget()
    yield
    native_judge.forget()


def _toolchain(tmp_path: Path, mode: str = "after", *, leanc_fails: bool = False) -> Path:
    tc = copy_double(tmp_path / "tc")
    (tc / "double-lean-run-export-fails").write_text(f"{mode}\n")
    if leanc_fails:
        (tc / "double-leanc-fails").write_text("")
    return tc


@pytest.mark.parametrize("mode", ["after", "unknown", "header"])
async def test_an_interpreter_that_cannot_run_the_export_judge_is_no_verdict(
    tmp_path: Path, mode: str
) -> None:
    """Graded on the export route with `lean --run` (no self-test): could not judge, naming what
    the route needs; the next grade in the process skips the route as unavailable and grades
    from the olean, with the reason in its warning. Before the fix, `after` and `unknown` were a
    verdict (0.0: "the kernel check of this submission failed")."""
    tc = _toolchain(tmp_path, mode)
    res = await run_double(reference_submission(5), tmp_path, toolchain_dir=tc, native_judge=False)
    assert not res.judged and res.failed_stage == "leanchecker", res.reason
    assert res.reason.startswith("could not judge: unavailable: ") and NEEDS_NATIVE in res.reason
    assert WORDING[mode] in res.reason and "native_judge is off" in res.reason
    again = await run_double(reference_submission(5), tmp_path, toolchain_dir=tc, native_judge=False)
    assert again.accepted and again.verdict_from == "olean", again.reason
    assert NEEDS_NATIVE in again.judge_note and again.judge_note.startswith("warning: ")


async def test_the_native_judge_is_not_affected(tmp_path: Path) -> None:
    """The switch stops only `lean --run`: with the native judge the export route grades."""
    res = await run_double(reference_submission(5), tmp_path, toolchain_dir=_toolchain(tmp_path))
    assert res.accepted and res.verdict_from == "export" and res.judge_mode == "native", res.reason


async def test_a_judge_that_does_not_link_leaves_the_export_route_unavailable_not_condemned(
    tmp_path: Path,
) -> None:
    """The self-test runs: the export route's reference canary finds the interpreter unable, the
    self-test stops and reports the route unavailable (not "self-test failed", nothing retried),
    and `auto` grades from the olean with the reason and why the native judge did not build."""
    tc = _toolchain(tmp_path, leanc_fails=True)
    config = double_config(tmp_path, toolchain_dir=tc)
    res = await grade(reference_submission(5), grade_task(), config)
    assert res.accepted and res.verdict_from == "olean", res.reason
    assert NEEDS_NATIVE in res.judge_note and "scripted link failure" in res.judge_note
    assert "self-test failed" not in res.judge_note
    (export_report,) = [r for r in selftest._memo.values() if r.unavailable]
    assert not export_report.passed and not export_report.transient
    assert [c.name for c in export_report.canaries] == ["reference proof"]
    assert selftest.route_outcome(export_report)["status"] == "unavailable"
    bad = await grade(reference_submission(5) + "-- double: judge axioms sorryAx\n", grade_task(), config)
    assert bad.judged and not bad.accepted and bad.verdict_from == "olean", bad.reason


@pytest.mark.parametrize("judge", ["replay", "auto"])
async def test_each_setting_goes_on_to_the_olean_route(tmp_path: Path, judge: str) -> None:
    config = double_config(tmp_path, toolchain_dir=_toolchain(tmp_path), native_judge=False, judge=judge)
    res = await grade(reference_submission(5), grade_task(), config)
    assert res.accepted and res.verdict_from == "olean" and NEEDS_NATIVE in res.judge_note, res.reason


async def test_kernels_all_has_no_other_route_so_it_cannot_judge(tmp_path: Path) -> None:
    config = double_config(tmp_path, toolchain_dir=_toolchain(tmp_path), native_judge=False, kernels="all")
    res = await grade(reference_submission(5), grade_task(), config)
    assert not res.judged and res.failed_stage == "toolchain", res.reason
    assert "replay (export): unavailable: " in res.reason and NEEDS_NATIVE in res.reason


async def test_the_selftest_reports_the_route_unavailable(tmp_path: Path) -> None:
    found = toolchain.locate_toolchain(_toolchain(tmp_path, "unknown"))
    assert isinstance(found, toolchain.Toolchain)
    config = double_config(tmp_path, toolchain_dir=found.dir, native_judge=False)
    network = NETWORK_LEAN_PATH.read_text(encoding="utf-8")
    report = await selftest.run_selftest(found, config, network, pipeline.EXPORT_ROUTE)
    assert report.unavailable and not report.passed and not report.transient
    assert report.reason.startswith("unavailable: ") and NEEDS_NATIVE in report.reason
    outcome = selftest.route_outcome(report)
    assert outcome["status"] == "unavailable" and "native_judge = true" in outcome["advice"]
    # the olean text imports no LeanExport: its route is untouched
    olean = await selftest.run_selftest(found, config, network, pipeline.OLEAN_ROUTE)
    assert olean.passed, olean.reason


def test_only_the_toolchains_own_words_count() -> None:
    after = '{"phase":"replay"}\n'
    said = "Could not find native implementation of external declaration 'LeanExport.parseStream' (x)."
    assert interpreter_lacks_ir(after + said + "\n", replay_started=True) == said
    terminate = "terminate called after throwing an instance of 'lean::exception'\n  what():  "
    assert interpreter_lacks_ir(terminate + "(interpreter) unknown declaration 'f'\n", replay_started=True)
    # text the judge prints about a submission never starts a line with the wording
    quoted = "uncaught exception: judge: (interpreter) unknown declaration 'x' is referenced\n"
    assert interpreter_lacks_ir(after + quoted, replay_started=True) is None
    header = "Judge.lean:87:0: error: missing IR data file for module LeanExport.Parse\n"
    assert interpreter_lacks_ir(header, replay_started=False) == header.strip()
    assert interpreter_lacks_ir(after + header, replay_started=True) is None


async def test_after_its_selftest_the_wording_in_the_submissions_data_is_a_verdict(tmp_path: Path) -> None:
    """Once the export route passed its self-test with `lean --run`, that interpreter ran this
    judge text to a verdict on the reference: an "unknown declaration" line after the replay
    marker can only be the submission's data printed raw (an uncaught exception's message), so it
    is the submission's verdict, and it must not turn the route off for the process (before:
    could not judge, and every later grade went to the olean route)."""
    config = double_config(tmp_path, toolchain_dir=copy_double(tmp_path / "tc"), native_judge=False)
    said = r"x\\n(interpreter) unknown declaration 'LeanExport.parseStream'"
    res = await grade(submission(f"judge uncaught {said}"), grade_task(), config)
    assert res.judged and not res.accepted and res.failed_stage == "leanchecker", res.reason
    assert res.verdict_from == "export" and res.judge_mode == "interpreted", res.reason
    again = await grade(reference_submission(5), grade_task(), config)
    assert again.accepted and again.verdict_from == "export", again.reason
