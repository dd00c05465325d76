"""The `guard`, `grade`, `doctor` and `calibrate` commands (the double stands in for Lean)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import DOUBLE_DIR, submission, task_dir

from lean_mod_add_proof.cli import main
from lean_mod_add_proof.grading import selftest

pytestmark = pytest.mark.usefixtures("isolated_cli_home")


def _common(tmp_path: Path) -> list[str]:
    return [
        "--tasks-dir",
        str(task_dir(tmp_path)),
        "--work-root",
        str(tmp_path / "work"),
        "--sandbox",
        "off",
    ]


def test_cli_guard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad, binary = tmp_path / "good.lean", tmp_path / "bad.lean", tmp_path / "bin.lean"
    good.write_text(submission())
    bad.write_text(submission() + "theorem t : False := sorry\n")
    binary.write_bytes(b"\xff\xfe import")
    assert main(["guard", str(good)]) == 0
    assert main(["guard", str(bad)]) == 1
    assert "sorry" in capsys.readouterr().err
    assert main(["guard", str(bad), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["passed"] is False
    assert main(["guard", str(binary)]) == 2
    assert main(["guard", str(tmp_path / "missing.lean")]) == 2


def test_cli_guard_json_on_a_missing_file_prints_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["guard", str(tmp_path / "missing.lean"), "--json"]) == 2
    out, err = capsys.readouterr()
    data = json.loads(out)  # --json always prints a result, errors included
    assert data["exit_code"] == 2 and "cannot read" in data["error"] and "missing.lean" in data["error"]
    assert "cannot read" in err


def test_cli_guard_judges_crlf_as_the_pipeline_does(tmp_path: Path) -> None:
    from lean_mod_add_proof.grading.extract import extract_submission
    from lean_mod_add_proof.grading.guard import check_guard

    crlf = tmp_path / "crlf.lean"
    crlf.write_bytes(submission().replace("\n", "\r\n").encode())
    reply = "```lean\r\n" + submission().replace("\n", "\r\n") + "```\r\n"
    extracted = extract_submission(reply).code
    assert extracted is not None
    assert (main(["guard", str(crlf)]) == 0) is check_guard(extracted).passed is True


def test_cli_grade_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = [*_common(tmp_path), "--toolchain-dir", str(DOUBLE_DIR)]
    good, bad = tmp_path / "good.lean", tmp_path / "bad.lean"
    good.write_text(submission())
    bad.write_text(submission("judge replay-fail nope"))
    assert main(["grade", "p05_h08_s0", str(good), *common]) == 0
    out = capsys.readouterr().out
    assert "ACCEPTED" in out and "leanchecker" in out
    assert main(["grade", "p05_h08_s0", str(bad), *common, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["failed_stage"] == "leanchecker"
    assert main(["grade", "p99_h08_s0", str(good), *common]) == 2
    assert "unknown task id" in capsys.readouterr().err
    assert main(["grade", "p05_h08_s0", str(tmp_path / "missing.lean"), *common, "--json"]) == 2
    assert "error" in json.loads(capsys.readouterr().out)


def test_cli_grade_without_lean_is_could_not_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.lean"
    good.write_text(submission())
    assert main(["grade", "p05_h08_s0", str(good), *_common(tmp_path), "--json"]) == 3
    result = json.loads(capsys.readouterr().out)
    assert result["judged"] is False and result["reason"].startswith("could not judge: Lean toolchain")
    assert result["reward"] is None  # not 0.0: a script reading `reward` must not count a wrong proof
    assert main(["grade", "p05_h08_s0", str(good), *_common(tmp_path)]) == 3
    out = " ".join(capsys.readouterr().out.split())
    assert "COULD NOT JUDGE (no verdict; not a rejection): Lean toolchain" in out
    assert out.lower().count("could not judge") == 1  # said once, not "COULD NOT JUDGE ...: could not judge:"


def test_cli_grade_json_keeps_the_reward_of_a_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = [*_common(tmp_path), "--toolchain-dir", str(DOUBLE_DIR)]
    good, bad = tmp_path / "good.lean", tmp_path / "bad.lean"
    good.write_text(submission())
    bad.write_text(submission("judge replay-fail nope"))
    assert main(["grade", "p05_h08_s0", str(good), *common, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reward"] == 1.0
    assert main(["grade", "p05_h08_s0", str(bad), *common, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["reward"] == 0.0


def test_result_json_and_the_runtime_read_back_agree() -> None:
    """The box's `grade --json` output (reward null) still reads back as the same GradeResult."""
    from lean_mod_add_proof.cli.grading import result_json
    from lean_mod_add_proof.grading.result import GradeResult

    unjudged = GradeResult(judged=False, failed_stage="toolchain", reason="could not judge: no Lean")
    data = result_json(unjudged)
    assert data["reward"] is None and data["judged"] is False
    assert GradeResult.model_validate(data) == unjudged
    assert unjudged.reward == 0.0  # the model itself is unchanged


