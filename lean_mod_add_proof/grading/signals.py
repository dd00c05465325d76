"""Whose doing a signal is (pure): a trusted program's own fault on its input, a cap the grader set,
or something outside the program.

A verdict may rest only on what the input caused (the project's rule: what the submission causes
is a verdict, what the host causes is could not judge). When a trusted program (a checker, the
judge) dies of a signal, this says which of three origins the signal number allows:

- `"fault"`: the program raised it on itself while running its own code on its input. These are
  the synchronous signals (signal(7), "Signal mask and pending signals": "certain signals, such as
  SIGSEGV and SIGFPE, generated as a consequence of executing a specific machine-language
  instruction are thread directed"; POSIX.1-2017 <signal.h>, whose table lists SIGBUS, SIGFPE,
  SIGILL, SIGSEGV, SIGSYS and SIGTRAP as faults of the process's own execution), and SIGABRT,
  which a program sends itself by `abort(3)` ("raises the SIGABRT signal for the calling
  process"): a failed assertion, a panic under LEAN_ABORT_ON_PANIC, an allocation failure, a
  stack overflow caught by a guard page's handler. SIGSYS is "bad system call" (a seccomp filter
  or an unknown syscall number, seccomp(2)), made by the program's own call.
- `"cap"`: the kernel's answer to a resource limit the grader set on the program (setrlimit(2):
  RLIMIT_CPU "When the process reaches the soft limit, it is sent a SIGXCPU signal"; RLIMIT_FSIZE
  "If a process attempts to extend a file beyond this limit, it is sent SIGXFSZ"). They come from
  the program's own consumption, within the limits the grader chose: the input's doing.
- `"outside"`: every other signal. SIGKILL, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1/2, SIGALRM,
  SIGPIPE (a write to a pipe whose reader went away: the grader's end of the output), SIGSTOP/
  SIGCONT, SIGCHLD and the real-time signals are sent by another process, a terminal or the
  kernel for reasons outside the program's computation (the OOM killer sends SIGKILL). A trusted
  program does not send them to itself as a function of its input.

What the caller must rule out first: the grader's own kills. The grader ends a command with
SIGKILL at its deadline or at a per-grade cap and says so (`CommandOutcome.timed_out`,
`limit_exceeded`; the RLIMIT_CPU hard limit's SIGKILL is reported as the CPU cap too,
`process.cpu_cap_reason`). Only a signal *not* explained by those is passed here.

Scope: "a trusted program". Code the submission controls (its build, an `initialize`) can send
itself any signal with `kill(2)`, so for such a process every signal may be its own doing; the
`"outside"` origin then only says that something other than a fault or a cap could have sent it,
and the caller must look elsewhere (the OOM-kill counter, `process.oom_kill_count`) to tell.
"""

from __future__ import annotations

import signal
from typing import Literal

SignalOrigin = Literal["fault", "cap", "outside"]

#: Raised by a program on itself while it runs its own code (signal(7); abort(3); POSIX <signal.h>).
FAULT_SIGNALS: frozenset[int] = frozenset(
    {
        signal.SIGABRT,
        signal.SIGSEGV,
        signal.SIGBUS,
        signal.SIGFPE,
        signal.SIGILL,
        signal.SIGTRAP,
        signal.SIGSYS,
    }
)
#: Sent by the kernel when the program passes a resource limit the grader set (setrlimit(2)).
CAP_SIGNALS: frozenset[int] = frozenset({signal.SIGXCPU, signal.SIGXFSZ})


def signal_origin(signo: int) -> SignalOrigin:
    """Where a signal that ended a trusted program came from, by its number alone (see the module
    docstring): `fault`, `cap`, or `outside` (every other number, unknown ones included)."""
    if signo in FAULT_SIGNALS:
        return "fault"
    if signo in CAP_SIGNALS:
        return "cap"
    return "outside"


def signal_name(signo: int) -> str:
    """`SIGABRT` for 6, `signal 99` for a number this platform does not name."""
    try:
        return signal.Signals(signo).name
    except ValueError:
        return f"signal {signo}"
