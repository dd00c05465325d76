"""Grading without the signal filter (libseccomp missing or too old, or the filter not seen in
force; and `sandbox = off`): what the submission's build can make of its own status
(docs/readings/no-filter-reading.md). Without the filter it can send itself any signal, exit with
any status, and, where Yama allows it, copy the eventfd of bwrap's init and write any status bwrap
then reports. The kernel's OOM counter moves for every OOM kill on the host and names no victim,
so a SIGKILL "while the OOM killer acted" is the submission's choice too: a verdict. Against the
toolchain double (not Lean)."""

from __future__ import annotations

import itertools
import signal
from pathlib import Path

import pytest
from helpers import needs_bwrap, run_double, submission

from lean_mod_add_proof.grading.routes import core, steps
from lean_mod_add_proof.grading.sandbox import FilterProof


def oom_counter_moving(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel's OOM-kill counter as the grader reads it, moving at every read: some process
    on the host was OOM-killed while the command ran (any process: the counter names none)."""
    counter = itertools.count()
    monkeypatch.setattr(core, "oom_kill_count", lambda: next(counter))


def without_the_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    """bwrap runs, but the filter is not used: as where it was made and not seen in force, which
    is also how a grade runs where libseccomp is missing (`steps.locate`: no program)."""
    monkeypatch.setattr(steps, "prove_signal_filter", lambda *_: FilterProof(False, "not applied"))


@pytest.mark.parametrize(
    ("mode", "directive"),
    [
        pytest.param("off", "killself KILL", id="plain-killself"),
        pytest.param("on", "killself KILL", id="bwrap-no-filter-killself", marks=needs_bwrap),
        pytest.param("on", "exit 137", id="bwrap-no-filter-exit-137", marks=needs_bwrap),
    ],
)
async def test_a_self_sent_sigkill_while_the_oom_killer_acts_elsewhere_is_a_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, directive: str
) -> None:
    """Without the filter nothing stops build-time code from killing itself with SIGKILL (or, in
    bwrap, exiting 137, which bwrap reports as SIGKILL; unsandboxed, 137 is an exit code), and
    the OOM counter does not say whose process the OOM killer took. A submission that fails its
    build that way whenever any process on the host was OOM-killed meanwhile (or that brings the
    OOM on itself with memory no cap sees: memfd_create is allowed without the filter) must still
    get a verdict. Seen failing before: could not judge, "killed by the host's OOM killer"."""
    if mode == "on":
        without_the_filter(monkeypatch)
    oom_counter_moving(monkeypatch)
    res = await run_double(submission(f"build {directive}"), tmp_path, sandbox=mode)
    assert res.judged and not res.accepted and res.failed_stage == "build", res.reason
    assert "SIGKILL" in res.reason, res.reason
    if mode == "on":
        assert res.sandboxed, res.reason


@needs_bwrap
@pytest.mark.parametrize("oom", [True, False], ids=["oom-counter-moving", "oom-counter-still"])
async def test_a_status_forged_through_bwraps_init_is_a_verdict_without_the_filter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, oom: bool
) -> None:
    """Measured here (no Yama on this kernel): without the filter, build-time code copies the
    eventfd of bwrap's init with pidfd_getfd and writes 138; bwrap reports `{"exit-code": 137}`
    and exits 137 while the build still runs, which reads as SIGKILL. The status document is
    there, so it is never "the sandbox did not start"; and what it forges is no more than what
    the build could do by killing itself: a verdict, with or without an OOM kill on the host
    meanwhile. Seen failing before the fix with the counter moving: could not judge."""
    without_the_filter(monkeypatch)
    if oom:
        oom_counter_moving(monkeypatch)
    res = await run_double(submission("build forge-status 137"), tmp_path, sandbox="on")
    assert res.judged and not res.accepted and res.failed_stage == "build", res.reason
    assert "SIGKILL" in res.reason and "could not forge" not in res.reason, res.reason
    assert res.commands[-1].signal == signal.SIGKILL, res.commands[-1]


@needs_bwrap
async def test_the_filter_refuses_the_forged_status(tmp_path: Path) -> None:
    """Under the filter pidfd_getfd is refused (EPERM): the forging program fails, and the
    build with it (a verdict), whatever the OOM counter does."""
    res = await run_double(submission("build forge-status 137"), tmp_path, sandbox="on")
    assert res.judged and not res.accepted and res.failed_stage == "build", res.reason
    assert "could not forge the sandbox status" in res.reason, res.reason
    assert "Operation not permitted" in res.reason, res.reason
