"""What `lake comparator` needs on the host, and which name this toolchain's Lake gives it (the
probe: a pass cached per toolchain and bwrap, a failure asked again after PROBE_RETRY_S).

What is checked, each with its source (leanprover/lean4 src/lake/Lake/CLI/Check.lean, stored
0243d9f4, unless named; first-contact.md Q3):
1. Linux, the toolchain's `lake`, `leanexport` and `leanchecker` (`mkContext`;
   `lean.binDir / "leanexport"`, `"leanchecker"`).
2. bwrap (`COMPARATOR_BWRAP` or `bwrap`), `git`, `env` and `which` where the outer `lake` looks
   (`mkContext`; `whichExe` runs `which`): each missing one is Lake's `cannotRun`, exit 2.
3. The mount points Lake's sandbox mounts over the read-only root (host.py `LAKE_MOUNT_POINTS`):
   a missing one fails every run in its first, trusted step ("Can't mkdir ...").
4. A `lake comparator` that answers: `lake comparator --config <absent file>` in a scratch
   package. `runChallenge` checks its context (`mkContext`) and then reads the config, so exit 2
   with `error: could not read the configuration: ...` means the command exists and its context
   is complete; exit 2 with another message is `mkContext` naming what is missing, in Lake's own
   words; `error: unknown command '...'` (`CliError.unknownCommand`, src/lake/Lake/CLI/Error.lean)
   means try `lake challenge` (the name before lean4 #15146). Lake's tests run it the same way
   (`comparator --config config.json`, tests/lake/tests/check-paranoid/test.sh @1fbba09c). The
   usage's command list (`lake --help`) is read only when neither answer is clear.
5. Lake's sandbox starts here: bwrap with Lake's own arguments for a build step and for the
   `lake env` step (host.py `lake_sandbox_argv`), running `true`, must exit 0 and record an
   `exit-code` (`--json-status-fd`); otherwise bwrap's own message is the reason.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lean_mod_add_proof.grading.lean_names import LEAN_TOOLCHAIN
from lean_mod_add_proof.grading.process import child_env, sandbox_exit_code
from lean_mod_add_proof.grading.routes.comparator.host import LAKE_MOUNT_POINTS, lake_sandbox_argv
from lean_mod_add_proof.grading.routes.comparator.output import last_error, lines_of
from lean_mod_add_proof.grading.routes.comparator.package import (
    LAKEFILE_TOML,
    MANIFEST_JSON,
    SUBCOMMANDS,
    Subcommand,
)

#: Where the probe looks for bwrap, git, env and which (Lake finds them through `which`).
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
PROBE_TIMEOUT_S = 20.0
#: A failed probe is asked again after this long (a mount point created, /run remounted, git
#: installed); a pass stands for the life of the process.
PROBE_RETRY_S = 30.0
#: What `runChallenge` says when it cannot read the config, after `mkContext` passed.
CONFIG_UNREADABLE = "could not read the configuration"


@dataclass(frozen=True)
class ComparatorProbe:
    """Whether this host and toolchain can run the comparator, and how."""

    available: bool
    reason: str
    subcommand: Subcommand | None = None
    lake: str | None = None
    bwrap: str | None = None
    missing: tuple[str, ...] = ()
    path_dirs: tuple[str, ...] = ()
    """Directories holding git, env, which and bwrap, for the outer `lake`'s PATH."""
    help_text: str = field(default="", repr=False)
    """What `lake` answered (the behavioural probe's output, or the usage when it was read)."""


def parse_lake_help(text: str) -> Subcommand | None:
    """The judge's name as `lake --help` lists it under COMMANDS (Help.lean `usage`: two
    spaces, the name, its arguments, a description), preferring `comparator` (pure)."""
    listed: set[str] = set()
    in_commands = False
    for line in lines_of(text):
        if line.strip().endswith(":") and not line.startswith(" "):
            in_commands = line.strip() == "COMMANDS:"
            continue
        if in_commands and line.startswith("  ") and line.strip():
            listed.add(line.split()[0])
    for name in SUBCOMMANDS:
        if name in listed:
            return name
    return None


