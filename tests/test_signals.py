"""signals.py: whose doing a signal that ended a trusted program is (pure). Every signal this
platform names is placed, so a signal added to or dropped from a set changes a verdict here."""

from __future__ import annotations

import signal
import typing

import pytest

from lean_mod_add_proof.grading import signals as S

#: signal(7), abort(3), POSIX <signal.h>: what a program raises on itself while it runs its code.
FAULTS = {"SIGABRT", "SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGTRAP", "SIGSYS"}
#: setrlimit(2): RLIMIT_CPU's soft limit, RLIMIT_FSIZE.
CAPS = {"SIGXCPU", "SIGXFSZ"}


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
