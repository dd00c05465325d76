"""Finding the Lean toolchain on this machine: the pinned one (`LEAN_TOOLCHAIN`) unless the
`lean_toolchain` setting names another (`leanprover/lean4:vX.Y.Z[-rcN]`), found the same way and
accepted only when its `lean --version` names exactly that version. A named toolchain grades only
after its own self-test passes (the pass is remembered per toolchain, see selftest.py).

The grader calls `<toolchain>/bin/lean` directly (never elan's proxy, and never Lake): inside the
sandbox there is no elan, no network and no way to download a toolchain, and a proxy could
silently pick another one. Only `bin/lean` and the toolchain's `lib/lean` are required.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from lean_mod_add_proof.grading.lean_names import LEAN_TOOLCHAIN, LEAN_VERSION

#: Environment variable naming the toolchain directory (the one holding bin/lean).
TOOLCHAIN_ENV = "LEAN_MOD_ADD_PROOF_TOOLCHAIN"

#: elan's directory name for `leanprover/lean4:v4.35.0-rc2`: '/' becomes '--' and ':' becomes '---'
#: (seen in elan PR #36, `leanprover--lean4---nightly-2021-08-16`). This is the conservative choice:
#: the spelled-out channel name, not an alias like `stable`; `elan which` is the fallback if a newer
#: elan names it differently.
ELAN_DIR_NAME = LEAN_TOOLCHAIN.replace("/", "--").replace(":", "---")

#: A file the toolchain double (tests/toolchain_double) has in its root and real Lean never has:
#: one of the two signs `is_double` reads (issue 41: the double passed for Lean everywhere).
DOUBLE_MARKER_FILE = "TOOLCHAIN-DOUBLE-NOT-LEAN"
#: What the double's `lean --version` says about itself (Lean's own says `Lean (version X, ...)`
#: with the commit and platform: src/Lean/Shell.lean, `shortVersionString`): the other sign.
DOUBLE_VERSION_TEXT = "toolchain double — not Lean"
#: The words every headline, check and result that the double produced carries.
DOUBLE_BANNER = "TOOLCHAIN DOUBLE: nothing was checked by Lean"

INSTALL_FIX = "lean-mod-add-proof install-lean"
ELAN_FIX = f"elan toolchain install {LEAN_TOOLCHAIN}"
FIX_COMMANDS = f"run `{INSTALL_FIX}` (or `{ELAN_FIX}`)"


def version_of(lean_toolchain: str) -> str:
    """`leanprover/lean4:v4.35.0` -> `4.35.0` (pure)."""
    return lean_toolchain.rpartition(":v")[2]


def elan_dir_name(lean_toolchain: str) -> str:
    """elan's directory name for a toolchain (see `ELAN_DIR_NAME`) (pure)."""
    return lean_toolchain.replace("/", "--").replace(":", "---")


def install_fix(lean_toolchain: str = LEAN_TOOLCHAIN) -> str:
    """The commands that install `lean_toolchain` (pure)."""
    named = "" if lean_toolchain == LEAN_TOOLCHAIN else f" --lean-toolchain {lean_toolchain}"
    return f"run `{INSTALL_FIX}{named}` (or `elan toolchain install {lean_toolchain}`)"


def is_double(directory: Path, version_output: str) -> bool:
    """Whether a toolchain is the test double: it has the double's marker file, or its `lean
    --version` says it is the double. Either sign is enough; real Lean has neither (pure but
    for one stat)."""
    return DOUBLE_VERSION_TEXT in version_output or (directory / DOUBLE_MARKER_FILE).exists()


@dataclass(frozen=True)
class Toolchain:
    """A toolchain directory whose `lean --version` reported the pinned version."""

    dir: Path
    lean: Path
    version: str
    """The first line of `lean --version`."""
    source: str = ""
    """How it was found (config, env, elan home, elan which)."""
    is_double: bool = False
    """The test double (tests/toolchain_double), not Lean: it decides nothing about proofs, and
    whatever it "accepts" was scripted by the test (`is_double`)."""

    @property
    def label(self) -> str:
        """How results and headlines name it: `DIR (VERSION)`, and for the double the banner
        first, so that no line can pass it for Lean (pure)."""
        named = f"{self.dir} ({self.version})"
        return f"{DOUBLE_BANNER}: {named}" if self.is_double else named


@dataclass(frozen=True)
class ToolchainMissing:
    """No usable toolchain: `reason` says what was tried, `fix` is the command to run."""

    reason: str
    fix: str = FIX_COMMANDS


def version_matches(version_output: str, version: str = LEAN_VERSION) -> bool:
    """True when `lean --version` output names exactly `version` (the pinned one by default):
    `4.35.0` is not `4.35.0-rc2`, nor `4.35.0-rc2` `4.35.0-rc20`."""
    pattern = r"version\s+" + re.escape(version) + r"(?![0-9A-Za-z.\-])"
    return re.search(pattern, version_output) is not None


