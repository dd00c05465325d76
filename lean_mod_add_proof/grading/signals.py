"""Whose doing a signal is (pure): the one rule the checkers, the judge and the build all read.

A verdict may rest only on what the input caused (the project's rule: what the submission causes
is a verdict, what the host causes is could not judge). When a process dies of a signal the grader
did not send, this module says what the signal's number allows.

**A trusted program** (the judge, a checker, a trusted prebuild), which nothing makes kill itself
on purpose, `signal_origin`:
- `"fault"`: it raised the signal on itself while running its own code on its input. These are
  the synchronous signals (signal(7), "Signal mask and pending signals": "certain signals, such as
  SIGSEGV and SIGFPE, generated as a consequence of executing a specific machine-language
  instruction are thread directed"; POSIX.1-2017 <signal.h>, whose table lists SIGBUS, SIGFPE,
  SIGILL, SIGSEGV and SIGTRAP as faults of the process's own execution), and SIGABRT, which a
  program sends itself by `abort(3)` ("raises the SIGABRT signal for the calling process"): a
  failed assertion, a panic under LEAN_ABORT_ON_PANIC, an allocation failure, a stack overflow
  caught by a guard page's handler, an uncaught C++ exception. A deep term overflows a stack, a
  crafted one trips an assertion: the input's doing, a verdict.
- `"cap"`: SIGXCPU, the kernel's answer to the RLIMIT_CPU soft limit the grader set (setrlimit(2):
  "When the process reaches the soft limit, it is sent a SIGXCPU signal"): the program's own
  consumption within the grader's limit. The process layer reports it as the CPU cap
  (`process.cpu_cap_reason`) before anyone asks here.
- `"outside"`: every other number. SIGKILL (the OOM killer's too), SIGTERM, SIGINT, SIGHUP,
  SIGQUIT, SIGUSR1/2, SIGALRM, SIGPIPE, SIGSTOP/SIGCONT, SIGCHLD and the real-time signals come
  from another process, a terminal or the kernel acting for someone. SIGSYS too: a trusted program
  runs without the grader's seccomp filter (routes/core.py `CommandEnv.run` loads it only for the
  submission's own commands), and without a filter a bad system call fails with ENOSYS rather
  than a signal, so a SIGSYS is a policy of the host's (a container's seccomp profile). SIGXFSZ
  too: RLIMIT_FSIZE does not apply to pipes (process/limits.py `prlimit_argv`), and a trusted
  program's output is a pipe; it writes no file its input sizes.
`trusted_signal_is_the_hosts` is that last case. The judge (routes/replay.py), the checkers
(kernels.py `classify`) and the build's trusted prebuild read it.

**The submission's own code** (the build, the export), which can send itself any signal with
`kill(2)`: a signal is provably not its doing only if nothing inside the sandbox can send it. The
sandbox's filter (signal_filter.py) refuses exactly `OUTSIDE_ONLY` to every target, and a process
brings none of them on itself by a fault, a limit, its own timers or a closed pipe
(`sent_only_from_outside`; routes/steps.py `untrusted_failure`, routes/core.py
`CommandEnv.bwrap_death_is_the_hosts`). Every other signal may be its own doing.

What every caller rules out first: the grader's own kills. The grader ends a command with SIGKILL
at its deadline or at a per-grade cap and says so (`CommandOutcome.timed_out`, `limit_exceeded`;
RLIMIT_CPU's SIGXCPU is reported as the CPU cap, `process.cpu_cap_reason`; no hard limit is set,
so RLIMIT_CPU never sends SIGKILL).
Only a signal *not* explained by those is passed here.
"""

from __future__ import annotations

import signal
from typing import Literal

SignalOrigin = Literal["fault", "cap", "outside"]

#: Raised by a program on itself while it runs its own code (signal(7); abort(3); POSIX <signal.h>).
FAULT_SIGNALS: frozenset[int] = frozenset(
    {signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGTRAP}
)
#: Sent by the kernel when the program passes a limit the grader set and that applies to it
#: (setrlimit(2)); SIGXFSZ is not one for a trusted program (the module docstring).
CAP_SIGNALS: frozenset[int] = frozenset({signal.SIGXCPU})
#: Signals that only another process, or the host's kernel acting for someone (the OOM killer, a
#: cgroup kill), delivers: a process brings none of them on itself by a fault or a limit. Once the
#: sandbox's filter forbids sending them (`signal_filter.py` FILTERED_SIGNALS, made from this),
#: nothing inside it can send them either. Every other terminating signal a process
#: can bring on itself: a fault, `abort()`, a limit (SIGXCPU, SIGXFSZ), a seccomp kill (SIGSYS), a
#: closed pipe (SIGPIPE), its own timers (SIGALRM, SIGVTALRM, SIGPROF, real-time signals) or
#: asynchronous I/O (SIGIO).
OUTSIDE_ONLY: frozenset[int] = frozenset(
    {
        signal.SIGHUP,
        signal.SIGINT,
        signal.SIGQUIT,
        signal.SIGKILL,
        signal.SIGUSR1,
        signal.SIGUSR2,
        signal.SIGTERM,
        signal.SIGSTKFLT,
        signal.SIGPWR,
    }
)


def signal_origin(signo: int) -> SignalOrigin:
    """Where a signal that ended a trusted program came from, by its number alone (see the module
    docstring): `fault`, `cap`, or `outside` (every other number, unknown ones included)."""
    if signo in FAULT_SIGNALS:
        return "fault"
    if signo in CAP_SIGNALS:
        return "cap"
    return "outside"


def trusted_signal_is_the_hosts(signo: int) -> bool:
    """A signal the grader did not send, which ended a trusted program, is the host's (pure): it
    is neither a fault its input can bring on nor the grader's CPU cap."""
    return signal_origin(signo) == "outside"


def sent_only_from_outside(signo: int) -> bool:
    """Only another process (or the host) sends `signo`: nothing a process does brings it on
    itself, and under the sandbox's filter nothing inside can send it (pure)."""
    return signo in OUTSIDE_ONLY


def signal_name(signo: int) -> str:
    """`SIGABRT` for 6, `signal 99` for a number this platform does not name."""
    try:
        return signal.Signals(signo).name
    except ValueError:
        return f"signal {signo}"
