"""The CLI as a whole: `--version`, one exit-code scheme in every `--help`, `--max-p` refused as
vf-eval refuses it, `configs`, `lean-check`, the demo's table for rows that were not judged, and
what the wheel and the sdist carry."""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from helpers import DOUBLE_DIR, make_task_set

from lean_mod_add_proof.cli import build_parser, main
from lean_mod_add_proof.cli.exits import (
    ERROR_PREFIX,
    EXIT_HELP,
    EXIT_NOT_JUDGED,
    EXIT_OK,
    EXIT_PROBLEM,
    EXIT_USAGE,
)
from lean_mod_add_proof.dataset.tasks import TaskSetError, load_tasks
from lean_mod_add_proof.grading.toolchain import DOUBLE_BANNER

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_lean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "no-elan"))
    monkeypatch.delenv("LEAN_MOD_ADD_PROOF_TOOLCHAIN", raising=False)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    out = capsys.readouterr().out.strip()
    assert (
        out
        == f"lean-mod-add-proof {version('lean-mod-add-proof')} (grades with leanprover/lean4:v4.35.0-rc2)"
    )


def test_one_exit_code_scheme_in_every_help() -> None:
    assert (EXIT_OK, EXIT_PROBLEM, EXIT_USAGE, EXIT_NOT_JUDGED) == (0, 1, 2, 3)
    parser = build_parser()
    assert parser.epilog == EXIT_HELP
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert {"lean-check", "configs", "grade", "doctor", "tasks", "serve-baseline"} <= set(commands)
    from lean_mod_add_proof.cli.exits import COMMANDS_WITHOUT_LEAN, EXIT_HELP_NO_LEAN

    for name, sub in commands.items():
        note = EXIT_HELP_NO_LEAN if name in COMMANDS_WITHOUT_LEAN else EXIT_HELP
        assert sub.epilog and sub.epilog.endswith(note), name


def test_usage_errors_are_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["grade"])  # argparse's own error
    assert exited.value.code == EXIT_USAGE
    assert main(["warm-cache", "--task", "p99_h08_s0"]) == EXIT_USAGE
    assert f"{ERROR_PREFIX}warm-cache: unknown task id" in capsys.readouterr().err


# ---- --max-p, refused as vf-eval refuses it --------------------------------------------------------


def test_select_tasks_refuses_max_p_as_the_taskset_does(tmp_path: Path) -> None:
    from lean_mod_add_proof.cli.settings import select_tasks

    records = load_tasks(make_task_set(tmp_path / "tasks"))
    assert [r.id for r in select_tasks(records, "train", 7)] == ["p05_h08_s0", "p07_h16_s1"]
    assert [r.id for r in select_tasks(records, "all", None)] == [r.id for r in records]
    with pytest.raises(TaskSetError, match=r"--max-p 2: no train task has p <= 2 \(the smallest p is 5\)"):
        select_tasks(records, "train", 2)
    with pytest.raises(TaskSetError, match=r"--max-p 3: no task has p <= 3"):
        select_tasks(records, "all", 3)
    with pytest.raises(TaskSetError, match="--max-p 1: must be at least 2"):
        select_tasks(records, "train", 1)


def test_select_tasks_words_the_refusal_as_vf_eval_does() -> None:
    """The same sentence as LeanTasksetConfig's own check (which vf-eval runs)."""
    import pydantic

    from lean_mod_add_proof.cli.settings import select_tasks
    from lean_mod_add_proof.taskset import LeanTasksetConfig

    with pytest.raises(pydantic.ValidationError) as refused:
        LeanTasksetConfig(max_p=2)
    with pytest.raises(TaskSetError) as ours:
        select_tasks(load_tasks(), "train", 2)
    theirs = refused.value.errors()[0]["msg"]
    assert str(ours.value).removeprefix("--max-p 2: ") in theirs


def test_warm_cache_refuses_a_max_p_no_task_has(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["warm-cache", "--max-p", "2"]) == EXIT_USAGE
    assert f"{ERROR_PREFIX}warm-cache: --max-p 2: no task has p <= 2" in capsys.readouterr().err


