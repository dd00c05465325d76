"""Host faults: what says nothing about the command, raised (`HostFault`) instead of an outcome
so that no caller can read it as the command's own failure (see the package docstring's "Host
faults"). The named reasons (`host_fault_reason`), the spawn's errnos, and bwrap's status
document, which tells a command that ran from a sandbox that never started it."""

from __future__ import annotations

import errno
import json
import os

from lean_mod_add_proof.grading.oserrors import HOST_ERRNOS, host_errno

_CHUNK = 1 << 16


class HostFault(Exception):
    """Something of the host or the grader, not of the command, stopped it: "could not judge".
    `reason` names it (one line); `sandbox` says the sandbox itself failed (probe it again);
    `signal`, the signal the sandbox (bwrap) itself died of, when that was the failure: the caller
    weighs whose doing it was (routes/core.py `bwrap_killed_by`), never by parsing the reason."""

    def __init__(self, reason: str, *, sandbox: bool = False, signal: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.sandbox = sandbox
        self.signal = signal


#: Only when starting a program (anywhere else a missing file may be a build's doing).
_SPAWN_ERRNOS: dict[int, str] = {
    errno.ENOENT: "a program the grader runs is missing",
    errno.EACCES: "a program the grader runs is not executable",
    errno.ENOEXEC: "a program the grader runs is not executable",
}


def host_fault_reason(exc: BaseException) -> str | None:
    """The named host fault behind `exc` (itself, its cause or its context), or None: a full disk
    (ENOSPC, EDQUOT), out of memory (MemoryError, ENOMEM), a process or descriptor limit, a
    missing program (ENOENT), a `HostFault`. Pure."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, HostFault):
            return cur.reason
        if isinstance(cur, MemoryError):
            return "out of memory (MemoryError in the grader)"
        if isinstance(cur, OSError) and (why := host_errno(cur)) is not None:
            return why
        if isinstance(cur, RuntimeError) and "can't start new thread" in str(cur):
            return "the host refused a new thread (can't start new thread)"
        cur = cur.__cause__ or cur.__context__
    return None


def sandbox_exit_code(status: bytes) -> int | None:
    """The command's exit code from what bwrap wrote to `--json-status-fd` (pure), or None when
    there is no `exit-code` document: the command never ran to its end inside the sandbox.

    bubblewrap 0.8.0, measured (`bwrap --json-status-fd 3 ... 3>st`):
    - the command ran and exited 7: `{ "child-pid": N, ... }` then `{ "exit-code": 7 }`, exit 7;
    - the command killed itself with SIGKILL: child-pid, then `{ "exit-code": 137 }`, exit 137;
    - a bind source is missing (set-up fails): child-pid only, exit 1;
    - a namespace limit reached (`max_user_namespaces`, `max_pid_namespaces`, ... = 0): nothing
      at all, exit 1, "bwrap: Creating new namespace failed: ... (ENOSPC)";
    - bwrap itself SIGKILLed from outside while the command ran: child-pid only.
    `child-pid` is written before anything is mounted, so it does not mean the command started."""
    decoder = json.JSONDecoder()
    text = status.decode("utf-8", "replace")
    at = 0
    found: int | None = None
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return found
        try:
            doc, at = decoder.raw_decode(text, at)
        except ValueError:
            return found  # a torn last document: what came before still counts
        if isinstance(doc, dict) and isinstance(doc.get("exit-code"), int):
            found = doc["exit-code"]


def _read_status(fd: int) -> bytes:
    """What is in the status pipe now (never blocks: a process that kept the write end open
    cannot hold the grade; bwrap wrote its last document before it exited)."""
    os.set_blocking(fd, False)
    parts: list[bytes] = []
    size = 0
    while size < _CHUNK:
        try:
            chunk = os.read(fd, _CHUNK)
        except (BlockingIOError, InterruptedError):
            break
        if not chunk:
            break
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " ".join(lines[-1].split())[:300] if lines else "(no output)"


def _raise_if_host_fault(exc: BaseException) -> None:
    """A watcher that could not be made or started for the host's reason (out of memory, no
    thread) is a HostFault; anything else is re-raised by the caller as it is."""
    if isinstance(exc, Exception) and (why := host_fault_reason(exc)) is not None:
        raise HostFault(f"the process watcher could not start: {why}") from exc


def _spawn_fault(exc: OSError, program: str) -> str:
    what = _SPAWN_ERRNOS.get(exc.errno or 0) or HOST_ERRNOS.get(exc.errno or 0) or "the host refused it"
    return f"could not start {exc.filename or program}: {what} ({exc.strerror or exc})"
