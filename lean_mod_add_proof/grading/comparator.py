"""A second, independent judge: the toolchain's own `lake comparator` (`lake challenge` before
its rename), run on a package the grader writes.

Status: the `comparator` route of the `judge` setting (pipeline.py `ROUTES`): it grades with
`--judge comparator`, and under `auto` where neither replay route passes its self-test. Its own
canaries (selftest.py, the comparator route) must pass before its verdicts count. The generated
Challenge.lean is audited (docs/lean-audit.md).

What the sources say (leanprover/lean4 unless named; "stored" = the copy read, not pinned to rc2):
- `src/lake/Lake/CLI/Check.lean` (stored 0243d9f4): `runChallenge` reads a JSON `Config`
  (`challenge_module`, `solution_module`, `theorem_names`, `definition_names`,
  `permitted_axioms`, `enable_nanoda?`, `external_kernels?`), builds and exports the challenge
  and then the solution inside bwrap (`safeLakeBuild`, `safeExport` with the bundled
  `leanexport`), compares them at the theorem names, the permitted axioms and the kernel's
  built-ins (`compareAt`), checks axioms (`checkAxioms`), replays the solution's export with
  `leanchecker --silent --from-export`, and prints "Your solution is okay!". Before any of that
  it needs Linux, `bwrap` (or `COMPARATOR_BWRAP`), `git` and `env`, all found through `which`
  (`whichExe` runs `which`), a parsable config naming something to check, and a
  `lake-manifest.json` in the project (`checkManifest`); each missing piece is `cannotRun`:
  "error: ..." and exit 2. Everything after that runs in one `try`: any error prints
  "error: ..." and exits 1, including a failure of the trusted challenge's build or a sandbox
  that does not start ("Child exited with N").

Exit codes and phases (Check.lean at 0243d9f4; `runChallenge`, `compareIt`, `verifyMatch`), and
what the grader makes of them (`comparator_verdict`):
- exit 2: `cannotRun`, before anything is built: not judged.
- exit 0: `compareIt` returned, its last line "Your solution is okay!": accepted (the line is
  required too; its absence is not judged).
- exit 1, any `throw` inside the `try`, in this order of phases:
  1. trusted: "Resolving dependencies" (`lake env` in bwrap), "Building Challenge", "Exporting
     #[...] from Challenge": a failure says nothing about the submission: not judged;
  2. the solution: "Building <solution>" (`safeLakeBuild`; `Building {target}` at 6731c729),
     "Exporting #[...] from <solution>" (`safeExport`), then `verifyMatch` (`compareAt`,
     `checkAxioms`, "Running <kernel> kernel on solution" from `runExternalKernel`): a failure is
     a rejection, but for a step SIGKILLed ("Child exited with 137", or "<kernel> exited with
     137": bwrap reports a signal as 128+N) while the kernel's OOM-kill counter moved (not
     judged, as on the other routes: process/limits.py `oom_kill_count`).
  The phase is read from the outer `lake`'s own progress lines, all printed before the step
  they name (`SOLUTION_PHASE_MARKS`), and from the sandboxed steps' command lines in /proc
  (`SOLUTION_PHASE_ARGV`: a process running with the solution module as an argument): any one
  of them is enough, so no single wording decides, and a kill that loses the outer `lake`'s
  buffered stdout still finds the phase. None of them seen is the trusted phase, or a Lake that
  differs: not judged (fail closed; the comparator self-test's rejection canaries then fail, and
  the route with them).
- any other exit code, or the outer `lake` killed by a signal: not judged (the sources name no
  other code; the sandboxed steps cannot signal the outer process: `--unshare-all`).

The limits (issue 30): the comparator's bwrap starts every step with `--clearenv` and passes only
`PATH`, `HOME`, `LEAN_ABORT_ON_PANIC` (`buildSandboxArgs`, `envPass`), so LEAN_NUM_THREADS never
reaches its `lake build`, `lean`, `leanexport` and `leanchecker`, each of which then starts a
thread per core, each reserving a 1 GiB stack (lean4 #12971). An address-space cap would kill
them on a many-core host ("failed to create thread"); the comparator therefore runs with RLIMIT_AS
unlimited (`comparator_limits`), under the live resident-memory cap alone.

The deadline (issue 30): the trusted challenge is built by the grader before the run, in a cache
entry of its own with its own deadline (`ensure_prebuilt_challenge`: `lake build Challenge`,
outputs found up to date by their hash inside the run, lean-facts §0a on `checkHashUpToDate`),
and the run gets the submission's `timeout_s` plus an allowance for its trusted steps. A run that
times out is a rejection only when its solution phase had at least `timeout_s` to itself (the
first phase mark is timed as the output arrives); otherwise not judged.

The manifest: with a `lake-manifest.json` that parses, `loadWorkspace` calls `materializeDeps`,
which warns about a stale manifest but never writes one (src/lake/Lake/Load/Workspace.lean,
stored 02e5a640; `Workspace.materializeDeps` in src/lake/Lake/Load/Resolve.lean, newest stored
copy); only `updateAndMaterialize` (no manifest, or `lake update`) writes it. So the read-only
project directory of the comparator's sandbox is not written. Whether rc2's `Manifest` parser
reads `MANIFEST_JSON` unchanged is confirmed only for the stored copies (see below); a parse
error fails the run in its trusted phase (not judged), so the comparator self-test's reference
canary catches it.
- Release notes (leanprover/reference-manual `Manual/Releases/v4_35_0.lean`, stored 38eda35d,
  the rc3 notes): #14885 "ships `lake challenge` as a frontend to `comparator`", #15146
  "rename lake challenge to lake comparator", #15147 `comparator.json` as the default config
  (the `lake challenge` of 0243d9f4 instead requires `--config <file>`), #15005 bwrap instead
  of landrun. Which name rc2 ships is not confirmed by the sources: `probe_comparator` asks
  `lake --help` once and handles both. `--config FILE` works with both.
- `src/lake/Lake/Load/Manifest.lean` (stored copy with `Manifest.version : StdVer :=
  {major := 1, minor := 1}`): `getVersion` accepts a string version of major 1 (or a number
  from 5), `name`/`lakeDir`/`packagesDir`/`packages` default when absent; `save` writes
  `Json.pretty` of `version`, `name`, `lakeDir`, `packagesDir`, `packages`. `MANIFEST_JSON` is
  what Lake writes for a package with no dependencies.
- Modules the comparator builds must be buildable parts of a library:
  `LeanLibConfig.isBuildableModule` (src/lake/Lake/Config/LeanLibConfig.lean) accepts a module
  matched by a glob (default `roots.map Glob.one`), so `LAKEFILE_TOML` names each root.

The generated Lean text (`challenge_lean`) is an `import` and one `theorem ... := sorry`: the
exact prompt signature (`lean_names.theorem_signature`), proved by `sorry` as comparator's
README and the release notes describe a challenge module.

`lake comparator` is run outside the grader's own bwrap (it nests its own, with
`--unshare-all`), in a fresh directory, through `process.run_command` under the deadline and
caps described above (no address-space cap)."""