def elan_home(env: dict[str, str] | os._Environ[str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("ELAN_HOME") or Path.home() / ".elan")


def candidate_dirs(
    configured: Path | None,
    env: dict[str, str] | os._Environ[str] | None = None,
    lean_toolchain: str = LEAN_TOOLCHAIN,
) -> list[tuple[Path, str]]:
    """Where to look, in order. A configured or env-named directory is the only candidate: an
    explicit choice must not silently fall back to another toolchain."""
    env = os.environ if env is None else env
    if configured is not None:
        return [(Path(configured), "GraderConfig.toolchain_dir")]
    if env.get(TOOLCHAIN_ENV):
        return [(Path(env[TOOLCHAIN_ENV]), f"${TOOLCHAIN_ENV}")]
    return [(elan_home(env) / "toolchains" / elan_dir_name(lean_toolchain), "elan home")]


_probe_lock = threading.Lock()
_probe_cache: dict[tuple[str, str], tuple[float, Toolchain | ToolchainMissing]] = {}


def _probe_dir(directory: Path, source: str, version: str = LEAN_VERSION) -> Toolchain | ToolchainMissing:
    """Check the binaries and run `lean --version` once per directory and wanted version (cached
    by path and mtime of bin/lean, so replacing the toolchain is noticed)."""
    try:
        root = directory.expanduser().resolve(strict=True)
    except OSError:
        return ToolchainMissing(f"{directory} ({source}) does not exist")
    bins = {"lean": root / "bin" / "lean"}
    missing = [n for n, p in bins.items() if not (p.is_file() and os.access(p, os.X_OK))]
    if missing:
        return ToolchainMissing(f"{root} ({source}) has no executable bin/{', bin/'.join(missing)}")
    if not (root / "lib" / "lean").is_dir():
        return ToolchainMissing(f"{root} ({source}) has no lib/lean (the core library)")
    key = (str(root), version)
    mtime = bins["lean"].stat().st_mtime
    with _probe_lock:
        cached = _probe_cache.get(key)
        if cached is not None and cached[0] == mtime:
            return cached[1]
    try:
        done = subprocess.run(
            [str(bins["lean"]), "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
            env={"PATH": "/usr/bin:/bin", "HOME": str(root), "LEAN_NUM_THREADS": "1"},
        )
        output = (done.stdout + done.stderr).strip()
        ok = done.returncode == 0
    except (OSError, subprocess.SubprocessError) as exc:
        output, ok = f"{type(exc).__name__}: {exc}", False
    first_line = output.splitlines()[0] if output else ""
    found: Toolchain | ToolchainMissing
    if ok and version_matches(output, version):
        found = Toolchain(root, bins["lean"], first_line, source, is_double(root, output))
    else:
        why = f"{root} ({source}): `lean --version` gave {first_line!r}, not version {version}"
        found = ToolchainMissing(why)  # `locate_toolchain` names the fix for the wanted toolchain
    with _probe_lock:
        _probe_cache[key] = (mtime, found)
    return found


def _elan_binary(env: dict[str, str] | os._Environ[str]) -> str | None:
    candidate = elan_home(env) / "bin" / "elan"
    if candidate.is_file():
        return str(candidate)
    return shutil.which("elan", path=env.get("PATH"))


def _elan_which(env: dict[str, str] | os._Environ[str], lean_toolchain: str = LEAN_TOOLCHAIN) -> Path | None:
    """Ask elan where the pinned lean lives, but only if elan lists the toolchain as installed:
    `elan which` may otherwise download it (elan issue #210 shows first use downloading)."""
    elan = _elan_binary(env)
    if elan is None:
        return None
    try:
        listed = subprocess.run(
            [elan, "toolchain", "list"],
            capture_output=True,
            text=True,
            timeout=20,
            stdin=subprocess.DEVNULL,
        )
        if lean_toolchain not in listed.stdout and elan_dir_name(lean_toolchain) not in listed.stdout:
            return None
        with tempfile.TemporaryDirectory(prefix="lean-mod-add-proof-which-") as tmp:
            Path(tmp, "lean-toolchain").write_text(lean_toolchain + "\n", encoding="utf-8")
            done = subprocess.run(
                [elan, "which", "lean"],
                cwd=tmp,
                capture_output=True,
                text=True,
                timeout=20,
                stdin=subprocess.DEVNULL,
            )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return Path(done.stdout.strip().splitlines()[-1]).parent.parent


def locate_toolchain(
    configured: Path | None = None,
    env: dict[str, str] | os._Environ[str] | None = None,
    lean_toolchain: str = LEAN_TOOLCHAIN,
) -> Toolchain | ToolchainMissing:
    """`lean_toolchain` (the pinned one by default), or why it is not here. Blocking (runs `lean
    --version` on first use of a directory); call it through `asyncio.to_thread` from async code."""
    env = os.environ if env is None else env
    version = version_of(lean_toolchain)
    tried: list[str] = []
    for directory, source in candidate_dirs(configured, env, lean_toolchain):
        found = _probe_dir(directory, source, version)
        if isinstance(found, Toolchain):
            return found
        tried.append(found.reason)
    explicit = configured is not None or bool(env.get(TOOLCHAIN_ENV))
    if not explicit:
        which = _elan_which(env, lean_toolchain)
        if which is not None:
            found = _probe_dir(which, "elan which lean", version)
            if isinstance(found, Toolchain):
                return found
            tried.append(found.reason)
    return ToolchainMissing("; ".join(tried) or f"{lean_toolchain} not found", install_fix(lean_toolchain))


def clear_probe_cache() -> None:
    with _probe_lock:
        _probe_cache.clear()
