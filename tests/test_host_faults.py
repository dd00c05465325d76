"""Host faults are "could not judge" (judged=False), with a reason that names them (issue 18): a
sandbox that fails to start (a bind that cannot be made, namespace limits reached, bwrap removed
mid-run), a SIGKILL the grader did not send, a full work disk, out of memory, a missing binary,
a grade that stalls. A fault must never score 0.0, and the grader must not stay broken: a sandbox
that failed to start is probed again. Against the toolchain double (not Lean)."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import (
    DOUBLE_DIR,
    build_output,
    copy_double,
    marker,
    needs_bwrap,
    processes_with,
    run_double,
    submission,
    wait_gone,
    work_dirs,
)

from lean_mod_add_proof.grading import cache as cachemod
from lean_mod_add_proof.grading import hashing, pipeline, process, sandbox, workdirs
from lean_mod_add_proof.grading import package as pkgmod
from lean_mod_add_proof.grading.process import CommandOutcome
from lean_mod_add_proof.grading.process import commands as commandsmod
from lean_mod_add_proof.grading.process import output as outputmod
from lean_mod_add_proof.grading.process import watcher as watchermod
from lean_mod_add_proof.grading.routes import core, steps

TESTS = Path(__file__).resolve().parent
MODES = [pytest.param("off", id="plain"), pytest.param("on", id="bwrap", marks=needs_bwrap)]


def not_judged(res: object, *words: str) -> None:
    """`res` is "could not judge" and its reason names every one of `words`."""
    assert res.judged is False and not res.accepted, res.reason  # type: ignore[attr-defined]
    assert res.reason.startswith("could not judge: "), res.reason  # type: ignore[attr-defined]
    for word in words:
        assert word in res.reason, (word, res.reason)  # type: ignore[attr-defined]
    assert "internal grader error" not in res.reason  # type: ignore[attr-defined]


def use_bwrap(monkeypatch: pytest.MonkeyPatch, path: Path | str) -> None:
    """As if the probe had found a working bwrap at `path` (it may stop working later)."""
    monkeypatch.setattr(sandbox, "_probe", sandbox.SandboxProbe(True, "bwrap works", str(path)))
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: str(path))


def unshare_works(*flags: str) -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", *flags, "true"], capture_output=True).returncode == 0


def run_isolated(flags: list[str], prelude: str, body: str, tmp_path: Path) -> dict[str, object]:
    """Run a grader in a fresh process under `unshare FLAGS` (a private user/mount namespace,
    so lowering its limits or mounting a small disk touches nothing else on the machine)."""
    script = textwrap.dedent(
        f"""
        import asyncio, json, sys
        sys.path.insert(0, {str(TESTS)!r})
        from pathlib import Path
        from helpers import double_config, grade_task, submission
        from lean_mod_add_proof.grading import sandbox, workdirs
        from lean_mod_add_proof.grading.grader import grade
        tmp = Path({str(tmp_path)!r})
        def run(text, **cfg):
            res = asyncio.run(grade(text, grade_task(), double_config(tmp, **cfg), skip_selftest=True))
            return {{"judged": res.judged, "accepted": res.accepted, "reason": res.reason,
                     "sandboxed": res.sandboxed}}
        """
    ) + textwrap.dedent(body)
    done = subprocess.run(
        ["unshare", *flags, "sh", "-c", prelude + ' exec "$0" -c "$1"', sys.executable, script],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


#: The tests that mount a small disk of their own (`run_on_tmpfs`).
needs_mount_namespace = pytest.mark.skipif(
    not unshare_works("-Urm"), reason="no private mount namespace here (unshare -Urm)"
)


def run_on_tmpfs(tmp_path: Path, options: str, body: str) -> dict[str, object]:
    """`run_isolated` in a private mount namespace with a tmpfs (`mount -o options`, unmounted
    with the namespace) at `tmp_path / "small"`, which `body` knows as `small`; `fill_small()`
    is the host filling it (a file `small / "fill"` written until a write fails)."""
    small = tmp_path / "small"
    small.mkdir()
    preamble = f"""
        small = Path({str(small)!r})
        def fill_small():
            with open(small / "fill", "wb") as f:
                try:
                    while True:
                        f.write(bytes(1 << 20)); f.flush()
                except OSError:
                    pass
        """
    script = textwrap.dedent(preamble) + textwrap.dedent(body)
    return run_isolated(["-Urm"], f"mount -t tmpfs -o {options} tmpfs {small} &&", script, tmp_path)


# ---- the sandbox did not start -----------------------------------------------------------------


def test_bwrap_status_documents_tell_set_up_from_the_command() -> None:
    """As measured with bubblewrap 0.8.0 (see `process.sandbox_exit_code`)."""
    child = b'{ "child-pid": 28933, "mnt-namespace": 4026532174 }\n'
    assert process.sandbox_exit_code(child + b'{ "exit-code": 7 }\n') == 7
    assert process.sandbox_exit_code(child + b'{ "exit-code": 137 }\n') == 137
    assert process.sandbox_exit_code(child) is None  # set-up failed, or bwrap was killed
    assert process.sandbox_exit_code(b"") is None  # a namespace limit: not even child-pid
    assert process.sandbox_exit_code(child + b'{ "exit-co') is None  # torn
    assert process.sandbox_exit_code(b'{"exit-code": "7"}') is None


@needs_bwrap
async def test_a_sandbox_that_stops_starting_is_not_judged_and_probed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bwrap works at the first probe, then fails to set up (here: a bind source it cannot
    find). The grade is "could not judge" naming bwrap's own error, not a rejection of a correct
    proof (`exit 1: bwrap: ...`), and the next grade probes bwrap again instead of trusting it."""
    real = sandbox.find_bwrap()
    assert real is not None
    res = await run_double(submission(), tmp_path, sandbox="on")
    assert res.accepted and res.sandboxed, res.reason  # the cache is warm: next comes the build
    broken = tmp_path / "bwrap"
    broken.write_text(f'#!/bin/sh\nexec {real} --ro-bind /nonexistent-lmap/x /lmap-x "$@"\n')
    broken.chmod(0o755)
    use_bwrap(monkeypatch, broken)
    res = await run_double(submission(), tmp_path, sandbox="on")
    not_judged(res, "the sandbox (bwrap) did not start", "Can't find source path /nonexistent-lmap/x")
    assert res.failed_stage == "build"
    assert sandbox._probe is None  # forgotten: the next grade runs the probe again
    res = await run_double(submission(), tmp_path, sandbox="on")
    not_judged(res, "sandbox required (sandbox=on) but bwrap does not work here", "Can't find source path")
    # `auto` does not fall back to running the submission unsandboxed once bwrap has worked
    monkeypatch.setattr(sandbox, "_probe", None)
    monkeypatch.setattr(sandbox, "_ever_worked", True)
    res = await run_double(submission(), tmp_path, sandbox="auto")
    not_judged(res, "the sandbox worked earlier in this process and now fails")
    assert sandbox.FAILED_PROBE_TTL_S > 0  # and a failed probe is itself tried again later


