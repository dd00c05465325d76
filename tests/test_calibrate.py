"""`calibrate` with the toolchain double: the one-off set-up is kept out of the fit, the smallest
task is not called the largest, and `--timeouts-out` writes a file the taskset reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import DOUBLE_DIR, make_task, make_task_set

from lean_mod_add_proof.cli import main
from lean_mod_add_proof.cli.exits import ERROR_PREFIX
from lean_mod_add_proof.dataset.cost import read_timeouts
from lean_mod_add_proof.taskset import LeanModAddProofTaskset, LeanTaskConfig, LeanTasksetConfig

pytestmark = pytest.mark.usefixtures("isolated_cli_home")


def calibrate(tmp_path: Path, tasks_dir: Path, *extra: str) -> int:
    return main(
        [
            "calibrate",
            "--tasks-dir",
            str(tasks_dir),
            "--toolchain-dir",
            str(DOUBLE_DIR),
            "--sandbox",
            "off",
            "--work-root",
            str(tmp_path / "w"),
            "--cache-dir",
            str(tmp_path / "cache"),
            *extra,
        ]
    )


def test_calibrate_writes_timeouts_the_taskset_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks_dir = make_task_set(tmp_path / "tasks", ((5, 8, 0), (7, 16, 1), (29, 2, 0)))
    out, limits_path = tmp_path / "timings.json", tmp_path / "timeouts.json"
    # Measure the two small tasks only; the file still covers every task of the set.
    code = calibrate(
        tmp_path, tasks_dir, "--split", "all", "--out", str(out), "--timeouts-out", str(limits_path)
    )
    printed = " ".join(capsys.readouterr().out.split())
    assert code == 0, printed
    rows = json.loads(out.read_text())["tasks"]
    assert [r["task"] for r in rows] == ["p05_h08_s0", "p07_h16_s1"]  # smallest kernel work first
    for row in rows:
        # The self-test ran in the set-up, before the measured grade, and is not in it.
        assert row["setup_seconds"] > 0 and row["accepted"]
        assert row["stage_seconds"].get("toolchain", 0.0) < row["setup_seconds"]
        assert row["checked_seconds"] <= row["grader_seconds"]
    assert "Largest measured: p07_h16_s1 (10,976 mul-adds)" in printed and "not counted" in printed
    assert "p05_h08_s0 2,000 accepted" in printed and "…" not in printed  # whole at 80 columns
    limits = read_timeouts(limits_path)
    # The grid's tasks from the fit, and the hard one from the cost model at the measured rate
    # (without a usable rate it is left out, and keeps its shipped limit).
    assert {"p05_h08_s0", "p07_h16_s1"} <= set(limits) <= {"p05_h08_s0", "p07_h16_s1", "p29_h02_s0"}
    assert all(limits[t] >= 60.0 for t in ("p05_h08_s0", "p07_h16_s1"))  # the default floor
    assert f"--env.taskset.task.timeouts {limits_path}" in printed

    # The taskset reads it: each listed task gets its own limit, in its config and its prompt.
    for split in ("all", "hard"):
        config = LeanTasksetConfig(
            id="lean-mod-add-proof",
            tasks_dir=tasks_dir,
            split=split,
            task=LeanTaskConfig(timeout_s=1234, timeouts=limits_path),
        )
        for task in LeanModAddProofTaskset(config).load():
            expected = limits.get(task.data.id, 1234)
            assert task.config.timeout_s == expected and f"{expected:g} seconds" in task.data.prompt
    capsys.readouterr()


@pytest.mark.parametrize("flags", [("--split", "hard"), ("--task", "p29_h02_s0")])
def test_calibrate_never_measures_a_hard_task(tmp_path: Path, capsys, flags: tuple[str, str]) -> None:
    """A hard task's reference proof is brute force, which its limit keeps out: measuring it
    would take hours and fit a limit brute force meets (issue 40)."""
    tasks_dir = make_task_set(tmp_path / "tasks", ((5, 8, 0), (29, 2, 0)))
    assert calibrate(tmp_path, tasks_dir, *flags) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "p29_h02_s0: calibrate measures grid tasks only" in err and "lean-check" in err


def test_added_measurements_join_the_fit_and_give_hard_limits(tmp_path: Path, capsys) -> None:
    """lean-check's hard reference measurement (`--add-measurements`) joins the fit; the hard
    task's limit is then the cost model's at that rate, ÷ or × 1.5."""
    from lean_mod_add_proof.dataset.cost import Rates, hard_estimate

    tasks_dir = make_task_set(tmp_path / "tasks", ((5, 8, 0), (7, 16, 1), (113, 14, 0)))
    extra = tmp_path / "hard.json"
    row = {"task": "p113_h14_s0", "kernel_mul_adds": 20_000_000, "checked_seconds": 2000.0, "accepted": True}
    extra.write_text(json.dumps({"tasks": [row]}), encoding="utf-8")
    limits_path = tmp_path / "timeouts.json"
    code = calibrate(
        tmp_path,
        tasks_dir,
        "--split",
        "all",
        "--add-measurements",
        str(extra),
        "--timeouts-out",
        str(limits_path),
    )
    printed = " ".join(capsys.readouterr().out.split())
    assert code == 0, printed
    assert f"Fit over 3 task(s) (1 from {extra})" in printed
    doc = json.loads(limits_path.read_text())
    rate = doc["fit"]["seconds_per_mul_add"]
    assert 0.9e-4 < rate < 1.1e-4
    expected = hard_estimate(113, 14, Rates.measured(rate, "x")).limit_s
    assert expected is not None and doc["timeouts"]["p113_h14_s0"] == expected
    assert doc["hard_rates"]["fastest_s"] == pytest.approx(rate / 1.5)
    extra.write_text("{", encoding="utf-8")
    assert calibrate(tmp_path, tasks_dir, "--add-measurements", str(extra)) == 2
    assert "--add-measurements" in capsys.readouterr().err


def test_hard_timeouts_keep_brute_force_out_when_no_limit_fits() -> None:
    from lean_mod_add_proof.cli.calibrate import hard_timeouts
    from lean_mod_add_proof.dataset.cost import RateFit, Rates, hard_estimate

    record = make_task(113, 14, 0)
    fast = RateFit(intercept_s=0.0, seconds_per_mul_add=1e-6, n_tasks=3)  # brute force in seconds
    limits, rates, notes = hard_timeouts([record], fast)
    assert rates is not None and rates.fastest_s == pytest.approx(1e-6 / 1.5)
    brute_fastest = hard_estimate(113, 14, Rates.measured(1e-6, "x")).brute_force_s[0]
    assert limits[record.id] <= brute_fastest / 3 and "brute force out" in notes[0]
    assert hard_timeouts([record], RateFit(intercept_s=1.0, seconds_per_mul_add=0.0, n_tasks=1))[0] == {}


def test_calibrate_names_the_largest_task_even_when_a_smaller_one_was_slower(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29, stumble 3: `--max-p 7` printed the smallest task as "Largest" (it was the slowest,
    its time mostly set-up). The smallest task is made the slowest here on purpose: the summary
    still names the task with the most kernel work as the largest, and the slow one apart."""
    from lean_mod_add_proof.cli import calibrate as calibrate_cli

    real_row = calibrate_cli.timing_row

    def slow_small_task(record, result, setup_seconds=0.0):
        row = real_row(record, result, setup_seconds)
        return {**row, "checked_seconds": 99.0} if record.p == 5 else row

    monkeypatch.setattr(calibrate_cli, "timing_row", slow_small_task)
    tasks_dir = make_task_set(tmp_path / "tasks", ((5, 8, 0), (7, 16, 1), (29, 2, 0)))
    assert calibrate(tmp_path, tasks_dir, "--split", "all", "--max-p", "7") == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "Largest measured: p07_h16_s1 (10,976 mul-adds)" in printed, printed
    assert "the slowest was p05_h08_s0 (99.0 s)" in printed, printed


