"""Issue 37, item 2: host faults on the comparator route are not verdicts, at any phase.

Through the real pipeline (`grade`, `judge = comparator`) with the toolchain double's `bin/lake`,
which starts Lake's sandbox for each step with real bubblewrap through the grade's
`COMPARATOR_BWRAP` wrapper (routes/comparator/host.py), and acts each fault out:
- `double-lake-bwrap-fails` (a switch file naming a step): bwrap cannot set that step's sandbox
  up (a mount point missing from the host: real bwrap's "Can't mkdir ...: Read-only file
  system"), so Lake says `Child exited with 1` (or, for the kernel, `Lean default exited with 1`);
- `comparator disk-full` / `comparator disk-full-silent`: the work disk runs full for a moment
  (the double leaves a marker for 1 s; the test's stand-in for statvfs reads it), with Lean's
  ENOSPC text, or silently (a truncated olean, then `Child exited with 139`);
- `comparator killed` / `comparator oom-inner`: a step's command SIGKILLed (bwrap records
  `exit-code` 137), or its `lean` killed inside the step (exit 1), while the OOM counter moves:
  a verdict, since Lake's sandbox has no signal filter and the counter names no victim
  (docs/readings/no-filter-reading.md, V14).
Lake's wording alone decides nothing: the same words printed by a submission are still a
rejection. The double decides nothing about proofs (shell scripts, not Lean)."""

from __future__ import annotations

import itertools
import os
import subprocess
from pathlib import Path

import pytest
from helpers import BWRAP, copy_double, needs_bwrap, needs_comparator, run_double, submission

from lean_mod_add_proof.constants import reference_submission
from lean_mod_add_proof.grading import workdirs
from lean_mod_add_proof.grading.result import GradeResult
from lean_mod_add_proof.grading.routes import comparator as cmp
from lean_mod_add_proof.grading.routes.comparator import host

pytestmark = [needs_comparator, pytest.mark.usefixtures("fresh_memos")]

STEPS = ("env", "challenge-build", "challenge-export", "solution-build", "solution-export", "kernel")
BWRAP_SAID = "bwrap: Can't mkdir /double-missing-mount-point: Read-only file system"


async def _comparator(text: str, tmp_path: Path, *switches: tuple[str, str]) -> GradeResult:
    tc = copy_double(tmp_path / "tc")
    for name, content in switches:
        (tc / name).write_text(content)
    return await run_double(text, tmp_path, toolchain_dir=tc, judge="comparator", skip_guard=True)


def _full_disk_while_marked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The work disk reads full (as statvfs would) while the double's marker exists."""

    def disk_full(path: Path) -> str | None:
        marked = (path / cmp.TMP_DIR / "double-disk-full").exists()
        return f"the work disk is full (3 MiB free under {path})" if marked else None

    monkeypatch.setattr(host, "disk_full", disk_full)


def _oom_counter_moves(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = itertools.count()
    monkeypatch.setattr(host, "oom_kills", lambda: (next(counter), None))


@pytest.mark.parametrize("step", STEPS)
async def test_a_sandbox_bwrap_cannot_set_up_is_not_judged(tmp_path: Path, step: str) -> None:
    """Before issue 37, a failure in the solution steps or the kernel was a rejection (0.0)."""
    res = await _comparator(reference_submission(5), tmp_path, ("double-lake-bwrap-fails", f"{step}\n"))
    assert not res.judged and res.failed_stage == "leanchecker", res.reason
    assert "sandbox (bwrap) did not start 1 of its steps" in res.reason and BWRAP_SAID in res.reason


async def test_every_sandbox_records_its_status(tmp_path: Path) -> None:
    """The wrapper is what Lake runs: each of the six steps leaves one status file with its
    `exit-code` (read with the grade's directory kept)."""
    tc = copy_double(tmp_path / "tc")
    res = await run_double(
        reference_submission(5), tmp_path, toolchain_dir=tc, judge="comparator", keep_packages=True
    )
    assert res.accepted, res.reason
    (kept,) = (tmp_path / "work").glob(f"{workdirs.KEPT_DIR_PREFIX}*")
    status = host.read_status(kept)
    assert (status.steps, status.unstarted, status.killed) == (len(STEPS), 0, 0)
    assert (kept / host.WRAPPER_FILE).read_text().startswith("#!/bin/sh\n")


@pytest.mark.parametrize("act", ["disk-full", "disk-full-silent"])
async def test_a_full_work_disk_is_not_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, act: str
) -> None:
    """The disk runs full for one second and is free again when the run ends (Lake deletes its
    temporary files): only the low-water mark taken while it runs sees it."""
    _full_disk_while_marked(monkeypatch)
    res = await _comparator(submission(f"comparator {act}"), tmp_path)
    assert not res.judged and res.failed_stage == "leanchecker", res.reason
    assert "the work disk is full" in res.reason and "while lake comparator ran" in res.reason


