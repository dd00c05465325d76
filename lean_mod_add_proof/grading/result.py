"""The grader's configuration and its result (the result goes onto the trace unchanged)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, computed_field

from lean_mod_add_proof.grading.lean_names import LEAN_TOOLCHAIN
from lean_mod_add_proof.grading.toolchain import DOUBLE_BANNER, DOUBLE_VERSION_TEXT

#: Stages in the order they run; a grade stops at the first one that fails.
Stage = Literal["extract", "guard", "toolchain", "build", "leanchecker", "statement", "axioms"]
STAGES: tuple[Stage, ...] = ("extract", "guard", "toolchain", "build", "leanchecker", "statement", "axioms")

AxiomsMode = Literal["subset", "exact"]
JudgeMode = Literal["native", "interpreted"]
#: The `judge` setting: which judge may decide (`auto` tries them in order, see routes/protocol.py).
JudgeChoice = Literal["auto", "replay", "comparator"]
#: The judge that decided a grade: the grader's own replay judge, or the toolchain's comparator.
JudgeName = Literal["replay", "comparator"]
#: What the replay judge read the submission from: the NDJSON export (text only), or the olean
#: the untrusted build wrote (mapped into the verdict process: the weaker boundary).
VerdictFrom = Literal["export", "olean"]
SandboxMode = Literal["auto", "on", "off"]
#: The toolchains `lean_toolchain` accepts: elan's `leanprover/lean4:v<version>` for a release or a
#: release candidate (no nightlies, no aliases such as `stable`: an alias moves).
TOOLCHAIN_NAME_PATTERN = r"^leanprover/lean4:v[0-9]+\.[0-9]+\.[0-9]+(-rc[0-9]+)?$"
#: The `kernels` setting: the official kernel only, or every checker the toolchain ships too.
KernelsChoice = Literal["official", "all"]
#: Where the grader runs: on the host, or inside the rollout's runtime box (the model's box).
GradeIn = Literal["host", "runtime"]


# Upper bounds of the numeric settings (issue 39): what prlimit(1), the kernel and the grader's own
# arithmetic take. util-linux prlimit parses a limit of at most 2^64 - 1 ("failed to parse AS
# limit" past it, measured with 2.38.1), and a command it cannot start used to fail as "the
# sandbox (bwrap) did not start" (or, unsandboxed, as the build's exit 1), naming no setting.
#: A week: every deadline is `now + k * timeout_s` and the CPU backstop is about
#: `timeout_s * 2 * threads` seconds (process.cpu_limits), both far inside prlimit's 64 bits at
#: this bound; a larger value is a unit slip (milliseconds), refused when read.
TIMEOUT_S_MAX = 7 * 24 * 3600.0
#: 128 TiB, the user address space of x86-64 with 4-level page tables: no process can map more,
#: so a larger cap could never bind; RLIMIT_AS (this plus the judge's own allowance, in bytes)
#: stays far inside 64 bits.
MEMORY_MB_MAX = 1 << 27
#: PID_MAX_LIMIT on 64-bit Linux (include/linux/threads.h: 4 * 1024 * 1024): never more processes.
MAX_PROCESSES_MAX = 1 << 22
#: 512 TiB. Must stay below what the disk walk charges for a directory it cannot read
#: (process.UNREADABLE_BYTES, 1 PiB), so that such a directory is over every cap.
MAX_DISK_MB_MAX = 1 << 29
#: A file larger than the disk cap's bound cannot be written under it; RLIMIT_FSIZE in bytes
#: stays inside 64 bits.
MAX_FILE_MB_MAX = MAX_DISK_MB_MAX
#: 2^32: the most inodes ext4 (and most filesystems) can have.
MAX_FILES_MAX = 1 << 32
#: Grades running Lean at once in one process (each holds processes, descriptors, watcher threads).
MAX_CONCURRENT_MAX = 4096
#: One command's output is held in memory up to this cap, for every command running.
OUTPUT_CAP_BYTES_MAX = 1 << 30
#: Kept on every result, which goes onto the trace.
TAIL_CHARS_MAX = 1 << 24


class GraderSettings(BaseModel):
    """Every grader setting, defined once: `GraderConfig` is exactly these, the taskset's
    `--env.taskset.task.*` flags inherit them, and the CLI builds its flags from them. Each has a
    safe default, its bounds, and a one-line docstring that is its help text."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    timeout_s: float = Field(300.0, gt=0, le=TIMEOUT_S_MAX, allow_inf_nan=False)
    """One deadline, in seconds, for build, replay and check together."""
    axioms_mode: AxiomsMode = "subset"
    """`subset`: any of propext, Classical.choice, Quot.sound; `exact`: all three and nothing else."""
    work_root: Path | None = None
    """Where each grade's throwaway package directory is made (default: the system temp dir)."""
    keep_packages: bool = False
    """Keep each grade's package directory for inspection instead of deleting it."""
    memory_mb: int = Field(8192, ge=64, le=MEMORY_MB_MAX)
    """Cap on the summed resident memory of all of a grade's processes, in MiB (watched live)."""
    max_processes: int = Field(64, ge=2, le=MAX_PROCESSES_MAX)
    """Most processes a grade may have alive at once (a fork bomb kills the grade)."""
    max_disk_mb: int = Field(4096, ge=16, le=MAX_DISK_MB_MAX)
    """Cap on the grade's package directory plus its sandbox /tmp together, in MiB."""
    max_file_mb: int = Field(1024, ge=1, le=MAX_FILE_MB_MAX)
    """Largest file a Lean process may write, in MiB (a bigger write kills the process)."""
    max_files: int = Field(20000, ge=100, le=MAX_FILES_MAX)
    """Most files, directories and links in a grade's package directory and sandbox /tmp together."""
    max_concurrent: int | None = Field(None, ge=1, le=MAX_CONCURRENT_MAX)
    """How many grades may run Lean at once in this process (default: cores divided by threads)."""
    threads: int = Field(1, ge=1, le=256)
    """Threads each Lean process of a grade may use (`lean -j`; LEAN_NUM_THREADS for the judge)."""
    judge: JudgeChoice = "auto"
    """Which judge decides: `replay` (the grader's kernel replay), `comparator` (the toolchain's
    `lake comparator`), `auto` (replay if it passes its self-test, else comparator)."""
    native_judge: bool = True
    """Compile the judge once per toolchain and run it natively (else, or if it cannot be built,
    `lean --run Judge.lean` on every grade)."""
    sandbox: SandboxMode = "on"
    """Run Lean under bubblewrap: `on` requires it, `off` runs untrusted code unsandboxed, `auto`
    uses it when it works."""
    cache_dir: Path | None = None
    """Where prebuilt Network/Weights packages are kept (default: ~/.cache/lean-mod-add-proof)."""
    toolchain_dir: Path | None = None
    """The toolchain directory holding bin/lean (default: the pinned toolchain under ~/.elan)."""
    lean_toolchain: str = Field(LEAN_TOOLCHAIN, pattern=TOOLCHAIN_NAME_PATTERN)
    """The Lean toolchain to grade with (`lean --version` must name it; it grades after its own self-test)."""
    output_cap_bytes: int = Field(1 << 20, ge=1024, le=OUTPUT_CAP_BYTES_MAX)
    """Most bytes of output read from one command; the rest is discarded (the command goes on)."""
    tail_chars: int = Field(4000, ge=0, le=TAIL_CHARS_MAX)
    """How many characters of each command's output are kept on the result."""
    kernels: KernelsChoice = "official"
    """`official`: the grader's replay judge is the one kernel; `all`: every checker the toolchain
    ships must accept the same export too (export route only; kernels.py)."""
    grade_in: GradeIn = "host"
    """Where grading runs: `host` (this process) or `runtime` (inside the rollout's runtime box,
    by `lean-mod-add-proof grade --json`; there the toolchain's bin/ is re-hashed every grade)."""


