"""The seccomp filter on the submission's own commands (grading/signal_filter.py, issue 39): it is
compiled by the installed libseccomp, and under bubblewrap it refuses every way for a process to
bring on itself a signal that only comes from outside, while SIGABRT (Lean's own `abort()`),
SIGSEGV, threads and fork go on working. Real bwrap with the grader's own options
(`sandbox.bwrap_argv`), real syscalls (a Python script in the sandbox).

The attacks of the red team's review (docs/readings/review-signal-filter.md) run through the
grader's own `run_command`, as a build does: a sandbox process signalling its process group, which
held bwrap itself (finding 1); a process group orphaned while the command is stopped, which makes
the kernel send it SIGHUP (opened by `--new-session`, closed with it); ptrace-level access to
bwrap's init and the command (`pidfd_getfd`, `process_vm_*`, `/proc/N/mem`: finding 2); memory
no cap counts and `oom_score_adj` (finding 3)."""

from __future__ import annotations

import errno
import json
import os
import platform
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
from helpers import double_config, grade_task, needs_bwrap, submission

from lean_mod_add_proof.grading import selftest, signal_filter, signals
from lean_mod_add_proof.grading.grader import grade
from lean_mod_add_proof.grading.process import CommandOutcome, run_command
from lean_mod_add_proof.grading.sandbox import bwrap_argv, find_bwrap, host_layout

#: The sandbox sees the host's /usr, not this test's virtual environment.
PYTHON = "/usr/bin/python3"
needs_python_in_the_sandbox = pytest.mark.skipif(
    not os.access(PYTHON, os.X_OK) or platform.machine() != "x86_64",
    reason=f"needs {PYTHON} (visible in the sandbox) and x86_64 syscall numbers",
)

PROBE = textwrap.dedent(
    """
    import ctypes, fcntl, json, os, resource, signal, sys, threading
    libc = ctypes.CDLL(None, use_errno=True)
    NOBODY = 2**22 + 1  # above PID_MAX_LIMIT: an allowed kill fails with ESRCH, a refused one EPERM

    def call(fn):
        try:
            fn()
            return "ok"
        except (OSError, ValueError) as exc:  # resource.setrlimit turns EPERM into ValueError
            return {1: "EPERM", 3: "ESRCH", 38: "ENOSYS"}.get(getattr(exc, "errno", 1), str(exc))

    def sys_(nr, *args):
        if libc.syscall(nr, *[ctypes.c_long(a) for a in args]) < 0:
            raise OSError(ctypes.get_errno(), "syscall")

    def prctl(option, value):
        if libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl")

    r, w = os.pipe()
    got = {}
    for s in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGABRT, signal.SIGSEGV):
        n = signal.Signals(s).name
        got[f"kill {n}"] = call(lambda: os.kill(NOBODY, s))
        got[f"tgkill {n}"] = call(lambda: sys_(234, NOBODY, NOBODY, s))
        got[f"pidfd_send_signal {n}"] = call(lambda: sys_(424, 10**6, s, 0, 0))
    got["kill SIGKILL with high bits"] = call(lambda: sys_(62, NOBODY, 9 | (1 << 32)))
    got["F_SETSIG SIGKILL"] = call(lambda: fcntl.fcntl(r, 10, signal.SIGKILL))
    got["F_SETSIG SIGIO"] = call(lambda: fcntl.fcntl(r, 10, signal.SIGIO))
    got["PDEATHSIG SIGTERM"] = call(lambda: prctl(1, signal.SIGTERM))
    got["PDEATHSIG SIGALRM"] = call(lambda: prctl(1, signal.SIGALRM))
    got["clone3"] = call(lambda: sys_(435, 0, 0))
    got["clone exit SIGKILL"] = call(lambda: sys_(56, signal.SIGKILL, 0, 0, 0, 0))
    got["ptrace"] = call(lambda: sys_(101, 0, 0, 0, 0))
    got["timer_create"] = call(lambda: sys_(222, 0, 0, 0))
    got["setrlimit CPU"] = call(lambda: resource.setrlimit(resource.RLIMIT_CPU, (10**6, 10**6)))
    got["prlimit CPU read"] = call(lambda: resource.getrlimit(resource.RLIMIT_CPU))
    got["setrlimit NOFILE"] = call(
        lambda: resource.setrlimit(resource.RLIMIT_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE))
    )
    t = threading.Thread(target=lambda: None)
    got["thread"] = call(lambda: (t.start(), t.join()))
    got["fork"] = call(lambda: os.waitpid(os.fork() or os._exit(0), 0) and None)
    print(json.dumps(got))
    if sys.argv[1:] == ["abort"]:
        os.abort()
    """
)