async def test_the_same_words_from_a_submission_are_a_rejection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC's and bwrap's words printed by the build itself, on a host with room: rejected."""
    _full_disk_while_marked(monkeypatch)
    for said in ("resource exhausted (error code: 28, no space left on device)", BWRAP_SAID):
        res = await _comparator(submission(f"build fail {said}"), tmp_path / said[:8])
        assert res.judged and not res.accepted and "lake comparator rejected" in res.reason, res.reason


async def test_a_full_disk_is_a_rejection_without_the_low_water_mark(tmp_path: Path) -> None:
    """Control: the same act with the disk never read full is Lake's plain failure, a rejection;
    so the verdict above comes from the disk, not from the words."""
    res = await _comparator(submission("comparator disk-full"), tmp_path)
    assert res.judged and not res.accepted, res.reason


@pytest.mark.parametrize(
    "directive", ["comparator killed", "comparator oom-inner", "build fail unknown identifier"]
)
async def test_a_failure_while_the_oom_killer_acts_is_a_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, directive: str
) -> None:
    """V14: Lake's sandbox has no signal filter, so the build may have killed itself, or brought
    the OOM on with memory no cap sees (test below), and the counter names no victim. A failed
    build while it moved is the submission's. Before: could not judge ("the host's OOM killer
    acted while lake comparator ran", or "killed by the host's OOM killer")."""
    _oom_counter_moves(monkeypatch)
    res = await _comparator(submission(directive), tmp_path)
    assert res.judged and not res.accepted and res.failed_stage == "leanchecker", res.reason
    assert "OOM killer" in res.reason and "no signal filter" in res.reason, res.reason


