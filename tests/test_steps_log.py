"""Long steps write one log line when they start and one when they end, with the duration and the
outcome, also when stderr is not a terminal (CI, image builds: issue 29, stumble 4); a cached
grade writes none; stdout (`--json`) never gets a log line. The CLI runs as a real process with
pipes, against the toolchain double (which is not Lean: this checks where and when the lines
appear, not anything about Lean)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import DOUBLE_DIR

from lean_mod_add_proof.constants import reference_submission
from lean_mod_add_proof.grading.steps_log import PACKAGE_LOGGER, Step, end_line, long_step, one_line

TASK = "p05_h08_s0"
#: A CLI log line: the time, the program, the message (cli/__init__.py LOG_FORMAT).
LINE = re.compile(r"^\d\d:\d\d:\d\d lean-mod-add-proof: (?P<message>.*)$")
#: An end line: `<step> <outcome> in <seconds> s[: <why>]`.
END = r" (?P<outcome>NOT JUDGED|\S+(?: \(\w+\))?) in (?P<seconds>\d+\.\d) s(?::.*)?$"

# ---- the helper, in-process --------------------------------------------------------------------


def test_a_step_logs_its_start_and_its_end_with_time_and_outcome(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger(f"{PACKAGE_LOGGER}.tests.steps")
    with caplog.at_level(logging.INFO, logger=PACKAGE_LOGGER):
        with long_step(log, "self-test", "route export, sandbox on") as step:
            step.outcome = "passed"
    assert [r.levelno for r in caplog.records] == [logging.INFO, logging.INFO]
    assert caplog.records[0].getMessage() == "self-test started (route export, sandbox on)"
    assert re.fullmatch(r"self-test passed in \d+\.\d s", caplog.records[1].getMessage())


def test_an_exception_still_writes_the_end_line_and_goes_on_up(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger(f"{PACKAGE_LOGGER}.tests.steps")
    with caplog.at_level(logging.INFO, logger=PACKAGE_LOGGER), pytest.raises(ValueError, match="boom"):
        with long_step(log, "native judge build"):
            raise ValueError("boom\nsecond line")
    assert caplog.records[0].getMessage() == "native judge build started"
    assert re.fullmatch(
        r"native judge build failed \(ValueError\) in \d+\.\d s: boom second line",
        caplog.records[1].getMessage(),
    )


def test_a_cancelled_step_says_so(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger(f"{PACKAGE_LOGGER}.tests.steps")

    async def body() -> None:
        with long_step(log, "warm-cache"):
            await asyncio.sleep(60)

    async def cancel_it() -> None:
        task = asyncio.create_task(body())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with caplog.at_level(logging.INFO, logger=PACKAGE_LOGGER):
        asyncio.run(cancel_it())
    assert re.fullmatch(r"warm-cache cancelled in \d+\.\d s", caplog.records[-1].getMessage())


def test_the_end_line_keeps_a_long_reason_on_one_short_line() -> None:
    line = end_line("self-test", Step("failed", "x\n" * 1000), 1.25)
    assert "\n" not in line and line.startswith("self-test failed in 1.2 s: x x")
    assert len(one_line("y " * 1000)) == 300


# ---- the CLI, as a process with pipes (stderr is not a terminal) --------------------------------


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "HOME": str(tmp_path / "home"), "ELAN_HOME": str(tmp_path / "no-elan")}
    env.pop("LEAN_MOD_ADD_PROOF_TOOLCHAIN", None)
    env["COLUMNS"] = "200"
    return env


def run_cli(env: dict[str, str], tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    flags = ["--toolchain-dir", str(DOUBLE_DIR), "--sandbox", "off"]
    flags += ["--work-root", str(tmp_path / "work"), "--cache-dir", str(tmp_path / "cache")]
    done = subprocess.run(
        [sys.executable, "-m", "lean_mod_add_proof.cli", *argv, *flags],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def log_messages(stderr: str) -> list[str]:
    """The messages of the log lines on stderr (every other line is not a log line)."""
    return [m["message"] for line in stderr.splitlines() if (m := LINE.match(line))]


def ends(messages: list[str], what: str) -> list[re.Match[str]]:
    return [m for msg in messages if (m := re.match(re.escape(what) + END, msg))]


def assert_step(messages: list[str], what: str, outcome: str, detail: str | None = None) -> None:
    """`what` started exactly once, and ended once with `outcome` and a duration."""
    started = [m for m in messages if m == f"{what} started" or m.startswith(f"{what} started (")]
    assert len(started) == 1, (what, messages)
    if detail is not None:
        assert started[0] == f"{what} started ({detail})", messages
    (end,) = ends(messages, what)
    assert end["outcome"] == outcome, messages
    assert messages.index(started[0]) < messages.index(end.group(0))


def test_warm_cache_logs_every_long_step_without_a_terminal(cli_env: dict[str, str], tmp_path: Path) -> None:
    first = run_cli(cli_env, tmp_path, "warm-cache", "--task", TASK)
    assert first.returncode == 0, first.stdout + first.stderr
    messages = log_messages(first.stderr)
    assert messages, first.stderr
    assert_step(messages, "warm-cache", "done", "1 task(s), sandbox off")
    assert_step(messages, f"warm-cache {TASK}", "built", "p=5, H=8")
    assert_step(messages, "native judge build", "done")
    assert_step(messages, "self-test", "passed")
    assert re.fullmatch(
        r"self-test started \(route \S+, sandbox off\)", next(m for m in messages if "self-test" in m)
    )
    # The task's Network/Weights entry, and the self-test task's own (built by its canaries).
    assert len(ends(messages, "cache build of Network.lean, Weights.lean")) == 2, messages
    assert ends(messages, "warm-cache")[0].group(0).endswith(": 1 built, 0 already there, 0 failed")
    assert not LINE.match(first.stdout.splitlines()[0]) and "lean-mod-add-proof: " not in first.stdout

    # A second process finds everything: the self-test's pass and the judge are remembered in the
    # cache directory, the entry is a hit; only warm-cache's own lines remain.
    again = log_messages(run_cli(cli_env, tmp_path, "warm-cache", "--task", TASK).stderr)
    assert_step(again, f"warm-cache {TASK}", "hit")
    assert not [m for m in again if m.startswith(("self-test", "native judge", "cache build"))], again


def test_a_cached_grade_writes_no_log_line_and_json_stays_clean(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    proof = tmp_path / "Submission.lean"
    proof.write_text(reference_submission(5), encoding="utf-8")
    cold = run_cli(cli_env, tmp_path, "grade", TASK, str(proof), "--json")
    json.loads(cold.stdout)  # the log lines went to stderr
    assert_step(log_messages(cold.stderr), "self-test", "passed")
    warm = run_cli(cli_env, tmp_path, "grade", TASK, str(proof), "--json")
    assert json.loads(warm.stdout)["accepted"] is json.loads(cold.stdout)["accepted"]
    assert log_messages(warm.stderr) == [], warm.stderr


def test_calibrate_logs_each_task_and_the_run(cli_env: dict[str, str], tmp_path: Path) -> None:
    done = run_cli(cli_env, tmp_path, "calibrate", "--task", TASK)
    assert done.returncode == 0, done.stdout + done.stderr
    messages = log_messages(done.stderr)
    assert_step(messages, "calibrate", "done", "1 task(s), sandbox off")
    assert_step(messages, f"calibrate {TASK}", "accepted", "p=5, H=8")
    assert ends(messages, "calibrate")[0].group(0).endswith(": 1 accepted")


def test_doctor_selftest_logs_the_self_test_and_json_stays_clean(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    done = run_cli(cli_env, tmp_path, "doctor", "--selftest", "--json")
    json.loads(done.stdout)
    messages = log_messages(done.stderr)
    started = [m for m in messages if m.startswith("self-test started (route ")]
    assert started, done.stderr
    assert len(ends(messages, "self-test")) == len(started), messages


def test_quiet_leaves_the_lines_out(cli_env: dict[str, str], tmp_path: Path) -> None:
    done = run_cli(cli_env, tmp_path, "--quiet", "warm-cache", "--task", TASK)
    assert done.returncode == 0, done.stdout + done.stderr
    assert log_messages(done.stderr) == [], done.stderr


# ---- under a verifiers CLI ---------------------------------------------------------------------


def test_the_lines_reach_verifiers_log_at_its_default_level(tmp_path: Path) -> None:
    """vf-eval and vf-validate call verifiers' `setup_logging("INFO", log_file=...)`; the taskset
    hands this package's records to the handlers it installs, so a long step's lines land in the
    run's log file (the rich dashboard keeps them off the terminal: console=False here)."""
    pytest.importorskip("verifiers")
    from loguru import logger as loguru_logger
    from verifiers.v1.utils.logging import LIBRARY_LOGGER, setup_logging

    import lean_mod_add_proof.taskset  # noqa: F401  (installs the forwarding)

    library = logging.getLogger(LIBRARY_LOGGER)
    saved = (library.handlers[:], library.level, library.propagate, logging.lastResort)
    log_file = tmp_path / "eval.log"
    try:
        setup_logging("INFO", log_file=str(log_file), console=False)
        with long_step(logging.getLogger(f"{PACKAGE_LOGGER}.grading.selftest"), "self-test", "route export"):
            pass
        loguru_logger.complete()
    finally:
        loguru_logger.remove()
        library.handlers[:], library.level, library.propagate, logging.lastResort = (
            saved[0],
            saved[1],
            saved[2],
            saved[3],
        )
    text = log_file.read_text(encoding="utf-8")
    assert "self-test started (route export)" in text, text
    assert re.search(r"self-test done in \d+\.\d s", text), text
