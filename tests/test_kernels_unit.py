"""kernels.py's pure functions, called directly (each of them classifies or builds what a checker
sees, so a changed word or code here changes a verdict or what a checker is told). The pipeline
tests through the toolchain double are in test_kernels.py."""

from __future__ import annotations

import json
import signal
import typing
from pathlib import Path

import pytest

from lean_mod_add_proof.grading import kernels as K
from lean_mod_add_proof.grading.result import KernelRun

_RUN = dict(timed_out=False, limit_exceeded=None)


def _checker(name: str) -> K.Checker:
    return next(c for c in K.CHECKERS if c.name == name)


def _make(path: Path, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(mode)


# ---- shipped: only the toolchain's own executable files count ---------------------------------


def test_shipped_lists_exactly_the_executable_binaries_under_bin(tmp_path: Path) -> None:
    toolchain = tmp_path / "tc"
    _make(toolchain / "bin" / "lean4lean", 0o755)
    _make(toolchain / "bin" / "nanoda_bin", 0o755)
    _make(toolchain / "bin" / "con-ron", 0o644)  # present but not executable
    _make(toolchain / "con-leche", 0o755)  # executable but not under bin/
    _make(tmp_path / "bin" / "leanchecker-paranoid", 0o755)  # a sibling toolchain's bin/
    assert [c.name for c in K.shipped(toolchain)] == ["lean4lean", "nanoda"]


def test_shipped_is_empty_without_binaries_and_complete_with_all(tmp_path: Path) -> None:
    assert K.shipped(tmp_path) == []
    for c in K.CHECKERS:
        _make(tmp_path / "bin" / c.binary, 0o700)
    assert K.shipped(tmp_path) == list(K.CHECKERS)


def test_the_official_kernel_is_named_lean_and_is_no_checker() -> None:
    # The name the replay judge goes by on a result's kernels (pipeline.py), apart from the checkers'.
    assert K.OFFICIAL == "lean" and K.OFFICIAL not in K.CHECKER_NAMES


def test_checker_path_is_the_toolchains_bin_never_path_lookup() -> None:
    assert K.checker_path(Path("/tc"), _checker("nanoda")) == Path("/tc/bin/nanoda_bin")


# ---- nanoda_config: what Lake's runExternalKernel writes --------------------------------------


def test_nanoda_config_is_lakes_config_with_one_thread() -> None:
    text = K.nanoda_config("/tmp/Sub.ndjson", ["propext", "Quot.sound"])
    assert json.loads(text) == {
        "use_stdin": False,
        "export_file_path": "/tmp/Sub.ndjson",
        "permitted_axioms": ["propext", "Quot.sound"],
        "unpermitted_axiom_hard_error": True,
        "num_threads": 1,
        "nat_extension": True,
        "string_extension": True,
    }
    assert json.loads(K.nanoda_config("/e", ()))["permitted_axioms"] == []


def test_the_nanoda_config_file_name() -> None:
    # pipeline.py writes it under the judge's /tmp and passes that path on nanoda's command line.
    assert K.NANODA_CONFIG == "nanoda-config.json"


# ---- checker_argv and the Checker defaults ------------------------------------------------------


def test_a_checker_takes_the_export_path_unless_it_is_nanoda_like() -> None:
    plain = K.Checker("x", "x", ("-a",))
    assert plain.input == "path"
    assert K.checker_argv(Path("/b/x"), plain, "/e.ndjson", "/c.json") == ["/b/x", "-a", "/e.ndjson"]
    nanoda_like = K.Checker("y", "y", (), input="nanoda_config")
    assert K.checker_argv(Path("/b/y"), nanoda_like, "/e.ndjson", "/c.json") == ["/b/y", "/c.json"]


def test_only_the_checkers_that_police_axioms_say_so() -> None:
    # The self-test's axiom canary applies only to these (selftest.checker_canaries).
    assert K.Checker("x", "x", ()).polices_axioms is False
    assert {c.name for c in K.CHECKERS if c.polices_axioms} == {"nanoda", "con-leche", "con-ron"}


def test_the_type_vocabularies_match_what_is_used() -> None:
    # The verdicts are KernelRun's; every input style is one a shipped checker uses.
    assert typing.get_args(K.Verdict) == typing.get_args(KernelRun.model_fields["verdict"].annotation)
    assert set(typing.get_args(K.InputStyle)) == {c.input for c in K.CHECKERS}
    assert len(typing.get_args(K.InputStyle)) == 2


# ---- classify: the exact words that go on a result ----------------------------------------------


@pytest.mark.parametrize("checker", K.CHECKERS, ids=K.CHECKER_NAMES)
def test_classify_each_class_and_its_words(checker: K.Checker) -> None:
    assert K.classify(checker, exit_code=0, signal_no=None, **_RUN) == ("accepted", "accepted")
    assert K.classify(checker, exit_code=1, signal_no=None, **_RUN) == ("rejected", "rejected (exit 1)")
    assert K.classify(checker, exit_code=2, signal_no=None, **_RUN) == ("not judged", "declined (exit 2)")
    assert K.classify(checker, exit_code=3, signal_no=None, **_RUN) == ("not judged", "failed (exit 3)")
    assert K.classify(checker, exit_code=None, signal_no=None, **_RUN) == ("not judged", "failed (exit None)")
    assert K.classify(checker, exit_code=None, signal_no=11, **_RUN) == (
        "not judged",
        "crashed (killed by signal 11)",
    )
    assert K.classify(checker, exit_code=0, signal_no=None, timed_out=True, limit_exceeded=None) == (
        "not judged",
        "timed out (the grade's deadline)",
    )
    assert K.classify(checker, exit_code=0, signal_no=None, timed_out=True, limit_exceeded="disk cap") == (
        "not judged",
        "stopped: disk cap",
    )


def test_sigabrt_is_out_of_memory_only_for_the_checkers_that_abort_on_it() -> None:
    abrt = int(signal.SIGABRT)
    for name in ("con-leche", "con-ron"):
        got = K.classify(_checker(name), exit_code=None, signal_no=abrt, **_RUN)
        assert got == ("not judged", f"ran out of memory (signal {abrt})")
    got = K.classify(_checker("lean4lean"), exit_code=None, signal_no=abrt, **_RUN)
    assert got == ("not judged", f"crashed (killed by signal {abrt})")


# ---- combine ------------------------------------------------------------------------------------


def test_combine_names_every_rejecting_kernel_separated_by_semicolons() -> None:
    ok = KernelRun(name="a", verdict="accepted", detail="accepted")
    no1 = KernelRun(name="b", verdict="rejected", detail="rejected (exit 1)")
    no2 = KernelRun(name="c", verdict="rejected", detail="rejected (exit 1)")
    gone = KernelRun(name="d", verdict="not judged", detail="missing")
    assert K.combine([ok, no1, gone, no2]) == (
        "rejected",
        "kernel b rejected (exit 1); kernel c rejected (exit 1)",
    )


def test_combine_names_every_unjudged_kernel_separated_by_semicolons() -> None:
    ok = KernelRun(name="a", verdict="accepted", detail="accepted")
    gone = KernelRun(name="d", verdict="not judged", detail="missing")
    slow = KernelRun(name="e", verdict="not judged", detail="timed out (the grade's deadline)")
    assert K.combine([gone, ok, slow]) == (
        "not judged",
        "kernel d missing; kernel e timed out (the grade's deadline)",
    )
    assert K.combine([]) == ("accepted", "")
    assert K.combine([ok]) == ("accepted", "")
