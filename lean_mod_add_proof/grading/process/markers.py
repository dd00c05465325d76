"""A run's marker: the random token each command carries in its environment (`TREE_ENV_VAR`),
which names its tree to the shared look (an orphan that left the tree before any look is still
found by it) and, through the owner record at its start, the grader that ran it, so a later
grader can end what a grader killed outright left behind (`kill_dead_graders_processes`)."""

from __future__ import annotations

import hashlib
import os
import re
import secrets

from lean_mod_add_proof.grading.process.proc import _kill_exact, _read_proc, _stat
from lean_mod_add_proof.grading.workdirs import owner_is_dead, owner_tag

#: The environment variable carrying a run's random marker (see the package docstring).
TREE_ENV_VAR = "LEAN_GRADER_TREE"

#: A marker in an environment (read with a leading NUL): its token, the key of its tree.
_MARKER = re.compile(rb"\0" + TREE_ENV_VAR.encode() + rb"=([^\0]*)")
#: A whole marker as `_run_token` writes it: the owner (pid namespace, pid, start time), the
#: scope (none in older markers), the random part.
_MARKER_RE = re.compile(
    rb"(?:^|\0)"
    + re.escape(TREE_ENV_VAR).encode()
    + rb"=(\d+)-(\d+)-(\d+)-(?:([0-9a-f]{8})-)?[0-9a-f]+(?:\0|$)"
)


def scope_tag(scope: str) -> str:
    """The part of a run's marker that names its grader's scope (the work root), so a grader
    sweeping what dead graders left behind ends only the processes of its own scope (pure)."""
    return hashlib.sha256(scope.encode("utf-8", "surrogateescape")).hexdigest()[:8]


def _run_token(scope: str) -> str:
    """A fresh marker token for one command of a grader whose work root is `scope`. The grader's
    owner record first (pid namespace, pid, start time), so a later grader can tell the processes
    of one that was killed outright (see `kill_dead_graders_processes`)."""
    return f"{owner_tag()}-{scope_tag(scope)}-{secrets.token_hex(8)}"


def kill_dead_graders_processes(scope: str | None = None) -> int:
    """SIGKILL every process whose marker names a grader that is dead (pid gone or reused): what
    survives a grader killed outright without the sandbox (with it, bwrap's `--die-with-parent`
    and the pid namespace already end everything). With `scope` (the work root, as given to
    `run_command`), only processes started with that scope: graders of other work roots on the
    same machine sweep their own. Run once when a grader starts; returns how many it killed. A
    process that dropped its environment (`env -i`) is not found."""
    killed = 0
    me = os.getpid()
    want = None if scope is None else scope_tag(scope).encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        pid = int(entry.name)
        data = _read_proc(pid, "environ", 1 << 20)
        if not data or (m := _MARKER_RE.search(data)) is None:
            continue
        if want is not None and m.group(4) != want:
            continue
        ns, owner, started = (int(g) for g in m.groups()[:3])
        st = _stat(pid)
        if st is not None and owner_is_dead(ns, owner, started):
            _kill_exact(pid, st[1])
            killed += 1
    return killed