from __future__ import annotations

import dataclasses
import json
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
from typing import Literal

from pydantic import BaseModel, ConfigDict

from lean_mod_add_proof.grading import cache as cachemod
from lean_mod_add_proof.grading.lean_names import (
    ALLOWED_AXIOMS,
    LEAN_TOOLCHAIN,
    PACKAGE_NAME,
    SUBMISSION_MODULE,
    SUBMISSION_PATH,
    WEIGHTS_MODULE,
    theorem_name,
    theorem_signature,
)
from lean_mod_add_proof.grading.messages import one_line
from lean_mod_add_proof.grading.package import (
    NETWORK_PATH,
    WEIGHTS_PATH,
    cache_key,
    write_fresh,
)
from lean_mod_add_proof.grading.process import (
    CommandOutcome,
    HostFault,
    Limits,
    child_env,
    oom_kill_count,
    run_command,
)
from lean_mod_add_proof.grading.result import AxiomsMode, CommandRecord, GraderSettings, Stage
from lean_mod_add_proof.grading.workdirs import copy_entry, run_in_thread

Verdict = Literal["accepted", "rejected", "not_judged"]
Subcommand = Literal["comparator", "challenge"]
#: Preferred first: the name after #15146.
SUBCOMMANDS: tuple[Subcommand, ...] = ("comparator", "challenge")