# ---- settings -------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "1e400"])
def test_timeout_s_must_be_finite(tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str) -> None:
    """`--timeout-s inf` would mean no deadline. Refused by GraderSettings itself (timeout_s:
    `allow_inf_nan=False`), so every route (CLI, taskset flags, GraderConfig) refuses it alike."""
    assert not math.isfinite(float(value))
    good = tmp_path / "good.lean"
    good.write_text("import LeanCheckedNetwork.Weights\n")
    assert main(["grade", "p05_h08_s0", str(good), f"--timeout-s={value}"]) == EXIT_USAGE
    err = " ".join(capsys.readouterr().err.split())
    assert f"--timeout-s '{value}': input should be a finite number" in err


# ---- configs --------------------------------------------------------------------------------------


def test_configs_writes_the_shipped_configs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lean_mod_add_proof.cli.configs import config_files, configs_source

    source = configs_source()
    assert source is not None
    files = config_files(source)
    assert Path("eval.toml") in files and Path("prime-rl/orchestrator.toml") in files
    out = tmp_path / "configs"
    assert main(["configs", str(out)]) == EXIT_OK
    for rel in files:
        assert (out / rel).read_bytes() == (source / rel).read_bytes()
    assert "vf-eval @" in capsys.readouterr().out
    assert main(["configs", str(out)]) == EXIT_OK
    assert "up to date" in capsys.readouterr().out
    (out / "eval.toml").write_text("# mine\n")
    assert main(["configs", str(out)]) == EXIT_PROBLEM  # a user's edit is never overwritten silently
    assert "--force" in capsys.readouterr().err and (out / "eval.toml").read_text() == "# mine\n"
    assert main(["configs", str(out), "--force"]) == EXIT_OK
    assert (out / "eval.toml").read_bytes() == (source / "eval.toml").read_bytes()
    assert main(["configs", "--list"]) == EXIT_OK
    assert "eval.toml" in capsys.readouterr().out


def test_the_wheel_ships_the_configs_and_the_sdist_no_local_state() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    hatch = project["tool"]["hatch"]["build"]["targets"]
    assert hatch["wheel"]["force-include"] == {
        "configs": "lean_mod_add_proof/configs",
        "docs": "lean_mod_add_proof/docs",
        "README.md": "lean_mod_add_proof/docs/README.md",
        "container/README.md": "lean_mod_add_proof/docs/container.md",
    }
    assert ".hypothesis" in hatch["sdist"]["exclude"]
    from lean_mod_add_proof.cli.configs import PACKAGED_CONFIGS

    assert PACKAGED_CONFIGS.parent == ROOT / "lean_mod_add_proof"  # where force-include puts them
    # no invented project URL (none is published yet)
    assert "urls" not in project["project"]


# ---- lean-check -----------------------------------------------------------------------------------


def test_lean_check_without_lean_says_so_and_checks_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lean-check", "--report", str(tmp_path / "report.md")]) == EXIT_NOT_JUDGED
    out = capsys.readouterr().out
    assert "No Lean toolchain here: nothing was checked" in out and "install-lean" in out
    assert "## Self-test" not in out and "## Calibration" not in out


