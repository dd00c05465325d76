"""The comparator route's verdict, pure (grading/routes/comparator/verdict.py): each reason word
for word, the boundaries, and the outcome model. Written against the survivors of its first
mutation run (benchmarks/mutate.py, 76.7 %): each test below kills at least one."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from lean_mod_add_proof.grading.lean_names import ALLOWED_AXIOMS
from lean_mod_add_proof.grading.routes.comparator.verdict import (
    OKAY_LINE,
    ComparatorOutcome,
    RunFacts,
    comparator_verdict,
    host_fault,
)

ERR = "error: Child exited with 137"


def test_a_timeout_says_which_limit_ran_out_and_where() -> None:
    facts = RunFacts(exit_code=None, signal=9, timed_out=True, solution_phase_at=1.0, seconds=9.0)
    assert comparator_verdict(facts, "", timeout_s=2.0) == (
        "rejected",
        "lake comparator timed out (the 2 s limit ran out) while building or judging the submission",
    )
    assert comparator_verdict(facts, "") == (
        "rejected",
        "lake comparator timed out while building or judging the submission",
    )
    before = RunFacts(exit_code=None, signal=9, timed_out=True, seconds=9.0)
    assert comparator_verdict(before, "", timeout_s=2.0) == (
        "not_judged",
        "lake comparator timed out (the 2 s limit ran out) before it reached the submission",
    )


def test_a_solution_phase_that_had_exactly_its_time_is_rejected() -> None:
    """`had < timeout_s`: the full limit to itself is enough for the timeout to be the submission's."""
    exact = RunFacts(exit_code=None, signal=9, timed_out=True, solution_phase_at=3.0, seconds=5.0)
    assert comparator_verdict(exact, "", timeout_s=2.0)[0] == "rejected"
    short = RunFacts(exit_code=None, signal=9, timed_out=True, solution_phase_at=3.0, seconds=4.5)
    assert comparator_verdict(short, "", timeout_s=2.0) == (
        "not_judged",
        "lake comparator timed out, but its trusted steps left the submission 1.5 s of its 2 s",
    )
    # the kill came late (a loaded host): the time to the deadline counts, not to the kill
    late = RunFacts(
        exit_code=None, signal=9, timed_out=True, solution_phase_at=3.0, seconds=9.0, deadline_s=4.5
    )
    assert comparator_verdict(late, "", timeout_s=2.0)[0] == "not_judged"


def test_a_cap_names_itself_in_the_reason() -> None:
    after = RunFacts(exit_code=None, signal=9, limit_exceeded="memory cap exceeded", solution_phase_at=0.5)
    assert comparator_verdict(after, "") == (
        "rejected",
        "lake comparator stopped: memory cap exceeded while building or judging the submission",
    )
    before = RunFacts(exit_code=None, signal=9, limit_exceeded="memory cap exceeded")
    assert comparator_verdict(before, "") == (
        "not_judged",
        "lake comparator stopped: memory cap exceeded before it reached the submission",
    )


def test_axioms_mode_exact_says_why_the_comparator_cannot_serve_it() -> None:
    facts = RunFacts(exit_code=0, solution_phase_at=0.5)
    assert comparator_verdict(facts, OKAY_LINE + "\n", axioms_mode="exact") == (
        "not_judged",
        "lake comparator accepted, but it checks only that the axioms are among "
        f"{', '.join(ALLOWED_AXIOMS)}; axioms_mode=exact (all of them) needs the replay judge",
    )
    assert comparator_verdict(facts, OKAY_LINE + "\n") == ("accepted", OKAY_LINE)


def test_a_killed_step_at_exactly_the_cap_is_not_over_it() -> None:
    """`peak > cap`: at the cap itself the SIGKILL was not the cap's (the memory watch kills above it)."""
    at_cap = RunFacts(exit_code=1, solution_phase_at=0.5, peak_rss_mb=512, memory_cap_mb=512)
    assert comparator_verdict(at_cap, ERR + "\n") == (
        "rejected",
        "a step of lake comparator was killed by a SIGKILL that neither the grader nor the OOM killer "
        f"sent: {ERR}",
    )
    over = RunFacts(exit_code=1, solution_phase_at=0.5, peak_rss_mb=513, memory_cap_mb=512)
    assert comparator_verdict(over, ERR + "\n") == (
        "rejected",
        f"a step of lake comparator was killed: memory cap exceeded (513 MiB > 512 MiB): {ERR}",
    )


