"""What `lake comparator` needs on the host, and which name this toolchain's Lake gives it (the
probe, cached per toolchain)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lean_mod_add_proof.grading.process import child_env
from lean_mod_add_proof.grading.routes.comparator.output import last_error, lines_of
from lean_mod_add_proof.grading.routes.comparator.package import SUBCOMMANDS, Subcommand

#: Where the probe looks for bwrap, git, env and which (Lake finds them through `which`).
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
PROBE_TIMEOUT_S = 20.0


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
    toolchain_dir: Path, environ: Mapping[str, str], *, system: str | None = None
) -> tuple[dict[str, str], list[str]]:
    """(found tools by name, what is missing) for the comparator: Linux, the toolchain's `lake`,
    `leanexport` and `leanchecker` (Check.lean: `lean.binDir / "leanexport"`, `"leanchecker"`),
    bwrap (`COMPARATOR_BWRAP` or `bwrap`), git, env and which (`whichExe` runs `which`)."""
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
    for tool, name in (("bwrap", bwrap_name), ("git", "git"), ("env", "env"), ("which", "which")):
        hit = shutil.which(name, path=SYSTEM_PATH)
        if hit is None:
            hint = " (install bubblewrap, or set COMPARATOR_BWRAP)" if tool == "bwrap" else ""
            missing.append(f"{name}{hint}")
        else:
            found[tool] = hit
    return found, missing


def _run_help(lake: str, args: Sequence[str], env: Mapping[str, str]) -> tuple[int, str]:
    done = subprocess.run(
        [lake, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=PROBE_TIMEOUT_S,
        env=dict(env),
        cwd=env.get("HOME") or None,
    )
    return done.returncode, done.stdout + done.stderr


_probe_lock = threading.Lock()
_probes: dict[tuple[str, str], ComparatorProbe] = {}


def probe_comparator(
    toolchain_dir: Path, *, environ: Mapping[str, str] | None = None, refresh: bool = False
) -> ComparatorProbe:
    """What the comparator needs, and which name this toolchain's Lake gives it: `lake --help`
    once (cached per toolchain). If the usage lists neither name, `lake help comparator` and
    `lake help challenge` are asked; `help` prints the usage for a command it does not know
    (Help.lean `help`), so a name counts only when its help differs from the usage."""
    environ = os.environ if environ is None else environ
    key = (str(toolchain_dir), environ.get("COMPARATOR_BWRAP", ""))
    with _probe_lock:
        if not refresh and key in _probes:
            return _probes[key]
        probe = _probe(Path(toolchain_dir), environ)
        _probes[key] = probe
        return probe


def _probe(toolchain_dir: Path, environ: Mapping[str, str]) -> ComparatorProbe:
    found, missing = host_requirements(toolchain_dir, environ)
    dirs = tuple(
        dict.fromkeys(str(Path(found[t]).parent) for t in ("bwrap", "git", "env", "which") if t in found)
    )
    lake = found.get("lake")
    sub: Subcommand | None = None
    usage = ""
    if lake is not None:
        with tempfile.TemporaryDirectory(prefix="lean-mod-add-proof-lake-probe-") as home:
            env = child_env(Path(home), toolchain_dir / "bin", Path(home))
            env["PATH"] = ":".join(dict.fromkeys((str(toolchain_dir / "bin"), *dirs, "/usr/bin", "/bin")))
            try:
                rc, usage = _run_help(lake, ["--help"], env)
                if rc != 0:
                    missing.append(f"a lake that runs (`lake --help` exited {rc}: {last_error(usage)})")
                elif (sub := parse_lake_help(usage)) is None:
                    for name in SUBCOMMANDS:
                        rc_help, text = _run_help(lake, ["help", name], env)
                        if rc_help == 0 and text.strip() != usage.strip() and f"lake {name}" in text:
                            sub = name
                            break
                    else:
                        missing.append("`lake comparator` or `lake challenge` (this Lake has neither)")
            except (OSError, subprocess.SubprocessError) as exc:
                missing.append(f"a lake that runs (`lake --help`: {type(exc).__name__}: {exc})")
    return ComparatorProbe(
        available=not missing,
        reason=f"lake {sub} is available"
        if not missing
        else "cannot run the comparator: missing " + "; ".join(missing),
        subcommand=sub,
        lake=lake,
        bwrap=found.get("bwrap"),
        missing=tuple(missing),
        path_dirs=dirs,
        help_text=usage,
    )


def clear_probe_cache() -> None:
    with _probe_lock:
        _probes.clear()
