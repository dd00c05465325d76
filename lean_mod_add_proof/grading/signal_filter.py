"""The seccomp filter bubblewrap puts on the submission's own commands (the build and the export):
with it, a submission cannot bring on itself any signal that only comes from outside
(`signals.py` `OUTSIDE_ONLY`: SIGKILL, SIGTERM, SIGINT, ...). A command that ran under it and
died of such a signal, unsent by the grader, was killed by the host (the OOM killer,
systemd-oomd, earlyoom, a job scheduler, an operator): could not judge, provably, instead of
"the submission killed itself" (issue 39).

What the filter refuses, with EPERM unless said otherwise, for each signal S of `signals.OUTSIDE_ONLY`:
- sending S: kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo, pidfd_send_signal;
- the other ways the kernel sends S for a process (kernel sources: kernel/fork.c, kernel/exit.c
  `do_notify_parent`, fs/fcntl.c `f_setsig`/`send_sigio`, kernel/sys.c `PR_SET_PDEATHSIG`):
  clone with S as its exit signal (the parent gets S when the child ends), fcntl F_SETSIG S (the
  signal of asynchronous I/O), prctl PR_SET_PDEATHSIG S;
- entirely: clone3 (its exit signal is in a struct the filter cannot read; ENOSYS, so glibc falls
  back to clone, glibc sysdeps/unix/sysv/linux/clone-internal.c), timer_create and mq_notify (their
  signal is in a struct too), ptrace (a tracer can kill or inject any signal), and ioctl TIOCSTI
  (typing ^C into a controlling terminal; bwrap(1) recommends refusing it);
- raising its own RLIMIT_CPU or RLIMIT_RTTIME limits below the grader's (setrlimit, prlimit64 with a
  new limit): the kernel SIGKILLs a process at its hard limit (kernel/time/posix-cpu-timers.c);
- exiting with status 128 + S (exit, exit_group): bubblewrap reports a command that died of signal
  N as exit 128 + N (bubblewrap.c `propagate_exit_status`), so `IO.Process.exit 137` would read as
  a SIGKILL. Such an exit kills the process instead (SECCOMP_RET_KILL_PROCESS: it dies of SIGSYS,
  which is its own doing, a verdict). bwrap's own init, which runs under the filter too, exits
  with its command's status after handing it to the monitor (the eventfd, read first), so what
  bwrap reports is unchanged.

And for any signal (the red team's review of this filter, docs/readings/review-signal-filter.md):
- a kill aimed at a process group (kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo with a
  pid of 0 or below; pidfd_send_signal with PIDFD_SIGNAL_PROCESS_GROUP): the group held bwrap
  itself, and `kill(0, SIGALRM)` killed it (finding 1; the sandbox now has a session of its own
  too, sandbox.py `--new-session`);
- setsid and setpgid: in that session every sandbox process stays in bwrap's init's one group, so
  none can be orphaned and hung up by the kernel (kernel/exit.c `kill_orphaned_pgrp`: SIGHUP to a
  group with a stopped member, no kill syscall), and none but init leads a session, so none can
  take a controlling terminal (^C, ^\\, TIOCSIG or a hang-up on a pty reach nobody);
- pidfd_getfd, process_vm_readv, process_vm_writev: ptrace-level access to another sandbox
  process (finding 2: a copy of bwrap's init's eventfd forged the status bwrap reports; code
  written into the command). `/proc/N/mem` is closed by a read-only /proc (sandbox.py);
- memfd_create and SysV shmget (ENOSYS, as on a kernel without them): memory that no process
  maps is in nobody's resident set, so the memory cap never sees it (finding 3). bwrap's root and
  /dev are read-only for the same reason (sandbox.py); memory the kernel holds for pipes and
  sockets stays uncounted (docs/trust-model.md).

What Lean itself must still be able to do under these rules and mounts is a set of beliefs, each
with its source, in docs/trust-model.md ("Lean under the sandbox and the filter"); none can be
run here. The self-test's canaries are built by the same route, under the same sandbox and filter
as a grade's, and its remembered pass is keyed by both (`routes/replay.py` `verdict_path`), so a
wrong belief makes the reference proof fail to build and grading stop: it fails closed.

Every other call is allowed, SIGABRT included: Lean's `abort()` (a panic under
LEAN_ABORT_ON_PANIC, its stack-overflow handler: lean4 src/runtime/stack_overflow.cpp) goes on
working, and stays the submission's (a verdict).

The program is compiled by libseccomp (`seccomp_export_bpf`), not written by hand here: this module
only names the rules, through libseccomp's C API by ctypes (the same calls the `pyseccomp` package
makes; that package was last released in January 2021 and adds nothing to them). Every syscall
name must be known to the installed libseccomp; where the library is missing or too old, or a call
fails, `signal_filter()` says why and grading falls back to what can be proved without the filter
(docs/trust-model.md). bubblewrap loads the program with `--add-seccomp-fd` just before it runs the
command (and in its own init process), so every process of the command inherits it and none can
remove it (seccomp(2))."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import resource
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from lean_mod_add_proof.grading.signals import OUTSIDE_ONLY

#: The signals the filter keeps a process from bringing on itself: signals.py `OUTSIDE_ONLY`, in
#: ascending order, the order the filter's program is compiled in, which a remembered self-test
#: pass depends on (`sandbox_fingerprint`).
FILTERED_SIGNALS: tuple[int, ...] = tuple(sorted(OUTSIDE_ONLY))
#: The kill family: syscall name -> the argument that holds the signal.
KILL_FAMILY: dict[str, int] = {
    "kill": 1,
    "tkill": 1,
    "tgkill": 2,
    "rt_sigqueueinfo": 1,
    "rt_tgsigqueueinfo": 2,
    "pidfd_send_signal": 1,
}

#: The kill family's calls that name their target by a pid: syscall name -> the argument that
#: holds it (a thread group id for tgkill and rt_tgsigqueueinfo). 0 or below aims at a group.
KILL_TARGET: dict[str, int] = {
    "kill": 0,
    "tkill": 0,
    "tgkill": 0,
    "rt_sigqueueinfo": 0,
    "rt_tgsigqueueinfo": 0,
}
#: Refused whatever their arguments (see the module docstring), with ENOSYS where a library may
#: take "not implemented" as a reason to fall back, else EPERM.
REFUSED_OUTRIGHT: dict[str, int] = {
    "setsid": errno.EPERM,
    "setpgid": errno.EPERM,
    "pidfd_getfd": errno.EPERM,
    "process_vm_readv": errno.EPERM,
    "process_vm_writev": errno.EPERM,
    "memfd_create": errno.ENOSYS,
    "shmget": errno.ENOSYS,
}

# libseccomp's C API (include/seccomp.h, stable since 2.0; KILL_PROCESS since 2.4 and Linux
# 4.14): actions, comparison operators.
_ACT_ALLOW = 0x7FFF0000
_ACT_KILL_PROCESS = 0x80000000
_CMP_NE = 1
_CMP_MASKED_EQ = 7
_LOW_32 = 0xFFFFFFFF
# Linux's uapi constants the rules compare against (asm-generic/fcntl.h, linux/prctl.h,
# asm-generic/ioctls.h, linux/sched.h CSIGNAL).
_F_SETSIG = 10
_PR_SET_PDEATHSIG = 1
_TIOCSTI = 0x5412
_CSIGNAL = 0xFF
_SIGN_BIT_32 = 0x80000000  # a pid_t below 0
_PIDFD_SIGNAL_PROCESS_GROUP = 1 << 2  # linux/pidfd.h, Linux 6.9: signal the target's group


def _act_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


class _ArgCmp(ctypes.Structure):
    """struct scmp_arg_cmp."""

    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


@dataclass(frozen=True)
class Rule:
    """Refuse `syscall` with `errno_code` (or, with `kill`, end the process) when every
    (argument, op, a, b) comparison holds."""

    syscall: str
    errno_code: int = errno.EPERM
    compare: tuple[tuple[int, int, int, int], ...] = ()
    kill: bool = False

    @property
    def action(self) -> int:
        return _ACT_KILL_PROCESS if self.kill else _act_errno(self.errno_code)


def _signal_is(arg: int, signum: int, mask: int = _LOW_32) -> tuple[int, int, int, int]:
    # Masked: the kernel reads an int (or the low byte of clone's flags); a value with other bits
    # set must not slip past an equality on all 64 bits.
    return (arg, _CMP_MASKED_EQ, mask, signum)


def rules(signals: Iterable[int] = FILTERED_SIGNALS) -> list[Rule]:
    """Every rule of the filter (pure)."""
    out: list[Rule] = []
    for signum in signals:
        for name, arg in KILL_FAMILY.items():
            out.append(Rule(name, errno.EPERM, (_signal_is(arg, signum),)))
        out.append(Rule("clone", errno.EPERM, (_signal_is(0, signum, _CSIGNAL),)))
        out.append(Rule("fcntl", errno.EPERM, (_signal_is(1, _F_SETSIG), _signal_is(2, signum))))
        out.append(Rule("prctl", errno.EPERM, (_signal_is(0, _PR_SET_PDEATHSIG), _signal_is(1, signum))))
        for name in ("exit", "exit_group"):  # the status is its low byte
            out.append(Rule(name, compare=(_signal_is(0, 128 + signum, 0xFF),), kill=True))
    out.append(Rule("clone3", errno.ENOSYS))
    for name in ("timer_create", "mq_notify", "ptrace"):
        out.append(Rule(name, errno.EPERM))
    out.append(Rule("ioctl", errno.EPERM, (_signal_is(1, _TIOCSTI),)))
    for name, arg in KILL_TARGET.items():  # a process group, whatever the signal
        out.append(Rule(name, errno.EPERM, ((arg, _CMP_MASKED_EQ, _LOW_32, 0),)))
        out.append(Rule(name, errno.EPERM, ((arg, _CMP_MASKED_EQ, _SIGN_BIT_32, _SIGN_BIT_32),)))
    group = _PIDFD_SIGNAL_PROCESS_GROUP
    out.append(Rule("pidfd_send_signal", errno.EPERM, ((3, _CMP_MASKED_EQ, group, group),)))
    for name, code in REFUSED_OUTRIGHT.items():
        out.append(Rule(name, code))
    for limit in (resource.RLIMIT_CPU, resource.RLIMIT_RTTIME):
        out.append(Rule("setrlimit", errno.EPERM, (_signal_is(0, limit),)))
        out.append(Rule("prlimit64", errno.EPERM, (_signal_is(1, limit), (2, _CMP_NE, 0, 0))))
    return out


@dataclass(frozen=True)
class SignalFilter:
    """The compiled program (cBPF, as bwrap's `--add-seccomp-fd` reads it), or why there is none."""

    program: bytes | None
    why_not: str = ""
    libseccomp: str = ""
    """The library's version, when it was loaded."""


def _load() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    lib = ctypes.CDLL(name, use_errno=True)
    lib.seccomp_init.argtypes = (ctypes.c_uint32,)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_release.argtypes = (ctypes.c_void_p,)
    lib.seccomp_release.restype = None
    lib.seccomp_syscall_resolve_name.argtypes = (ctypes.c_char_p,)
    lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
    lib.seccomp_rule_add_array.argtypes = (
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    )
    lib.seccomp_rule_add_array.restype = ctypes.c_int
    lib.seccomp_export_bpf.argtypes = (ctypes.c_void_p, ctypes.c_int)
    lib.seccomp_export_bpf.restype = ctypes.c_int
    return lib


def _version(lib: ctypes.CDLL) -> str:
    try:
        fn = lib.seccomp_version
    except AttributeError:
        return "unknown version"
    fn.restype = ctypes.POINTER(ctypes.c_uint * 3)
    major, minor, micro = fn().contents
    return f"{major}.{minor}.{micro}"


def compile_filter(rule_list: Iterable[Rule]) -> SignalFilter:
    """Compile `rule_list` with libseccomp (default: allow). Never raises: a missing library, a
    syscall it does not know or a failing call is a SignalFilter without a program, saying why."""
    try:
        lib = _load()
    except OSError as exc:
        return SignalFilter(None, f"libseccomp cannot be loaded ({exc})")
    version = _version(lib)
    ctx = lib.seccomp_init(_ACT_ALLOW)
    if not ctx:
        return SignalFilter(None, "seccomp_init failed", version)
    try:
        for rule in rule_list:
            number = lib.seccomp_syscall_resolve_name(rule.syscall.encode())
            if number < 0:  # __NR_SCMP_ERROR: a libseccomp too old to know it
                return SignalFilter(None, f"libseccomp {version} does not know {rule.syscall}", version)
            args = (_ArgCmp * max(1, len(rule.compare)))()
            for i, (arg, op, a, b) in enumerate(rule.compare):
                args[i].arg, args[i].op, args[i].datum_a, args[i].datum_b = arg, op, a, b
            rc = lib.seccomp_rule_add_array(ctx, rule.action, number, len(rule.compare), args)
            if rc < 0:
                why = os.strerror(-rc)
                return SignalFilter(None, f"libseccomp refused the rule for {rule.syscall}: {why}", version)
        read_fd, write_fd = os.pipe()
        try:
            # A pipe holds 64 KiB; the program is a few KiB, read back at once below.
            rc = lib.seccomp_export_bpf(ctx, write_fd)
            os.close(write_fd)
            write_fd = -1
            program = b""
            while chunk := os.read(read_fd, 1 << 16):
                program += chunk
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)
        if rc < 0 or not program or len(program) % 8:
            return SignalFilter(
                None, f"seccomp_export_bpf failed ({os.strerror(-rc) if rc < 0 else 'empty'})"
            )
        return SignalFilter(program, "", version)
    finally:
        lib.seccomp_release(ctx)


_lock = threading.Lock()
_compiled: SignalFilter | None = None


def signal_filter() -> SignalFilter:
    """This process's filter, compiled once (the library and the rules do not change)."""
    global _compiled
    with _lock:
        if _compiled is None:
            _compiled = compile_filter(rules())
        return _compiled


def program_fd(program: bytes) -> int:
    """A fresh descriptor to hand bwrap (`--add-seccomp-fd FD`), positioned at the program's start:
    bwrap reads it to its end and closes it. The caller closes its own copy after the spawn."""
    fd = os.memfd_create("lean-grader-seccomp", os.MFD_CLOEXEC)
    try:
        view = memoryview(program)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