@needs_bwrap
def test_lakes_sandbox_lets_the_build_steer_the_oom_killer(tmp_path: Path) -> None:
    """The premise of V14, measured with real bubblewrap and Lake's own sandbox arguments for a
    build step (host.py `lake_sandbox_argv`, from Check.lean `buildSandboxArgs`, which passes no
    seccomp program): the command runs with no seccomp filter, may raise its own
    `oom_score_adj` (bwrap's `--proc` covers only sys, sysrq-trigger, irq and bus read-only),
    may hold memory in a memfd (in no process's resident set, so under no cap), and may kill
    itself, which bwrap reports as 137."""
    # A Python the sandbox can see: Lake's covers /home, /root and /tmp with tmpfs.
    python = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.access(p, os.X_OK)), None)
    if python is None:
        pytest.skip("no python3 under /usr to run inside Lake's sandbox")
    assert BWRAP.bwrap is not None
    project = tmp_path / "p"
    (project / ".lake").mkdir(parents=True)
    (tmp_path / "tc").mkdir()
    argv = host.lake_sandbox_argv(BWRAP.bwrap, project, tmp_path / "tc")
    probe = (
        "import os, re\n"
        "open('/proc/self/oom_score_adj', 'w').write('1000')\n"
        "print('oom_score_adj', open('/proc/self/oom_score_adj').read().strip())\n"
        "fd = os.memfd_create('held'); os.ftruncate(fd, 1 << 20); os.write(fd, b'x' * (1 << 20))\n"
        "print('memfd', os.fstat(fd).st_size)\n"
        "print('seccomp', re.search(r'Seccomp:\\s*(\\d+)', open('/proc/self/status').read()).group(1))\n"
        "os.kill(os.getpid(), 9)\n"
    )
    run = subprocess.run(
        ["env", "-i", *argv, "--", python, "-u", "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 137, (run.returncode, run.stdout, run.stderr)
    assert run.stdout.split("\n")[:3] == ["oom_score_adj 1000", "memfd 1048576", "seccomp 0"], run.stdout


@pytest.mark.parametrize("act", ["killed", "oom-inner"])
async def test_a_kill_without_the_oom_killer_is_the_submissions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, act: str
) -> None:
    monkeypatch.setattr(host, "oom_kills", lambda: (0, None))  # readable, and it never moves
    res = await _comparator(submission(f"comparator {act}"), tmp_path)
    assert res.judged and not res.accepted, res.reason


def test_status_files_are_read_as_bwrap_writes_them(tmp_path: Path) -> None:
    (tmp_path / host.STATUS_DIR).mkdir()
    docs = {
        "1.json": '{ "child-pid": 5 }\n{ "exit-code": 0 }\n',  # ran
        "2.json": '{ "child-pid": 6 }\n{ "exit-code": 137 }\n',  # its command SIGKILLed
        "3.json": '{ "child-pid": 7 }\n',  # set-up failed
        "4.json": "",  # clone failed: nothing written
        "5.json": '{ "child-pid": 8 }\n{ "exit-code": 1 }\n{ "child-pid": 9 }\n{ "exi',  # pid reused, torn
    }
    for name, text in docs.items():
        (tmp_path / host.STATUS_DIR / name).write_text(text)
    got = host.read_status(tmp_path)
    assert (got.steps, got.unstarted, got.killed) == (6, 3, 1)
    assert host.read_status(tmp_path / "none") == host.SandboxStatus()


def test_the_oom_counters(tmp_path: Path) -> None:
    assert host.oom_killer_acted((3, 10), (3, 11)) is False  # the cgroup's count is the precise one
    assert host.oom_killer_acted((3, 10), (4, 10)) is True
    assert host.oom_killer_acted((None, 10), (None, 11)) is True
    assert host.oom_killer_acted((None, None), (None, None)) is True  # unknown: reads as acted
    assert host.oom_kills_moved((None, None), (None, None)) is None
    proc = tmp_path / "cgroup"
    proc.write_text("0::/grader.slice/g\n")
    (tmp_path / "grader.slice" / "g").mkdir(parents=True)
    (tmp_path / "grader.slice" / "g" / "memory.events").write_text("low 0\noom 2\noom_kill 2\n")
    assert host.cgroup_oom_kills(str(proc), str(tmp_path)) == 2
    proc.write_text("4:memory:/docker/x\n0::/\n")
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 5\n")
    assert host.cgroup_oom_kills(str(proc), str(tmp_path)) == 5
    assert host.cgroup_oom_kills(str(tmp_path / "no-such-file"), str(tmp_path)) is None


def test_no_oom_counter_turns_a_rejection_into_could_not_judge() -> None:
    """Neither a counter that cannot be read nor one seen moving makes a failure in the solution
    phase could-not-judge, a step seen SIGKILLed included (V14). Before: the last two were."""
    after = "Resolving dependencies\nBuilding Challenge\nBuilding LeanCheckedNetwork.Submission\n"
    unknown = cmp.RunFacts(exit_code=1, solution_phase_at=1.0, oom_killer_acted=True, memory_cap_mb=1024)
    assert cmp.comparator_verdict(unknown, after + "error: Child exited with 1\n")[0] == "rejected"
    assert cmp.comparator_verdict(unknown, after + "error: Child exited with 137\n")[0] == "rejected"
    seen = cmp.RunFacts(exit_code=1, solution_phase_at=1.0, oom_killer_acted=True, oom_kills_seen=True)
    assert cmp.comparator_verdict(seen, after + "error: Child exited with 1\n")[0] == "rejected"
