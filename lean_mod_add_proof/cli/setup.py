"""Sub-command `install-lean`: install elan (from the `elan-init.sh` of a tagged elan release,
never `master`, run only if its sha256 is the pinned one) and the pinned Lean toolchain, so the
grader can run. Needs internet access to GitHub; without it, it stops within a few seconds and
says what to do instead."""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from lean_mod_add_proof.cli.exits import EXIT_OK, EXIT_PROBLEM, EXIT_USAGE, print_error
from lean_mod_add_proof.constants import LEAN_TOOLCHAIN
from lean_mod_add_proof.grading.result import TOOLCHAIN_NAME_PATTERN, GraderSettings, flag_name
from lean_mod_add_proof.grading.steps_log import long_step

log = logging.getLogger(__name__)

#: The elan release pinned here and by container/Containerfile (tests/test_container.py checks the
#: image's build arguments equal these). v4.2.3 is the newest tag in the snapshot of
#: leanprover/elan this was derived from; other projects pin a v4.2.4 that the snapshot lacks, so
#: it could not be checked, and is not used. To re-derive both values from a clone of elan:
#:   git rev-parse v4.2.3^{commit}             -> ELAN_COMMIT
#:   git show v4.2.3:elan-init.sh | sha256sum  -> ELAN_INIT_SHA256
#: (raw.githubusercontent.com serves a file's bytes at that tag as git stores them, so the second
#: is also the sha256 of ELAN_INIT_URL.) The script itself downloads the newest elan binary (its
#: `releases/latest/download` URL), which no checksum covers: the image builds elan from source
#: at ELAN_COMMIT instead (container/README.md). What the verdicts depend on is LEAN_TOOLCHAIN,
#: which the grader checks by `lean --version` and its self-test before use.
ELAN_RELEASE = "v4.2.3"
ELAN_COMMIT = "b6cec7e10fe4965a605aaf60d1cb4a5837f0462b"
ELAN_INIT_SHA256 = "a620ff1641616222c8d37c54845492004bb84d6877cdbc944dd65c1aa685bf53"
ELAN_INIT_URL = f"https://raw.githubusercontent.com/leanprover/elan/{ELAN_RELEASE}/elan-init.sh"
DEFAULT_ELAN_HOME = Path("~/.elan")


def manual_steps(elan_home: Path | None = None, lean_toolchain: str = LEAN_TOOLCHAIN) -> str:
    """How to install by hand into `elan_home` (default ~/.elan), to print when a step fails (pure)."""
    if elan_home is None or elan_home == DEFAULT_ELAN_HOME.expanduser():
        home, env = str(DEFAULT_ELAN_HOME), ""
    else:
        home = shlex.quote(str(elan_home))
        env = f"ELAN_HOME={home} "
    doctor = f"`{env}lean-mod-add-proof doctor`"
    return (
        "To install by hand on a machine with internet access:\n"
        f"  curl -sSfL {ELAN_INIT_URL} -o elan-init.sh\n"
        f"  echo '{ELAN_INIT_SHA256}  elan-init.sh' | sha256sum -c -\n"
        f"  {env}sh elan-init.sh -y --default-toolchain none\n"
        f"  {env}{home}/bin/elan toolchain install {lean_toolchain}\n"
        f"(or copy an elan home that already holds the toolchain to {home}), then run {doctor}."
    )


#: The steps for the default elan home.
MANUAL_STEPS = manual_steps()


class InstallError(RuntimeError):
    """A step failed: the message (one line) says which, `steps` what to do instead (a recipe
    printed with its lines, so that it can be pasted)."""

    def __init__(self, message: str, steps: str) -> None:
        super().__init__(message)
        self.steps = steps