@needs_bwrap
async def test_bwrap_removed_mid_run_is_not_judged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bwrap is uninstalled (or upgraded) while a long evaluation runs: prlimit cannot exec it."""
    real = sandbox.find_bwrap()
    assert real is not None
    copy = tmp_path / "bin" / "bwrap"
    copy.parent.mkdir()
    shutil.copy2(real, copy)
    use_bwrap(monkeypatch, copy)
    res = await run_double(submission(), tmp_path, sandbox="on")
    assert res.accepted and res.sandboxed, res.reason
    copy.unlink()
    res = await run_double(submission(), tmp_path, sandbox="on")
    not_judged(res, "the sandbox (bwrap) did not start", f"failed to execute {copy}", "No such file")
    res = await run_double(submission(), tmp_path, sandbox="on")  # probed again: it is gone
    not_judged(res, "bwrap does not work here")


@pytest.mark.skipif(not unshare_works("-Ur"), reason="no private user namespace here (unshare -Ur)")
@needs_bwrap
def test_namespace_limits_reached_mid_run_are_not_judged(tmp_path: Path) -> None:
    """Measured, not assumed: in a private user namespace (nothing else on the machine is
    touched) the grader probes bwrap, grades once, then the namespace limit drops to zero, as
    when the host runs out of namespaces under load. bwrap then writes no status document at all
    and exits 1 with "Creating new namespace failed: ... (ENOSPC)"."""
    got = run_isolated(
        ["-Ur"],
        "",
        """
        assert sandbox.probe_sandbox().available
        first = run(submission(), sandbox="on")
        with open("/proc/sys/user/max_pid_namespaces", "w") as f:  # this namespace's own limit
            f.write("0")
        second = run(submission(), sandbox="on")
        print(json.dumps({"first": first, **second}))
        """,
        tmp_path,
    )
    assert got["first"]["accepted"], got  # type: ignore[index]
    assert got["judged"] is False and not got["accepted"], got
    reason = str(got["reason"])
    assert reason.startswith("could not judge: the sandbox (bwrap) did not start"), reason
    assert "Creating new namespace failed" in reason and "ENOSPC" in reason, reason


# ---- a SIGKILL the grader did not send ---------------------------------------------------------


def oom_killer(monkeypatch: pytest.MonkeyPatch, acted: bool) -> None:
    """The kernel's OOM-kill counter as the grader reads it: moving (the OOM killer acted during
    the command) or standing still."""
    counter = itertools.count()
    monkeypatch.setattr(core, "oom_kill_count", (lambda: next(counter)) if acted else (lambda: 7))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
@pytest.mark.parametrize("oom", [True, False], ids=["oom-killer", "not-the-oom-killer"])
async def test_a_signal_from_outside_to_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, signum: int, oom: bool
) -> None:
    """Something outside the grader (here the test; the OOM killer, systemd-oomd, earlyoom, a job
    scheduler, an operator's `kill`) signals the build of a correct proof. Sandboxed, the build
    runs under the signal filter (grading/signal_filter.py): it cannot have sent itself that
    signal, nor exited with the status that reads as it, so the signal is the host's: could not
    judge, naming it (issue 39 item 1; before, a SIGKILL was 0.0 unless the OOM counter moved, and
    a SIGTERM always). Unsandboxed there is no filter, and what holds without it holds: no signal
    is provably the host's, not even a SIGKILL while the OOM counter moved (it names no victim,
    and the submission can kill itself: tests/test_no_filter.py), so each is a verdict, or a
    submission could choose "could not judge" by killing itself (docs/trust-model.md)."""
    assert (await run_double(submission(), tmp_path, sandbox=mode)).accepted  # the cache is warm
    oom_killer(monkeypatch, oom)
    res = await killed_while_running(tmp_path, mode, "build sleep", signum)
    assert res.failed_stage == "build" and not res.accepted  # type: ignore[attr-defined]
    named = f"killed by signal {int(signum)}, {signal.Signals(signum).name}"
    if mode == "on":
        not_judged(res, named, "from outside the grader")
        if oom and signum == signal.SIGKILL:
            not_judged(res, "the host's OOM killer")
    elif oom and signum == signal.SIGKILL:
        assert res.judged and "while the host's OOM killer acted" in res.reason, res.reason  # type: ignore[attr-defined]
    elif signum == signal.SIGKILL:
        assert res.judged and "neither the grader nor the OOM killer" in res.reason, res.reason  # type: ignore[attr-defined]
    else:
        assert res.judged and named in res.reason, res.reason  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "directive", ["killself KILL", "killself TERM", "killself ABRT", "exit 137", "exit 143"]
)
async def test_a_submission_cannot_make_its_build_look_killed_from_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, directive: str
) -> None:
    """The other side of the rule: build-time code sending itself a signal that only comes from
    outside, or exiting with the status bwrap reports for one (128 + N), gets a verdict, never
    could-not-judge. Sandboxed, the filter refuses the signal (the build then fails on its own
    error) and turns such an exit into SIGSYS; SIGABRT (Lean's own `abort()`) goes through."""
    oom_killer(monkeypatch, False)
    res = await run_double(submission(f"build {directive}"), tmp_path, sandbox=mode)
    assert res.judged and not res.accepted and res.failed_stage == "build", res.reason


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("peak", "judged"), [(300, True), (100, False)])
async def test_an_outside_sigkill_over_the_memory_cap_is_the_memory_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, peak: int, judged: bool
) -> None:
    """A SIGKILL from outside while the tree was seen over its memory cap is the cap's verdict
    (the submission's doing), even if the OOM killer acted; under the cap, with the OOM killer
    acting, it is "could not judge" under the signal filter, and a verdict without it (the
    submission could have killed itself: tests/test_no_filter.py)."""
    oom_killer(monkeypatch, True)
    real = core.run_command

    async def killed_from_outside(argv: list[str], **kw: object) -> CommandOutcome:
        out = await real(argv, **kw)  # type: ignore[arg-type]
        if any("Submission.lean" in a for a in argv):
            rec = out.record.model_copy(update={"exit_code": None, "signal": signal.SIGKILL})
            return dataclasses.replace(out, record=rec, peak_rss_mb=peak)
        return out

    monkeypatch.setattr(core, "run_command", killed_from_outside)
    res = await run_double(submission(), tmp_path, memory_mb=256, sandbox=mode)
    if judged:
        assert res.judged and not res.accepted, res.reason
        assert "stopped: memory cap exceeded (300 MiB > 256 MiB)" in res.reason, res.reason
    elif mode == "on":
        not_judged(res, "the host's OOM killer", "100 MiB of its 256 MiB memory cap")
    else:
        assert res.judged and not res.accepted, res.reason
        assert "while the host's OOM killer acted" in res.reason, res.reason


