"""A second, independent judge: the toolchain's own `lake comparator` (`lake challenge` before
its rename), run on a package the grader writes.

Status: the `comparator` route of the `judge` setting (routes/protocol.py `ROUTES`): it grades with
`--judge comparator`, and under `auto` where neither replay route passes its self-test. Its own
canaries (selftest.py, the comparator route) must pass before its verdicts count. The generated
Challenge.lean is audited (docs/lean-audit.md).

The package: `route.py` (the route as the pipeline runs it), `run.py` (the prebuilt challenge
and the run), `verdict.py` (what a run decided), `probe.py` (what it needs on the host),
`package.py` (the files and the command line), `output.py` (reading Lake's output).

What crosses into the process that reports the verdict: the whole package the grader wrote (the
task's trusted files, the challenge, the submission's text) and the config; `lake comparator`
builds, exports and replays inside its own bwrap, and the grader reads only its exit status, its
output and which of its steps ran (/proc). Verdicts and could-not-judge outcomes: below, "Exit
codes and phases".

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
what the grader makes of them (verdict.py `comparator_verdict`):
- exit 2: `cannotRun`, before anything is built: not judged.
- exit 0: `compareIt` returned, its last line "Your solution is okay!": accepted (the line is
  required too; its absence is not judged).
- exit 1, any `throw` inside the `try`, in this order of phases:
  1. trusted: "Resolving dependencies" (`lake env` in bwrap), "Building Challenge", "Exporting
     #[...] from Challenge": a failure says nothing about the submission: not judged;
  2. the solution: "Building <solution>" (`safeLakeBuild`; `Building {target}` at 6731c729),
     "Exporting #[...] from <solution>" (`safeExport`), then `verifyMatch` (`compareAt`,
     `checkAxioms`, "Running <kernel> kernel on solution" from `runExternalKernel`): a failure is
     a rejection, but for a host fault (verdict.py `host_fault`, in any phase, read from what the
     submission cannot write, host.py): a sandbox Lake's bwrap did not start (the grade's
     `COMPARATOR_BWRAP` wrapper records bwrap's `--json-status-fd`: no `exit-code` document), or
     the work disk full at any moment of the run (sampled while it runs: Lake deletes its
     temporary files on the way out, and a full disk can leave a truncated olean without an
     error); each is not judged. The OOM killer acting (the grader's cgroup `memory.events`
     `oom_kill`, else /proc/vmstat's) is not: Lake's sandbox has no signal filter, so the build
     can kill itself or bring the OOM on with memory no cap sees, and the counter names no
     victim (docs/readings/no-filter-reading.md, V14); a failure then stays a rejection, its
     reason naming the counter. Lake's own text (`bwrap: ...`, `resource exhausted (error code:
     28, no space left on device)`, `Child exited with 137`) only names a fault in the reason.
  The phase is read from the outer `lake`'s own progress lines, all printed before the step
  they name (`SOLUTION_PHASE_MARKS`), and from the sandboxed steps' command lines in /proc
  (`SOLUTION_PHASE_ARGV`: a process running with the solution module as an argument): any one
  of them is enough, so no single wording decides, and a kill that loses the outer `lake`'s
  buffered stdout still finds the phase. None of them seen is the trusted phase, or a Lake that
  differs: not judged (fail closed; the comparator self-test's rejection canaries then fail, and
  the route with them).
- any other exit code, or the outer `lake` killed by a signal: not judged (the sources name no
  other code; the sandboxed steps cannot signal the outer process: `--unshare-all` gives each a
  PID namespace of its own, in which the outer `lake` has no number, and `--new-session` a
  session of its own).

The limits (issue 30): the comparator's bwrap starts every step with `--clearenv` and passes only
`PATH`, `HOME`, `LEAN_ABORT_ON_PANIC` (`buildSandboxArgs`, `envPass`), so LEAN_NUM_THREADS never
reaches its `lake build`, `lean`, `leanexport` and `leanchecker`, each of which then starts a
thread per core, each reserving a 1 GiB stack (lean4 #12971). An address-space cap would kill
them on a many-core host ("failed to create thread"); the comparator therefore runs with RLIMIT_AS
unlimited (`comparator_limits`), under the live resident-memory cap alone.

The deadline (issue 30): the trusted challenge is built by the grader before the run, in a cache
entry of its own with its own deadline (run.py `ensure_prebuilt_challenge`: `lake build Challenge`,
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

from lean_mod_add_proof.grading.routes.comparator.output import last_error, lines_of
from lean_mod_add_proof.grading.routes.comparator.package import (
    CHALLENGE_MODULE,
    CHALLENGE_PATH,
    CONFIG_FILE,
    HOME_DIR,
    LAKEFILE_TOML,
    MANIFEST_JSON,
    PACKAGE_DIR,
    SOLUTION_MODULE,
    SUBCOMMANDS,
    TMP_DIR,
    Subcommand,
    challenge_lean,
    comparator_argv,
    comparator_config,
    comparator_files,
    config_json,
    permitted_axioms,
    prebuild_key,
    trusted_files,
    write_package,
)
from lean_mod_add_proof.grading.routes.comparator.probe import (
    PROBE_TIMEOUT_S,
    SYSTEM_PATH,
    ComparatorProbe,
    clear_probe_cache,
    host_requirements,
    parse_lake_help,
    probe_comparator,
    probe_report,
)
from lean_mod_add_proof.grading.routes.comparator.route import ComparatorRoute
from lean_mod_add_proof.grading.routes.comparator.run import (
    CHALLENGE_BUILD_MEMORY_MB,
    MIN_OUTPUT_CAP,
    PREBUILD_SECONDS_FILE,
    TRUSTED_STEPS_S,
    PrebuiltChallenge,
    challenge_outputs_missing,
    comparator_env,
    comparator_limits,
    ensure_prebuilt_challenge,
    prebuild_allowance,
    run_comparator,
)
from lean_mod_add_proof.grading.routes.comparator.verdict import (
    OKAY_LINE,
    SOLUTION_PHASE_ARGV,
    SOLUTION_PHASE_MARKS,
    ComparatorOutcome,
    RunFacts,
    Verdict,
    comparator_verdict,
    solution_phase_start,
)

__all__ = [
    "CHALLENGE_BUILD_MEMORY_MB",
    "CHALLENGE_MODULE",
    "CHALLENGE_PATH",
    "CONFIG_FILE",
    "HOME_DIR",
    "LAKEFILE_TOML",
    "MANIFEST_JSON",
    "MIN_OUTPUT_CAP",
    "OKAY_LINE",
    "PACKAGE_DIR",
    "PREBUILD_SECONDS_FILE",
    "PROBE_TIMEOUT_S",
    "SOLUTION_MODULE",
    "SOLUTION_PHASE_ARGV",
    "SOLUTION_PHASE_MARKS",
    "SUBCOMMANDS",
    "SYSTEM_PATH",
    "TMP_DIR",
    "TRUSTED_STEPS_S",
    "ComparatorOutcome",
    "ComparatorProbe",
    "ComparatorRoute",
    "PrebuiltChallenge",
    "RunFacts",
    "Subcommand",
    "Verdict",
    "challenge_lean",
    "challenge_outputs_missing",
    "clear_probe_cache",
    "comparator_argv",
    "comparator_config",
    "comparator_env",
    "comparator_files",
    "comparator_limits",
    "comparator_verdict",
    "config_json",
    "ensure_prebuilt_challenge",
    "host_requirements",
    "last_error",
    "lines_of",
    "parse_lake_help",
    "permitted_axioms",
    "prebuild_allowance",
    "prebuild_key",
    "probe_comparator",
    "probe_report",
    "run_comparator",
    "solution_phase_start",
    "trusted_files",
    "write_package",
]