def run_filtered(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_filtered_argv(where, [PYTHON, "-c", PROBE, *args])


def sandbox_argv(where: Path, seccomp_fd: int) -> list[str]:
    """The grader's own bwrap options (`sandbox.bwrap_argv`), the package and /tmp under `where`."""
    bwrap = find_bwrap()
    assert bwrap is not None
    (where / "pkg").mkdir(exist_ok=True)
    (where / "tmp").mkdir(exist_ok=True)
    return bwrap_argv(
        bwrap,
        layout=host_layout(),
        toolchain_dir=None,
        package_dir=where / "pkg",
        readonly_files=(),
        env={"PATH": "/usr/bin:/bin"},
        tmp_dir=where / "tmp",
        seccomp_fd=seccomp_fd,
    )


def run_filtered_argv(where: Path, command: list[str]) -> subprocess.CompletedProcess[str]:
    program = signal_filter.signal_filter().program
    assert program is not None
    fd = signal_filter.program_fd(program)
    try:
        argv = sandbox_argv(where, fd)
        return subprocess.run([*argv, *command], pass_fds=(fd,), capture_output=True, text=True)
    finally:
        os.close(fd)


async def in_the_sandbox(tmp_path: Path, script: str, timeout_s: float = 60) -> CommandOutcome:
    """Run a Python script as the grader runs a build: the grader's own bwrap options and filter,
    through `run_command` (its own process group, bwrap's status document, a `HostFault` when
    bwrap itself dies). Raises what `run_command` raises."""
    program = signal_filter.signal_filter().program
    assert program is not None
    fd = signal_filter.program_fd(program)
    try:
        argv = sandbox_argv(tmp_path, fd)
        return await run_command(
            [*argv, PYTHON, "-c", ATTACK_PRELUDE + textwrap.dedent(script)],
            stage="build",
            cwd=tmp_path / "pkg",
            env={"PATH": "/usr/bin:/bin"},
            deadline=time.monotonic() + timeout_s,
            output_cap_bytes=1 << 20,
            tail_chars=4000,
            limits=None,
            prlimit=None,
            sandboxed=True,
            pass_fds=(fd,),
        )
    finally:
        os.close(fd)


#: What every attack script starts with: raw syscalls (x86_64 numbers) and one line per attempt.
ATTACK_PRELUDE = textwrap.dedent(
    """
    import ctypes, errno, os, signal, struct, sys, time
    libc = ctypes.CDLL(None, use_errno=True)
    NR = {"process_vm_readv": 310, "process_vm_writev": 311, "memfd_create": 319,
          "shmget": 29, "pidfd_getfd": 438}

    def sc(name, *args):
        got = libc.syscall(ctypes.c_long(NR[name]), *[ctypes.c_long(a) for a in args])
        if got < 0:
            raise OSError(ctypes.get_errno(), name)
        return got

    def attempt(name, fn):
        try:
            fn()
            print(name, "ok", flush=True)
            return True
        except OSError as exc:
            print(name, errno.errorcode.get(exc.errno, exc.errno), flush=True)
            return False

    def iovec(buf):
        return ctypes.create_string_buffer(struct.pack("QQ", ctypes.addressof(buf), len(buf)), 16)
    """
)


def said(out: CommandOutcome) -> dict[str, str]:
    """`name result` lines of an attack script's output."""
    lines = (ln.rsplit(" ", 1) for ln in out.text.splitlines() if " " in ln)
    return {name: result for name, result in lines}


def test_the_filter_compiles_here() -> None:
    made = signal_filter.signal_filter()
    assert made.program is not None and len(made.program) % 8 == 0, made.why_not
    assert made.libseccomp


def test_the_filtered_signals_are_exactly_those_from_outside() -> None:
    assert frozenset(signal_filter.FILTERED_SIGNALS) == signals.OUTSIDE_ONLY


def test_a_syscall_libseccomp_does_not_know_is_no_filter() -> None:
    made = signal_filter.compile_filter([signal_filter.Rule("no_such_syscall_lmap", 1)])
    assert made.program is None and "does not know no_such_syscall_lmap" in made.why_not


@needs_bwrap
def test_under_bwrap_no_signal_from_outside_can_be_self_sent_and_the_rest_works(tmp_path: Path) -> None:
    done = run_filtered(tmp_path)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    for name in ("SIGKILL", "SIGTERM", "SIGINT"):
        for call in ("kill", "tgkill", "pidfd_send_signal"):
            assert got[f"{call} {name}"] == "EPERM", (call, name, got)
    for name in ("SIGABRT", "SIGSEGV"):  # allowed: the call itself fails for want of a target
        assert got[f"kill {name}"] == "ESRCH" and got[f"tgkill {name}"] == "ESRCH", got
    assert got["kill SIGKILL with high bits"] == "EPERM"
    assert got["F_SETSIG SIGKILL"] == "EPERM" and got["F_SETSIG SIGIO"] == "ok"
    assert got["PDEATHSIG SIGTERM"] == "EPERM" and got["PDEATHSIG SIGALRM"] == "ok"
    assert got["clone3"] == "ENOSYS" and got["clone exit SIGKILL"] == "EPERM"
    assert got["ptrace"] == "EPERM" and got["timer_create"] == "EPERM"
    assert got["setrlimit CPU"] != "ok" and got["prlimit CPU read"] == "ok"
    assert got["setrlimit NOFILE"] == "ok" and got["thread"] == "ok" and got["fork"] == "ok"


@needs_bwrap
def test_abort_still_aborts_under_the_filter(tmp_path: Path) -> None:
    """Lean's `abort()` (a panic under LEAN_ABORT_ON_PANIC, its stack-overflow handler) sends
    SIGABRT with tgkill: allowed, and the process dies of it (bwrap reports 128 + 6)."""
    done = run_filtered(tmp_path, "abort")
    assert done.returncode == 128 + 6, (done.returncode, done.stderr)


@needs_bwrap
def test_an_exit_status_that_reads_as_a_signal_from_outside_is_a_sigsys_under_the_filter(
    tmp_path: Path,
) -> None:
    """bwrap reports a command killed by signal N as exit 128 + N: without the filter, build-time
    `IO.Process.exit 137` would read as a SIGKILL from outside. Under it, that exit kills the
    process with SIGSYS (its own doing); other statuses are left alone."""
    for status, reported in ((137, 128 + 31), (143, 128 + 31), (136, 136), (1, 1)):
        done = run_filtered_argv(tmp_path, [PYTHON, "-c", f"import os; os._exit({status})"])
        assert done.returncode == reported, (status, done.returncode, done.stderr)


# ---- the red team's attacks (review-signal-filter.md), through the grader's own sandbox -------


@needs_bwrap
@needs_python_in_the_sandbox
@pytest.mark.parametrize("signum", [signal.SIGALRM, signal.SIGSEGV], ids=["SIGALRM", "SIGSEGV"])
async def test_a_signal_to_the_process_group_reaches_neither_bwrap_nor_the_command(
    tmp_path: Path, signum: int
) -> None:
    """Finding 1: `kill(0, S)` for a signal the filter let through reached bwrap itself (it was in
    the command's process group), and bwrap's death read as the host's: "could not judge" at will.
    Now bwrap runs its command in a session of its own (`--new-session`) and the filter refuses
    any kill aimed at a process group (pid 0 or negative)."""
    out = await in_the_sandbox(
        tmp_path,
        f"""
        child = os.fork()
        if child == 0:
            attempt("kill(0)", lambda: os.kill(0, {int(signum)}))
            attempt("kill(-1)", lambda: os.kill(-1, {int(signum)}))
            attempt("kill(-pgrp)", lambda: os.kill(-os.getpgrp(), {int(signum)}))
            os._exit(0)
        os.waitpid(child, 0)
        print("command alive", flush=True)
        """,
    )
    got = said(out)
    assert out.record.exit_code == 0 and got.get("command") == "alive", out.text
    assert got["kill(0)"] == got["kill(-1)"] == got["kill(-pgrp)"] == "EPERM", got


@needs_bwrap
@needs_python_in_the_sandbox
async def test_an_orphaned_process_group_cannot_hang_up_the_command(tmp_path: Path) -> None:
    """In a session of its own (`--new-session`), the sandbox's process group has no member whose
    parent is in another group of the session: a process that moves to a new group and back, and
    exits while the command is stopped, makes the kernel SIGHUP the command (kernel/exit.c
    `kill_orphaned_pgrp`), with no kill syscall. The filter refuses setpgid and setsid, so every
    process stays in one group and nothing but bwrap's init leads a session (no process can then
    take a controlling terminal either: no ^C, TIOCSIG or hang-up on a pty reaches anyone).
    Seen failing with `--new-session` and without that rule: the command died of SIGHUP."""
    out = await in_the_sandbox(
        tmp_path,
        """
        command = os.getpid()
        group = os.getpgrp()
        helper = os.fork()
        if helper == 0:
            attempt("setpgid(own)", lambda: os.setpgid(0, 0))
            last = os.fork()
            if last == 0:  # back into the command's group, then gone: the group is orphaned
                attempt("setpgid(back)", lambda: os.setpgid(0, group))
                time.sleep(0.3)
                os._exit(0)
            os.waitpid(last, 0)
            time.sleep(0.5)
            os.kill(command, signal.SIGCONT)
            os._exit(0)
        tries = os.fork()
        if tries == 0:
            attempt("setsid", os.setsid)
            os._exit(0)
        os.waitpid(tries, 0)
        os.kill(command, signal.SIGSTOP)
        os.waitpid(helper, 0)
        print("command alive", flush=True)
        """,
    )
    got = said(out)
    assert out.record.signal is None and got.get("command") == "alive", (out.record, out.text)
    assert got["setpgid(own)"] == got["setsid"] == "EPERM", got


@needs_bwrap
@needs_python_in_the_sandbox
async def test_bwraps_init_cannot_be_made_to_report_a_status(tmp_path: Path) -> None:
    """Finding 2a: bwrap's init tells bwrap its command's status through an eventfd (written
    `status + 1`, read first: bubblewrap.c 0.8.0 `do_init`, `monitor_child`). With `pidfd_getfd`
    a sandbox process took a copy and wrote 138: bwrap reported 137 ("killed by SIGKILL") while
    the command was alive. The filter refuses `pidfd_getfd`."""
    out = await in_the_sandbox(
        tmp_path,
        """
        child = os.fork()
        if child == 0:
            pidfd = os.pidfd_open(1)
            for name in os.listdir("/proc/1/fd"):
                if "eventfd" in os.readlink(f"/proc/1/fd/{name}"):
                    def forge():
                        fd = sc("pidfd_getfd", pidfd, int(name), 0)
                        os.write(fd, struct.pack("Q", 137 + 1))
                        time.sleep(5)
                    attempt("pidfd_getfd(init's eventfd)", forge)
            os._exit(0)
        os.waitpid(child, 0)
        print("command alive", flush=True)
        """,
    )
    got = said(out)
    assert out.record.exit_code == 0 and got.get("command") == "alive", (out.record, out.text)
    assert got["pidfd_getfd(init's eventfd)"] == "EPERM", got


@needs_bwrap
@needs_python_in_the_sandbox
async def test_no_sandbox_process_can_write_another_ones_memory_or_steer_the_oom_killer(
    tmp_path: Path,
) -> None:
    """Finding 2b: `/proc/N/mem` opened for writing (then code injected into the command, which
    gave itself a pty and typed ^C) and `process_vm_writev` wrote another process's memory;
    finding 3: `oom_score_adj` raised so that the OOM killer picks the command. `/proc` is
    read-only in the sandbox (`--remount-ro /proc`: EROFS), and the filter refuses
    `process_vm_readv`, `process_vm_writev` and `pidfd_getfd` (here aimed at the caller itself:
    the filter refuses them whatever the target). Reading /proc still works."""
    out = await in_the_sandbox(
        tmp_path,
        """
        command = os.getpid()
        child = os.fork()
        if child == 0:
            attempt("open /proc/command/mem rw", lambda: os.close(os.open(f"/proc/{command}/mem", os.O_RDWR)))
            def adj():
                with open(f"/proc/{command}/oom_score_adj", "w") as f:
                    f.write("1000")
            attempt("oom_score_adj", adj)
            me = os.getpid()
            src, dst = ctypes.create_string_buffer(b"abcd"), ctypes.create_string_buffer(4)
            local, remote = iovec(src), iovec(dst)  # (kept alive: the calls read them)
            args = (me, ctypes.addressof(local), 1, ctypes.addressof(remote), 1, 0)
            attempt("process_vm_writev", lambda: sc("process_vm_writev", *args))
            attempt("process_vm_readv", lambda: sc("process_vm_readv", *args))
            attempt("pidfd_getfd(self)", lambda: sc("pidfd_getfd", os.pidfd_open(me), 0, 0))
            attempt("read /proc/command/stat", lambda: open(f"/proc/{command}/stat").read())
            os._exit(0)
        os.waitpid(child, 0)
        """,
    )
    got = said(out)
    assert out.record.exit_code == 0, (out.record, out.text)
    assert got["open /proc/command/mem rw"] == got["oom_score_adj"] == "EROFS", got
    assert got["process_vm_writev"] == got["process_vm_readv"] == got["pidfd_getfd(self)"] == "EPERM", got
    assert got["read /proc/command/stat"] == "ok", got


@needs_bwrap
@needs_python_in_the_sandbox
async def test_memory_no_cap_counts_has_no_writable_place(tmp_path: Path) -> None:
    """Finding 3: the memory cap sums resident memory; a file in a RAM-backed filesystem or a
    memory file descriptor that is not mapped is in nobody's. bwrap's root and its `/dev` are
    tmpfs: both are read-only now (the step's /tmp and /dev/shm are on the grade's disk, under the
    disk cap); `memfd_create` and SysV `shmget` are refused (ENOSYS, as on a kernel without them).
    What stays writable: /tmp, /dev/shm, the package, the device nodes."""
    out = await in_the_sandbox(
        tmp_path,
        """
        def write(path):
            with open(path, "w") as f:
                f.write("x")
        for path in ("/uncounted", "/dev/uncounted", "/tmp/f", "/dev/shm/f", "./f", "/dev/null"):
            attempt(f"write {path}", lambda: write(path))
        name = ctypes.create_string_buffer(b"uncounted")
        attempt("memfd_create", lambda: sc("memfd_create", ctypes.addressof(name), 0))
        attempt("shmget", lambda: sc("shmget", 0, 1 << 20, 0o1600))
        """,
    )
    got = said(out)
    assert out.record.exit_code == 0, (out.record, out.text)
    assert got["write /uncounted"] == got["write /dev/uncounted"] == "EROFS", got
    assert all(got[f"write {p}"] == "ok" for p in ("/tmp/f", "/dev/shm/f", "./f", "/dev/null")), got
    assert got["memfd_create"] == got["shmget"] == "ENOSYS", got


def test_the_new_rules_are_in_the_filter() -> None:
    """Pure: the refusals the attacks above need, as rules (the tests above see them work)."""
    by_name = {r.syscall for r in signal_filter.rules()}
    for name in ("setsid", "setpgid", "pidfd_getfd", "process_vm_readv", "process_vm_writev"):
        assert name in by_name, name
    assert {r.errno_code for r in signal_filter.rules() if r.syscall in ("memfd_create", "shmget")} == {38}


@needs_bwrap
async def test_the_selftest_builds_under_the_grades_filter_so_a_wrong_belief_fails_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What Lean needs under the filter and the read-only mounts is belief (docs/trust-model.md),
    tested only by the self-test on the real toolchain: its canaries' builds run by the grade's
    own route, under the same sandbox and filter, and a remembered pass holds only for the same
    bwrap options and filter program (`routes/replay.py` `verdict_path`). Here a filter that
    refuses what the build needs (pipes: the double's `lean` runs `$(...)`) stands for a wrong
    belief: after a pass under the real filter, the next grade runs the self-test again, it
    fails, and the grade is could not judge, never a verdict on the honest proof. Seen failing
    before the key held the filter: the remembered pass was used, and the build's failure under
    the new filter rejected the proof (0.0)."""
    selftest.forget()
    try:
        config = double_config(tmp_path, sandbox="on", judge="replay")  # (auto: on to the comparator)
        first = await grade(submission(), grade_task(), config)
        assert first.accepted and first.sandboxed, first.reason
        selftest.forget()  # a new grader process: only the pass remembered on disk is left
        wrong = [signal_filter.Rule("pipe", errno.EPERM), signal_filter.Rule("pipe2", errno.EPERM)]
        refusing = signal_filter.compile_filter([*signal_filter.rules(), *wrong])
        assert refusing.program is not None, refusing.why_not
        monkeypatch.setattr(signal_filter, "_compiled", refusing)
        res = await grade(submission(), grade_task(), config)
        assert not res.judged and not res.accepted, res.reason
        assert "toolchain self-test failed" in res.reason, res.reason
    finally:
        selftest.forget()


@needs_bwrap
def test_the_filter_is_used_only_once_seen_refusing_a_self_sent_signal_here() -> None:
    """Making the program proves nothing about the kernel applying it (sandbox2's open item: doctor
    claimed what libseccomp made). The proof runs a shell under bwrap and the program: with the
    real filter it outlives its own SIGTERM and SIGKILL; with a program that allows everything
    (the same as a filter bwrap or the kernel would not apply) it dies, and the filter is not
    believed in force, so grading falls back to the attribution without it."""
    from lean_mod_add_proof.grading.sandbox import prove_signal_filter

    bwrap = find_bwrap()
    assert bwrap is not None
    made = signal_filter.signal_filter()
    assert made.program is not None, made.why_not
    assert prove_signal_filter(bwrap, made.program).in_force
    allow_all = signal_filter.compile_filter([])
    assert allow_all.program is not None
    proof = prove_signal_filter(bwrap, allow_all.program)
    assert not proof.in_force and "did not outlive its own kill (exit 143" in proof.why, proof.why