# ---- a full disk, out of memory, a missing binary -------------------------------------------


@needs_mount_namespace
def test_a_full_work_disk_is_not_judged_and_named(tmp_path: Path) -> None:
    """A real full disk: the work root is an 8 MiB tmpfs in a private mount namespace. Filled
    before the grade, the package copy fails with ENOSPC; nearly full, the build fails for want
    of room. Both are "could not judge: the work disk is full", never "internal grader error"."""
    got = run_on_tmpfs(
        tmp_path,
        "size=8m",
        """
        warm = run(submission())  # the cache (elsewhere) is built; the work root is fine
        fill_small()  # the host fills the disk
        full = run(submission(), work_root=small / "work")
        (small / "fill").unlink()
        nearly = run(submission("build bigfile 16"), work_root=small / "work", max_disk_mb=1024)
        print(json.dumps({"warm": warm, "full": full, "nearly": nearly}))
        """,
    )
    assert got["warm"]["accepted"], got  # type: ignore[index]
    for case in ("full", "nearly"):
        res = got[case]
        assert res["judged"] is False, (case, res)  # type: ignore[index]
        assert res["reason"].startswith("could not judge: the work disk is full"), (case, res)  # type: ignore[index]


@needs_mount_namespace
@pytest.mark.parametrize("mode", MODES)
def test_a_disk_full_while_the_build_ran_and_freed_before_it_ended_is_not_judged(
    tmp_path: Path, mode: str
) -> None:
    """Issue 39 item 2, on a real tmpfs in a private mount namespace: while the build of a correct
    proof runs, the host fills the work disk (as other grades can), the build's write fails with
    Lean's own ENOSPC message, and the space comes back before the build ends (as the reaper
    removes finished grades' directories). The disk was judged only after the build: it had room
    again, and the grade was a rejection (0.0). The grade now watches the disk while the build
    runs: could not judge. A submission printing the same words on a disk with room stays a
    verdict."""
    got = run_on_tmpfs(
        tmp_path,
        "size=400m",
        f"""
        import threading, time
        cfg = dict(work_root=small / "work", max_disk_mb=32, sandbox={mode!r})
        warm = run(submission(), **cfg)

        def host_fills_then_frees():
            end = time.monotonic() + 60
            while not list((small / "work").glob("*/package/.lake/ready")):
                assert time.monotonic() < end
                time.sleep(0.01)
            fill_small()  # the host fills the disk
            while not list((small / "work").glob("*/package/.lake/double-eval-write")):
                assert time.monotonic() < end
                time.sleep(0.01)
            time.sleep(0.5)  # the build's write has failed by now; it goes on elaborating
            (small / "fill").unlink()  # room again, long before the build ends

        host = threading.Thread(target=host_fills_then_frees)
        host.start()
        texts = ("build plant .lake/ready", "build sleep 1", "build eval-write 64", "build sleep 2")
        filled = run(submission(*texts), **cfg)
        host.join()
        workdirs.wait_reaped(60)
        lie = "build fail resource exhausted (error code: 28, no space left on device)"
        lies = run(submission(lie), **cfg)
        print(json.dumps({{"warm": warm, "filled": filled, "lies": lies}}))
        """,
    )
    assert got["warm"]["accepted"], got  # type: ignore[index]
    filled = got["filled"]
    assert filled["judged"] is False, filled  # type: ignore[index]
    reason = filled["reason"]  # type: ignore[index]
    assert reason.startswith("could not judge: the work disk was full while it ran"), reason
    assert "no space left on device" in reason, reason
    lies = got["lies"]
    assert lies["judged"] is True and not lies["accepted"], lies  # type: ignore[index]


