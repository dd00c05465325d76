"""signals.py: whose doing a signal is (pure), the one rule the checkers, the judge and the build
read. Every signal this platform names is placed, so a signal added to or dropped from a set
changes a verdict here."""

from __future__ import annotations

import signal
import typing

import pytest

from lean_mod_add_proof.grading import signals as S

#: signal(7), abort(3), POSIX <signal.h>: what a program raises on itself while it runs its code.
#: Not SIGSYS: a trusted program runs without the grader's seccomp filter.
FAULTS = {"SIGABRT", "SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGTRAP"}
#: setrlimit(2): RLIMIT_CPU's soft limit. Not SIGXFSZ: a trusted program's output is a pipe.
CAPS = {"SIGXCPU"}
#: What routes/core.py read as a trusted program's own fault before the fold (`FAULTS_FROM_INPUT`),
#: and the signals only another process sends (`OUTSIDE_ONLY`), as they stood at 0e8b554.
JUDGE_FAULTS_BEFORE = {"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGTRAP", "SIGABRT"}
OUTSIDE_ONLY_BEFORE = {
    "SIGHUP",
    "SIGINT",
    "SIGQUIT",
    "SIGKILL",
    "SIGUSR1",
    "SIGUSR2",
    "SIGTERM",
    "SIGSTKFLT",
    "SIGPWR",
}


@pytest.mark.parametrize("sig", sorted(signal.Signals, key=int), ids=lambda s: s.name)
def test_every_named_signal_has_the_origin_its_class_gives(sig: signal.Signals) -> None:
    expected = "fault" if sig.name in FAULTS else "cap" if sig.name in CAPS else "outside"
    if sig.name == "SIGIOT":  # an alias of SIGABRT on Linux
        expected = "fault"
    assert S.signal_origin(int(sig)) == expected


def test_the_sets_are_exactly_the_documented_ones() -> None:
    assert {signal.Signals(s).name for s in S.FAULT_SIGNALS} == FAULTS
    assert {signal.Signals(s).name for s in S.CAP_SIGNALS} == CAPS
    assert not S.FAULT_SIGNALS & S.CAP_SIGNALS


@pytest.mark.parametrize(
    "name",
    ["SIGKILL", "SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGPIPE", "SIGUSR1", "SIGUSR2", "SIGALRM"],
)
def test_what_only_another_process_sends_is_outside(name: str) -> None:
    assert S.signal_origin(int(getattr(signal, name))) == "outside"


def test_an_unknown_number_is_outside_and_named_by_its_number() -> None:
    assert S.signal_origin(0) == "outside"
    assert S.signal_origin(200) == "outside"
    assert S.signal_name(200) == "signal 200"
    assert S.signal_origin(signal.SIGRTMIN + 1) == "outside"


def test_names_are_the_platform_names() -> None:
    assert S.signal_name(signal.SIGABRT) == "SIGABRT"
    assert S.signal_name(signal.SIGKILL) == "SIGKILL"
    assert S.signal_name(signal.SIGXCPU) == "SIGXCPU"


def test_the_origin_type_names_exactly_the_origins_returned() -> None:
    returned = {S.signal_origin(int(s)) for s in signal.Signals}
    assert typing.get_args(S.SignalOrigin) == ("fault", "cap", "outside")
    assert returned == set(typing.get_args(S.SignalOrigin))


@pytest.mark.parametrize("sig", sorted(signal.Signals, key=int), ids=lambda s: s.name)
def test_the_judge_reads_every_signal_as_it_did_before_the_fold(sig: signal.Signals) -> None:
    """routes/core.py `trusted_signal_is_the_hosts` was `outside or not in FAULTS_FROM_INPUT`. The
    one number whose reading moved is SIGXCPU (a cap now, the host's then), which the process layer
    always reports as the CPU cap (`cpu_cap_reason`) and the judge reads as such before it asks."""
    before = sig.name not in JUDGE_FAULTS_BEFORE and sig.name != "SIGIOT"
    expected = before and sig.name != "SIGXCPU"
    assert S.trusted_signal_is_the_hosts(int(sig)) == expected


@pytest.mark.parametrize("sig", sorted(signal.Signals, key=int), ids=lambda s: s.name)
def test_the_build_reads_every_signal_as_it_did_before_the_fold(sig: signal.Signals) -> None:
    assert S.sent_only_from_outside(int(sig)) == (sig.name in OUTSIDE_ONLY_BEFORE)


def test_what_only_another_process_sends_is_never_a_trusted_program_s_own() -> None:
    assert all(S.signal_origin(s) == "outside" for s in S.OUTSIDE_ONLY)
    assert all(S.trusted_signal_is_the_hosts(s) for s in S.OUTSIDE_ONLY)


def test_a_cap_is_no_host_fault_and_an_unknown_number_is() -> None:
    assert not S.trusted_signal_is_the_hosts(signal.SIGXCPU)
    assert not S.trusted_signal_is_the_hosts(signal.SIGABRT)
    assert S.trusted_signal_is_the_hosts(signal.SIGSYS) and S.trusted_signal_is_the_hosts(signal.SIGXFSZ)
    assert S.trusted_signal_is_the_hosts(200) and not S.sent_only_from_outside(200)
