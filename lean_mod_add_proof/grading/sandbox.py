"""The bubblewrap sandbox every Lean command runs in: no network, no capabilities, an empty
environment, a session of its own, the system and the toolchain read-only, bwrap's own root,
/dev and /proc read-only, the grade's package directory and the step's /tmp (also its /dev/shm)
as the only writable places, and the trusted sources read-only even inside it."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lean_mod_add_proof.grading.result import SandboxMode
from lean_mod_add_proof.grading.signal_filter import program_fd

#: Host paths the sandbox sees read-only, when they exist. On merged-/usr systems /bin, /lib, ...
#: are symlinks into /usr and are recreated as the same symlinks.
SYSTEM_PATHS: tuple[str, ...] = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
#: Of /etc only the dynamic linker's cache: enough for the toolchain's dynamically linked binaries
#: (without it ld.so still searches the default directories). No passwd, resolv.conf, ssl, ...
ETC_FILES: tuple[str, ...] = ("/etc/ld.so.cache",)
#: The mounts bwrap makes writable that are remounted read-only, last (see `bwrap_argv`).
READ_ONLY_MOUNTS: tuple[str, ...] = ("/", "/dev", "/proc")


@dataclass(frozen=True)
class HostEntry:
    path: str
    symlink_target: str | None
    """Set when the host path is a symlink (recreated as one); None for a real directory/file."""


def host_layout(paths: Sequence[str] = SYSTEM_PATHS + ETC_FILES) -> tuple[HostEntry, ...]:
    """What of `paths` exists on this host, and which are symlinks. (The only I/O for argv.)"""
    entries = []
    for path in paths:
        if os.path.islink(path):
            entries.append(HostEntry(path, os.readlink(path)))
        elif os.path.exists(path):
            entries.append(HostEntry(path, None))
    return tuple(entries)


def bwrap_argv(
    bwrap: str,
    *,
    layout: Sequence[HostEntry],
    toolchain_dir: Path | None,
    package_dir: Path,
    readonly_files: Sequence[Path],
    env: Mapping[str, str],
    tmp_dir: Path | None = None,
    seccomp_fd: int | None = None,
) -> list[str]:
    """The bwrap prefix for one command (pure).

    `seccomp_fd`: a descriptor holding a compiled seccomp program (`signal_filter.py`), which bwrap
    reads and loads just before it runs the command, and in its own init (`--add-seccomp-fd`).

    /tmp is `tmp_dir` from the host, bound writable (the step's own tmp directory in the grade
    directory, so what the command puts in /tmp is on disk and counts towards the disk cap), or a
    fresh tmpfs when `tmp_dir` is None (only the probe: a tmpfs is unbounded RAM).

    Order matters: later mounts cover earlier ones, so /tmp comes first, then the toolchain and
    the package directory (either may live under the host's /tmp) are bound over it, then the
    trusted files read-only over that. A mount point under /tmp that does not exist there is
    created by bwrap, so binding the package at e.g. /tmp/w/grade/package leaves the empty
    directories w/grade/package in `tmp_dir` on the host. A command may swap one of them for a
    symlink; bwrap would then refuse to start a later command given the same `tmp_dir` (absolute
    target) or mount the same package at the link's target (relative). So every untrusted step
    gets its own `tmp_dir`, made just before it starts (pipeline: `package.BUILD_TMP`,
    `EXPORT_TMP`, `JUDGE_TMP`; issue 26): no step's set-up stands on what an earlier one wrote.

    `--new-session` (as Lake's own sandbox: lean4 src/lake/Lake/CLI/Check.lean
    `buildSandboxArgs`, "--unshare-all", "--die-with-parent", "--new-session"): bwrap's child
    calls setsid() before it forks the command (bubblewrap.c 0.8.0, just before "forking for
    child"), so the command's session and process group hold no process outside the sandbox.
    Without it bwrap itself was in the command's process group, and `kill(0, SIGALRM)` from the
    build killed bwrap: "could not judge" at the submission's choice (the review of issue 39,
    finding 1). It also takes the grader's controlling terminal, if any, away from the sandbox.
    The grader still ends everything inside: it kills bwrap's group and every process it tracks
    (process/watcher.py), and bwrap's init dies with bwrap (`--die-with-parent`), taking the PID
    namespace with it. The signal filter refuses setsid and setpgid to the command
    (signal_filter.py): a second group in this session could be orphaned and hung up by the kernel.

    `--remount-ro` on `/`, `/dev` and `/proc`, last, after every mount under them (it changes only
    the mount named, so /tmp, /dev/shm, the package and the device nodes stay as bound):
    - `/` and `/dev` are bwrap's tmpfs, RAM that no cap counts (finding 3); what a command may
      write goes to the grade's disk, under the disk cap;
    - `/proc` writable let any sandbox process write another's memory through `/proc/N/mem`
      (finding 2: code injected into the command) and raise `oom_score_adj` so the OOM killer
      picks the command (finding 3). Read-only, such writes fail with EROFS; reads still work."""
    argv = [
        bwrap,
        "--unshare-all",  # user, ipc, pid, net, uts, cgroup: no network at all
        "--die-with-parent",
        "--new-session",  # see the docstring
        "--cap-drop",
        "ALL",
        "--clearenv",
    ]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    for entry in layout:
        if entry.symlink_target is not None:
            argv += ["--symlink", entry.symlink_target, entry.path]
        else:
            argv += ["--ro-bind", entry.path, entry.path]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    if tmp_dir is not None:
        # /dev/shm too: `--dev` makes it part of a RAM-backed /dev that no cap sees; on the
        # grade's own disk it counts towards the disk cap like /tmp.
        argv += ["--bind", str(tmp_dir), "/tmp", "--bind", str(tmp_dir), "/dev/shm"]
    else:
        argv += ["--tmpfs", "/tmp"]
    if toolchain_dir is not None:
        argv += ["--ro-bind", str(toolchain_dir), str(toolchain_dir)]
    argv += ["--bind", str(package_dir), str(package_dir)]
    for path in readonly_files:
        argv += ["--ro-bind", str(path), str(path)]
    for mount in READ_ONLY_MOUNTS:
        argv += ["--remount-ro", mount]
    if seccomp_fd is not None:
        argv += ["--add-seccomp-fd", str(seccomp_fd)]
    argv += ["--chdir", str(package_dir), "--"]
    return argv


def options_fingerprint() -> str:
    """The options bwrap is given, with stand-in paths (pure): part of the key of a remembered
    self-test pass, so that a change of the sandbox runs the canaries again under it (a belief
    about what Lean needs inside it, wrong, then fails closed)."""
    argv = bwrap_argv(
        "bwrap",
        layout=(),
        toolchain_dir=Path("/toolchain"),
        package_dir=Path("/package"),
        readonly_files=(Path("/package/trusted"),),
        env={},
        tmp_dir=Path("/step-tmp"),
        seccomp_fd=3,
    )
    return hashlib.sha256("\0".join(argv).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class SandboxProbe:
    available: bool
    reason: str
    bwrap: str | None
    worked_before: bool = False
    """A probe in this process found bwrap working earlier: `auto` must not fall back now."""


#: How long a failed probe is believed before bwrap is tried again (a namespace limit reached
#: under load passes; a missing bwrap may be installed). A working probe is kept until a sandbox
#: fails to start (`forget_probe`).
FAILED_PROBE_TTL_S = 30.0

_probe_lock = threading.Lock()
_probe: SandboxProbe | None = None
_probed_at = 0.0
_ever_worked = False


def find_bwrap() -> str | None:
    return shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin")


def forget_probe() -> None:
    """A sandbox failed to start: the next `probe_sandbox` runs bwrap again."""
    global _probe
    with _probe_lock:
        _probe = None


def _probe_argv(bwrap: str, seccomp_fd: int | None = None) -> list[str]:
    """A grade's bwrap options around the temp directory, for a probe's own command."""
    scratch = Path(os.environ.get("TMPDIR") or "/tmp")
    env = {"PATH": "/usr/bin:/bin"}
    return bwrap_argv(
        bwrap,
        layout=host_layout(),
        toolchain_dir=None,
        package_dir=scratch,
        readonly_files=(),
        env=env,
        seccomp_fd=seccomp_fd,
    )


def probe_sandbox(*, refresh: bool = False) -> SandboxProbe:
    """Run `bwrap ... true` with the same options a grade uses. Cached: a working result until
    `forget_probe` (a sandbox that failed to start), a failed one for `FAILED_PROBE_TTL_S`. bwrap
    is often installed but unusable (no unprivileged user namespaces, or inside a container)."""
    global _probe, _probed_at, _ever_worked
    with _probe_lock:
        if _probe is not None and not refresh:
            if _probe.available or time.monotonic() - _probed_at < FAILED_PROBE_TTL_S:
                return _probe
        _probed_at = time.monotonic()
        bwrap = find_bwrap()
        if bwrap is None:
            _probe = SandboxProbe(False, "bwrap (bubblewrap) is not installed", None, _ever_worked)
            return _probe
        argv = _probe_argv(bwrap)
        try:
            done = subprocess.run(
                [*argv, "true"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20
            )
            ok = done.returncode == 0
            detail = (done.stderr or done.stdout).strip().splitlines()
            why = detail[-1] if detail else f"exit {done.returncode}"
        except (OSError, subprocess.SubprocessError) as exc:
            ok, why = False, f"{type(exc).__name__}: {exc}"
        _probe = SandboxProbe(
            ok, "bwrap works" if ok else f"bwrap does not work here: {why}", bwrap, _ever_worked
        )
        _ever_worked = _ever_worked or ok
        return _probe


def decide_sandbox(mode: SandboxMode, probe: SandboxProbe | None) -> tuple[bool, str | None]:
    """(use it, error). `on` without a working bwrap is an error for the grade; `auto` falls back,
    unless bwrap worked earlier in this process (then it broke on the way: a host fault, not a
    reason to run untrusted code unsandboxed); `off` never probes (pass probe=None)."""
    if mode == "off":
        return False, None
    assert probe is not None
    if probe.available:
        return True, None
    if mode == "on":
        return False, f"sandbox required (sandbox=on) but {probe.reason}"
    if probe.worked_before:
        return False, f"the sandbox worked earlier in this process and now fails: {probe.reason}"
    return False, None


# ---- the signal filter, proved in force on this host ----------------------------------------------

#: A shell under bwrap and the filter tries to send itself SIGTERM, then SIGKILL (dash and bash
#: `kill` call kill(2)); under the filter both fail with EPERM and it goes on to say so. A filter
#: the kernel or bwrap does not apply lets the first kill end it (bwrap reports 128 + 15).
FILTER_PROOF_SCRIPT = "kill -TERM $$ 2>/dev/null; kill -KILL $$ 2>/dev/null; echo filter-in-force"
FILTER_PROOF_WORD = "filter-in-force"


@dataclass(frozen=True)
class FilterProof:
    """Whether the signal filter was seen refusing a self-sent signal here (`why` says how)."""

    in_force: bool
    why: str


_proof_lock = threading.Lock()
#: (bwrap, program) -> (the proof, when it was made); a failed one is believed for
#: FAILED_PROBE_TTL_S, as a failed sandbox probe is.
_proofs: dict[tuple[str, bytes], tuple[FilterProof, float]] = {}


def prove_signal_filter(bwrap: str, program: bytes) -> FilterProof:
    """Run `FILTER_PROOF_SCRIPT` under bwrap with the grade's options and `program`: in force
    only if the shell outlived both kills and said so. Making the program (libseccomp) proves
    nothing about the kernel applying it; a filter believed but not applied would let a
    submission kill itself and read as the host's doing (could not judge, at its choice). Proved
    once per process for a working result; a failure is tried again after FAILED_PROBE_TTL_S."""
    key = (bwrap, program)
    with _proof_lock:
        known = _proofs.get(key)
        if known is not None and (known[0].in_force or time.monotonic() - known[1] < FAILED_PROBE_TTL_S):
            return known[0]
    proof = _run_filter_proof(bwrap, program)
    with _proof_lock:
        _proofs[key] = (proof, time.monotonic())
    return proof


def _run_filter_proof(bwrap: str, program: bytes) -> FilterProof:
    fd = program_fd(program)
    try:
        argv = _probe_argv(bwrap, seccomp_fd=fd)
        done = subprocess.run(
            [*argv, "sh", "-c", FILTER_PROOF_SCRIPT],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=20,
            pass_fds=(fd,),
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return FilterProof(False, f"the proof could not run: {type(exc).__name__}: {exc}")
    finally:
        os.close(fd)
    if done.returncode == 0 and FILTER_PROOF_WORD in done.stdout.split():
        return FilterProof(True, "a shell under bwrap and the filter could not kill itself (TERM, KILL)")
    said = (done.stderr or done.stdout).strip().splitlines()
    return FilterProof(
        False,
        f"a shell under bwrap and the filter did not outlive its own kill (exit {done.returncode}"
        + (f": {said[-1]}" if said else "")
        + ")",
    )
