"""`lean-mod-add-proof warm-cache` against the toolchain double: the first run builds each task's
cache entry through the pipeline's own prebuild path, the second finds them (hit), and a grade
afterwards starts from that very entry. The double is not Lean: this checks the orchestration
(keys, statuses, exit codes, the table), not that Lean compiles the weights."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import (
    DOUBLE_DIR,
    count_selftest_runs,
    grade_task,
    make_task_set,
    run_double,
    submission,
    weights_text,
)

from lean_mod_add_proof.cli import main
from lean_mod_add_proof.cli.taskrun import choose
from lean_mod_add_proof.cli.warmcache import KEY_PREFIX, warm_one
from lean_mod_add_proof.dataset.tasks import load_tasks, sha256_text
from lean_mod_add_proof.grading import grader, native_judge, selftest
from lean_mod_add_proof.grading.result import GraderConfig
from lean_mod_add_proof.grading.routes.steps import cache_key_for
from lean_mod_add_proof.grading.toolchain import Toolchain, locate_toolchain

# Nothing remembered of a self-test an earlier test module ran in this process: warm-cache must
# run its own (and make the self-test task's cache entry) in each test's cache. Without this,
# `pytest tests/test_cli_grading.py tests/test_warm_cache.py` failed the entry count.
pytestmark = pytest.mark.usefixtures("isolated_cli_home")


@pytest.fixture
def tasks_dir(tmp_path: Path) -> Path:
    return make_task_set(tmp_path / "tasks")


def warm(capsys: pytest.CaptureFixture[str], tmp_path: Path, *extra: str) -> tuple[int, str]:
    code = main(
        [
            "warm-cache",
            "--toolchain-dir",
            str(DOUBLE_DIR),
            "--sandbox",
            "off",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--work-root",
            str(tmp_path / "work"),
            *extra,
        ]
    )
    out, err = capsys.readouterr()
    return code, out + err


def statuses(out: str) -> dict[str, str]:
    """task id -> status, read from the printed table."""
    row = r"(p\d\d_h\d\d_s\d)\s*│\s*[0-9a-f]{" + str(KEY_PREFIX) + r"}\s*│\s*(\w+)"
    return dict(re.findall(row, out))


def test_first_run_builds_second_run_hits(capsys, tmp_path: Path, tasks_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code, out = warm(capsys, tmp_path, "--tasks-dir", str(tasks_dir))
    assert code == 0, out
    ids = [r.id for r in load_tasks(tasks_dir)]
    assert statuses(out) == dict.fromkeys(ids, "built"), out
    assert f"{len(ids)} built, 0 already there, 0 failed" in out
    cached = sorted(p.name for p in (tmp_path / "cache").iterdir() if not p.name.startswith("."))
    # one entry per task and one for the self-test's own task, the compiled judge, and the
    # remembered self-test pass with the toolchain's manifest
    entries = [
        n for n in cached if not n.startswith("judge-") and n not in ("selftest", "toolchain-manifest")
    ]
    assert len(entries) == len(ids) + 1
    assert len([n for n in cached if n.startswith("judge-")]) == 1
    assert len(list((tmp_path / "cache" / "selftest").glob("*.json"))) == 1
    table = "\n".join(line for line in out.splitlines() if "│" in line)  # not the log lines' keys
    assert sum(key[:KEY_PREFIX] in table for key in entries) == len(ids)  # the table names them
    assert not list((tmp_path / "work").glob("*")), "warm-cache must not leave grade directories"

    code, out = warm(capsys, tmp_path, "--tasks-dir", str(tasks_dir))
    assert code == 0, out
    assert statuses(out) == dict.fromkeys(ids, "hit"), out
    assert f"0 built, {len(ids)} already there, 0 failed" in out


async def test_a_grade_after_warming_is_a_cache_hit(tmp_path: Path) -> None:
    task = grade_task(p=5)
    found = locate_toolchain(DOUBLE_DIR)
    assert isinstance(found, Toolchain)
    # warm exactly this GradeTask through the same function the command uses
    config = GraderConfig(
        toolchain_dir=DOUBLE_DIR, sandbox="off", cache_dir=tmp_path / "cache", work_root=tmp_path / "work"
    )
    row = await warm_one(task, config, found)
    assert (row.status, row.key) == ("built", cache_key_for(task, found))
    assert (tmp_path / "cache" / row.key / "manifest.json").is_file()
    result = await run_double(submission(), tmp_path, task=task)
    assert result.accepted and result.cache == "hit", result.reason


async def test_a_first_grade_after_warming_runs_no_canary_and_only_its_own_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a box made from a warmed image does: its first grade finds the compiled judge, the
    task's cache entry and the remembered self-test pass, so it runs the build, the export and the
    judge and
    nothing else (the pass is bound to toolchain, grader version, route, judge and settings)."""
    task = grade_task(p=5)
    config = GraderConfig(
        toolchain_dir=DOUBLE_DIR, sandbox="off", cache_dir=tmp_path / "cache", work_root=tmp_path / "work"
    )
    warmed = await grader.warm_cache(task, config)
    assert warmed.judged and warmed.judge_mode == "native", warmed.reason
    # a fresh process: nothing remembered in memory
    selftest.forget()
    native_judge.forget()
    canaries = count_selftest_runs(monkeypatch)
    res = await grader.grade(submission(), task, config)
    assert res.accepted and res.cache == "hit" and res.judge_mode == "native", res.reason
    assert canaries == []
    assert [c.stage for c in res.commands] == ["toolchain", "build", "build", "leanchecker"]
    assert [Path(c.argv[0]).name for c in res.commands[1:]] == ["lean", "leanexport", "judge"]
    assert Path(res.commands[0].argv[0]).name == "judge" and res.commands[0].argv[1:] == []  # start-up check