#: The challenge module (`Challenge.lean` at the package root, its own library).
CHALLENGE_MODULE = "Challenge"
CHALLENGE_PATH = "Challenge.lean"
#: The solution module is the submission, where the rest of the grader puts it.
SOLUTION_MODULE = SUBMISSION_MODULE
#: Inside the grade's directory: the package, the config (outside the package: the outer,
#: unsandboxed `lake` reads it before any build), HOME and TMPDIR of the outer `lake`.
PACKAGE_DIR = "comparator-package"
CONFIG_FILE = "comparator-config.json"
HOME_DIR = "comparator-home"
TMP_DIR = "comparator-tmp"
#: What `compareIt` prints last on success (Check.lean).
OKAY_LINE = "Your solution is okay!"
#: Progress lines the outer `lake` prints (trusted: before the step they name) once the solution
#: phase began (Check.lean `safeLakeBuild`, `safeExport`, `runExternalKernel`); any one of them
#: marks it. The challenge's lines name `Challenge`, never the solution module.
SOLUTION_PHASE_MARKS: tuple[str, ...] = (
    f"Building {SUBMISSION_MODULE}",
    f" from {SUBMISSION_MODULE}",
    " kernel on solution",
)
#: An argument only the solution phase's sandboxed steps run with: Check.lean runs them as
#: `env -i <bwrap> ... -- <lake> build <solution>` and `... -- <leanexport> <solution> -- ...`
#: (`sandboxSpawnArgs`, `safeLakeBuild`, `safeExport`), visible in /proc while they run. It does
#: not depend on the outer `lake`'s stdout, which Lean writes with a bare `fwrite`
#: (src/runtime/io.cpp `lean_io_prim_handle_put_str`): into a pipe, glibc buffers it, and a
#: kill by the grader's deadline or cap loses what was not flushed.
SOLUTION_PHASE_ARGV: tuple[str, ...] = (SUBMISSION_MODULE,)
#: The comparator's trusted steps once the challenge is prebuilt: `lake env`, finding the
#: challenge up to date, exporting it (seconds, on top of the prebuild's own measured time).
TRUSTED_STEPS_S = 60.0
#: Memory floor of the trusted challenge build, as the replay route's prebuild has one
#: (pipeline.py `PREBUILD_MEMORY_MB`): a small cap meant for submissions must not stop it.
CHALLENGE_BUILD_MEMORY_MB = 2048
#: The prebuilt entry records how long `lake build Challenge` took (seconds, as text).
PREBUILD_SECONDS_FILE = "prebuild-seconds.txt"
#: Least output kept from the comparator, so its own progress lines survive a chatty build.
MIN_OUTPUT_CAP = 1 << 20
#: Where the probe looks for bwrap, git, env and which (Lake finds them through `which`).
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
PROBE_TIMEOUT_S = 20.0

LAKEFILE_TOML = f"""name = "{PACKAGE_NAME}"
version = "0.1.0"

[[lean_lib]]
name = "{CHALLENGE_MODULE}"

[[lean_lib]]
name = "{PACKAGE_NAME}"
roots = ["{PACKAGE_NAME}.Network", "{WEIGHTS_MODULE}", "{SOLUTION_MODULE}"]
"""

#: `Manifest.save` of a package without dependencies (Json.pretty, then a newline).
MANIFEST_JSON = (
    '{"version": "1.1.0",\n'
    ' "packagesDir": ".lake/packages",\n'
    ' "packages": [],\n'
    f' "name": "{PACKAGE_NAME}",\n'
    ' "lakeDir": ".lake"}\n'
)


# ---- the package (pure) ----------------------------------------------------------------------