def test_lean_s_enospc_message_counts_only_beside_a_disk_that_was_low(tmp_path: Path) -> None:
    """The low-water rule (pure): under the full mark, whatever the output; between it and the
    ENOSPC mark, only with Lean's own message; with room to spare, never (the submission can
    print Lean's words itself). And only with the grade's own usage measured then, within its
    caps: over them (or not measured) it could have filled the disk itself."""
    said = f"error: {steps.LEAN_ENOSPC}\n  file: .lake/x"
    mib = 1 << 20
    own = process.OwnUse(bytes=5 * mib, entries=50)

    def low_water(free: int, inodes: int, used: process.OwnUse | None = own) -> steps.LowWater:
        return steps.LowWater(tmp_path, free, inodes, own=used, max_disk_mb=64, max_files=1000)

    low = low_water(10 * mib, 100)
    assert "was full while it ran (10 MiB free" in (low.full_while_running("") or "")
    assert "this grade held 5 MiB" in (low.full_while_running("") or "")
    low = low_water(100 * mib, 100)
    assert low.full_while_running("") is None
    assert "nearly full while it ran (100 MiB" in (low.full_while_running(said) or "")
    low = low_water(workdirs.ENOSPC_MARK_BYTES, 100)
    assert low.full_while_running(said) is None
    no_inode = low_water(1 << 40, 0)
    assert "no free inode" in (no_inode.full_while_running("") or "")
    for unexplained in (
        None,  # not confirmed: no measurement of the grade's own usage
        process.OwnUse(bytes=65 * mib, entries=50),  # over the disk cap
        process.OwnUse(bytes=5 * mib, entries=1001),  # over the file cap
    ):
        for low in (low_water(10 * mib, 100, unexplained), low_water(10 * mib, 0, unexplained)):
            assert low.full_while_running(said) is None, unexplained


@needs_mount_namespace
@pytest.mark.parametrize("mode", MODES)
def test_a_disk_filled_by_the_build_s_own_hidden_file_is_its_verdict(tmp_path: Path, mode: str) -> None:
    """The review of the signal filter, finding 4, on a real 400 MiB tmpfs in a private mount
    namespace, `max_disk_mb` 64: build-time code takes 360 MiB for a file it removed while
    keeping it open (the disk walk cannot see it), which brings the work disk under the 64 MiB
    mark of full, lets go of it 0.3 s later and fails its build. That was "could not judge: the
    work disk was full while it ran" (4 of 4 in the review), an outcome the submission chose; and
    held for 2 s without failing, 360 MiB under a 64 MiB cap was accepted. The watcher now counts
    such files in the disk cap, and looks at the grade's own usage before it counts a low disk as
    the host's: both are the disk cap's verdict. So is the same done with a named file between
    two walks (a gamble in the review: 2 of 4 could not judge). A removed file held only by a
    mapping cannot be sized, so it is not in the cap; while the tree maps one, a low disk is not
    counted as the host's: the failed build is a plain verdict."""
    got = run_on_tmpfs(
        tmp_path,
        "size=400m",
        f"""
        cfg = dict(work_root=small / "work", max_disk_mb=64, sandbox={mode!r})
        out = {{}}
        out["warm"] = run(submission(), **cfg)
        for name, texts in (
            ("dip", ("build hold-deleted 360 0.3", "build fail deliberate failure")),
            ("held", ("build hold-deleted 360 2",)),
            ("named", ("build hold-file 360 0.12", "build fail deliberate failure")),
            ("mapped", ("build hold-mapped 360 0.5", "build fail deliberate failure")),
        ):
            out[name] = run(submission(*texts), **cfg)
            workdirs.wait_reaped(60)
        print(json.dumps(out))
        """,
    )
    assert got["warm"]["accepted"] and got["warm"]["sandboxed"] is (mode == "on"), got  # type: ignore[index]
    for case in ("dip", "held", "named", "mapped"):
        res = got[case]
        assert res["judged"] is True and not res["accepted"], (case, res)  # type: ignore[index]
        reason = res["reason"]  # type: ignore[index]
        if case == "mapped":  # the disk cap sees it only while a descriptor holds it (allocating)
            assert "deliberate failure" in reason or "disk cap exceeded (" in reason, (case, res)
            continue
        capped = "disk cap exceeded (" in reason and "> 64 MiB)" in reason
        # A dip over before the watcher's confirmation (a host slow to run it) is not counted:
        # the build's own failure is then the verdict, as it should be.
        assert capped or (case != "held" and "deliberate failure" in reason), (case, res)


async def test_enospc_anywhere_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_room(*_: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "Submission.lean")

    monkeypatch.setattr(steps.pkgmod, "write_submission", no_room)
    res = await run_double(submission(), tmp_path)
    not_judged(res, "the work disk is full", "No space left on device")


async def test_memory_error_in_the_grader_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def oom(_: str) -> None:
        raise MemoryError

    monkeypatch.setattr(steps, "check_guard", oom)
    res = await run_double(submission(), tmp_path)
    not_judged(res, "out of memory")


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.ENOMEM, ("out of memory", "Cannot allocate memory")),
        (errno.EAGAIN, ("refused a new process",)),
        (errno.EMFILE, ("out of file descriptors",)),
        (errno.ENOENT, ("a program the grader runs is missing",)),
    ],
)
async def test_a_command_that_cannot_be_started_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, words: tuple[str, ...]
) -> None:
    res = await run_double(submission(), tmp_path)  # the cache is built: the build spawns next
    assert res.accepted, res.reason

    def refused(argv: list[str], **_: object) -> None:
        raise OSError(code, os.strerror(code), argv[0])

    monkeypatch.setattr(commandsmod.subprocess, "Popen", refused)
    res = await run_double(submission(), tmp_path)
    not_judged(res, "could not start", *words)