def checked_setting(name: str, value: object) -> Any:
    """`value` as the setting `name` takes it, checked against its type and bounds exactly as
    `GraderSettings` checks them (for a value set outside it, e.g. a per-task `timeout_s`);
    ValueError naming the setting and the problem otherwise."""
    field = GraderSettings.model_fields[name]
    try:
        return TypeAdapter(Annotated[field.annotation, field]).validate_python(value)
    except ValidationError as exc:
        problem = exc.errors()[0].get("msg", "invalid value")
        raise ValueError(f"{name} {value!r}: {str(problem)[:1].lower()}{str(problem)[1:]}") from None


#: How a grade ends as an exit status (the `grade` command; a runtime box's result is checked against it).
EXIT_ACCEPTED, EXIT_REJECTED, EXIT_NOT_JUDGED = 0, 1, 3


def verdict_exit_code(result: GradeResult) -> int:
    """0 accepted, 1 rejected, 3 could not judge (pure)."""
    if result.accepted:
        return EXIT_ACCEPTED
    return EXIT_REJECTED if result.judged else EXIT_NOT_JUDGED


def flag_name(setting: str) -> str:
    """The command-line flag of a setting: `timeout_s` -> `--timeout-s` (pure)."""
    return "--" + setting.replace("_", "-")