@pytest.mark.parametrize(
    ("verdict", "judged", "accepted"),
    [("accepted", True, True), ("rejected", True, False), ("not_judged", False, False)],
)
def test_the_outcome_model(verdict: str, judged: bool, accepted: bool) -> None:
    out = ComparatorOutcome(verdict=verdict, reason="r")  # type: ignore[arg-type]
    assert (out.judged, out.accepted) == (judged, accepted)
    assert (out.judge, out.subcommand, out.commands, out.peak_rss_mb) == ("comparator", None, [], 0)
    assert ComparatorOutcome(verdict=verdict, reason="r", judge="comparator").judge == "comparator"  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        out.reason = "changed"  # frozen: an outcome is what the run decided


def test_the_outcome_model_refuses_an_unknown_verdict() -> None:
    with pytest.raises(ValidationError):
        ComparatorOutcome(verdict="XXmutantXX", reason="r")  # type: ignore[arg-type]


def test_run_facts_default_to_nothing_seen() -> None:
    facts = RunFacts(exit_code=1)
    assert (facts.signal, facts.timed_out, facts.limit_exceeded, facts.solution_phase_at) == (
        None,
        False,
        None,
        None,
    )
    assert (facts.seconds, facts.deadline_s, facts.oom_killer_acted, facts.oom_kills_seen) == (
        0.0,
        None,
        False,
        False,
    )
    assert (facts.peak_rss_mb, facts.memory_cap_mb, facts.sandboxes_unstarted) == (0, None, 0)
    assert (facts.step_killed, facts.disk_full) == (False, None)


def test_a_host_fault_names_bwraps_own_last_words_and_lakes_last_error() -> None:
    """`host_fault` (pure): an unstarted sandbox quotes bwrap's last `bwrap:` line (or says there
    was none) and Lake's last error; a full disk is the host's; the OOM counter alone is not."""
    text = "bwrap: first\nbwrap: second\nbwrap: Creating new namespace failed: No space left on device\n"
    text += "error: Child exited with 1\n"
    unstarted = RunFacts(exit_code=1, sandboxes_unstarted=2)
    assert host_fault(unstarted, text) == (
        "lake comparator's sandbox (bwrap) did not start 2 of its steps (bwrap: Creating new namespace "
        "failed: No space left on device): error: Child exited with 1"
    )
    assert host_fault(unstarted, "error: x\n") == (
        "lake comparator's sandbox (bwrap) did not start 2 of its steps (no bwrap message): error: x"
    )
    disk = RunFacts(exit_code=1, disk_full="the work disk was full (12 KiB free)")
    assert (
        host_fault(disk, "error: y\n")
        == "the work disk was full (12 KiB free) while lake comparator ran: error: y"
    )
    # The OOM counter alone is no host fault (V14 of docs/readings/no-filter-reading.md): it moves
    # for any OOM kill and names no victim, and Lake's sandbox has no filter.
    for oom in (
        RunFacts(exit_code=1, oom_kills_seen=True, oom_killer_acted=True, peak_rss_mb=512, memory_cap_mb=512),
        RunFacts(exit_code=1, oom_kills_seen=True, oom_killer_acted=True, peak_rss_mb=9999),
        RunFacts(exit_code=1, oom_killer_acted=True),
    ):
        assert host_fault(oom, "error: z\n") is None
    assert host_fault(RunFacts(exit_code=1), "error: z\n") is None
    # through the verdict: could not judge, word for word
    assert comparator_verdict(disk, "error: y\n") == ("not_judged", host_fault(disk, "error: y\n"))