async def test_the_toolchain_removed_mid_run_is_not_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`lean` vanishes after the toolchain was located (an upgrade mid-run): prlimit cannot exec
    it (exit 127), which is not the submission's build failing."""
    tc = copy_double(tmp_path / "tc")
    lean = tc / "bin" / "lean"
    real_build = steps.build

    async def build_after_removal(*args: object) -> None:
        lean.rename(lean.with_name("lean.gone"))
        await real_build(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(steps, "build", build_after_removal)
    res = await run_double(submission(), tmp_path, toolchain_dir=tc)
    not_judged(res, f"{lean} is missing or not executable")
    assert DOUBLE_DIR.joinpath("bin", "lean").exists()


# ---- a grade that stalls -------------------------------------------------------------------


async def test_a_stalled_grade_returns_not_judged_with_its_processes_and_directory_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lost wake-up, simulated: the build's exit is never noticed (no pidfd, and the exit
    poll is blind), so the grade can neither finish nor be cancelled (`_finish` waits for the
    exit). The watchdog ends it anyway: "could not judge: the grader stalled", its processes
    killed, its directory removed."""
    monkeypatch.setattr(pipeline, "STALL_SLACK_S", 0.5)
    monkeypatch.setattr(pipeline, "STALL_GRACE_S", 0.5)
    mark = marker()
    warm = await run_double(submission(), tmp_path)  # the cache is built; then stall in the build
    assert warm.accepted, warm.reason

    def no_pidfd(_: int) -> int:
        raise OSError(errno.ENOSYS, "no pidfd here")

    blind = True
    real_on_exit = outputmod._Run._on_exit

    def maybe_blind(self: outputmod._Run) -> None:
        if not blind:
            real_on_exit(self)

    monkeypatch.setattr(outputmod.os, "pidfd_open", no_pidfd)
    monkeypatch.setattr(outputmod._Run, "_on_exit", maybe_blind)
    res = await run_double(submission(f"build spawn {mark}", "build sleep 30"), tmp_path, timeout_s=1)
    not_judged(res, "the grader stalled", "stage build", "abandoned")
    assert await wait_gone(mark) == []
    assert work_dirs(tmp_path) == []
    assert len(pipeline._abandoned) == 1
    blind = False  # the wake-up comes after all: the abandoned grade ends on its own
    end = time.monotonic() + 30
    while pipeline._abandoned and time.monotonic() < end:
        await asyncio.sleep(0.05)
    assert not pipeline._abandoned


# ---- the event loop stays free: a long reply is scanned in a child process -----------------------

BIG = pipeline.EXTRACT_IN_CHILD_CHARS + 1000


def replies() -> list[str]:
    prose = "The network adds modulo p.\r\n" * (BIG // 20)
    lean = "```lean\n" + submission() + "```\n"
    return [
        prose + lean + prose,  # CRLF everywhere, one block
        prose,  # no block
        prose + "```lean\ntheorem x : True := trivial\n",  # unterminated
        lean + prose + "```lean4\n" + "-- \ud800 lone surrogate\n" + "```\n",  # not valid Unicode
        "```lean\n" + "-- é ∀ 𝔽\n" * (BIG // 9) + "```\n",  # a long block of multi-byte text
        lean + "```lean\n\n```\n" + prose,  # the last block is empty
    ]


@pytest.mark.parametrize("reply", replies(), ids=["one", "none", "open", "surrogate", "multibyte", "empty"])
async def test_a_long_reply_is_extracted_exactly_as_in_process(reply: str) -> None:
    from lean_mod_add_proof.grading.extract import extract_submission

    assert len(reply) > pipeline.EXTRACT_IN_CHILD_CHARS
    assert await pipeline._extract_off_loop(reply) == extract_submission(reply)


async def test_no_child_for_the_extraction_changes_nothing_but_speed(monkeypatch: pytest.MonkeyPatch) -> None:
    from lean_mod_add_proof.grading.extract import extract_submission

    async def refused(*_: object, **__: object) -> None:
        raise OSError(errno.EAGAIN, "no more processes")

    monkeypatch.setattr(pipeline.asyncio, "create_subprocess_exec", refused)
    reply = replies()[0]
    assert await pipeline._extract_off_loop(reply) == extract_submission(reply)


async def killed_while_running(
    tmp_path: Path, mode: str, directive: str, signum: int, **cfg: object
) -> object:
    """Grade a correct proof whose `directive` runs `sleep MARK` (the build's or the judge's
    process runs it), and send `signum` from outside (as a host would: an operator's kill, a job
    scheduler, earlyoom, systemd-oomd) to the process that runs it: the command the grader
    started (in bwrap: the sandbox's command)."""
    mark = f"{random.randint(20, 29)}.{random.randint(10**6, 10**7 - 1)}"
    job = asyncio.create_task(run_double(submission(f"{directive} {mark}"), tmp_path, sandbox=mode, **cfg))
    end = time.monotonic() + 30
    sleeper: list[int] = []
    while not (sleeper := [p for p in processes_with(mark) if cmdline(p) == f"sleep\0{mark}\0".encode()]):
        assert time.monotonic() < end and not job.done(), "the command never started"
        await asyncio.sleep(0.02)
    os.kill(ppid(sleeper[0]), signum)
    res = await job
    assert await wait_gone(mark) == []
    return res


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
@pytest.mark.parametrize("oom", [True, False], ids=["oom-killer", "not-the-oom-killer"])
async def test_a_signal_from_outside_to_the_judge_after_its_replay_marker_is_not_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, signum: int, oom: bool
) -> None:
    """Issue 39 item 1: the judge, a trusted program, cannot be made to kill itself, so a signal
    the grader did not send after its `{"phase":"replay"}` line is the host's, whatever the OOM
    counter did. It used to be "the kernel check of this submission failed" (0.0) for any signal
    but a SIGKILL while the OOM killer acted. A synchronous fault there (a stack overflow's
    SIGSEGV, a panic's SIGABRT) stays a verdict (tests/test_pipeline_stages.py)."""
    assert (await run_double(submission(), tmp_path, sandbox=mode)).accepted  # the judge is built
    oom_killer(monkeypatch, oom)
    res = await killed_while_running(tmp_path, mode, "judge sleep", signum)
    assert res.failed_stage == "leanchecker", res.reason  # type: ignore[attr-defined]
    not_judged(res, "the judge", f"killed by signal {int(signum)}, {signal.Signals(signum).name}")
    if oom and signum == signal.SIGKILL:
        not_judged(res, "the host's OOM killer")