class GraderConfig(GraderSettings):
    """How a submission is graded (immutable; unknown fields are an error)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class CommandRecord(BaseModel):
    """One command the grader ran."""

    stage: Stage
    argv: list[str]
    exit_code: int | None
    """The command's own exit code; None when a signal ended it (see `signal`), including every
    kill by the grader (deadline, cancellation, a per-grade cap)."""
    signal: int | None = None
    """The signal that ended the command, the same with and without the sandbox (bwrap's 128+N
    is read back as N)."""
    seconds: float
    output_tail: str
    output_bytes: int
    truncated: bool


#: What a kernel's run came to, by cause (grading/kernels.py `classify`). A verdict: `accepted`;
#: a rejection by the export's doing: `rejected` (its reject code), `panic` (a Rust panic),
#: `declined`, `aborted` (SIGABRT), `crashed` (another fault signal), `capped` (a cap of its own
#: run), `timed out` (its own CPU budget), `failed` (any other status on this export). Could not
#: judge, by the host's or the grader's doing: `missing`, `host fault` (the sandbox or the spawn
#: failed, a thread the host would not create, a wall-clock backstop passed before the CPU
#: budget), `killed from outside` (a signal the run did not raise, the OOM killer's included),
#: `host errno`, `setup` (our command line or config, or the toolchain's own build refused).
KernelKind = Literal[
    "accepted",
    "rejected",
    "panic",
    "declined",
    "aborted",
    "crashed",
    "capped",
    "timed out",
    "failed",
    "missing",
    "host fault",
    "killed from outside",
    "host errno",
    "setup",
]


class KernelRun(BaseModel):
    """One kernel that checked the submission, and what it said."""

    name: str
    verdict: Literal["accepted", "rejected", "not judged"]
    seconds: float = 0.0
    detail: str = ""
    """Why, in a few words: `accepted`, `rejected (exit 1)`, `missing (bin/con-ron)`,
    `panicked at src/tc.rs:925:71 (exit 101)`, `timed out (its own budget of 40 CPU s)`..."""
    kind: KernelKind | None = None
    """The class of the outcome (`KernelKind`); None on results written before it existed."""
    status: str = ""
    """How its process ended: `exit 1`, `SIGABRT` (`SIGKILL` for the grader's own kill); "" when it
    did not run."""
    budget_s: float | None = None
    """A bundled checker's own budget, in CPU seconds (kernels.budget_s; its wall-clock backstop
    is kernels.WALL_PER_CPU_S times it)."""
    cpu_seconds: float | None = None
    """CPU seconds its process used, as the grader's watcher last saw them (None: not measured)."""
    peak_memory_mb: int = 0
    """Largest resident memory of its process tree, in MiB."""