def fetch(url: str, timeout_s: float, steps: str = MANUAL_STEPS) -> bytes:
    """Download `url` (short timeout: no network must fail fast); `steps` say what to do instead."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.read()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise InstallError(
            f"cannot download {url} ({reason}). install-lean needs internet access to GitHub.", steps
        ) from None


def check_script(script: bytes, url: str, expected_sha256: str, steps: str = MANUAL_STEPS) -> None:
    """Refuse a downloaded installer whose sha256 is not the pinned one (pure): it is never run."""
    actual = hashlib.sha256(script).hexdigest()
    if actual != expected_sha256:
        raise InstallError(
            f"the elan-init.sh downloaded from {url} has sha256 {actual}, not the pinned "
            f"{expected_sha256}: refusing to run it.",
            steps,
        )


def find_elan(elan_home: Path) -> Path | None:
    candidate = elan_home / "bin" / "elan"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate
    found = shutil.which("elan")
    return Path(found) if found else None


def _run(argv: list[str], env: dict[str, str], what: str, steps: str) -> None:
    print(f"$ {' '.join(argv)}", flush=True)
    done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise InstallError(f"{what} failed (exit code {done.returncode}).", steps)


def install(
    elan_home: Path,
    script_url: str,
    timeout_s: float,
    lean_toolchain: str = LEAN_TOOLCHAIN,
    script_sha256: str = ELAN_INIT_SHA256,
) -> Path:
    """Install elan if needed (running the script only if its sha256 is `script_sha256`), then
    `lean_toolchain` (the pinned one by default); returns the elan binary."""
    env = {**os.environ, "ELAN_HOME": str(elan_home)}
    steps = manual_steps(elan_home, lean_toolchain)
    elan = find_elan(elan_home)
    if elan is None:
        script = fetch(script_url, timeout_s, steps)
        check_script(script, script_url, script_sha256, steps)
        with tempfile.TemporaryDirectory(prefix="elan-init-") as tmp:
            path = Path(tmp) / "elan-init.sh"
            path.write_bytes(script)
            _run(
                ["sh", str(path), "-y", "--default-toolchain", "none", "--no-modify-path"],
                env,
                "elan-init.sh",
                steps,
            )
        elan = find_elan(elan_home)
        if elan is None:
            raise InstallError(f"elan-init.sh finished but {elan_home}/bin/elan is missing.", steps)
    else:
        print(f"elan already installed: {elan} (toolchains go to {elan_home})")
        # The toolchain download also needs GitHub: check it answers before starting.
        fetch("https://github.com", timeout_s, steps)
    what = f"elan toolchain install {lean_toolchain}"
    _run([str(elan), "toolchain", "install", lean_toolchain], env, what, steps)
    return elan


def elan_home_and_source(flag: str | None, env: Mapping[str, str]) -> tuple[Path, str]:
    """The elan home install-lean uses and why: the flag, else $ELAN_HOME, else ~/.elan (pure)."""
    if flag:
        return Path(flag).expanduser().absolute(), "--elan-home"
    if env.get("ELAN_HOME"):
        return Path(env["ELAN_HOME"]).expanduser().absolute(), "$ELAN_HOME"
    return Path.home() / ".elan", "default"


def cmd_install_lean(args: argparse.Namespace) -> int:
    from lean_mod_add_proof.grading import toolchain

    name = args.lean_toolchain
    if not re.fullmatch(TOOLCHAIN_NAME_PATTERN, name):
        why = f"--lean-toolchain {name!r} is not leanprover/lean4:vX.Y.Z[-rcN]"
        print_error(f"install-lean: {why}")
        return EXIT_USAGE
    elan_home, source = elan_home_and_source(args.elan_home, os.environ)
    print(f"elan home: {elan_home} ({source})", flush=True)
    env = {**os.environ, "ELAN_HOME": str(elan_home)}
    found = toolchain.locate_toolchain(env=env, lean_toolchain=name)
    if isinstance(found, toolchain.Toolchain):
        print(f"{name} is already installed: {found.label}")
        print("Next: run `lean-mod-add-proof doctor` to check the whole grader set-up.")
        return EXIT_OK
    try:
        with long_step(log, "install-lean", name) as step:  # minutes: logged (grading/steps_log.py)
            install(elan_home, args.script_url, args.timeout, name)
            step.outcome = "installed"
    except InstallError as exc:
        print_error(f"install-lean: {exc}", exc.steps)
        return EXIT_PROBLEM
    toolchain.clear_probe_cache()
    found = toolchain.locate_toolchain(env=env, lean_toolchain=name)
    if isinstance(found, toolchain.Toolchain):
        print(f"installed {name}: {found.label}")
    else:
        print_error(f"install-lean: the install ran but the toolchain was not found: {found.reason}")
        return EXIT_PROBLEM
    if source == "--elan-home" and os.environ.get("ELAN_HOME") != str(elan_home):
        print(f"Set ELAN_HOME={elan_home} for the grader to find it there.")
    print("Next: run `lean-mod-add-proof doctor` to check the whole grader set-up.")
    return EXIT_OK


def register(commands: argparse._SubParsersAction) -> None:
    """Add this module's sub-commands."""
    p = commands.add_parser(
        "install-lean",
        help=f"install elan and the pinned toolchain {LEAN_TOOLCHAIN} (needs internet)",
        description=__doc__,
    )
    p.add_argument("--elan-home", default=None, help="where elan lives (default: $ELAN_HOME or ~/.elan)")
    p.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        help="network timeout per request, in seconds (default: %(default)s)",
    )
    field = GraderSettings.model_fields["lean_toolchain"]
    p.add_argument(
        flag_name("lean_toolchain"),
        dest="lean_toolchain",
        default=field.default,
        help=f"{field.description} (default: {field.default})",
    )
    p.add_argument("--script-url", default=ELAN_INIT_URL, help=argparse.SUPPRESS)
    p.set_defaults(handler=cmd_install_lean)