@pytest.mark.parametrize(
    ("fields", "line"),
    [
        ({"stage_reached": "axioms", "reason": "accepted"}, "ACCEPTED (reward 1.0): accepted"),
        (
            {"failed_stage": "guard", "stage_reached": "guard", "reason": "guard: forbidden word 'sorry'"},
            "REJECTED at guard (reward 0.0): forbidden word 'sorry'",
        ),
        (
            {"failed_stage": "build", "stage_reached": "build", "reason": "Lean rejected the file"},
            "REJECTED at build (reward 0.0): Lean rejected the file",
        ),
        (
            {"judged": False, "failed_stage": "toolchain", "reason": "could not judge: no Lean here"},
            "COULD NOT JUDGE (no verdict; not a rejection): no Lean here",
        ),
    ],
)
def test_verdict_line_says_each_thing_once(fields: dict, line: str) -> None:
    from lean_mod_add_proof.cli.grading import verdict_line
    from lean_mod_add_proof.grading.result import GradeResult

    assert verdict_line(GradeResult(**fields)) == line


def test_cli_grade_reply(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reply = tmp_path / "reply.txt"
    reply.write_text("Here is my proof.\n```lean\n" + submission() + "```\n")
    common = [*_common(tmp_path), "--toolchain-dir", str(DOUBLE_DIR), "--cache-dir", str(tmp_path / "c")]
    assert main(["grade", "p05_h08_s0", str(reply), "--reply", *common, "--json"]) == 0
    assert "extract" in json.loads(capsys.readouterr().out)["stage_seconds"]
    # without --reply the fences are part of the file, which the guard refuses
    assert main(["grade", "p05_h08_s0", str(reply), *common]) == 1


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--timeout-s", "-1"], "--timeout-s '-1': input should be greater than 0"),
        (["--memory-mb", "10"], "--memory-mb '10': input should be greater than or equal to 64"),
        (["--max-file-mb", "lots"], "--max-file-mb 'lots': input should be a valid integer"),
    ],
)
def test_cli_bad_settings_name_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    good = tmp_path / "good.lean"
    good.write_text(submission())
    assert main(["grade", "p05_h08_s0", str(good), *_common(tmp_path), *flags]) == 2
    err = capsys.readouterr().err
    assert message in " ".join(err.split()) and "pydantic" not in err and "http" not in err


def test_cli_doctor_without_toolchain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ready"] is False
    (lean,) = [c for c in report["checks"] if c["name"] == "Lean toolchain"]
    assert "lean-mod-add-proof install-lean" in lean["fix"]
    assert main(["doctor"]) == 1
    assert "Not ready" in capsys.readouterr().out


def test_cli_doctor_shows_the_double_and_the_sandbox_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["doctor", "--json", "--toolchain-dir", str(DOUBLE_DIR), "--sandbox", "off"])
    report = json.loads(capsys.readouterr().out)
    (lean,) = [c for c in report["checks"] if c["name"] == "lean"]
    assert "toolchain double — not Lean" in lean["detail"]
    (box,) = [c for c in report["checks"] if c["name"] == "sandbox (bwrap)"]
    assert box["detail"].startswith("sandbox=off (never used)") and "UNSANDBOXED" in box["detail"]
    assert code == 1 and not report["ready"]  # the double cannot grade for real
    main(["doctor", "--json", "--toolchain-dir", str(DOUBLE_DIR)])
    (box,) = [c for c in json.loads(capsys.readouterr().out)["checks"] if c["name"] == "sandbox (bwrap)"]
    assert box["detail"].startswith("sandbox=on (required)")


