"""What one run of `lake comparator` decided, read from its exit, its output and what the grader
saw of it (pure; the package docstring gives the exit codes and phases)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from lean_mod_add_proof.grading.lean_names import ALLOWED_AXIOMS, SUBMISSION_MODULE
from lean_mod_add_proof.grading.result import AxiomsMode, CommandRecord
from lean_mod_add_proof.grading.routes.comparator.output import last_error, lines_of
from lean_mod_add_proof.grading.routes.comparator.package import Subcommand

Verdict = Literal["accepted", "rejected", "not_judged"]
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
    deadline_s: float | None = None
    """When its deadline fell, in seconds after it started: a kill that a loaded host delays
    must not count as time the submission had."""
    oom_killer_acted: bool = False
    """The kernel's OOM-kill counter moved during the run (or could not be read): named in a
    rejection's reason, never a host fault (`host_fault`)."""
    oom_kills_seen: bool = False
    """An OOM-kill counter that could be read moved during the run (host.py `oom_kills_moved`):
    named in a rejection's reason too."""
    peak_rss_mb: int = 0
    memory_cap_mb: int | None = None
    sandboxes_unstarted: int = 0
    """Lake's sandboxes whose bwrap never ran its command (host.py `read_status`)."""
    step_killed: bool = False
    """A sandboxed step's command died of SIGKILL, as bwrap recorded it (`exit-code` 137)."""
    disk_full: str | None = None
    """The work disk ran full at some moment of the run (host.py `DiskWatch`), or None."""


def _killed_step(err: str) -> bool:
    """`Child exited with 137` (a sandboxed build or export) or `<kernel> exited with 137`: bwrap
    reports its command's death by SIGKILL as 128 + 9 (the process package docstring)."""
    return err.endswith("exited with 137")


def _bwrap_said(text: str) -> str:
    """bwrap's own last line in the output (`bwrap: ...`, utils.c `die`), for the reason only."""
    said = [ln.strip() for ln in lines_of(text) if ln.strip().startswith("bwrap: ")]
    return said[-1] if said else "no bwrap message"


def host_fault(facts: RunFacts, text: str) -> str | None:
    """Why a run that failed failed for the host, in any phase, from what the submission cannot
    write (pure): a sandbox Lake's bwrap could not start (no `exit-code` status: a missing mount
    point, a namespace or process limit, or bwrap itself killed; its monitor is outside the
    sandbox's PID namespace and writes the document whenever its command was exec'd), or the
    work disk full at some moment of the run (ENOSPC is the host's: the grade's disk cap stops
    the submission first, oserrors.py). None: no host fault seen.

    The OOM counters are no host fault here: Lake's sandbox has no signal filter (Check.lean
    `buildSandboxArgs` passes no seccomp program), so the build can kill itself, raise its own
    `oom_score_adj` and hold memory no cap sees (memfd_create), and the counter moves for any
    OOM kill and names no victim (docs/readings/no-filter-reading.md, V14)."""
    err = last_error(text)
    if facts.sandboxes_unstarted:
        return (
            f"lake comparator's sandbox (bwrap) did not start {facts.sandboxes_unstarted} of its "
            f"steps ({_bwrap_said(text)}): {err}"
        )
    if facts.disk_full is not None:
        return f"{facts.disk_full} while lake comparator ran: {err}"
    return None


def comparator_verdict(
    facts: RunFacts,
    text: str,
    *,
    axioms_mode: AxiomsMode = "subset",
    timeout_s: float | None = None,
) -> tuple[Verdict, str]:
    """Map one run of `lake comparator` to a verdict (pure; the module docstring gives the
    exit codes and phases). The grader's own deadline stopping it is a rejection only once the
    solution phase had `timeout_s` to itself; its memory cap once the solution phase began. A
    failed run is could not judge whenever `host_fault` finds the host's doing, in any phase,
    and so is the outer `lake` killed by a signal (it runs outside every sandbox's PID
    namespace and session: `--unshare-all --new-session`, so no step can signal it); else a
    failure inside the solution phase is the submission's, a SIGKILLed step too, also while the
    OOM killer acted (`host_fault`: the sandbox has no signal filter), as on the replay routes
    without the filter (routes/steps.py `untrusted_failure`)."""
    started = facts.solution_phase_at is not None
    if facts.timed_out:
        why = "timed out" + (f" (the {timeout_s:g} s limit ran out)" if timeout_s else "")
        if not started:
            return "not_judged", f"lake comparator {why} before it reached the submission"
        assert facts.solution_phase_at is not None
        ran = facts.seconds if facts.deadline_s is None else min(facts.seconds, facts.deadline_s)
        had = ran - facts.solution_phase_at
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
    if facts.signal is not None:  # the outer `lake`, outside every sandbox: the host's
        return "not_judged", f"lake comparator was killed by signal {facts.signal}: {last_error(text)}"
    if facts.exit_code == 0:
        if OKAY_LINE not in (ln.strip() for ln in lines_of(text)):
            return "not_judged", f"lake comparator exited 0 without saying {OKAY_LINE!r}"
        if axioms_mode == "exact":
            return "not_judged", (
                "lake comparator accepted, but it checks only that the axioms are among "
                f"{', '.join(ALLOWED_AXIOMS)}; axioms_mode=exact (all of them) needs the replay judge"
            )
        return "accepted", OKAY_LINE
    if (why := host_fault(facts, text)) is not None:
        return "not_judged", why
    if facts.exit_code == 1:
        err = last_error(text)
        if not started:
            return "not_judged", f"lake comparator failed before it reached the submission: {err}"
        if _killed_step(err) or facts.step_killed:
            cap = facts.memory_cap_mb
            if cap is not None and facts.peak_rss_mb > cap:
                return "rejected", (
                    f"a step of lake comparator was killed: memory cap exceeded "
                    f"({facts.peak_rss_mb} MiB > {cap} MiB): {err}"
                )
            if facts.oom_killer_acted:  # moved, or cannot be told: still no proof (host_fault)
                return "rejected", (
                    "a step of lake comparator was killed by SIGKILL while the host's OOM killer may "
                    f"have acted (its counter moved, or could not be read), at {facts.peak_rss_mb} MiB; "
                    "Lake's sandbox has no signal filter, so that cannot be told from the submission "
                    f"killing itself, and it counts as its own: {err}"
                )
            return "rejected", (
                f"a step of lake comparator was killed by a SIGKILL that neither the grader nor the "
                f"OOM killer sent: {err}"
            )
        if facts.oom_kills_seen:
            return "rejected", (
                "lake comparator rejected the submission (the host's OOM killer acted during the run; "
                "Lake's sandbox has no signal filter, so that cannot be told from the submission's own "
                f"doing): {err}"
            )
        return "rejected", f"lake comparator rejected the submission: {err}"
    if facts.exit_code == 2:
        return "not_judged", f"lake comparator cannot run: {last_error(text)}"
    return "not_judged", f"lake comparator exited {facts.exit_code}: {last_error(text)}"
