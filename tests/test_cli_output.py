"""Output for pipes and logs (issue 41, broken item 4): off a terminal nothing is wrapped and
nothing lost, so commands, paths and hashes are printed whole, whatever COLUMNS says; on a
terminal rich keeps its own width. Each command here runs for real with stdout a pipe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import DOUBLE_DIR, submission, task_dir

from lean_mod_add_proof.cli import output

CLI = [sys.executable, "-m", "lean_mod_add_proof.cli"]


def _env(tmp_path: Path) -> dict[str, str]:
    """A fresh HOME, no toolchain but the one given by flag, and a COLUMNS that a terminal of 80
    columns would set (off a terminal it must change nothing)."""
    env = {**os.environ, "HOME": str(tmp_path / "home"), "ELAN_HOME": str(tmp_path / "no-elan")}
    env.pop("LEAN_MOD_ADD_PROOF_TOOLCHAIN", None)
    env["COLUMNS"] = "80"
    return env


def _run(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *argv], capture_output=True, text=True, timeout=600, env=_env(tmp_path), cwd=tmp_path
    )


def test_grade_prints_every_command_and_the_reason_whole_into_a_pipe(tmp_path: Path) -> None:
    good = tmp_path / "good.lean"
    good.write_text(submission())
    flags = ["--tasks-dir", str(task_dir(tmp_path)), "--toolchain-dir", str(DOUBLE_DIR), "--sandbox", "off"]
    flags += ["--work-root", str(tmp_path / "a-work-root-with-a-long-name" / ("x" * 60))]
    done = _run(tmp_path, "grade", "p05_h08_s0", str(good), *flags)
    json_done = _run(tmp_path, "grade", "p05_h08_s0", str(good), *flags, "--json")
    assert done.returncode == json_done.returncode, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    result = json.loads(json_done.stdout)
    for command in result["commands"]:  # each command on one line, its argv whole
        argv = " ".join(command["argv"])
        assert any(line.strip().startswith(argv + ":") for line in lines), (argv, done.stdout)
    verdicts = ("ACCEPTED (reward", "REJECTED at", "COULD NOT JUDGE (")
    (verdict,) = [line for line in lines if any(word in line for word in verdicts)]
    assert str(DOUBLE_DIR) in verdict  # the toolchain's path, unbroken
    assert "\x1b[" not in done.stdout  # no colour codes in a pipe


def test_doctor_prints_paths_whole_into_a_pipe(tmp_path: Path) -> None:
    done = _run(tmp_path, "doctor", "--toolchain-dir", str(DOUBLE_DIR), "--sandbox", "off")
    lean = str(DOUBLE_DIR / "bin" / "lean")
    rows = [line for line in done.stdout.splitlines() if lean in line]
    assert rows, done.stdout  # the lean row holds the whole path
    assert any("toolchain double — not Lean" in row for row in rows), done.stdout
    assert "\x1b[" not in done.stdout


def test_the_console_wraps_nothing_off_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.table import Table

    monkeypatch.setenv("COLUMNS", "40")
    console = output.console()
    word = "/a/very/long/path/" + "segment/" * 30 + "end"
    console.print(f"see {word} please")
    table = Table(
        title="t", caption="a caption far longer than the table itself, which rich would wrap and lose"
    )
    table.add_column("c")
    table.add_row(word)
    console.print(table)
    out = capsys.readouterr().out
    assert f"see {word} please" in out.splitlines()
    assert "a caption far longer than the table itself, which rich would wrap and lose" in out
    assert any(word in line for line in out.splitlines()[1:])


def test_the_console_keeps_rich_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output, "is_terminal", lambda stream=None: True)
    monkeypatch.setenv("COLUMNS", "40")
    assert output.console().width == 40


def test_the_demo_echoes_its_command_whole(capsys: pytest.CaptureFixture[str]) -> None:
    from lean_mod_add_proof import demo

    argv = ["/a/long/venv/bin/vf-eval", "lean-mod-add-proof", "-o", "/tmp/" + "outputs-dir-" * 12]
    demo.echo_command(argv)
    assert capsys.readouterr().out.splitlines() == ["$ vf-eval " + " ".join(argv[1:])]


def test_tasks_loses_no_letter_into_a_pipe(tmp_path: Path) -> None:
    """Issue 41, broken item 4: at 80 columns `tasks | cat` lost a letter at each wrap of its
    caption (rich's own Console). Seen to fail with `Console()` in cli/tasks.py."""
    done = _run(tmp_path, "tasks", "--split", "all")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "a sequence length must hold it plus the completion budget" in text, text[-2000:]