def host_requirements(
    toolchain_dir: Path, environ: Mapping[str, str], *, system: str | None = None, root: Path = Path("/")
) -> tuple[dict[str, str], list[str]]:
    """(found tools by name, what is missing) for the comparator: Linux, the toolchain's `lake`,
    `leanexport` and `leanchecker`, bwrap (`COMPARATOR_BWRAP` or `bwrap`), git, env and which,
    and the mount points Lake's sandbox needs under `root` (the host's `/`)."""
    found: dict[str, str] = {}
    missing: list[str] = []
    if (system or platform.system()) != "Linux":
        missing.append("Linux (lake comparator sandboxes with bwrap, which needs Linux namespaces)")
    bin_dir = toolchain_dir / "bin"
    for tool in ("lake", "leanexport", "leanchecker"):
        path = bin_dir / tool
        if path.is_file() and os.access(path, os.X_OK):
            found[tool] = str(path)
        else:
            missing.append(f"{tool} (not in {bin_dir})")
    bwrap_name = environ.get("COMPARATOR_BWRAP") or "bwrap"
    hints = {
        "bwrap": " (install bubblewrap, or set COMPARATOR_BWRAP)",
        "git": " (Lake builds inside its sandbox with git: install git)",
    }
    for tool, name in (("bwrap", bwrap_name), ("git", "git"), ("env", "env"), ("which", "which")):
        hit = shutil.which(name, path=SYSTEM_PATH)
        if hit is None:
            missing.append(f"{name}{hints.get(tool, '')}")
        else:
            found[tool] = hit
    for point in LAKE_MOUNT_POINTS:
        if not (root / point.lstrip("/")).is_dir():
            missing.append(
                f"the directory {point} (Lake's sandbox mounts over it, and bwrap cannot create it "
                f"on the read-only root: create it as root, e.g. `mkdir -p {point}`)"
            )
    return found, missing