# ---- issue 26: no host fault rejects an honest proof ------------------------------------------


async def in_flight(tmp_path: Path, mode: str, **cfg: object) -> tuple[asyncio.Task[object], str]:
    """A grade of a correct proof whose build is running (sleeping) now: it has copied the task's
    cache entry and will copy the trusted outputs from it once its build is over."""
    mark = f"{random.randint(2, 3)}.{random.randint(10**6, 10**7 - 1)}"
    job = asyncio.create_task(run_double(submission(f"build sleep {mark}"), tmp_path, sandbox=mode, **cfg))
    end = time.monotonic() + 30
    while not processes_with(mark):
        assert time.monotonic() < end and not job.done(), "the build never started"
        await asyncio.sleep(0.02)
    return job, mark  # type: ignore[return-value]


def fail_first(monkeypatch: pytest.MonkeyPatch, owner: object, name: str, code: int, times: int) -> list[int]:
    """`owner.name` raises OSError(code) on its first `times` calls, then works; returns the count."""
    real = getattr(owner, name)
    calls = [0]

    def flaky(*args: object, **kwargs: object) -> object:
        calls[0] += 1
        if calls[0] <= times:
            raise OSError(code, os.strerror(code), str(args[0]) if args else name)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, flaky)
    return calls


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("times", [1, cachemod.CHECK_ATTEMPTS], ids=["transient", "persistent"])
async def test_a_host_error_in_one_cache_check_rejects_no_grade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, times: int
) -> None:
    """EMFILE while one grade checks the task's cache entry used to make it discard the entry as
    corrupt, and every grade in flight, whose trusted outputs come from that entry, was then
    rejected ("...Network.ilean is missing"). The check is retried: once, the grade goes on
    ("hit"); every time, that grade alone is could-not-judge. The grade in flight is accepted."""
    assert (await run_double(submission(), tmp_path, sandbox=mode)).accepted  # the entry exists
    first, _ = await in_flight(tmp_path, mode)
    calls = fail_first(monkeypatch, cachemod, "read_small_file", errno.EMFILE, times)
    second = await run_double(submission(), tmp_path, sandbox=mode)
    assert calls[0] == min(times + 1, cachemod.CHECK_ATTEMPTS)
    if times < cachemod.CHECK_ATTEMPTS:
        assert second.accepted and second.cache == "hit", second.reason
    else:
        not_judged(second, "the cache entry could not be checked", "out of file descriptors (per process)")
    res = await first
    assert res.accepted, res.reason  # type: ignore[attr-defined]
    assert [p.name for p in (tmp_path / "cache").iterdir() if p.name.startswith(".trash-")] == []


@pytest.mark.parametrize("mode", MODES)
async def test_an_entry_discarded_while_a_grade_reads_it_stays_whole_for_that_grade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """Another grade finds the entry corrupt (here: its manifest reads as garbage on both of that
    grade's checks) and discards and rebuilds it while a grade is in flight. The grade in flight
    holds its entry (`EntryPin`) and reads it to the end: accepted. The discarded copy is deleted
    once no grade holds it (by the next grade's check)."""
    assert (await run_double(submission(), tmp_path, sandbox=mode)).accepted
    first, _ = await in_flight(tmp_path, mode)
    real = cachemod._parse_manifest
    seen = [0]

    def garbage_twice(*args: object, **kwargs: object) -> object:
        # Twice: the lock-free check and the re-check under the lock both see it corrupt.
        seen[0] += 1
        return None if seen[0] <= 2 else real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(cachemod, "_parse_manifest", garbage_twice)
    second = await run_double(submission(), tmp_path, sandbox=mode)
    assert second.accepted and second.cache == "built", second.reason
    cache = tmp_path / "cache"
    assert [p for p in cache.iterdir() if p.name.startswith(".trash-")] != []  # still held
    res = await first
    assert res.accepted, res.reason  # type: ignore[attr-defined]
    third = await run_double(submission(), tmp_path, sandbox=mode)
    assert third.accepted and third.cache == "hit", third.reason
    assert [p.name for p in cache.iterdir() if p.name.startswith((".trash-", ".build-"))] == []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("code", [errno.EMFILE, errno.EIO, errno.ENOMEM])
async def test_a_host_error_re_hashing_the_trusted_files_is_not_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, code: int
) -> None:
    """The re-hash of the trusted files after the build turned any OSError into "trusted file
    changed during the build"; a host error there says nothing about the build."""
    assert (await run_double(submission(), tmp_path, sandbox=mode)).accepted
    fail_first(monkeypatch, hashing, "open_beneath", code, 1)
    res = await run_double(submission(), tmp_path, sandbox=mode)
    not_judged(res, "the trusted files could not be re-hashed", os.strerror(code))
    assert res.failed_stage == "build"