def test_filters_and_unknown_ids(capsys, tmp_path: Path, tasks_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code, out = warm(capsys, tmp_path, "--tasks-dir", str(tasks_dir), "--split", "eval")
    assert code == 0 and list(statuses(out)) == ["p05_h08_s2"], out
    code, out = warm(capsys, tmp_path, "--tasks-dir", str(tasks_dir), "--task", "p07_h16_s1", "--max-p", "7")
    assert code == 0 and statuses(out) == {"p07_h16_s1": "built"}, out
    code, out = warm(capsys, tmp_path, "--tasks-dir", str(tasks_dir), "--task", "p99_h08_s0")
    assert code == 2 and "unknown task id(s): p99_h08_s0" in out
    code, out = warm(capsys, tmp_path, "--tasks-dir", str(tasks_dir), "--max-p", "3")
    assert code == 2 and "no task has p <= 3" in out
    code, out = warm(capsys, tmp_path, "--tasks-dir", str(tasks_dir), "--timeout-s", "-1")
    assert code == 2 and "--timeout-s" in out


def test_choose_keeps_task_set_order(tasks_dir: Path) -> None:
    records = load_tasks(tasks_dir)
    assert [r.id for r in choose(records, "all", None, [])] == [r.id for r in records]
    assert [r.id for r in choose(records, "train", 5, [])] == ["p05_h08_s0"]
    with pytest.raises(ValueError, match="p01_h01_s0"):
        choose(records, "all", None, ["p01_h01_s0"])


def test_without_a_toolchain_says_so_and_exits_3(capsys, tmp_path: Path, tasks_dir: Path) -> None:
    empty = tmp_path / "no-toolchain"
    empty.mkdir()
    code = main(
        [
            "warm-cache",
            "--tasks-dir",
            str(tasks_dir),
            "--toolchain-dir",
            str(empty),
            "--cache-dir",
            str(tmp_path / "cache"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 3
    assert "no Lean toolchain, nothing built" in out and "install-lean" in out
    assert not (tmp_path / "cache").exists()


def test_a_failing_prebuild_is_reported_and_exits_1(capsys, tmp_path: Path, monkeypatch) -> None:
    """A Weights.lean the double refuses to compile: failed row, reason printed, exit 1."""
    root = make_task_set(tmp_path / "tasks", specs=((5, 8, 0),))
    weights = root / "p05_h08_s0" / "Weights.lean"
    weights.write_text(weights_text(5, "fail the weights do not build"), encoding="utf-8")
    rows = [json.loads(line) for line in (root / "tasks.jsonl").read_text().splitlines()]
    rows[0]["weights_sha256"] = sha256_text(weights.read_text(encoding="utf-8"))
    (root / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    monkeypatch.setenv("COLUMNS", "200")
    code, out = warm(capsys, tmp_path, "--tasks-dir", str(root))
    assert code == 1, out
    assert statuses(out) == {"p05_h08_s0": "failed"}
    assert "could not prebuild Network/Weights" in out and "0 built, 0 already there, 1 failed" in out