def test_cli_doctor_selftest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["--toolchain-dir", str(DOUBLE_DIR), "--sandbox", "off", "--work-root", str(tmp_path / "w")]
    assert main(["doctor", "--selftest", "--json", *flags]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] and len(report["canaries"]) == len(selftest.CANARIES)
    assert main(["doctor", "--selftest", *flags]) == 0
    assert "Self-test passed" in capsys.readouterr().out
    assert main(["doctor", "--selftest"]) == 3  # no toolchain here


def test_cli_doctor_selftest_without_toolchain_prints_no_empty_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["doctor", "--selftest"]) == 3
    out = capsys.readouterr().out
    assert "canary" not in out and "┏" not in out and "self-test on" not in out
    assert "Self-test not run" in out and "install-lean" in out


def test_cli_doctor_selftest_failing_canary_is_a_problem_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A toolchain that says yes to everything: the canaries ran and found a problem (exit 1)."""
    liar = tmp_path / "liar"
    (liar / "bin").mkdir(parents=True)
    (liar / "lib" / "lean").mkdir(parents=True)
    (liar / "bin" / "lean").write_text(
        '#!/bin/sh\nif [ "$1" = --version ]; then echo "Lean (version 4.35.0-rc2, a liar)"; fi\nexit 0\n'
    )
    (liar / "bin" / "lean").chmod(0o755)
    flags = ["--toolchain-dir", str(liar), "--sandbox", "off", "--work-root", str(tmp_path / "w")]
    assert main(["doctor", "--selftest", *flags]) == 1
    out = capsys.readouterr().out
    assert "Self-test failed" in out and "canary" in out


def test_userns_check_names_the_docker_fix() -> None:
    from lean_mod_add_proof.cli.doctor import UsernsFacts, userns_check

    blocked = UsernsFacts("/.dockerenv", (), False, "unshare failed: Operation not permitted")
    check = userns_check(blocked, "on")
    assert check.name == "user namespaces" and not check.ok and not check.required
    assert "NOT available" in check.detail and "/.dockerenv" in check.detail
    assert "--security-opt seccomp=unconfined" in check.fix and "apparmor=unconfined" in check.fix
    off = userns_check(UsernsFacts(None, ("/proc/sys/user/max_user_namespaces=0",), False, "x"), "off")
    assert not off.ok and "max_user_namespaces=0" in off.detail and "unused with sandbox=off" in off.detail
    ok = userns_check(UsernsFacts(None, (), True), "on")
    assert ok.ok and ok.detail.startswith("available (not in a container")


def test_cli_doctor_reports_user_namespaces(capsys: pytest.CaptureFixture[str]) -> None:
    main(["doctor", "--json"])
    (row,) = [c for c in json.loads(capsys.readouterr().out)["checks"] if c["name"] == "user namespaces"]
    assert "unshare" in row["detail"] and "seccomp" in row["fix"]


def test_cli_calibrate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "timings.json"
    assert main(["calibrate", "--max-p", "5", "--out", str(out)]) == 3  # no Lean: says so
    assert "no Lean toolchain" in capsys.readouterr().out and not out.exists()
    assert main(["calibrate", "--max-p", "2"]) == 2  # refused as vf-eval refuses it
    assert "lean-mod-add-proof: error: calibrate: --max-p 2: no task has p <= 2" in capsys.readouterr().err
    flags = ["--toolchain-dir", str(DOUBLE_DIR), "--sandbox", "off", "--work-root", str(tmp_path / "w")]
    assert main(["calibrate", *_common(tmp_path)[:2], *flags, "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    (row,) = data["tasks"]
    assert row["task"] == "p05_h08_s0" and row["accepted"] and row["kernel_replay_seconds"] is not None
    assert "toolchain double" in data["toolchain"]