class GradeResult(BaseModel):
    """Everything a grade found out. JSON-serialisable; stored as trace.info["lean_grader"].

    The verdict is derived, never set by hand: a grade is accepted exactly when it reached the
    last stage and no stage failed, and a stage passed exactly when it ran before the failed one
    (or the grade was accepted)."""

    stage_reached: Stage = "extract"
    """The last stage that started."""
    failed_stage: Stage | None = None
    judged: bool = True
    """False when no verdict about the submission was reached (no toolchain, sandbox unusable,
    self-test failed, the trusted files did not build, cache or I/O failure, internal error).
    Such a grade is "could not judge", never a rejection: its reward must not be trained on."""
    reason: str = ""
    """One line for a human: why it failed, or that it passed."""
    task_id: str = ""
    theorem: str = ""
    guard_skipped: bool = False
    """True only in tests that bypass the guard on purpose."""
    axioms: list[str] | None = None
    """Axioms of the required theorem, from the trusted walk (None if never computed)."""
    check_axioms: list[str] | None = None
    """Axioms of the grader's kernel-checked statement theorem."""
    stage_seconds: dict[str, float] = Field(default_factory=dict)
    grader_seconds: float = 0.0
    queued_seconds: float = 0.0
    """Time spent waiting for a concurrency slot (not toolchain time)."""
    commands: list[CommandRecord] = Field(default_factory=list)
    sandboxed: bool = False
    cache: Literal["hit", "built", "off", "unused"] = "unused"
    cache_note: str = ""
    """Why the cache was not used, when it could not be (the grade built in place instead)."""
    package_dir: str | None = None
    """Set when the package directory was kept."""
    toolchain: str | None = None
    """The toolchain that graded: `DIR (first line of lean --version)`, the test double's with
    `DOUBLE_BANNER` first (`Toolchain.label`)."""
    judge: JudgeName | None = None
    """Which judge decided: the grader's replay, or the toolchain's `lake comparator`."""
    verdict_from: VerdictFrom | None = None
    """What the replay judge read: the export (`export`), or the build's olean (`olean`, where
    the toolchain has no working export; `judge_note` says why)."""
    judge_mode: JudgeMode | None = None
    """How the replay judge ran: the compiled executable, or `lean --run Judge.lean`."""
    judge_note: str = ""
    """Why the judge ran interpreted although native_judge is on, and why verdicts do not come
    from the export when they do not (each a one-line warning)."""
    peak_memory_mb: int = 0
    """Largest summed resident memory seen over the grade's commands, in MiB."""
    lean_errors: list[str] = Field(default_factory=list)
    """The first error messages Lean gave while compiling the submission, as `line:col: text`."""
    kernels: list[KernelRun] = Field(default_factory=list)
    """The kernels that checked it, each with its verdict and time: the official one (`lean`, the
    replay judge or the comparator's), then with `kernels = all` each bundled checker."""

    def _passed(self, stage: Stage) -> bool:
        if self.failed_stage is None:
            return self.accepted
        return STAGES.index(stage) < STAGES.index(self.failed_stage)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def accepted(self) -> bool:
        return self.judged and self.failed_stage is None and self.stage_reached == STAGES[-1]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def reward(self) -> float:
        return 1.0 if self.accepted else 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def toolchain_double(self) -> bool:
        """Graded with the toolchain double (tests/toolchain_double: scripts, not Lean): nothing
        was checked by Lean, and the verdict is whatever the test scripted. Read from how the
        grader named the toolchain (either of the double's signs, `toolchain.is_double`, puts
        the banner there; its `lean --version` names it too). The taskset scores no such
        result (could not judge) unless a test asks it to."""
        named = self.toolchain or ""
        return DOUBLE_BANNER in named or DOUBLE_VERSION_TEXT in named

    @computed_field  # type: ignore[prop-decorator]
    @property
    def guard_passed(self) -> bool:
        return self._passed("guard") and not self.guard_skipped

    @computed_field  # type: ignore[prop-decorator]
    @property
    def build_passed(self) -> bool:
        return self._passed("build")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def leanchecker_passed(self) -> bool:
        return self._passed("leanchecker")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def statement_passed(self) -> bool:
        return self._passed("statement")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def axioms_passed(self) -> bool:
        return self._passed("axioms")

    def stage_flags(self) -> dict[str, float]:
        """The five stage booleans, judged and grader_seconds, as metric values. A grade that
        reached no verdict has a value only for the stages it passed before the fault (1.0): a
        stage it never got to pass has none, never a 0.0, so that a mean of a stage's pass rate
        counts only grades that say something about it (issue 41: a host without Lean showed a
        0 % build pass rate). verifiers records exactly the keys given (verifiers/v1/task.py,
        `record_metrics`); Prime's run summary averages each metric over the rollouts that have
        it (prime_runs/metrics.py, `from_episodes`)."""
        passed = {
            "guard_passed": self.guard_passed,
            "build_passed": self.build_passed,
            "leanchecker_passed": self.leanchecker_passed,
            "statement_passed": self.statement_passed,
            "axioms_passed": self.axioms_passed,
        }
        return {
            "judged": float(self.judged),
            **{name: float(value) for name, value in passed.items() if self.judged or value},
            "grader_seconds": self.grader_seconds,
        }