def challenge_lean(p: int) -> str:
    """The challenge: the task's theorem with the exact prompt signature, proved by `sorry`.
    Constructs (all core Lean 4): `import` (module header, src/Lean/Parser/Module.lean),
    a `theorem` declaration (src/Lean/Parser/Command.lean) whose body is the `sorry` term
    (src/Lean/Parser/Term.lean; elaborates to `sorryAx`, a warning, which `lake build` does not
    fail on)."""
    return f"import {WEIGHTS_MODULE}\n\n{theorem_signature(p)} := sorry\n"


def permitted_axioms(axioms_mode: AxiomsMode) -> list[str]:
    """`permitted_axioms` for the config. Both modes permit exactly `ALLOWED_AXIOMS`: the
    comparator checks a subset, so `exact` (all three used) is what it cannot check; see
    `comparator_verdict`."""
    if axioms_mode not in ("subset", "exact"):
        raise ValueError(f"unknown axioms mode {axioms_mode!r}")
    return list(ALLOWED_AXIOMS)


def comparator_config(p: int, axioms_mode: AxiomsMode = "subset") -> dict[str, object]:
    """The comparator's JSON config (Check.lean `Config`). `definition_names: []` and
    `enable_nanoda: false` spell out the defaults, so the config parses whether or not a given
    Lake treats them as optional; `external_kernels` is left out (refused with `enable_nanoda`)."""
    return {
        "challenge_module": CHALLENGE_MODULE,
        "solution_module": SOLUTION_MODULE,
        "theorem_names": [theorem_name(p)],
        "definition_names": [],
        "permitted_axioms": permitted_axioms(axioms_mode),
        "enable_nanoda": False,
    }


def config_json(p: int, axioms_mode: AxiomsMode = "subset") -> str:
    return json.dumps(comparator_config(p, axioms_mode), indent=2) + "\n"


def comparator_files(
    p: int,
    network_lean: str | bytes,
    weights_lean: str,
    submission: str,
    lean_toolchain: str = LEAN_TOOLCHAIN,
) -> dict[str, bytes]:
    """Every file of the package the comparator runs on, by path relative to its root (pure).
    `lean-toolchain` names the toolchain that grades (the `lean_toolchain` setting)."""
    network = network_lean.encode("utf-8") if isinstance(network_lean, str) else network_lean
    return {
        "lakefile.toml": LAKEFILE_TOML.encode(),
        "lean-toolchain": f"{lean_toolchain}\n".encode(),
        "lake-manifest.json": MANIFEST_JSON.encode(),
        CHALLENGE_PATH: challenge_lean(p).encode("utf-8"),
        NETWORK_PATH: network,
        WEIGHTS_PATH: weights_lean.encode("utf-8"),
        SUBMISSION_PATH: submission.encode("utf-8"),
    }


def comparator_argv(
    lake: str, subcommand: Subcommand, config_path: Path, *, paranoid: bool = False
) -> list[str]:
    """`lake comparator --config FILE` (or `lake challenge ...`); `--paranoid` (#15145) only
    on request: whether rc2 has it is not confirmed."""
    return [lake, subcommand, "--config", str(config_path), *(["--paranoid"] if paranoid else [])]


def write_package(root: Path, files: Mapping[str, bytes]) -> None:
    """Write the package into `root`, which must not exist yet (a fresh directory)."""
    root.mkdir(mode=0o700)
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


# ---- the outcome (pure) ----------------------------------------------------------------------


class ComparatorOutcome(BaseModel):
    """What one comparator run decided."""

    model_config = ConfigDict(frozen=True)

    verdict: Verdict
    reason: str
    judge: Literal["comparator"] = "comparator"
    subcommand: Subcommand | None = None
    commands: list[CommandRecord] = []
    peak_rss_mb: int = 0

    @property
    def judged(self) -> bool:
        return self.verdict != "not_judged"

    @property
    def accepted(self) -> bool:
        return self.verdict == "accepted"


def _lines(text: str) -> list[str]:
    # Split on "\n" only: Lean leaves U+2028/U+2029/U+0085 unescaped (lean-facts §0b).
    return [ln.rstrip("\r") for ln in text.split("\n")]


