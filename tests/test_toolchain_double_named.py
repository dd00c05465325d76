"""The toolchain double cannot pass for Lean (issue 41): it is recognised by either of its two
signs (the marker file, and `lean --version` naming it), and every headline, check and result
made with it says "TOOLCHAIN DOUBLE: nothing was checked by Lean". (The taskset's refusal to
score its grades is in test_taskset.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import (
    DOUBLE_DIR,
    copy_double,
    require_comparator,
    run_double,
    submission,
    task_dir,
)

from lean_mod_add_proof.cli import main
from lean_mod_add_proof.grading import toolchain
from lean_mod_add_proof.grading.result import GradeResult
from lean_mod_add_proof.grading.toolchain import DOUBLE_BANNER, DOUBLE_MARKER_FILE

pytestmark = pytest.mark.usefixtures("isolated_cli_home", "fresh_memos")


def _lean_saying(root: Path, version_line: str) -> Path:
    """A toolchain directory whose `lean --version` prints `version_line` (nothing else works)."""
    (root / "bin").mkdir(parents=True)
    (root / "lib" / "lean").mkdir(parents=True)
    lean = root / "bin" / "lean"
    lean.write_text(f'#!/bin/sh\necho "{version_line}"\n')
    lean.chmod(0o755)
    return root


def test_the_double_is_found_by_either_sign(tmp_path: Path) -> None:
    found = toolchain.locate_toolchain(DOUBLE_DIR)
    assert isinstance(found, toolchain.Toolchain) and found.is_double
    assert found.label.startswith(f"{DOUBLE_BANNER}: {found.dir} (")
    # the marker file alone
    marked = _lean_saying(
        tmp_path / "marked", "Lean (version 4.35.0-rc2, x86_64-unknown-linux-gnu, commit 1)"
    )
    (marked / DOUBLE_MARKER_FILE).write_text("")
    assert toolchain.locate_toolchain(marked).is_double  # type: ignore[union-attr]
    # the version text alone (a copy whose marker was deleted)
    copy = copy_double(tmp_path / "copy")
    (copy / DOUBLE_MARKER_FILE).unlink()
    assert toolchain.locate_toolchain(copy).is_double  # type: ignore[union-attr]
    # neither: what real Lean prints (src/Lean/Shell.lean) and no marker
    real = _lean_saying(tmp_path / "real", "Lean (version 4.35.0-rc2, x86_64-unknown-linux-gnu, commit 1)")
    found = toolchain.locate_toolchain(real)
    assert isinstance(found, toolchain.Toolchain) and not found.is_double
    assert DOUBLE_BANNER not in found.label


def test_a_result_names_the_double_by_its_toolchain() -> None:
    label = f"{DOUBLE_BANNER}: /x (Lean (version 4.35.0-rc2, x86_64))"
    assert GradeResult(toolchain=label).toolchain_double
    assert GradeResult(
        toolchain="/x (Lean (version 4.35.0-rc2, toolchain double — not Lean))"
    ).toolchain_double
    assert not GradeResult(toolchain="/x (Lean (version 4.35.0-rc2, x86_64))").toolchain_double
    assert not GradeResult().toolchain_double
    data = GradeResult(toolchain=label).model_dump(mode="json")
    assert data["toolchain_double"] is True  # on the trace and in `grade --json`


@pytest.mark.parametrize("judge", ["replay", "comparator"])
async def test_a_grade_by_the_double_names_it_in_its_toolchain_and_reason(tmp_path: Path, judge: str) -> None:
    if judge == "comparator":
        require_comparator()
    res = await run_double(submission(), tmp_path, judge=judge)
    assert res.accepted and res.judge == judge and res.toolchain_double, res.reason
    assert (res.toolchain or "").startswith(f"{DOUBLE_BANNER}: {DOUBLE_DIR} (")
    assert f"(toolchain: {DOUBLE_BANNER}: " in res.reason or f"; toolchain: {DOUBLE_BANNER}: " in res.reason


def test_grade_names_the_double_in_its_verdict_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.lean"
    good.write_text(submission())
    flags = ["--tasks-dir", str(task_dir(tmp_path)), "--toolchain-dir", str(DOUBLE_DIR), "--sandbox", "off"]
    assert main(["grade", "p05_h08_s0", str(good), *flags, "--work-root", str(tmp_path / "w")]) == 0
    out = capsys.readouterr().out
    (verdict,) = [line for line in out.splitlines() if "ACCEPTED" in line]
    assert verdict.startswith(f"{DOUBLE_BANNER}. ACCEPTED (reward 1.0): "), verdict
    assert f"{DOUBLE_BANNER}. This grade ran on the toolchain double" in out
    assert main(["grade", "p05_h08_s0", str(good), *flags, "--work-root", str(tmp_path / "w"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["toolchain_double"] is True


def test_doctor_is_not_ready_with_the_double(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["--toolchain-dir", str(DOUBLE_DIR), "--sandbox", "off"]
    assert main(["doctor", "--json", *flags]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ready"] is False and report["toolchain_double"] is True
    (lean,) = [c for c in report["checks"] if c["name"] == "lean"]
    assert lean["ok"] is False and lean["detail"].startswith(DOUBLE_BANNER) and "install-lean" in lean["fix"]
    assert main(["doctor", *flags]) == 1
    out = capsys.readouterr().out
    assert f"{DOUBLE_BANNER}. The toolchain found is the test double" in out and "Ready:" not in out


def test_the_self_test_on_the_double_says_its_verdicts_do_not_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--toolchain-dir", str(DOUBLE_DIR), "--sandbox", "off", "--work-root", str(tmp_path / "w")]
    assert main(["doctor", "--selftest", *flags]) == 0
    out = capsys.readouterr().out
    assert "verdicts count" not in out and f"{DOUBLE_BANNER}. Self-test passed on the test double" in out
    assert f"self-test on {DOUBLE_BANNER}" in out


def test_the_demo_names_the_double() -> None:
    from rich.console import Console

    from lean_mod_add_proof import demo

    row = {"task": "p05_h08_s0", "reward": 1.0, "stages": dict.fromkeys(demo.STAGES, 1.0), "judged": 1.0}
    rows = [{**row, "seconds": 1.0, "reason": "accepted: ...", "ok": True, "double": True}]
    recorder = Console(record=True, width=200)
    saved, demo.console = demo.console, recorder
    try:
        demo.explain(rows)
        recorder.print(demo.results_table(rows))
    finally:
        demo.console = saved
    text = recorder.export_text()
    assert f"{DOUBLE_BANNER}. 1 of 1 rollouts were graded by the toolchain double" in text
    assert "0 of 1 rollouts accepted by the kernel." in text
    assert "1 of 1 rollouts accepted by the TOOLCHAIN DOUBLE, not by Lean." in text
    assert f"one row per rollout ({DOUBLE_BANNER})" in text


def test_warm_cache_names_the_double(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["--tasks-dir", str(task_dir(tmp_path)), "--toolchain-dir", str(DOUBLE_DIR), "--sandbox", "off"]
    assert main(["warm-cache", *flags, "--cache-dir", str(tmp_path / "c")]) == 0
    assert f"with {DOUBLE_BANNER}: {DOUBLE_DIR} (" in capsys.readouterr().out
