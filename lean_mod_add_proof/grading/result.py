"""The grader's configuration and its result (the result goes onto the trace unchanged)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: Stages in the order they run; a grade stops at the first one that fails.
Stage = Literal["extract", "guard", "toolchain", "build", "leanchecker", "statement", "axioms"]
STAGES: tuple[Stage, ...] = ("extract", "guard", "toolchain", "build", "leanchecker", "statement", "axioms")

AxiomsMode = Literal["subset", "exact"]
SandboxMode = Literal["auto", "on", "off"]


class GraderConfig(BaseModel):
    """How a submission is graded. Every field has a safe default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout_s: float = Field(300.0, gt=0)
    """One deadline, in seconds, for build, replay and check together."""
    axioms_mode: AxiomsMode = "subset"
    """`subset`: any of propext, Classical.choice, Quot.sound; `exact`: all three and nothing else."""
    work_root: Path | None = None
    """Where each grade's throwaway package directory is made (default: the system temp dir)."""
    keep_packages: bool = False
    """Keep each grade's package directory for inspection instead of deleting it."""
    memory_mb: int = Field(4096, ge=64)
    """Address-space cap for every Lean process, in MiB."""
    max_file_mb: int = Field(1024, ge=1)
    """Largest file a Lean process may write, in MiB (a bigger write kills the process)."""
    max_concurrent: int | None = Field(None, ge=1)
    """How many grades may run Lean at once in this process (default: the number of cores)."""
    sandbox: SandboxMode = "auto"
    """Run Lean under bubblewrap: `auto` when bwrap works, `on` to require it, `off` to never use it."""
    cache_dir: Path | None = None
    """Where prebuilt Network/Weights packages are kept (default: ~/.cache/lean-mod-add-proof)."""
    toolchain_dir: Path | None = None
    """The toolchain directory holding bin/lake (default: the pinned toolchain under ~/.elan)."""
    output_cap_bytes: int = Field(1 << 20, ge=1024)
    """Most bytes of output read from one command; the rest is discarded (the command goes on)."""
    tail_chars: int = Field(4000, ge=0)
    """How many characters of each command's output are kept on the result."""


class CommandRecord(BaseModel):
    """One command the grader ran."""

    stage: Stage
    argv: list[str]
    exit_code: int | None
    """None when the command was killed (deadline or cancellation)."""
    seconds: float
    output_tail: str
    output_bytes: int
    truncated: bool


class GradeResult(BaseModel):
    """Everything a grade found out. JSON-serialisable; stored as trace.info["lean_grader"]."""

    reward: float = 0.0
    accepted: bool = False
    stage_reached: Stage = "extract"
    """The last stage that started."""
    failed_stage: Stage | None = None
    reason: str = ""
    """One line for a human: why it failed, or that it passed."""
    task_id: str = ""
    theorem: str = ""
    guard_passed: bool = False
    build_passed: bool = False
    leanchecker_passed: bool = False
    statement_passed: bool = False
    axioms_passed: bool = False
    axioms: list[str] | None = None
    """Axioms of the required theorem, as Lean printed them (None if never read)."""
    check_axioms: list[str] | None = None
    """Axioms of the grader's check theorem."""
    stage_seconds: dict[str, float] = Field(default_factory=dict)
    grader_seconds: float = 0.0
    commands: list[CommandRecord] = Field(default_factory=list)
    sandboxed: bool = False
    cache: Literal["hit", "built", "off", "unused"] = "unused"
    package_dir: str | None = None
    """Set when the package directory was kept."""
    toolchain: str | None = None

    def stage_flags(self) -> dict[str, float]:
        """The five stage booleans and grader_seconds, as metric values."""
        return {
            "guard_passed": float(self.guard_passed),
            "build_passed": float(self.build_passed),
            "leanchecker_passed": float(self.leanchecker_passed),
            "statement_passed": float(self.statement_passed),
            "axioms_passed": float(self.axioms_passed),
            "grader_seconds": self.grader_seconds,
        }
