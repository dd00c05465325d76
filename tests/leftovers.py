"""Which live processes this pytest run started (for conftest.py's check after every test that a
test leaves no process behind).

Only this run's processes are looked at, never the machine's: other test runs share it. A process
is this run's when it descends from the pytest process, or was started during this run and either
carries this run's marker (`RUN_MARKER_VAR`, put in pytest's environment at start-up, so every
subprocess inherits it) or was started by an in-process grade: the grader's own marker
(`process.TREE_ENV_VAR`) names pytest's pid as its owner, or the work root of the test's own
`tmp_path` as its scope. That finds what left the tree (a double fork plus `setsid`, reparented to
init) as long as it kept its environment; what drops it (`env -i`) and leaves is not found.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from lean_mod_add_proof.grading.process import TREE_ENV_VAR, scope_tag

#: Set in pytest's own environment at start-up (conftest.py): every subprocess inherits it.
RUN_MARKER_VAR = "LEAN_MOD_ADD_PROOF_TEST_RUN"
#: The grader's marker: `<ns>-<owner pid>-<owner start>-[<scope tag>-]<random>` (process.py).
_GRADER_MARKER = re.compile(
    rb"(?:^|\0)" + re.escape(TREE_ENV_VAR.encode()) + rb"=\d+-(\d+)-\d+-(?:([0-9a-f]{8})-)?[0-9a-f]+(?:\0|$)"
)


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    ppid: int
    state: str
    start_ticks: int
    """Start time in clock ticks since boot (/proc/PID/stat field 22)."""


def read_stat(pid: int) -> ProcessInfo | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    return ProcessInfo(pid, int(fields[1]), fields[0], int(fields[19]))


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:  # another user's process, or gone
        return b""


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _live() -> list[ProcessInfo]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (info := read_stat(int(entry))) is not None and info.state not in "ZX":
            found.append(info)
    return found


def run_processes(run_marker: str, since_ticks: int, work_roots: Iterable[Path] = ()) -> dict[int, str]:
    """This run's live processes other than pytest itself (pid -> command line); zombies, which
    have ended and wait only to be reaped, are not counted."""
    me = os.getpid()
    live = _live()
    children: dict[int, list[int]] = {}
    for info in live:
        children.setdefault(info.ppid, []).append(info.pid)
    ours: set[int] = set()
    stack = list(children.get(me, []))
    while stack:
        pid = stack.pop()
        if pid not in ours:
            ours.add(pid)
            stack.extend(children.get(pid, []))
    marker = f"{RUN_MARKER_VAR}={run_marker}".encode()
    scopes = {scope_tag(str(root)).encode() for root in work_roots}
    for info in live:
        if info.pid in ours or info.pid == me or info.start_ticks < since_ticks:
            continue
        environ = b"\0" + _environ(info.pid) + b"\0"
        if b"\0" + marker + b"\0" in environ:
            ours.add(info.pid)
        elif (m := _GRADER_MARKER.search(environ)) is not None and (
            int(m.group(1)) == me or (m.group(2) or b"") in scopes
        ):
            ours.add(info.pid)
    return {pid: _cmdline(pid) for pid in sorted(ours)}


def wait_for_none(
    run_marker: str, since_ticks: int, work_roots: Iterable[Path] = (), grace_s: float = 10.0
) -> dict[int, str]:
    """This run's processes still alive after up to `grace_s` seconds (a killed process takes a
    moment to leave /proc; the wait costs nothing when there is none)."""
    roots = list(work_roots)
    end = time.monotonic() + grace_s
    while (left := run_processes(run_marker, since_ticks, roots)) and time.monotonic() < end:
        time.sleep(0.1)
    return left


def kill(pids: Iterable[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
