"""The whole pipeline against the toolchain double (tests/toolchain_double: shell scripts, not
Lean): stage order, what each command is, how the judge's report maps to stages, and which
outcomes are verdicts and which are "could not judge". Nothing here says which proofs Lean
accepts."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from helpers import (
    DOUBLE_DIR,
    copy_double,
    double_config,
    grade_task,
    run_double,
    submission,
    weights_text,
    work_dirs,
)
from timing import MARGIN_S

from lean_mod_add_proof.constants import theorem_name
from lean_mod_add_proof.grading import sandbox, workdirs
from lean_mod_add_proof.grading.grader import grade, grade_reply
from lean_mod_add_proof.grading.judge import JudgeReport
from lean_mod_add_proof.grading.routes import replay, steps


async def test_default_double_run_passes_every_stage(tmp_path: Path) -> None:
    stages: list[str] = []
    res = await run_double(submission(), tmp_path, stages)
    assert res.accepted and res.reward == 1.0 and res.judged, res.reason
    assert stages == ["guard", "toolchain", "build", "leanchecker", "statement", "axioms"]
    # first grade: the judge's trusted build (lean -c, leanc) and start-up check, the prebuild
    # (2 trusted modules), the submission, its export, then the compiled judge
    stages_run = ["toolchain"] * 3 + ["build"] * 4 + ["leanchecker"]
    assert [c.stage for c in res.commands] == stages_run
    to_c, link, smoke = res.commands[:3]
    assert Path(to_c.argv[0]).name == "lean" and to_c.argv[1:] == ["-j", "1", "-c", "Judge.c", "Judge.lean"]
    assert Path(link.argv[0]).name == "leanc" and link.argv[-3:] == ["-o", "judge", "Judge.c"]
    assert Path(smoke.argv[0]).name == "judge" and smoke.argv[1:] == []
    build, export, judge = res.commands[5], res.commands[6], res.commands[7]
    assert Path(build.argv[0]).name == "lean" and "-Ddebug.skipKernelTC=true" in build.argv
    assert build.argv[1:3] == ["-j", "1"] and build.argv[-1] == "LeanCheckedNetwork/Submission.lean"
    assert Path(export.argv[0]).name == "leanexport"
    assert export.argv[1:] == ["LeanCheckedNetwork.Submission", "--", theorem_name(grade_task().p)]
    assert Path(judge.argv[0]).name == "judge" and judge.argv[1:3] == [
        "--export",
        "submission/Submission.ndjson",
    ]
    assert "--run" not in judge.argv and not any("olean" in a for a in judge.argv)
    assert res.judge == "replay" and res.verdict_from == "export"
    assert res.judge_mode == "native" and res.judge_note == ""
    assert "verdict from the export" in res.reason
    assert res.axioms == ["propext"] and res.check_axioms == ["propext"]
    assert res.cache == "built" and res.failed_stage is None
    assert all(res.stage_flags()[k] == 1.0 for k in ("guard_passed", "build_passed", "axioms_passed"))
    assert res.stage_flags()["judged"] == 1.0
    assert set(res.stage_seconds) >= {"guard", "toolchain", "build", "leanchecker", "statement", "axioms"}
    assert res.grader_seconds > 0 and res.queued_seconds >= 0
    json.dumps(res.model_dump(mode="json"))  # goes onto the trace as is


async def test_a_cached_grade_runs_three_lean_processes(tmp_path: Path) -> None:
    await run_double(submission(), tmp_path)
    res = await run_double(submission(), tmp_path)
    assert res.cache == "hit" and res.accepted and res.judge_mode == "native"
    assert [c.stage for c in res.commands] == ["build", "build", "leanchecker"]
    # the build is `lean`, then `leanexport`; the judge is the compiled executable, so nothing
    # elaborates Judge.lean
    assert [Path(c.argv[0]).name for c in res.commands] == ["lean", "leanexport", "judge"]


async def test_without_leanexport_the_olean_route_grades_and_says_so(tmp_path: Path) -> None:
    toolchain = copy_double(tmp_path / "tc")
    (toolchain / "double-no-leanexport").write_text("")
    res = await run_double(submission(), tmp_path, toolchain_dir=toolchain)
    assert res.accepted and res.judge == "replay" and res.verdict_from == "olean", res.reason
    assert res.judge_note.startswith("warning: verdicts come from the build's olean")
    assert "has no leanexport" in res.judge_note
    assert [Path(c.argv[0]).name for c in res.commands[-2:]] == ["lean", "judge"]
    assert res.commands[-1].argv[1:3] == ["--olean", "submission/Submission.olean"]
    assert "verdict from the olean" in res.reason


async def test_native_judge_off_runs_lean_run_with_one_thread(tmp_path: Path) -> None:
    res = await run_double(submission(), tmp_path, native_judge=False, threads=2)
    assert res.accepted and res.judge_mode == "interpreted" and res.judge_note == ""
    judge = res.commands[-1]
    assert Path(judge.argv[0]).name == "lean" and judge.argv[1:5] == ["-j", "2", "--run", "Judge.lean"]
    # every `lean`; `leanexport` is a compiled program, which reads LEAN_NUM_THREADS instead
    assert all(c.argv[1:3] == ["-j", "2"] for c in res.commands if Path(c.argv[0]).name == "lean")


async def test_a_judge_that_does_not_link_falls_back_to_lean_run(tmp_path: Path) -> None:
    toolchain = copy_double(tmp_path / "tc")
    (toolchain / "double-leanc-fails").write_text("")
    res = await run_double(submission(), tmp_path, toolchain_dir=toolchain)
    assert res.accepted and res.judge_mode == "interpreted", res.reason
    assert "did not build" in res.judge_note and "scripted link failure" in res.judge_note
    assert res.commands[-1].argv[1:5] == ["-j", "1", "--run", "Judge.lean"]


async def test_guard_rejection_runs_nothing(tmp_path: Path) -> None:
    stages: list[str] = []
    res = await run_double(submission() + "theorem x : False := sorry\n", tmp_path, stages)
    assert res.failed_stage == "guard" and res.judged and stages == ["guard"] and not res.commands
    assert work_dirs(tmp_path) == []


async def test_failing_build_stops_before_the_judge(tmp_path: Path) -> None:
    res = await run_double(submission("build fail boom at line 3"), tmp_path)
    assert res.failed_stage == "build" and res.judged and not res.build_passed
    assert "boom at line 3" in res.reason and "exit 1" in res.reason
    assert "leanchecker" not in [c.stage for c in res.commands]


async def test_an_error_message_fails_the_build_even_with_exit_0(tmp_path: Path) -> None:
    res = await run_double(submission("build error-exit0 unknown identifier"), tmp_path)
    assert res.failed_stage == "build" and res.judged and "unknown identifier" in res.reason


@pytest.mark.parametrize(
    ("directive", "stage", "reason"),
    [
        ("judge replay-fail (kernel) type mismatch", "leanchecker", "kernel replay: the kernel rejected"),
        ("judge statement-fail the types differ", "statement", "statement check: the types differ"),
        ("judge kind def", "statement", "is a def, not a theorem"),
        ("judge axioms propext LeanCheckedNetwork.Net.cheat", "axioms", "'LeanCheckedNetwork.Net.cheat'"),
    ],
)
async def test_judge_verdicts_map_to_stages(tmp_path: Path, directive: str, stage: str, reason: str) -> None:
    res = await run_double(submission(directive), tmp_path)
    assert res.judged and not res.accepted
    assert res.failed_stage == stage and reason in res.reason, res.reason


async def test_a_missing_theorem_is_a_statement_failure(tmp_path: Path) -> None:
    text = submission().replace("theorem LeanCheckedNetwork.Net.adds_mod_5 ", "theorem other_name ")
    res = await run_double(text, tmp_path)
    # The exporter is asked for the theorem and panics when it is absent (lean4
    # src/LeanExport/Basic.lean `dumpConstant`), aborting under LEAN_ABORT_ON_PANIC: a verdict.
    assert res.judged and res.failed_stage == "build"
    assert "leanexport" in res.reason and "LeanCheckedNetwork.Net.adds_mod_5 not found" in res.reason
    toolchain = copy_double(tmp_path / "tc")
    (toolchain / "double-no-leanexport").write_text("")
    res = await run_double(text, tmp_path, toolchain_dir=toolchain)  # the olean route
    assert res.failed_stage == "statement" and "declares no LeanCheckedNetwork.Net.adds_mod_5" in res.reason


@pytest.mark.parametrize(
    ("directive", "reason"),
    [
        ("judge crash", "killed by signal 11"),
        ("judge panic", "exit 1): INTERNAL PANIC"),
        ("judge exit 3", "exit 3"),
    ],
)
async def test_a_judge_ending_on_the_submissions_data_is_a_verdict(
    tmp_path: Path, directive: str, reason: str
) -> None:
    # After the self-test, a judge that ends without a verdict once it started on the submission's
    # data ended on that input (a kernel panic, a stack overflow on a deep term): a rejection, so a
    # crafted term cannot turn its rejection into "could not judge".
    res = await run_double(submission(directive), tmp_path)
    assert res.judged and not res.accepted and res.failed_stage == "leanchecker", res.reason
    assert res.reason.startswith("the kernel check of this submission") and reason in res.reason


@pytest.mark.parametrize(
    ("directive", "reason"),
    [
        ("judge setup-fail", "the judge failed (exit 1)"),
        ("judge no-verdict", "printed no verdict"),
        ("judge garbage", "unreadable verdict line"),
        ("judge twice", "more than one verdict"),
    ],
)
async def test_a_judge_without_a_verdict_is_could_not_judge(
    tmp_path: Path, directive: str, reason: str
) -> None:
    res = await run_double(submission(directive), tmp_path)
    assert not res.accepted and not res.judged and res.reward == 0.0
    assert res.failed_stage == "leanchecker" and reason in res.reason
    assert res.reason.startswith("could not judge: ")
    assert res.stage_flags()["judged"] == 0.0


@pytest.mark.parametrize(
    ("directive", "mode", "accepted", "axioms"),
    [
        ("judge axioms propext Quot.sound", "subset", True, ["Quot.sound", "propext"]),
        ("judge no-axioms", "subset", True, []),
        ("judge axioms propext", "exact", False, ["propext"]),
        ("judge axioms propext Classical.choice Quot.sound", "exact", True, ["Classical.choice", "Quot.sound",
                                                                             "propext"]),
        ("judge axioms propext «Classical.choice»", "subset", False, ["propext", "«Classical.choice»"]),
    ],
)  # fmt: skip
async def test_axiom_outcomes(
    tmp_path: Path, directive: str, mode: str, accepted: bool, axioms: list[str]
) -> None:
    # the guard is off only so that a «» name can reach the judge in one case
    res = await run_double(submission(directive), tmp_path, axioms_mode=mode, skip_guard=True)
    assert res.accepted is accepted, res.reason
    assert res.axioms == sorted(axioms) and res.check_axioms == sorted(axioms)
    if not accepted:
        assert res.failed_stage == "axioms" and res.statement_passed and res.judged


async def test_native_decide_aux_axiom_fails(tmp_path: Path) -> None:
    aux = f"{theorem_name(5)}._native.native_decide.ax_1_1"
    # The guard would stop the word first; switched off to reach the axiom stage (test-only flag).
    res = await run_double(submission(f"judge axioms propext {aux}"), tmp_path, skip_guard=True)
    assert res.failed_stage == "axioms" and not res.accepted and res.judged
    assert aux in (res.axioms or [])


@pytest.mark.parametrize("how", ["source", "olean", "swapdir"])
async def test_tampering_with_trusted_files_fails(tmp_path: Path, how: str) -> None:
    res = await run_double(submission(f"build tamper {how}"), tmp_path)
    assert res.failed_stage == "build" and not res.accepted and res.judged
    assert "trusted file changed during the build" in res.reason


async def test_missing_toolchain_is_could_not_judge(tmp_path: Path) -> None:
    res = await run_double(submission(), tmp_path, toolchain_dir=tmp_path / "no-such-toolchain")
    assert res.reward == 0.0 and res.failed_stage == "toolchain" and not res.judged
    assert res.reason.startswith("could not judge: Lean toolchain not found")
    assert "lean-mod-add-proof install-lean" in res.reason
    assert "elan toolchain install leanprover/lean4:v4.35.0-rc2" in res.reason


async def test_wrong_toolchain_version_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "tc"
    (fake / "bin").mkdir(parents=True)
    (fake / "lib").symlink_to(DOUBLE_DIR / "lib")
    lean = fake / "bin" / "lean"
    lean.write_text('#!/bin/sh\necho "Lean (version 4.34.0, toolchain double)"\n')
    lean.chmod(0o755)
    res = await run_double(submission(), tmp_path, toolchain_dir=fake)
    assert res.failed_stage == "toolchain" and not res.judged and "4.34.0" in res.reason


async def test_sandbox_on_without_bwrap_is_could_not_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        steps, "probe_sandbox", lambda: sandbox.SandboxProbe(False, "bwrap is not installed", None)
    )
    res = await run_double(submission(), tmp_path, sandbox="on")
    assert res.failed_stage == "toolchain" and not res.judged and "sandbox required" in res.reason
    assert "apt-get install bubblewrap" in res.reason and "sandbox=off" in res.reason
    auto = await run_double(submission(), tmp_path, sandbox="auto")
    assert auto.accepted and not auto.sandboxed


async def test_failing_prebuild_is_could_not_judge(tmp_path: Path) -> None:
    res = await run_double(
        submission(), tmp_path, task=grade_task(weights=weights_text(5, "fail bad weights"))
    )
    assert res.failed_stage == "build" and not res.judged
    assert "could not prebuild Network/Weights" in res.reason and "bad weights" in res.reason


async def test_internal_error_is_could_not_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_a: object, **_k: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(workdirs, "new_grade_dir", boom)
    res = await run_double(submission(), tmp_path)
    assert res.reward == 0.0 and not res.judged
    assert res.reason.startswith("could not judge: internal grader error: RuntimeError: disk on fire")


async def test_grade_reply_without_code_block(tmp_path: Path) -> None:
    res = await grade_reply("I think it is true.", grade_task(), double_config(tmp_path), skip_selftest=True)
    assert res.failed_stage == "extract" and res.reward == 0.0 and res.judged


async def test_grade_reply_with_code_block(tmp_path: Path) -> None:
    reply = "Here it is:\n```lean\n" + submission() + "```\n"
    res = await grade_reply(reply, grade_task(), double_config(tmp_path), skip_selftest=True)
    assert res.accepted, res.reason
    assert "extract" in res.stage_seconds


async def test_concurrency_limit_and_queued_time(tmp_path: Path) -> None:
    config = double_config(tmp_path, max_concurrent=1)
    await grade(submission(), grade_task(), config, skip_selftest=True)  # warm the cache
    # Each build sleeps MARGIN_S + 1 s. The first grade in the queue gets the slot at once, the
    # last waits for two builds, less however late it reached the queue (load can delay that by
    # a second or so): each bound below holds with MARGIN_S to spare (issue 41: it had 0.3 s).
    build_s = MARGIN_S + 1
    started = time.monotonic()
    results = await asyncio.gather(
        *(
            grade(submission(f"build sleep {build_s}"), grade_task(), config, skip_selftest=True)
            for _ in range(3)
        )
    )
    assert time.monotonic() - started >= 3 * build_s  # one at a time
    queued = sorted(r.queued_seconds for r in results)
    assert queued[0] < MARGIN_S and queued[-1] >= build_s  # the last waited for two others' slots


@pytest.mark.parametrize("verdict", ["error", "", "OK", "accepted"])
async def test_only_the_ok_verdict_is_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verdict: str
) -> None:
    """A verdict the grader does not name (the `Verdict` Literal widened later, say) is could not
    judge, never a pass: the pipeline accepts exactly "ok", it does not reject a known list."""
    real = replay.parse_judge_output

    def widened(text: str) -> JudgeReport:
        report = real(text)
        return JudgeReport.model_construct(**{**report.model_dump(), "verdict": verdict})

    monkeypatch.setattr(replay, "parse_judge_output", widened)
    res = await run_double(submission(), tmp_path)
    assert not res.accepted and not res.judged, res.reason
    assert "verdict the grader does not know" in res.reason


async def test_a_changed_native_judge_is_forgotten_and_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The grade that built the judge holds it with its build records; when that copy is found
    changed, the process must forget it (equality ignores the records), so the next grade
    rebuilds and verifies a fresh executable instead of finding the same change again."""
    from lean_mod_add_proof.grading import native_judge

    native_judge.forget()
    real = native_judge.unchanged
    calls: list[bool] = []

    def changed_once(judge: native_judge.NativeJudge, *, rehash: bool) -> bool:
        calls.append(True)
        return real(judge, rehash=rehash) and len(calls) > 1

    monkeypatch.setattr(replay, "unchanged", changed_once)
    first = await run_double(submission(), tmp_path, sandbox="off")
    assert first.judged and not first.accepted and "native judge changed" in first.reason
    assert native_judge._memo == {}
    second = await run_double(submission(), tmp_path, sandbox="off")
    assert second.accepted and second.judge_mode == "native", second.reason
