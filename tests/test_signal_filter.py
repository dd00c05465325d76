"""The seccomp filter on the submission's own commands (grading/signal_filter.py, issue 39): it is
compiled by the installed libseccomp, and under bubblewrap it refuses every way for a process to
bring on itself a signal that only comes from outside, while SIGABRT (Lean's own `abort()`),
SIGSEGV, threads and fork go on working. Real bwrap, real syscalls (a Python script in the sandbox)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from helpers import needs_bwrap

from lean_mod_add_proof.grading import signal_filter
from lean_mod_add_proof.grading.routes import core
from lean_mod_add_proof.grading.sandbox import find_bwrap

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


def run_filtered(*args: str) -> subprocess.CompletedProcess[str]:
    return run_filtered_argv([sys.executable, "-c", PROBE, *args])


def run_filtered_argv(command: list[str]) -> subprocess.CompletedProcess[str]:
    bwrap = find_bwrap()
    assert bwrap is not None
    program = signal_filter.signal_filter().program
    assert program is not None
    fd = signal_filter.program_fd(program)
    try:
        argv = [bwrap, "--unshare-all", "--die-with-parent", "--cap-drop", "ALL", "--ro-bind", "/", "/"]
        argv += ["--proc", "/proc", "--dev", "/dev", "--add-seccomp-fd", str(fd), "--"]
        return subprocess.run([*argv, *command], pass_fds=(fd,), capture_output=True, text=True)
    finally:
        os.close(fd)


def test_the_filter_compiles_here() -> None:
    made = signal_filter.signal_filter()
    assert made.program is not None and len(made.program) % 8 == 0, made.why_not
    assert made.libseccomp


def test_the_filtered_signals_are_exactly_those_from_outside() -> None:
    assert frozenset(signal_filter.FILTERED_SIGNALS) == core.OUTSIDE_ONLY


def test_a_syscall_libseccomp_does_not_know_is_no_filter() -> None:
    made = signal_filter.compile_filter([signal_filter.Rule("no_such_syscall_lmap", 1)])
    assert made.program is None and "does not know no_such_syscall_lmap" in made.why_not


@needs_bwrap
def test_under_bwrap_no_signal_from_outside_can_be_self_sent_and_the_rest_works() -> None:
    done = run_filtered()
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
def test_abort_still_aborts_under_the_filter() -> None:
    """Lean's `abort()` (a panic under LEAN_ABORT_ON_PANIC, its stack-overflow handler) sends
    SIGABRT with tgkill: allowed, and the process dies of it (bwrap reports 128 + 6)."""
    done = run_filtered("abort")
    assert done.returncode == 128 + 6, (done.returncode, done.stderr)


@needs_bwrap
def test_an_exit_status_that_reads_as_a_signal_from_outside_is_a_sigsys_under_the_filter() -> None:
    """bwrap reports a command killed by signal N as exit 128 + N: without the filter, build-time
    `IO.Process.exit 137` would read as a SIGKILL from outside. Under it, that exit kills the
    process with SIGSYS (its own doing); other statuses are left alone."""
    for status, reported in ((137, 128 + 31), (143, 128 + 31), (136, 136), (1, 1)):
        done = run_filtered_argv(["python3", "-c", f"import os; os._exit({status})"])
        assert done.returncode == reported, (status, done.returncode, done.stderr)
