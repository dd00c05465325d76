"""The CLI as a whole: `--version`, one exit-code scheme in every `--help`, `--max-p` refused as
vf-eval refuses it, `configs`, `lean-check`, the demo's table for rows that were not judged, and
what the wheel and the sdist carry."""

from __future__ import annotations

import math
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from helpers import DOUBLE_DIR, make_task_set

from lean_mod_add_proof.cli import build_parser, main
from lean_mod_add_proof.cli.exits import EXIT_HELP, EXIT_NOT_JUDGED, EXIT_OK, EXIT_PROBLEM, EXIT_USAGE
from lean_mod_add_proof.dataset.tasks import TaskSetError, load_tasks

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
    for name, sub in commands.items():
        assert sub.epilog and sub.epilog.endswith(EXIT_HELP), name


def test_usage_errors_are_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["grade"])  # argparse's own error
    assert exited.value.code == EXIT_USAGE
    assert main(["warm-cache", "--task", "p99_h08_s0"]) == EXIT_USAGE
    assert "unknown task id" in capsys.readouterr().out


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
    assert "no task has p <= 2" in " ".join(capsys.readouterr().out.split())


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
    assert hatch["wheel"]["force-include"] == {"configs": "lean_mod_add_proof/configs"}
    assert ".hypothesis" in hatch["sdist"]["exclude"]
    from lean_mod_add_proof.cli.configs import PACKAGED_CONFIGS

    assert PACKAGED_CONFIGS.parent == ROOT / "lean_mod_add_proof"  # where force-include puts them
    # no invented project URL (none is published yet)
    assert "urls" not in project["project"]


# ---- lean-check -----------------------------------------------------------------------------------


def test_lean_check_without_lean_says_so_and_checks_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lean-check"]) == EXIT_NOT_JUDGED
    out = capsys.readouterr().out
    assert "No Lean toolchain here: nothing was checked" in out and "install-lean" in out
    assert "## Self-test" not in out and "## Calibration" not in out


def test_lean_check_runs_every_part(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With the double standing in for Lean: the parts run and report; the integration tests are
    skipped by their own module (the double is not Lean), which the summary says."""
    flags = ["--toolchain-dir", str(DOUBLE_DIR), "--sandbox", "off", "--work-root", str(tmp_path / "w")]
    code = main(["lean-check", "--checkout", str(ROOT), *flags])
    out = capsys.readouterr().out
    assert "- self-test: passed" in out, out
    # Every route's canaries, each with its expected and actual verdict and the belief it tests.
    from lean_mod_add_proof.grading import pipeline, selftest

    for route in pipeline.ROUTES["auto"]:
        assert f"### {route.label}\n" in out
        for c in selftest.canaries_for(route):
            assert f"| ok {c.name} | {selftest._expected(c)} | " in out, c.name
            assert selftest.BELIEFS[c.name] in out
    assert "routes that passed: replay (export), replay (olean), comparator" in out
    assert "- calibration: passed" in out
    assert "- integration tests: not run" in out and "the located toolchain is the test double" in out
    assert code == EXIT_OK


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
    assert code == EXIT_OK, report


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