def _last_error(text: str) -> str:
    """The last `error: ...` line (what `runChallenge` prints when it gives up), else the last line."""
    lines = [ln.strip() for ln in _lines(text) if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith("error:"):
            return one_line(ln)
    return one_line(lines[-1]) if lines else "(no output)"


def solution_phase_start(
    first_seen: Mapping[bytes, float] | None, text: str = "", argv_seen_at: float | None = None
) -> float | None:
    """Seconds into the run at which its solution phase was first seen, or None (pure): the
    earliest of the `SOLUTION_PHASE_MARKS` the output showed (timed as it arrived; without
    timings, `first_seen` None, a mark in the kept `text` counts as seen at the start) and of a
    process running with `SOLUTION_PHASE_ARGV` (`argv_seen_at`)."""
    if first_seen is not None:
        times = [first_seen[m.encode()] for m in SOLUTION_PHASE_MARKS if m.encode() in first_seen]
    else:
        times = [0.0] if any(m in text for m in SOLUTION_PHASE_MARKS) else []
    if argv_seen_at is not None:
        times.append(argv_seen_at)
    return min(times) if times else None


@dataclass(frozen=True)
class RunFacts:
    """What the grader saw of one run of `lake comparator`, beyond its output (pure data)."""

    exit_code: int | None
    signal: int | None = None
    timed_out: bool = False
    limit_exceeded: str | None = None
    solution_phase_at: float | None = None
    """`solution_phase_start`: seconds into the run, or None (never reached)."""
    seconds: float = 0.0
    """How long the run lasted (to its kill, on a timeout)."""
    oom_killer_acted: bool = False
    """The kernel's OOM-kill counter moved during the run (or could not be read)."""
    peak_rss_mb: int = 0
    memory_cap_mb: int | None = None


def _killed_step(err: str) -> bool:
    """`Child exited with 137` (a sandboxed build or export) or `<kernel> exited with 137`: bwrap
    reports its command's death by SIGKILL as 128 + 9 (the process package docstring)."""
    return err.endswith("exited with 137")


def comparator_verdict(
    facts: RunFacts,
    text: str,
    *,
    axioms_mode: AxiomsMode = "subset",
    timeout_s: float | None = None,
) -> tuple[Verdict, str]:
    """Map one run of `lake comparator` to a verdict (pure; the module docstring gives the
    exit codes and phases). The grader's own deadline stopping it is a rejection only once the
    solution phase had `timeout_s` to itself; its memory cap once the solution phase began; a
    SIGKILL inside the solution phase is the host's when the OOM killer acted, else the
    submission's, as on the other routes."""
    started = facts.solution_phase_at is not None
    if facts.timed_out:
        why = "timed out" + (f" (the {timeout_s:g} s limit ran out)" if timeout_s else "")
        if not started:
            return "not_judged", f"lake comparator {why} before it reached the submission"
        assert facts.solution_phase_at is not None
        had = facts.seconds - facts.solution_phase_at
        if timeout_s is not None and had < timeout_s:
            return "not_judged", (
                f"lake comparator timed out, but its trusted steps left the submission {had:.1f} s "
                f"of its {timeout_s:g} s"
            )
        return "rejected", f"lake comparator {why} while building or judging the submission"
    if facts.limit_exceeded:
        why = f"lake comparator stopped: {facts.limit_exceeded}"
        if started:
            return "rejected", f"{why} while building or judging the submission"
        return "not_judged", f"{why} before it reached the submission"
    if facts.signal is not None:
        return "not_judged", f"lake comparator was killed by signal {facts.signal}: {_last_error(text)}"
    if facts.exit_code == 0:
        if OKAY_LINE not in (ln.strip() for ln in _lines(text)):
            return "not_judged", f"lake comparator exited 0 without saying {OKAY_LINE!r}"
        if axioms_mode == "exact":
            return "not_judged", (
                "lake comparator accepted, but it checks only that the axioms are among "
                f"{', '.join(ALLOWED_AXIOMS)}; axioms_mode=exact (all of them) needs the replay judge"
            )
        return "accepted", OKAY_LINE
    if facts.exit_code == 1:
        err = _last_error(text)
        if not started:
            return "not_judged", f"lake comparator failed before it reached the submission: {err}"
        if _killed_step(err):
            cap = facts.memory_cap_mb
            if cap is not None and facts.peak_rss_mb > cap:
                return "rejected", (
                    f"a step of lake comparator was killed: memory cap exceeded "
                    f"({facts.peak_rss_mb} MiB > {cap} MiB): {err}"
                )
            if facts.oom_killer_acted:
                return "not_judged", (
                    f"a step of lake comparator was killed by the host's OOM killer, at "
                    f"{facts.peak_rss_mb} MiB: {err}"
                )
            return "rejected", (
                f"a step of lake comparator was killed by a SIGKILL that neither the grader nor the "
                f"OOM killer sent: {err}"
            )
        return "rejected", f"lake comparator rejected the submission: {err}"
    if facts.exit_code == 2:
        return "not_judged", f"lake comparator cannot run: {_last_error(text)}"
    return "not_judged", f"lake comparator exited {facts.exit_code}: {_last_error(text)}"


# ---- what it needs on the host ---------------------------------------------------------------


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
    for line in _lines(text):
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
                    missing.append(f"a lake that runs (`lake --help` exited {rc}: {_last_error(usage)})")
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


# ---- running it ------------------------------------------------------------------------------


def comparator_limits(settings: GraderSettings, work_dir: Path) -> Limits:
    """The grade's caps for the comparator run, its disk counted under `work_dir`: resident
    memory, processes, disk and file size, but no address-space cap (module docstring)."""
    return Limits(
        memory_mb=settings.memory_mb,
        max_processes=settings.max_processes,
        max_disk_mb=settings.max_disk_mb,
        max_file_mb=settings.max_file_mb,
        disk_paths=(work_dir,),
        max_files=settings.max_files,
        cpu_threads=settings.threads,
        address_space_cap=False,
    )


# ---- the trusted challenge, built before the run ----------------------------------------------


@dataclass(frozen=True)
class PrebuiltChallenge:
    """A verified package with the trusted challenge (and what it imports) already built."""

    package: Path
    seconds: float
    """How long its `lake build Challenge` took when it was built."""
    records: tuple[CommandRecord, ...] = ()


def trusted_files(
    p: int, network_lean: str | bytes, weights_lean: str, lean_toolchain: str = LEAN_TOOLCHAIN
) -> dict[str, bytes]:
    """The package without the submission: what the prebuild builds (pure)."""
    files = comparator_files(p, network_lean, weights_lean, "", lean_toolchain)
    del files[SUBMISSION_PATH]
    return files


def prebuild_key(toolchain_version: str, toolchain_dir: Path, files: Mapping[str, bytes]) -> str:
    """The cache key of a prebuilt challenge: toolchain and trusted files (pure)."""
    return "comparator-" + cache_key(toolchain_version, toolchain_dir, {**files, "#builder": b"lake-1"})


def challenge_outputs_missing(manifest: Mapping[str, str]) -> list[str]:
    """The entry must hold the challenge's olean and the measured build time (pure)."""
    olean = f".lake/build/lib/lean/{CHALLENGE_MODULE}.olean"
    return [f for f in (olean, PREBUILD_SECONDS_FILE) if f not in manifest]


def prebuild_allowance(prebuilt: PrebuiltChallenge | None, timeout_s: float) -> float:
    """Time the run gets beyond the submission's `timeout_s` for its trusted steps: those
    steps, plus the challenge's build time in case the run does not find it up to date (or the
    prebuild's own limit, `timeout_s`, when there is no prebuilt challenge) (pure)."""
    return TRUSTED_STEPS_S + (prebuilt.seconds if prebuilt is not None else timeout_s)


async def ensure_prebuilt_challenge(
    *,
    p: int,
    network_lean: str | bytes,
    weights_lean: str,
    toolchain_dir: Path,
    toolchain_version: str,
    probe: ComparatorProbe,
    cache_root: Path,
    scratch: Path,
    settings: GraderSettings,
    prlimit: str | None,
    scope: str = "",
) -> PrebuiltChallenge:
    """The cache entry with `Challenge` built by `lake build Challenge` (trusted files only; the
    grader's own deadline `settings.timeout_s`, the grade's caps without an address-space cap),
    built on first use. `scratch` (an empty directory of the grade) holds HOME and TMPDIR.
    Raises `cache.PrebuildFailed` when the trusted build fails, `cache.CacheUnusable` when the
    cache cannot serve it (the run then builds the challenge itself)."""
    files = trusted_files(p, network_lean, weights_lean, settings.lean_toolchain)
    key = prebuild_key(toolchain_version, toolchain_dir, files)
    records: list[CommandRecord] = []

    async def prebuild(where: Path) -> cachemod.PrebuildOutcome:
        if probe.lake is None:
            return cachemod.PrebuildOutcome(False, probe.reason, [])
        home, tmpdir = scratch / HOME_DIR, scratch / TMP_DIR
        home.mkdir(mode=0o700, exist_ok=True)
        tmpdir.mkdir(mode=0o700, exist_ok=True)
        started = time.monotonic()
        try:
            out = await run_command(
                [probe.lake, "build", CHALLENGE_MODULE],
                stage="build",
                cwd=where,
                env=comparator_env(toolchain_dir, home, tmpdir, probe),
                deadline=started + settings.timeout_s,
                output_cap_bytes=settings.output_cap_bytes,
                tail_chars=settings.tail_chars,
                limits=dataclasses.replace(
                    comparator_limits(settings, where),
                    memory_mb=max(settings.memory_mb, CHALLENGE_BUILD_MEMORY_MB),
                ),
                prlimit=prlimit,
                sandboxed=False,
                scope=scope,
            )
        except HostFault as exc:
            return cachemod.PrebuildOutcome(False, f"lake build {CHALLENGE_MODULE}: {exc.reason}", [])
        seconds = time.monotonic() - started
        records.append(out.record)
        rec = out.record
        if out.timed_out or out.limit_exceeded or rec.signal is not None or rec.exit_code != 0:
            why = out.limit_exceeded or ("timed out" if out.timed_out else f"exit {rec.exit_code}")
            return cachemod.PrebuildOutcome(
                False, f"lake build {CHALLENGE_MODULE} failed ({why}): {_last_error(out.text)}", records
            )
        (where / PREBUILD_SECONDS_FILE).write_text(f"{seconds:.3f}\n", encoding="ascii")
        return cachemod.PrebuildOutcome(True, "", records)

    entry = await cachemod.ensure_entry(
        cache_root,
        key,
        files,
        prebuild,
        deadline=time.monotonic() + settings.timeout_s,
        outputs_missing=challenge_outputs_missing,
    )
    try:
        seconds = float((entry.package / PREBUILD_SECONDS_FILE).read_text(encoding="ascii"))
    except (OSError, ValueError) as exc:
        raise cachemod.CacheUnusable(f"the prebuilt challenge has no build time: {exc}") from None
    return PrebuiltChallenge(entry.package, seconds, tuple(entry.records))


def comparator_env(toolchain_dir: Path, home: Path, tmpdir: Path, probe: ComparatorProbe) -> dict[str, str]:
    """The outer `lake`'s whole environment: nothing inherited from the grader, the toolchain's
    bin first (Lake finds its Lean next to itself), the tools' directories, and the bwrap the
    probe found as `COMPARATOR_BWRAP` (an absolute path `which` resolves)."""
    env = child_env(home, toolchain_dir / "bin", tmpdir)
    env["PATH"] = ":".join(dict.fromkeys((str(toolchain_dir / "bin"), *probe.path_dirs, "/usr/bin", "/bin")))
    if probe.bwrap:
        env["COMPARATOR_BWRAP"] = probe.bwrap
    return env


async def run_comparator(
    submission: str,
    *,
    p: int,
    network_lean: str | bytes,
    weights_lean: str,
    toolchain_dir: Path,
    work_dir: Path,
    deadline: float,
    limits: Limits | None,
    prlimit: str | None,
    axioms_mode: AxiomsMode = "subset",
    output_cap_bytes: int = MIN_OUTPUT_CAP,
    tail_chars: int = 4000,
    timeout_s: float | None = None,
    scope: str = "",
    probe: ComparatorProbe | None = None,
    stage: Stage = "leanchecker",
    paranoid: bool = False,
    prebuilt: PrebuiltChallenge | None = None,
    lean_toolchain: str = LEAN_TOOLCHAIN,
) -> ComparatorOutcome:
    """Judge `submission` with the toolchain's `lake comparator` (or `lake challenge`).

    `work_dir` is the grade's own directory (it must exist); the package goes into a fresh
    `work_dir/comparator-package` (a copy of `prebuilt`, the challenge already built, when
    given), the config, HOME and TMPDIR beside it. The command runs unsandboxed by the grader
    (the comparator nests its own bwrap) under `deadline` (a `time.monotonic()` value: the
    submission's `timeout_s` plus `prebuild_allowance`) and `limits`. Never raises for a host
    fault: that is not judged."""
    if probe is None:
        probe = await run_in_thread(probe_comparator, Path(toolchain_dir))
    if not probe.available or probe.lake is None or probe.subcommand is None:
        return ComparatorOutcome(verdict="not_judged", reason=probe.reason, subcommand=probe.subcommand)
    try:
        package = work_dir / PACKAGE_DIR
        if prebuilt is not None:
            await copy_entry(prebuilt.package, package)
            write_fresh(package, SUBMISSION_PATH, submission)
        else:
            files = comparator_files(p, network_lean, weights_lean, submission, lean_toolchain)
            write_package(package, files)
        config_path = work_dir / CONFIG_FILE
        config_path.write_text(config_json(p, axioms_mode), encoding="utf-8")
        home, tmpdir = work_dir / HOME_DIR, work_dir / TMP_DIR
        home.mkdir(mode=0o700)
        tmpdir.mkdir(mode=0o700)
    except OSError as exc:
        return ComparatorOutcome(
            verdict="not_judged",
            reason=f"could not write the comparator's package: {exc}",
            subcommand=probe.subcommand,
        )
    argv = comparator_argv(probe.lake, probe.subcommand, config_path, paranoid=paranoid)
    ooms = oom_kill_count()
    try:
        out: CommandOutcome = await run_command(
            argv,
            stage=stage,
            cwd=package,
            env=comparator_env(Path(toolchain_dir), home, tmpdir, probe),
            deadline=deadline,
            output_cap_bytes=max(output_cap_bytes, MIN_OUTPUT_CAP),
            tail_chars=tail_chars,
            limits=limits,
            prlimit=prlimit,
            sandboxed=False,
            scope=scope,
            watch_for=[m.encode() for m in SOLUTION_PHASE_MARKS],
            watch_argv=SOLUTION_PHASE_ARGV,
        )
    except HostFault as exc:
        return ComparatorOutcome(
            verdict="not_judged",
            reason=f"could not run lake {probe.subcommand}: {exc.reason}",
            subcommand=probe.subcommand,
        )
    if not out.started:
        verdict: Verdict = "not_judged"
        reason = "no time was left to run lake comparator"
    else:
        after = oom_kill_count()
        facts = RunFacts(
            exit_code=out.record.exit_code,
            signal=out.record.signal,
            timed_out=out.timed_out,
            limit_exceeded=out.limit_exceeded,
            solution_phase_at=solution_phase_start(out.first_seen, argv_seen_at=out.argv_seen_at),
            seconds=out.record.seconds,
            # as pipeline.py `_oom_killer_acted`: an unreadable counter is the host's (safe) reading
            oom_killer_acted=ooms is None or after is None or after > ooms,
            peak_rss_mb=out.peak_rss_mb,
            memory_cap_mb=limits.memory_mb if limits is not None else None,
        )
        verdict, reason = comparator_verdict(facts, out.text, axioms_mode=axioms_mode, timeout_s=timeout_s)
    return ComparatorOutcome(
        verdict=verdict,
        reason=reason,
        subcommand=probe.subcommand,
        commands=[out.record],
        peak_rss_mb=out.peak_rss_mb,
    )