async def test_a_file_the_build_removed_is_still_a_verdict(tmp_path: Path) -> None:
    """The other side of the rule: what the build did to a trusted file is the submission's."""
    res = await run_double(submission("build tamper olean"), tmp_path)
    assert res.judged and not res.accepted and "trusted file changed during the build" in res.reason, (
        res.reason
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("olean_route", [False, True], ids=["export", "olean"])
async def test_a_host_error_copying_into_the_judges_directory_is_not_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, olean_route: bool
) -> None:
    """The copy of the export (or the build's olean) into the judge's directory turned any
    OSError into "cannot be opened safely (Too many open files)": a rejection."""
    assert (await run_double(submission(), tmp_path, sandbox=mode, olean_route=olean_route)).accepted
    real = pkgmod.open_beneath

    def no_descriptors(root: object, rel: str, **kw: object) -> int:
        if rel.endswith((pkgmod.EXPORT_FILE, "Submission.olean")):
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
        return real(root, rel, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(pkgmod, "open_beneath", no_descriptors)
    res = await run_double(submission(), tmp_path, sandbox=mode, olean_route=olean_route)
    not_judged(res, "the judge's directory could not be assembled", "out of file descriptors")


@pytest.mark.parametrize("mode", MODES)
async def test_a_multi_threaded_build_runs_to_its_deadline(tmp_path: Path, mode: str) -> None:
    """A build keeping 4 threads busy in one process, with threads=4: the CPU backstop used to be
    the deadline alone plus 5 s (soft = hard), which such a build reaches long before its deadline
    wherever it gets more than one core (the issue measured 32.6 s of 60 with 2 threads; with the
    old sizing this test's build was stopped at 17 CPU seconds on the 2-core development machine),
    and the kill was reported as "a SIGKILL that neither the grader nor the OOM killer sent". It
    now runs until its deadline. (On a single free core the old sizing passed this test too.)"""
    res = await run_double(submission("build burn 4 120"), tmp_path, sandbox=mode, timeout_s=12.0, threads=4)
    assert res.judged and res.failed_stage == "build", res.reason
    assert "timed out" in res.reason and "SIGKILL" not in res.reason and "CPU" not in res.reason, res.reason


@pytest.mark.parametrize("mode", MODES)
async def test_a_build_stopped_by_the_cpu_backstop_is_that_caps_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """With the backstop made small, the real kernel's SIGXCPU ends the build: a verdict naming
    the CPU cap, not a SIGKILL from outside."""
    assert (await run_double(submission(), tmp_path, sandbox=mode)).accepted  # prebuilt at full limits
    monkeypatch.setattr(commandsmod, "cpu_limits", lambda remaining, threads: 2)
    res = await run_double(submission("build burn 1 120"), tmp_path, sandbox=mode)
    assert res.judged and res.failed_stage == "build", res.reason
    assert "stopped: CPU time cap exceeded (2 CPU seconds in one process)" in res.reason, res.reason


@pytest.mark.parametrize("mode", MODES)
async def test_a_build_that_catches_sigxcpu_runs_to_its_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The review of the signal filter, finding 5: a build catching SIGXCPU (Lean code can, with
    `Std.Internal.IO.Async.Signal`) ran on to RLIMIT_CPU's hard limit, whose SIGKILL was told
    from a SIGKILL from outside only if the watcher had seen a process near the soft limit; on a
    many-core host a build of many spinning threads crosses that window between two looks.
    Injected here: the watcher sees no CPU time (its stat reads 0), and the backstop is made
    small. The kernel's SIGKILL was then "could not judge: ... SIGKILL from outside the grader"
    with the signal filter, and "a SIGKILL that neither the grader nor the OOM killer sent"
    without. With no hard limit the kernel only repeats SIGXCPU: the build runs to its deadline,
    the timeout verdict."""
    assert (await run_double(submission(), tmp_path, sandbox=mode)).accepted  # prebuilt at full limits
    real_stat = watchermod._stat

    def blind_to_cpu(pid: int) -> tuple[int, int, int, bool, int] | None:
        st = real_stat(pid)
        return None if st is None else (*st[:4], 0)

    monkeypatch.setattr(watchermod, "_stat", blind_to_cpu)
    monkeypatch.setattr(commandsmod, "cpu_limits", lambda remaining, threads: 3)
    res = await run_double(
        submission("build burn 2 120 catch-xcpu exec"), tmp_path, sandbox=mode, timeout_s=20.0, threads=2
    )
    assert res.judged and res.failed_stage == "build", res.reason
    assert "timed out" in res.reason and "SIGKILL" not in res.reason, res.reason


@needs_bwrap
async def test_a_symlinked_mount_point_left_by_the_build_does_not_stop_the_export(tmp_path: Path) -> None:
    """With the work root under /tmp, bwrap makes the package's mount point inside the build's
    /tmp; the build moved that path's first directory aside and left a symlink to nowhere. The
    export used to share the build's /tmp, so its bwrap could not start ("could not judge: the
    sandbox (bwrap) did not start"). Each step now has its own /tmp: the grade is a verdict."""
    if not tmp_path.is_relative_to("/tmp"):
        pytest.skip("the test's directory is not under /tmp")
    top = Path("/tmp", tmp_path.relative_to("/tmp").parts[0])
    res = await run_double(submission(f"build swap-symlink {top} /nonexistent-lmap"), tmp_path, sandbox="on")
    assert f"swapped {top} for a symlink" in build_output(res), build_output(res)
    assert res.judged and res.accepted, res.reason


@needs_mount_namespace
@pytest.mark.parametrize("mode", MODES)
def test_an_inode_flood_is_the_file_caps_verdict(tmp_path: Path, mode: str) -> None:
    """A work disk with few inodes (a tmpfs of 2000 in a private mount namespace): build-time
    code creating 5000 empty files (20 MiB charged, far inside the disk cap) used to exhaust it,
    and the grade was "could not judge: the work disk is full (no free inode)". The file cap
    stops it first: a verdict."""
    got = run_on_tmpfs(
        tmp_path,
        "size=512m,nr_inodes=2000",
        f"""
        cfg = dict(work_root=small / "work", max_files=1000, max_disk_mb=64, sandbox={mode!r})
        flood = run(submission("build manyfiles 5000"), **cfg)
        workdirs.wait_reaped(60)  # the flood's directory is removed off the grade's path
        honest = run(submission(), **cfg)
        print(json.dumps({{"flood": flood, "honest": honest}}))
        """,
    )
    assert got["honest"]["accepted"] and got["honest"]["sandboxed"] is (mode == "on"), got  # type: ignore[index]
    flood = got["flood"]
    assert flood["judged"] is True and not flood["accepted"], flood  # type: ignore[index]
    assert "file cap exceeded (more than 1000 directory entries)" in flood["reason"], flood  # type: ignore[index]


@needs_mount_namespace
@pytest.mark.parametrize("mode", MODES)
def test_a_work_disk_with_fewer_free_inodes_than_the_file_cap_grades_nothing(
    tmp_path: Path, mode: str
) -> None:
    """Issue 39 item 5, on a real small-inode disk (a tmpfs of 300 inodes in a private mount
    namespace, unmounted with it): with `max_files` 5000 the file cap cannot bind before the disk
    runs out of inodes, so build-time code creating 1000 empty files (far inside its caps) reached
    "no free inode", which is could not judge: an outcome the submission chose, while an honest
    proof was accepted. The grade now checks before the build that the disk can hold its caps: on
    this disk every grade is could not judge, naming the inodes, and no submission's code runs."""
    got = run_on_tmpfs(
        tmp_path,
        "size=512m,nr_inodes=300",
        f"""
        cfg = dict(work_root=small / "work", max_files=5000, max_disk_mb=64, sandbox={mode!r})
        flood = run(submission("build manyfiles 1000"), **cfg)
        honest = run(submission(), **cfg)
        print(json.dumps({{"flood": flood, "honest": honest}}))
        """,
    )
    for case in ("flood", "honest"):
        res = got[case]
        assert res["judged"] is False and not res["accepted"], (case, res)  # type: ignore[index]
        reason = res["reason"]  # type: ignore[index]
        assert reason.startswith("could not judge: the work disk is full for this grade's caps"), reason
        assert "inodes free" in reason and "max_files 5000" in reason, reason


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("step_tmp", [pkgmod.EXPORT_TMP, pkgmod.JUDGE_TMP])
async def test_a_build_that_makes_a_later_steps_tmp_gets_a_verdict(
    tmp_path: Path, mode: str, step_tmp: str
) -> None:
    """The other side of per-step /tmp: unsandboxed, `../export-tmp` is the grade's own directory,
    and a build that made it wrote outside its package (a verdict, never could-not-judge);
    sandboxed, the same path is inside the build's own /tmp and changes nothing."""
    res = await run_double(submission(f"build write ../{step_tmp}"), tmp_path, sandbox=mode, skip_guard=True)
    assert res.judged, res.reason
    if mode == "on":
        assert res.accepted, res.reason
    else:
        assert res.failed_stage == "build" and f"{step_tmp} exists already" in res.reason, res.reason


@pytest.mark.parametrize("mode", MODES)
async def test_a_cached_trusted_output_changed_under_a_grade_is_the_builds_only_unsandboxed(
    tmp_path: Path, mode: str
) -> None:
    """The entry a grade holds is changed in place while its build runs (here by the test; a disk
    fault or another process could). Only an unsandboxed build can reach the cache, so only then is
    it the submission's doing (a verdict); sandboxed it is could-not-judge."""
    assert (await run_double(submission(), tmp_path, sandbox=mode)).accepted
    first, _ = await in_flight(tmp_path, mode)
    [weights] = [p for p in (tmp_path / "cache").rglob("Weights.olean") if "judge-" not in str(p)]
    with open(weights, "ab") as f:
        f.write(b"changed")
    res = await first
    assert not res.accepted and res.failed_stage == "build", res.reason  # type: ignore[attr-defined]
    if mode == "on":
        not_judged(res, "the cached trusted outputs cannot be read", "does not match the prebuilt copy")
    else:
        assert res.judged and "does not match the prebuilt copy" in res.reason, res.reason  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", MODES)
async def test_a_permission_error_on_the_export_is_the_builds_only_unsandboxed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The export file is the grader's (it created it and handed the exporter only the open
    file): sandboxed, no step could change its mode, so EACCES there is the host's; unsandboxed,
    the build could have, so it is a verdict."""
    assert (await run_double(submission(), tmp_path, sandbox=mode)).accepted
    real = pkgmod.open_beneath

    def denied(root: object, rel: str, **kw: object) -> int:
        if rel == pkgmod.EXPORT_FILE:
            raise OSError(errno.EACCES, os.strerror(errno.EACCES))
        return real(root, rel, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(pkgmod, "open_beneath", denied)
    res = await run_double(submission(), tmp_path, sandbox=mode)
    if mode == "on":
        not_judged(res, "the judge's directory could not be assembled", "denied access to its own file")
    else:
        assert res.judged and "cannot be opened safely (Permission denied)" in res.reason, res.reason
