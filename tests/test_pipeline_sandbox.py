"""The bubblewrap sandbox around every Lean command of a grade, against the toolchain double:
nothing outside the grade is writable, the toolchain and trusted sources are read-only, there is
no network, the environment is fully specified, and nothing inside outlives the grade. Skipped
with the reason when bwrap cannot run here."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import socket
import threading
import time
from pathlib import Path

import pytest
from helpers import (
    DOUBLE_DIR,
    build_output,
    marker,
    needs_bwrap,
    processes_with,
    run_double,
    submission,
    wait_gone,
    weights_text,
)
from timing import MARGIN_S

from lean_mod_add_proof.grading.result import GradeResult


@needs_bwrap
async def test_sandbox_blocks_writes_outside_the_grade(tmp_path: Path) -> None:
    target = tmp_path / "outside" / "pwned.txt"
    target.parent.mkdir()
    res = await run_double(submission(f"build write {target}"), tmp_path, sandbox="on")
    assert res.sandboxed and res.failed_stage == "build" and "could not write" in res.reason
    assert not target.exists()
    # control: without the sandbox the same write succeeds (so the test above means something)
    res_off = await run_double(submission(f"build write {target}"), tmp_path, sandbox="off")
    assert res_off.accepted and target.exists()


@needs_bwrap
async def test_sandbox_keeps_the_toolchain_read_only(tmp_path: Path) -> None:
    tc = tmp_path / "tc"
    shutil.copytree(DOUBLE_DIR, tc)
    target = tc / "bin" / "planted"
    res = await run_double(submission(f"build write {target}"), tmp_path, sandbox="on", toolchain_dir=tc)
    assert res.sandboxed and res.failed_stage == "build" and "could not write" in res.reason
    assert not target.exists()


@needs_bwrap
async def test_sandbox_tampered_olean_is_caught(tmp_path: Path) -> None:
    res = await run_double(submission("build tamper olean"), tmp_path, sandbox="on")
    assert res.sandboxed and res.failed_stage == "build"
    assert "Weights.olean" in res.reason


@needs_bwrap
async def test_sandbox_has_no_network(tmp_path: Path) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(conn.recv(100))
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        res = await run_double(submission(f"build connect {port}"), tmp_path, sandbox="on")
        assert res.failed_stage == "build" and "could not connect" in res.reason
        assert accepted == []
        control = await run_double(submission(f"build connect {port}"), tmp_path, sandbox="off")
        assert control.accepted, control.reason
        end = time.monotonic() + 6 * MARGIN_S  # the server thread may be slow to take it in
        while not accepted and time.monotonic() < end:
            time.sleep(0.05)
        assert accepted and accepted[0].startswith(b"double-connect")
    finally:
        stop.set()
        thread.join(2)
        server.close()


@needs_bwrap
async def test_sandbox_makes_trusted_sources_read_only(tmp_path: Path) -> None:
    res = await run_double(submission("build tamper source"), tmp_path, sandbox="on", keep_packages=True)
    assert res.sandboxed
    assert "could not tamper with Weights.lean" in build_output(res)
    assert res.accepted, res.reason
    weights = Path(res.package_dir or "") / "package/LeanCheckedNetwork/Weights.lean"
    assert weights.read_text() == weights_text()


@needs_bwrap
async def test_sandbox_blocks_swapping_the_source_directory(tmp_path: Path) -> None:
    # The source directory is a read-only mount point: it cannot be moved aside and recreated.
    # (Without the sandbox the same trick is caught by the re-hash: test_pipeline_stages.)
    res = await run_double(submission("build tamper swapdir"), tmp_path, sandbox="on")
    assert "could not move the source directory" in build_output(res)
    assert res.accepted, res.reason


@needs_bwrap
async def test_sandbox_timeout_kills_everything_inside(tmp_path: Path) -> None:
    mark = marker()
    res = await run_double(
        submission(f"build spawn {mark}", "build sleep 60"), tmp_path, sandbox="on", timeout_s=2
    )
    assert res.sandboxed and "timed out" in res.reason
    assert await wait_gone(mark) == []


@needs_bwrap
async def test_sandbox_refuses_a_new_session_and_nothing_outlives_the_grade(tmp_path: Path) -> None:
    """Sandboxed, the build cannot leave its session: the signal filter refuses setsid (and
    setpgid), so that no process group in the sandbox's own session (`--new-session`) can be
    orphaned and hung up, nor take a controlling terminal (the review of issue 39). The double's
    `escape` then fails to start and the build goes on; nothing of it outlives the grade.
    Unsandboxed, the escape runs and is killed (tests/test_pipeline_limits.py)."""
    mark = marker()
    res = await run_double(submission(f"build escape {mark}"), tmp_path, sandbox="on")
    assert res.accepted, res.reason
    assert "setsid failed: Operation not permitted" in build_output(res), build_output(res)
    assert await wait_gone(mark) == []


@needs_bwrap
async def test_sandbox_memory_cap_applies_inside(tmp_path: Path) -> None:
    res = await run_double(submission("build alloc 300"), tmp_path, sandbox="on", memory_mb=128)
    assert res.sandboxed and res.failed_stage == "build" and "memory cap exceeded" in res.reason


@needs_bwrap
async def test_sandbox_tmp_is_the_grades_own_and_counts_against_the_disk_cap(tmp_path: Path) -> None:
    res = await run_double(
        submission("build write /tmp/inside.txt", "build env"), tmp_path, sandbox="on", keep_packages=True
    )
    assert res.accepted, res.reason
    # The build's own /tmp, made just before it (issue 26; package.BUILD_TMP).
    assert (Path(res.package_dir or "") / "build-tmp" / "inside.txt").is_file()
    assert "TMPDIR=/tmp" in build_output(res)


@needs_bwrap
async def test_a_crash_reports_the_same_signal_with_and_without_the_sandbox(tmp_path: Path) -> None:
    on = await run_double(submission("build segv"), tmp_path, sandbox="on")
    off = await run_double(submission("build segv"), tmp_path, sandbox="off")
    for res in (on, off):
        assert res.failed_stage == "build" and "killed by signal 11" in res.reason, res.reason
        assert res.commands[-1].signal == 11


@pytest.mark.parametrize("mode", ["off", pytest.param("on", marks=needs_bwrap)])
async def test_environment_is_fully_specified(tmp_path: Path, mode: str) -> None:
    os.environ["LMAP_SECRET_TEST_KEY"] = "sk-should-not-leak"
    try:
        res = await run_double(submission("build env"), tmp_path, sandbox=mode)
    finally:
        del os.environ["LMAP_SECRET_TEST_KEY"]
    assert res.accepted, res.reason
    out = build_output(res)
    assert "LEAN_NUM_THREADS=1" in out and "sk-should-not-leak" not in out
    assert "PATH=" + str(DOUBLE_DIR / "bin") in out
    assert f"LEAN_PATH={DOUBLE_DIR / 'lib' / 'lean'}:" in out


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


async def bwrap_signalled_during_the_build(tmp_path: Path, signum: int) -> GradeResult:
    """Grade a correct proof whose build sleeps, and send `signum` to bwrap itself (the process
    the grader started, outside the sandbox's PID namespace), as a host, or a route from inside
    the sandbox if one existed, would."""
    assert (await run_double(submission(), tmp_path, sandbox="on")).accepted  # the cache is warm
    mark = f"{random.randint(20, 29)}.{random.randint(10**6, 10**7 - 1)}"
    job = asyncio.create_task(run_double(submission(f"build sleep {mark}"), tmp_path, sandbox="on"))
    me, end = os.getpid(), time.monotonic() + 30
    while not (
        sleeper := [p for p in processes_with(mark) if Path(f"/proc/{p}/comm").read_text() == "sleep\n"]
    ):
        assert time.monotonic() < end and not job.done(), "the build never started"
        await asyncio.sleep(0.02)
    bwrap = sleeper[0]
    while (up := parent_of(bwrap)) != me:  # sleep < the double's lean < bwrap's init < bwrap
        bwrap = up
    assert Path(f"/proc/{bwrap}/comm").read_text() == "bwrap\n"
    os.kill(bwrap, signum)
    res = await job
    assert await wait_gone(mark) == []
    return res


@needs_bwrap
@pytest.mark.parametrize("signum", [signal.SIGALRM, signal.SIGSEGV], ids=["SIGALRM", "SIGSEGV"])
async def test_bwrap_killed_by_a_signal_the_build_could_send_is_a_verdict(
    tmp_path: Path, signum: int
) -> None:
    """The review of issue 39, finding 1: `kill(0, SIGALRM)` from the build killed bwrap (then in
    the build's process group), and "the sandbox was killed from outside" was could not judge, at
    the submission's choice. No route from inside to bwrap is left (`--new-session`, the filter
    refuses group kills: tests/test_signal_filter.py), but the attribution does not rest on
    that: bwrap running the submission's code and dying of a signal the filter lets through is
    the submission's (a verdict), unless proven otherwise; a host that sends bwrap such a signal
    costs an honest proof its reward (docs/trust-model.md). Seen failing before: could not judge."""
    res = await bwrap_signalled_during_the_build(tmp_path, signum)
    assert res.judged and not res.accepted and res.failed_stage == "build", res.reason
    assert f"its sandbox (bwrap) was killed by signal {int(signum)}" in res.reason, res.reason


@needs_bwrap
async def test_bwrap_killed_by_a_signal_nothing_inside_can_send_is_the_hosts(tmp_path: Path) -> None:
    """SIGTERM, like every signal the filter refuses to any target, cannot come from inside: bwrap
    dying of it during the build is the host's (could not judge)."""
    res = await bwrap_signalled_during_the_build(tmp_path, signal.SIGTERM)
    assert not res.judged and res.failed_stage == "build", res.reason
    assert "the sandbox (bwrap) was killed by signal 15 from outside the grader" in res.reason, res.reason


@needs_bwrap
async def test_a_filter_not_seen_in_force_is_not_believed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The grade uses the filter, and so reads SIGTERM as the host's, only once it was seen
    refusing a self-sent signal here (sandbox.py `prove_signal_filter`). Where the proof fails
    (a kernel or bwrap that does not apply it), the attribution without the filter holds: bwrap
    dying of SIGTERM during the build is the submission's, as any signal but an OOM kill would
    be. Seen failing before (could not judge: the program made was believed)."""
    from lean_mod_add_proof.grading.routes import steps
    from lean_mod_add_proof.grading.sandbox import FilterProof

    monkeypatch.setattr(steps, "prove_signal_filter", lambda *_: FilterProof(False, "not applied"))
    res = await bwrap_signalled_during_the_build(tmp_path, signal.SIGTERM)
    assert res.judged and not res.accepted and res.failed_stage == "build", res.reason
    assert "its sandbox (bwrap) was killed by signal 15" in res.reason, res.reason


@needs_bwrap
@pytest.mark.parametrize("path", ["/dev/uncounted", "/uncounted"])
async def test_the_build_cannot_write_bwraps_ram_backed_root_or_dev(tmp_path: Path, path: str) -> None:
    """bwrap's root and /dev are tmpfs: RAM that no cap counts (the review of issue 39, finding
    3). Both are read-only now; before, the build wrote there and was accepted."""
    res = await run_double(submission(f"build write {path}"), tmp_path, sandbox="on")
    assert res.judged and not res.accepted and res.failed_stage == "build", res.reason
    assert f"could not write {path}" in res.reason, res.reason


def test_bwraps_death_is_read_from_the_fault_never_from_its_words() -> None:
    """The signal bwrap died of travels on the HostFault (process/commands.py sets it), not read
    back from the reason: words alone, even the very words, name no signal, and a fault that is
    not the sandbox's names none."""
    from lean_mod_add_proof.grading.process import HostFault
    from lean_mod_add_proof.grading.routes.core import bwrap_killed_by

    words = "the sandbox (bwrap) was killed by signal 14 from outside the grader"
    assert bwrap_killed_by(HostFault(words, sandbox=True, signal=14)) == 14
    assert bwrap_killed_by(HostFault(words, sandbox=True)) is None
    assert bwrap_killed_by(HostFault(words, signal=14)) is None