AFTER = "Resolving dependencies\nBuilding Challenge\nBuilding LeanCheckedNetwork.Submission\n"
KILLED_WHILE_OOM = (
    "a step of lake comparator was killed by SIGKILL while the host's OOM killer may have acted (its "
    "counter moved, or could not be read), at 100 MiB; Lake's sandbox has no signal filter, so that "
    f"cannot be told from the submission killing itself, and it counts as its own: {ERR}"
)


@pytest.mark.parametrize("seen", [True, False])
def test_a_killed_step_while_the_oom_killer_may_have_acted_is_the_submissions(seen: bool) -> None:
    """V14 (docs/readings/no-filter-reading.md): Lake's sandbox has no signal filter, so the build
    can kill itself and hold memory no cap sees (memfd_create), and the OOM counter names no
    victim. Before: could not judge, "killed by the host's OOM killer"."""
    facts = RunFacts(
        exit_code=1,
        solution_phase_at=0.5,
        oom_killer_acted=True,
        oom_kills_seen=seen,
        peak_rss_mb=100,
        memory_cap_mb=512,
    )
    assert comparator_verdict(facts, AFTER + ERR + "\n") == ("rejected", KILLED_WHILE_OOM)
    # bwrap's record of the kill (`exit-code` 137) says the same when Lake's words do not
    recorded = RunFacts(exit_code=1, solution_phase_at=0.5, oom_killer_acted=True, step_killed=True)
    assert comparator_verdict(recorded, AFTER + "error: x\n")[0] == "rejected"


def test_a_failure_while_the_oom_killer_acted_is_a_rejection_that_says_so() -> None:
    """Before: could not judge, "the host's OOM killer acted while lake comparator ran" (a plain
    failure, `Child exited with 1`: the build's own `lean` killed inside the step, or the build
    failing on its own). The counter is named in the reason for whoever reads it."""
    err = "error: Child exited with 1"
    seen = RunFacts(exit_code=1, solution_phase_at=0.5, oom_killer_acted=True, oom_kills_seen=True)
    assert comparator_verdict(seen, AFTER + err + "\n") == (
        "rejected",
        "lake comparator rejected the submission (the host's OOM killer acted during the run; Lake's "
        "sandbox has no signal filter, so that cannot be told from the submission's own doing): "
        f"{err}",
    )
    unknown = RunFacts(exit_code=1, solution_phase_at=0.5, oom_killer_acted=True)
    assert comparator_verdict(unknown, AFTER + err + "\n") == (
        "rejected",
        f"lake comparator rejected the submission: {err}",
    )


def test_what_only_trusted_processes_suffer_stays_the_hosts_while_the_oom_killer_acts() -> None:
    """The outer `lake` (outside every sandbox's PID namespace: Check.lean `buildSandboxArgs`,
    `--unshare-all --new-session`) killed by a signal, and a sandbox whose bwrap recorded no
    `exit-code` (bwrap's monitor is outside its sandbox's namespace too, and writes the document
    whenever its command was exec'd): could not judge, with or without the OOM counter; and so
    is any failure before the solution phase."""
    oom = {"oom_killer_acted": True, "oom_kills_seen": True, "solution_phase_at": 0.5}
    outer = RunFacts(exit_code=None, signal=9, **oom)  # type: ignore[arg-type]
    assert comparator_verdict(outer, AFTER + ERR + "\n") == (
        "not_judged",
        f"lake comparator was killed by signal 9: {ERR}",
    )
    unstarted = RunFacts(exit_code=1, sandboxes_unstarted=1, step_killed=True, **oom)  # type: ignore[arg-type]
    assert comparator_verdict(unstarted, AFTER + ERR + "\n") == (
        "not_judged",
        f"lake comparator's sandbox (bwrap) did not start 1 of its steps (no bwrap message): {ERR}",
    )
    trusted = RunFacts(exit_code=1, oom_killer_acted=True, oom_kills_seen=True)
    assert comparator_verdict(trusted, ERR + "\n") == (
        "not_judged",
        f"lake comparator failed before it reached the submission: {ERR}",
    )