def test_the_one_off_self_test_is_not_in_the_time_the_limits_come_from() -> None:
    """`checked_seconds` (what the fit and the advice use) is the stages one `timeout_s` covers,
    never the self-test, the toolchain probe or the rest of the grade's wall time."""
    from types import SimpleNamespace

    from lean_mod_add_proof.cli.calibrate import timing_row
    from lean_mod_add_proof.dataset.tasks import load_tasks

    record = load_tasks()[0]
    stages = {"toolchain": 40.0, "selftest": 30.0, "build": 1.5, "leanchecker": 0.25, "statement": 0.125}
    result = SimpleNamespace(
        commands=[],
        accepted=True,
        judged=True,
        reason="",
        stage_seconds={**stages, "axioms": 0.125},
        peak_memory_mb=100,
        grader_seconds=72.0,
        cache="hit",
    )
    row = timing_row(record, result, setup_seconds=70.0)
    assert row["checked_seconds"] == 2.0 and row["setup_seconds"] == 70.0


def test_calibrate_headroom_and_floor_shape_the_limits(tmp_path: Path, capsys) -> None:
    tasks_dir = make_task_set(tmp_path / "tasks", ((5, 8, 0), (7, 16, 1)))
    path = tmp_path / "timeouts.json"
    flags = ("--split", "all", "--timeouts-out", str(path))
    assert calibrate(tmp_path, tasks_dir, *flags, "--floor-s", "1", "--headroom", "1000") == 0
    data = json.loads(path.read_text())
    fit, limits = data["fit"], data["timeouts"]
    assert data["headroom"] == 1000 and data["floor_s"] == 1
    for tid, mul_adds in (("p05_h08_s0", 2 * 5**3 * 8), ("p07_h16_s1", 2 * 7**3 * 16)):
        predicted = fit["intercept_s"] + fit["seconds_per_mul_add"] * mul_adds
        assert limits[tid] == max(1.0, float(-(-1000 * predicted // 1)))
    capsys.readouterr()


@pytest.mark.parametrize("flag", ["--headroom", "--floor-s"])
def test_calibrate_refuses_a_non_positive_factor(tmp_path: Path, capsys, flag: str) -> None:
    tasks_dir = make_task_set(tmp_path / "tasks", ((5, 8, 0),))
    assert calibrate(tmp_path, tasks_dir, flag, "0") == 2
    assert f"{ERROR_PREFIX}calibrate: {flag} 0: must be above 0" in capsys.readouterr().err


def test_vf_eval_takes_the_hard_split_and_a_timeouts_file(tmp_path: Path) -> None:
    import subprocess

    from test_e2e import child_env, vf_eval

    limits = tmp_path / "timeouts.json"
    fit = {"intercept_s": 1.0, "seconds_per_mul_add": 1e-4, "n_tasks": 2}
    doc = {"toolchain": "t", "fit": fit, "headroom": 3.0, "floor_s": 60.0, "timeouts": {"p107_h15_s0": 900.0}}
    limits.write_text(json.dumps(doc), encoding="utf-8")
    out_dir = tmp_path / "runs"
    argv = [vf_eval(), "lean-mod-add-proof", "--dry-run", "-n", "1", "--no-push", "-o", str(out_dir)]
    argv += ["--env.taskset.split", "hard", "--env.taskset.task.timeouts", str(limits)]
    done = subprocess.run(argv, env=child_env(), capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    (resolved,) = out_dir.glob("**/configs/resolved/eval.json")
    taskset = json.loads(resolved.read_text())["env"]["taskset"]
    assert taskset["split"] == "hard" and taskset["task"]["timeouts"] == str(limits.resolve())
    # A file that is not a timeouts file stops vf-eval before anything runs, naming the setting.
    limits.write_text("{", encoding="utf-8")
    done = subprocess.run(argv, env=child_env(), capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode != 0 and "timeouts" in done.stderr + done.stdout