def _run(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> tuple[int, str]:
    done = subprocess.run(
        list(argv),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=PROBE_TIMEOUT_S,
        env=dict(env),
        cwd=cwd,
    )
    return done.returncode, done.stdout + done.stderr


def _scratch_package(where: Path) -> Path:
    """A package like the one the comparator runs on, without any module (blocking)."""
    project = where / "package"
    (project / ".lake").mkdir(parents=True)
    (project / "lakefile.toml").write_text(LAKEFILE_TOML, encoding="utf-8")
    (project / "lake-manifest.json").write_text(MANIFEST_JSON, encoding="utf-8")
    (project / "lean-toolchain").write_text(f"{LEAN_TOOLCHAIN}\n", encoding="utf-8")
    return project


def ask_lake(lake: str, project: Path, env: Mapping[str, str]) -> tuple[Subcommand | None, str | None, str]:
    """(the subcommand that answered, what is missing in Lake's words or None, Lake's output)
    from `lake NAME --config <absent file>` for each name (module docstring, item 4)."""
    absent = project.parent / "absent-comparator-config.json"
    said = ""
    unclear: list[str] = []
    for name in SUBCOMMANDS:
        rc, said = _run([lake, name, "--config", str(absent)], env, project)
        if rc == 2 and CONFIG_UNREADABLE in said:
            return name, None, said
        if rc == 2:
            return name, f"`lake {name}` cannot run here: {last_error(said)}", said
        if f"unknown command '{name}'" not in said:
            unclear.append(f"`lake {name} --config <absent file>` exited {rc}: {last_error(said)}")
    if not unclear:
        return None, "`lake comparator` or `lake challenge` (this Lake knows neither)", said
    # Neither a clear answer nor "unknown command": the usage's list decides, as before issue 37.
    rc, usage = _run([lake, "--help"], env, project)
    if rc == 0 and (sub := parse_lake_help(usage)) is not None:
        return sub, None, usage
    return None, f"a lake comparator that answers ({'; '.join(unclear)})", said


def sandbox_starts(bwrap: str, project: Path, toolchain_dir: Path) -> str | None:
    """None when bwrap, with Lake's own arguments for a build step and for `lake env`, runs
    `true` and records its `exit-code`; else bwrap's own message (module docstring, item 5)."""
    true = shutil.which("true", path=SYSTEM_PATH) or "/bin/true"
    for env_step in (False, True):
        argv = lake_sandbox_argv(bwrap, project, toolchain_dir, env_step=env_step)
        with tempfile.TemporaryFile() as status:
            done = subprocess.run(
                [argv[0], "--json-status-fd", str(status.fileno()), *argv[1:], "--", true],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=(status.fileno(),),
                env={},  # Lake runs it under `env -i`
                timeout=PROBE_TIMEOUT_S,
                check=False,
            )
            status.seek(0)
            recorded = sandbox_exit_code(status.read())
        if done.returncode != 0 or recorded != 0:
            what = "`lake env`" if env_step else "a build step"
            said = [ln.strip() for ln in lines_of(done.stdout.decode("utf-8", "replace")) if ln.strip()]
            why = said[-1] if said else f"exit {done.returncode}, no exit-code recorded"
            return f"Lake's sandbox for {what} does not start here ({why})"
    return None


_probe_lock = threading.Lock()
_probes: dict[tuple[str, str], tuple[ComparatorProbe, float]] = {}


def probe_comparator(
    toolchain_dir: Path, *, environ: Mapping[str, str] | None = None, refresh: bool = False
) -> ComparatorProbe:
    """What the comparator needs, and which name this toolchain's Lake gives it (module
    docstring). A pass is cached per toolchain and `COMPARATOR_BWRAP`; a failure for
    PROBE_RETRY_S, since the host can be fixed while the grader runs."""
    environ = os.environ if environ is None else environ
    key = (str(toolchain_dir), environ.get("COMPARATOR_BWRAP", ""))
    with _probe_lock:
        if not refresh and key in _probes:
            known, at = _probes[key]
            if known.available or time.monotonic() - at < PROBE_RETRY_S:
                return known
        probe = _probe(Path(toolchain_dir), environ)
        _probes[key] = (probe, time.monotonic())
        return probe


def _probe(toolchain_dir: Path, environ: Mapping[str, str]) -> ComparatorProbe:
    found, missing = host_requirements(toolchain_dir, environ)
    dirs = tuple(
        dict.fromkeys(str(Path(found[t]).parent) for t in ("bwrap", "git", "env", "which") if t in found)
    )
    lake, bwrap = found.get("lake"), found.get("bwrap")
    sub: Subcommand | None = None
    said = ""
    with tempfile.TemporaryDirectory(prefix="lean-mod-add-proof-lake-probe-") as scratch:
        where = Path(scratch)
        project = _scratch_package(where)
        if lake is not None:
            env = child_env(where, toolchain_dir / "bin", where)
            env["PATH"] = ":".join(dict.fromkeys((str(toolchain_dir / "bin"), *dirs, "/usr/bin", "/bin")))
            if bwrap is not None:
                env["COMPARATOR_BWRAP"] = bwrap
            try:
                sub, lacking, said = ask_lake(lake, project, env)
            except (OSError, subprocess.SubprocessError) as exc:
                lacking = f"a lake that runs ({type(exc).__name__}: {exc})"
            if lacking is not None:
                missing.append(lacking)
        if bwrap is not None:
            try:
                problem = sandbox_starts(bwrap, project, toolchain_dir)
            except (OSError, subprocess.SubprocessError) as exc:
                problem = f"Lake's sandbox does not start here ({type(exc).__name__}: {exc})"
            if problem is not None:
                missing.append(problem)
    available = not missing and sub is not None
    return ComparatorProbe(
        available=available,
        reason=f"lake {sub} is available"
        if available
        else "cannot run the comparator: missing " + "; ".join(missing),
        subcommand=sub,
        lake=lake,
        bwrap=bwrap,
        missing=tuple(missing),
        path_dirs=dirs,
        help_text=said,
    )


def probe_report(probe: ComparatorProbe) -> dict[str, object]:
    """The comparator route's part of a first-contact report (pure): whether it can run here,
    under which name, what is missing in Lake's or bwrap's own words, and what to do."""
    advice = (
        "nothing: the route can grade (its self-test decides)"
        if probe.available
        else "install what is missing (git), create missing mount points as root (`mkdir -p /run/user`), "
        "or grade with the replay routes (`--judge replay`)"
    )
    return {
        "available": probe.available,
        "subcommand": probe.subcommand,
        "lake": probe.lake,
        "bwrap": probe.bwrap,
        "missing": list(probe.missing),
        "advice": advice,
    }


def clear_probe_cache() -> None:
    with _probe_lock:
        _probes.clear()