def test_lean_check_runs_every_part(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With the double standing in for Lean: the parts run and report; the integration tests are
    skipped by their own module (the double is not Lean), which the summary says."""
    flags = ["--toolchain-dir", str(DOUBLE_DIR), "--sandbox", "off", "--work-root", str(tmp_path / "w")]
    code = main(["lean-check", "--checkout", str(ROOT), *flags])
    out = capsys.readouterr().out
    # made on the double, the report is not one to send (it says nothing about Lean)
    assert out.rstrip().endswith("(`lean-mod-add-proof install-lean`) and run `lean-check` again.")
    assert "it is not one to send" in out and "Send it to" not in out
    (written,) = (tmp_path / "w").glob("lean-check-*.md")  # the default place: under the work root
    assert written.read_text(encoding="utf-8") in out
    assert "- self-test: passed" in out, out
    # the guard's token table against the double's (tests/test_guard_token_table.py)
    assert "guard token table: matches" in out and "- guard token table: passed" in out
    # Every route's canaries, each with its expected and actual verdict and the belief it tests.
    from lean_mod_add_proof.grading import pipeline, selftest

    for route in pipeline.ROUTES["auto"]:
        assert f"### {route.label}\n" in out
        for c in selftest.canaries_for(route):
            assert f"| ok {c.name} | {selftest._expected(c)} | " in out, c.name
            assert selftest.BELIEFS[c.name] in out
    assert "routes that passed: replay (export), replay (olean), comparator" in out
    assert out.count("outcome: passed\n") == len(pipeline.ROUTES["auto"])
    assert "### comparator probe" in out and "- available: True" in out
    # the toolchain and its manifest: every program under bin/ by its hash
    assert "## Toolchain and its manifest" in out and "| bin/lean | " in out
    assert "- calibration: passed" in out
    assert "measured kernel rate: " in out and "µs per Int multiply-add" in out
    assert "## What to do\n\n- nothing: every part that ran passed" in out
    assert "- integration tests: not run" in out and "the located toolchain is the test double" in out
    # The double is named at the top and in the summary, and exits 3: nothing was checked by Lean.
    assert f"**{DOUBLE_BANNER}.** The toolchain found is the test double" in out
    assert "Not a report to send to whoever maintains this grader" in out
    assert f"- **{DOUBLE_BANNER}**: every part ran on the test double" in out
    assert code == EXIT_NOT_JUDGED
    # doctor's checks, in doctor's own words (issue 29: doctor said "no" where lean-check said "NO")
    words = re.findall(r"^- [^:\n]+: (yes|NO|optional: no|ok) — ", out, re.MULTILINE)
    assert words and "ok" not in words, out


def test_lean_check_writes_its_report_where_asked_and_says_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 37: the report goes to one file (`--report`, by default under the work root), and the
    output ends by saying where it is; without a toolchain too (the file says nothing was checked)."""
    report = tmp_path / "sub" / "report.md"
    assert main(["lean-check", "--report", str(report)]) == EXIT_NOT_JUDGED
    out = capsys.readouterr().out
    assert report.read_text(encoding="utf-8").startswith(
        "# lean-mod-add-proof: `lean-mod-add-proof lean-check`"
    )
    assert "No Lean toolchain here: nothing was checked" in report.read_text(encoding="utf-8")
    assert f"The report is in {report}." in out and "issue tracker" in out
    work = tmp_path / "w"
    assert main(["lean-check", "--work-root", str(work)]) == EXIT_NOT_JUDGED
    written = list(work.glob("lean-check-*.md"))
    assert len(written) == 1 and f"The report is in {written[0]}." in capsys.readouterr().out


def test_lean_check_says_when_its_report_cannot_be_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("")
    assert main(["lean-check", "--report", str(tmp_path / "file" / "report.md")]) == EXIT_PROBLEM
    err = capsys.readouterr().err
    assert "lean-check: --report" in err and "could not write the report" in err and "Traceback" not in err


def test_doctor_and_lean_check_share_one_word_per_outcome() -> None:
    from lean_mod_add_proof.cli.doctor import check_word

    assert [check_word(True, True), check_word(True, False)] == ["yes", "yes"]
    assert check_word(False, True) == "NO" and check_word(False, False) == "optional: no"


def test_lean_check_outside_a_checkout_says_the_tests_were_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse

    from lean_mod_add_proof.cli import leancheck

    monkeypatch.setattr(leancheck, "three_tasks", lambda: ["p05_h08_s0"])
    assert leancheck.find_checkout(tmp_path) is None
    assert leancheck.find_checkout(ROOT / "tests") == ROOT
    args = argparse.Namespace(
        checkout=tmp_path, toolchain_dir=str(DOUBLE_DIR), sandbox="off", work_root=str(tmp_path / "w")
    )
    code, lines = leancheck.lean_check(args)
    report = "\n".join(lines)
    assert "not run: tests/test_lean_integration.py is not here" in report
    assert code == EXIT_NOT_JUDGED, report  # (the double: nothing was checked by Lean)


def test_make_lean_check_calls_the_subcommand() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    target = re.search(r"^lean-check: setup\n\t(.+)$", makefile, re.MULTILINE)
    assert target and target.group(1) == "$(BIN)/lean-mod-add-proof lean-check"
    assert not (ROOT / "scripts" / "lean_check.py").exists()


# ---- the demo's table -----------------------------------------------------------------------------


def _row(**over) -> dict:
    from lean_mod_add_proof.demo import STAGES

    row = {"reward": 0.0, "judged": 0.0, "stages": dict.fromkeys(STAGES, 0.0), "seconds": 0.01}
    row.update(over)
    return row


def test_demo_shows_a_dash_for_rows_not_judged() -> None:
    from lean_mod_add_proof.demo import NO_VALUE, STAGES, table_cells

    reward, judged, *stages, seconds = table_cells(_row())
    assert reward == NO_VALUE and all(s == NO_VALUE for s in stages) and "✗" in judged
    assert seconds == "0.01"
    accepted = table_cells(_row(reward=1.0, judged=1.0, stages=dict.fromkeys(STAGES, 1.0)))
    assert accepted[0] == "1.0" and all("✓" in s for s in accepted[1:-1])
    rejected = table_cells(_row(judged=1.0, stages={**dict.fromkeys(STAGES, 0.0), "guard_passed": 1.0}))
    assert rejected[0] == "0.0" and "✓" in rejected[2] and "✗" in rejected[3]
    no_grade = table_cells(_row(reward=None, judged=None, stages=dict.fromkeys(STAGES), seconds=None))
    assert set(no_grade) == {NO_VALUE}


def test_demo_prints_no_zero_reward_for_unjudged_rows(tmp_path: Path) -> None:
    from rich.console import Console

    from lean_mod_add_proof.demo import results_table

    console = Console(width=200, record=True)
    console.print(results_table([{**_row(), "task": "p05_h08_s0"}]))
    text = console.export_text()
    cells = text.splitlines()[-2].split("│")[3:-2]  # reward .. axioms
    assert [c.strip() for c in cells] == ["—", "✗", "—", "—", "—", "—", "—"]


def test_demo_runs_as_training_does_and_an_unjudged_error_is_not_a_broken_run() -> None:
    """The demo uses on_grader_error=raise (a host fault is never a 0.0, issue 29): its rows of
    errored could-not-judge rollouts read "—" from the trace, and only other errors fail the demo."""
    from lean_mod_add_proof.demo import NO_VALUE, broken_rows, table_cells, trace_row, vf_eval_argv

    argv = vf_eval_argv("http://127.0.0.1:1/v1", Path("out"), "run", n=1, max_p=7, model="m", rich=False)
    assert argv[argv.index("--env.taskset.task.on-grader-error") + 1] == "raise"
    errored = {
        "ok": False,
        "task": {"data": {"id": "p05_h08_s0"}},
        "errors": [{"type": "GraderUnavailable", "message": "could not judge: Lean toolchain not found"}],
    }
    row = trace_row(errored)
    assert row["reward"] is None and table_cells(row)[0] == NO_VALUE
    assert row["reason"].startswith("could not judge")
    assert broken_rows([row]) == []
    other = trace_row({**errored, "errors": [{"type": "RuntimeError", "message": "boom"}]})
    assert broken_rows([row, other]) == [other]


def test_the_blocker_banner_points_where_the_reason_is() -> None:
    from lean_mod_add_proof.taskset import blocker_banner

    raised = blocker_banner("Lean toolchain not found", "raise")
    zero = blocker_banner("Lean toolchain not found", "zero")
    assert "traces[i].errors[j].message" in raised and "info.lean_grader.reason" not in raised
    assert "traces[i].info.lean_grader.reason" in zero and "errors[j]" not in zero


@pytest.mark.parametrize(
    "argv", [["reference", "p05_h08_s0"], ["tasks", "--json"], ["prompt", "p05_h08_s0"], ["doctor", "--json"]]
)
def test_a_reader_that_stops_early_gets_no_traceback(argv: list[str], tmp_path: Path) -> None:
    """A real pipe whose read end is closed before the command writes (`... | true`): the command
    ends without a BrokenPipeError traceback, for every command (it is handled once in `main`),
    and with the exit status it has when its output is read to the end. Issue 41: `cmd | head`
    exited 1 when head left before the command had written everything, else 0."""
    import subprocess
    import sys

    command = [sys.executable, "-m", "lean_mod_add_proof.cli", *argv]
    env = {**os.environ, "HOME": str(tmp_path), "ELAN_HOME": str(tmp_path / "no-elan")}
    env.pop("LEAN_MOD_ADD_PROOF_TOOLCHAIN", None)
    read_to_the_end = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            command, stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120, env=env
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == read_to_the_end.returncode, (done.stderr, read_to_the_end.stderr)


def _subcommands() -> dict:
    import argparse

    from lean_mod_add_proof.cli import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_every_argument_of_every_command_has_help() -> None:
    """Issue 29: `doctor --json`, `task_id`, `--tasks-dir`, `prompt --axioms-mode` had none."""
    missing = [
        f"{name} {action.dest}"
        for name, sub in _subcommands().items()
        for action in sub._actions
        if not action.help and action.dest != "help"
    ]
    assert missing == []


def test_a_default_is_shown_and_commands_without_lean_do_not_mention_exit_3() -> None:
    commands = _subcommands()
    assert "(default: 10.0)" in " ".join(commands["install-lean"].format_help().split())
    configs = " ".join(commands["configs"].format_help().split())
    assert "could not judge" not in configs and "usage error" in configs
    assert "could not judge" in " ".join(commands["grade"].format_help().split())


@pytest.mark.parametrize(
    "argv",
    [
        ["grade"],  # argparse's own error
        ["grade", "p05_h08_s0", "/nonexistent/" + "a-long-directory-name/" * 6 + "Submission.lean"],
        ["doctor", "--timeout-s", "-1"],
        ["tasks", "--tokenizer", "no-such-kind:" + "a-long-tokenizer-name-" * 4],
        ["prompt", "p99_h99_s9", "--tasks-dir", "/nonexistent/" + "a-long-directory-name/" * 4],
        ["calibrate", "--headroom", "0"],
        ["warm-cache", "--split", "eval", "--max-p", "1"],
        ["calibrate", "--split", "hard", "--tasks-dir", "{a set without hard tasks}"],
    ],
)
def test_error_lines_have_one_prefix_and_are_not_wrapped_when_piped(argv: list[str], tmp_path: Path) -> None:
    import subprocess
    import sys

    from helpers import make_task_set

    if "{a set without hard tasks}" in argv:
        argv = [
            str(make_task_set(tmp_path / "tasks", ((5, 8, 0),))) if a.startswith("{") else a for a in argv
        ]
    done = subprocess.run(
        [sys.executable, "-m", "lean_mod_add_proof.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert done.returncode == EXIT_USAGE, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and errors[0].startswith("lean-mod-add-proof: error: "), done.stderr
    # Not wrapped: the error is the last line (argparse's usage may come before it), whole.
    assert done.stderr.splitlines()[-1] == errors[0], done.stderr
    for long_word in (w.rstrip("/") for w in argv if "a-long-" in w):  # longer than a line
        assert long_word in errors[0], done.stderr


def test_the_demo_table_never_cuts_a_task_id_at_80_columns() -> None:
    from rich.console import Console

    from lean_mod_add_proof.demo import results_table

    console = Console(width=80, record=True)
    console.print(results_table([{**_row(), "task": "p05_h08_s0"}, {**_row(), "task": "p23_h32_s2"}]))
    text = console.export_text()
    assert "p05_h08_s0" in text and "p23_h32_s2" in text, text


# ---- issue 41: the stumbles of a first hour ---------------------------------------------------


@pytest.mark.parametrize("command", ["doctor", "calibrate", "warm-cache", "lean-check"])
def test_commands_that_grade_on_the_host_refuse_grade_in(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--grade-in` was accepted and silently ignored: these commands always run here."""
    with pytest.raises(SystemExit) as exited:
        main([command, "--grade-in", "runtime"])
    assert exited.value.code == EXIT_USAGE
    assert "unrecognized arguments: --grade-in runtime" in capsys.readouterr().err


def test_grade_says_what_grade_in_means_for_it() -> None:
    grade = _subcommands()["grade"]
    (action,) = [a for a in grade._actions if a.dest == "grade_in"]
    assert "inside a rollout's runtime box" in (action.help or "") and "re-hashed" in (action.help or "")


def test_quiet_works_after_the_command_too(capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    from lean_mod_add_proof.grading.steps_log import PACKAGE_LOGGER

    main(["doctor", "--json", "--quiet"])
    assert logging.getLogger(PACKAGE_LOGGER).level == logging.WARNING
    main(["doctor", "--json"])
    assert logging.getLogger(PACKAGE_LOGGER).level == logging.INFO
    main(["--quiet", "doctor", "--json"])  # (before it, as before)
    assert logging.getLogger(PACKAGE_LOGGER).level == logging.WARNING
    capsys.readouterr()


def test_a_bare_command_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == EXIT_USAGE
    err = capsys.readouterr().err
    for name in ("grade", "doctor", "tasks", "install-lean", "lean-check", "docs"):
        assert f"\n    {name} " in err or f"\n    {name}\n" in err, err
    assert err.rstrip().splitlines()[-1].startswith(ERROR_PREFIX)


def test_an_invalid_choice_is_one_line_like_a_bad_number(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["doctor", "--sandbox", "sometimes"])
    assert exited.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"{ERROR_PREFIX}doctor: argument --sandbox: invalid choice: 'sometimes' "
        "(choose from 'auto', 'on', 'off') (see `lean-mod-add-proof doctor --help`)"
    ], err
    assert main(["doctor", "--timeout-s", "-1"]) == EXIT_USAGE
    assert len(capsys.readouterr().err.splitlines()) == 1


def test_grade_and_guard_read_standard_input(tmp_path: Path) -> None:
    import subprocess
    import sys

    from helpers import submission

    env = {**os.environ, "HOME": str(tmp_path / "home"), "ELAN_HOME": str(tmp_path / "no-elan")}
    env.pop("LEAN_MOD_ADD_PROOF_TOOLCHAIN", None)
    cli = [sys.executable, "-m", "lean_mod_add_proof.cli"]
    guard = subprocess.run([*cli, "guard", "-"], input=submission(), capture_output=True, text=True, env=env)
    assert guard.returncode == EXIT_OK and "guard: -: passed" in guard.stdout, guard.stderr
    grade = subprocess.run(
        [*cli, "grade", "p05_h08_s0", "-", "--json"],
        input=submission(),
        capture_output=True,
        text=True,
        env=env,
    )
    result = json.loads(grade.stdout)  # read from stdin and graded: no Lean here, so not judged
    assert grade.returncode == EXIT_NOT_JUDGED and result["guard_passed"] is True, grade.stderr
    binary = subprocess.run([*cli, "guard", "-"], input=b"\xff\xfe", capture_output=True, env=env)
    assert binary.returncode == EXIT_USAGE and b"standard input is not UTF-8" in binary.stderr


def test_the_judges_start_up_check_is_named_as_such() -> None:
    from lean_mod_add_proof.cli.grading import command_note
    from lean_mod_add_proof.grading.result import CommandRecord

    def record(*argv: str) -> CommandRecord:
        return CommandRecord(
            stage="leanchecker",
            argv=list(argv),
            exit_code=1,
            seconds=0.0,
            output_tail="",
            output_bytes=0,
            truncated=False,
        )

    assert "start-up check" in command_note(record("/cache/judge-x/package/judge"))
    assert command_note(record("/cache/judge-x/package/judge", "--export", "x.ndjson")) == ""
    assert command_note(record("/toolchain/bin/lean", "--version")) == ""
