"""`kernels = all` (issue 27): every checker the toolchain ships reads the export the judge
accepted, and the classes stay apart (kernels.py); the toolchain manifest noticing a changed file
(toolchain_manifest.py, selftest.py). Through real processes with the toolchain double, whose
stand-in checkers have the real binary names, command lines and exit codes."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest
from helpers import copy_double, double_config, grade_task, needs_bwrap, run_double, submission

from lean_mod_add_proof.grading import kernels as K
from lean_mod_add_proof.grading import selftest, toolchain_manifest
from lean_mod_add_proof.grading.grader import grade
from lean_mod_add_proof.grading.result import GraderConfig, KernelRun


@pytest.fixture(autouse=True)
def _fresh() -> None:
    selftest.forget()


def _double(tmp_path: Path) -> Path:
    dest = tmp_path / "double"
    if not dest.exists():
        copy_double(dest)
    return dest


def _names(res) -> list[str]:  # type: ignore[no-untyped-def]
    return [k.name for k in res.kernels]


# ---- pure -----------------------------------------------------------------------------------


def _checker(name: str) -> K.Checker:
    return next(c for c in K.CHECKERS if c.name == name)


def test_only_the_reject_code_rejects_and_only_zero_accepts() -> None:
    con_ron = _checker("con-ron")
    run = dict(timed_out=False, limit_exceeded=None)
    assert K.classify(con_ron, exit_code=0, signal_no=None, **run)[0] == "accepted"
    assert K.classify(con_ron, exit_code=1, signal_no=None, **run)[0] == "rejected"
    for code in (2, 3, 4, 134):
        assert K.classify(con_ron, exit_code=code, signal_no=None, **run)[0] == "not judged"
    assert K.classify(con_ron, exit_code=None, signal_no=signal.SIGABRT, **run) == (
        "not judged",
        f"ran out of memory (signal {int(signal.SIGABRT)})",
    )
    assert K.classify(con_ron, exit_code=None, signal_no=signal.SIGSEGV, **run)[0] == "not judged"
    assert (
        K.classify(con_ron, exit_code=None, signal_no=9, timed_out=True, limit_exceeded=None)[0]
        == "not judged"
    )
    capped = K.classify(
        con_ron, exit_code=None, signal_no=9, timed_out=False, limit_exceeded="memory cap exceeded"
    )
    assert capped[0] == "not judged"


def test_a_rejection_wins_and_acceptance_needs_everyone() -> None:
    ok = KernelRun(name="a", verdict="accepted")
    no = KernelRun(name="b", verdict="rejected", detail="rejected (exit 1)")
    gone = KernelRun(name="c", verdict="not judged", detail="missing")
    assert K.combine([ok, ok]) == ("accepted", "")
    assert K.combine([ok, gone]) == ("not judged", "kernel c missing")
    assert K.combine([ok, gone, no])[0] == "rejected"
    assert "kernel b" in K.combine([ok, gone, no])[1]


def test_command_lines_follow_lake_and_the_checkers() -> None:
    b = Path("/t/bin")
    argv = {c.name: K.checker_argv(b / c.binary, c, "/x/e.ndjson", "/tmp/n.json") for c in K.CHECKERS}
    assert argv["leanchecker-paranoid"] == [
        "/t/bin/leanchecker-paranoid",
        "--silent",
        "--from-export",
        "/x/e.ndjson",
    ]
    assert argv["lean4lean"] == ["/t/bin/lean4lean", "--import", "/x/e.ndjson"]
    assert argv["nanoda"] == ["/t/bin/nanoda_bin", "/tmp/n.json"]
    assert argv["con-leche"] == ["/t/bin/con-leche", "/x/e.ndjson"]
    assert argv["con-ron"] == ["/t/bin/con-ron", "--jobs=1", "/x/e.ndjson"]


# ---- through the pipeline, with the double ----------------------------------------------------


def test_all_kernels_accept_the_reference_and_are_named(tmp_path: Path) -> None:
    res = asyncio.run(run_double(submission(), tmp_path, kernels="all"))
    assert res.accepted, res.reason
    assert _names(res) == [K.OFFICIAL, *K.CHECKER_NAMES]
    assert all(k.verdict == "accepted" and k.seconds > 0 for k in res.kernels)
    assert len(res.kernels) >= 3 and "kernels: lean, leanchecker-paranoid" in res.reason


def test_the_default_runs_one_kernel_and_no_checker(tmp_path: Path) -> None:
    official = asyncio.run(run_double(submission(), tmp_path / "a"))
    everything = asyncio.run(run_double(submission(), tmp_path / "b", kernels="all"))
    assert official.accepted and _names(official) == [K.OFFICIAL]
    binaries = {c.binary for c in K.CHECKERS}
    assert not [c for c in official.commands if Path(c.argv[0]).name in binaries]
    assert len(everything.commands) == len(official.commands) + len(K.CHECKERS)


@pytest.mark.parametrize("name", ["con-ron", "lean4lean"])
def test_a_checker_exiting_with_its_reject_code_rejects_naming_it(tmp_path: Path, name: str) -> None:
    double = _double(tmp_path)
    (double / f"double-checker-{_checker(name).binary}").write_text("reject")
    res = asyncio.run(run_double(submission(), tmp_path, kernels="all", toolchain_dir=double))
    assert res.judged and not res.accepted and res.failed_stage == "leanchecker"
    assert f"kernel {name} rejected (exit 1)" in res.reason
    assert len(res.kernels) == 1 + len(K.CHECKERS)  # every other checker still reports


@pytest.mark.parametrize("mode", ["segv", "missing", "decline", "abort"])
def test_a_crashed_missing_or_declining_checker_is_could_not_judge_naming_it(
    tmp_path: Path, mode: str
) -> None:
    double = _double(tmp_path)
    if mode == "missing":
        (double / "bin" / "con-ron").unlink()
    else:
        (double / "double-checker-con-ron").write_text(mode)
    res = asyncio.run(run_double(submission(), tmp_path, kernels="all", toolchain_dir=double))
    assert not res.judged and not res.accepted and res.reward == 0.0
    assert "kernel con-ron" in res.reason
    expected = {
        "segv": f"crashed (killed by signal {int(signal.SIGSEGV)})",
        "missing": "missing (bin/con-ron)",
        "decline": "declined (exit 2)",
        "abort": "ran out of memory",
    }[mode]
    assert expected in res.reason


def test_a_rejected_proof_never_reaches_the_checkers(tmp_path: Path) -> None:
    res = asyncio.run(run_double(submission("judge replay-fail (kernel) boom"), tmp_path, kernels="all"))
    assert res.judged and not res.accepted
    assert _names(res) == [K.OFFICIAL] and res.kernels[0].verdict == "rejected"


@needs_bwrap
def test_sandboxed_the_checkers_read_the_export_and_the_nanoda_config(tmp_path: Path) -> None:
    double = _double(tmp_path)
    res = asyncio.run(
        run_double(submission(), tmp_path / "ok", kernels="all", sandbox="on", toolchain_dir=double)
    )
    assert res.sandboxed and res.accepted, res.reason
    assert [k.verdict for k in res.kernels] == ["accepted"] * (1 + len(K.CHECKERS))
    (double / "double-checker-nanoda_bin").write_text("segv")
    res = asyncio.run(
        run_double(submission(), tmp_path / "segv", kernels="all", sandbox="on", toolchain_dir=double)
    )
    assert res.sandboxed and not res.judged
    assert f"kernel nanoda crashed (killed by signal {int(signal.SIGSEGV)})" in res.reason


def test_kernels_all_refuses_the_comparator_route(tmp_path: Path) -> None:
    res = asyncio.run(run_double(submission(), tmp_path, kernels="all", judge="comparator"))
    assert not res.judged and "export route only" in res.reason


# ---- the self-test's checker canaries ---------------------------------------------------------


def _graded(tmp_path: Path, **cfg: object):  # type: ignore[no-untyped-def]
    config = double_config(tmp_path, **cfg)
    return asyncio.run(grade(submission(), grade_task(), config))


def test_the_selftest_passes_every_checker_on_the_double(tmp_path: Path) -> None:
    res = _graded(tmp_path, kernels="all")
    assert res.accepted, res.reason
    assert len(res.kernels) >= 3


def test_a_checker_accepting_a_canary_fails_the_selftest_naming_it(tmp_path: Path) -> None:
    double = _double(tmp_path)
    # A nanoda that accepts everything: it never gets to grade.
    (double / "bin" / "nanoda_bin").write_text("#!/bin/sh\nexit 0\n")
    res = _graded(tmp_path, kernels="all", toolchain_dir=double)
    assert not res.judged
    assert "checker canary" in res.reason and "accepted by nanoda" in res.reason


def test_a_checker_without_its_axiom_check_fails_the_selftest_naming_it(tmp_path: Path) -> None:
    # The checker canary "an axiom outside the list" is well typed (its theorem is proved by
    # unfolding Spec): only the axiom check of nanoda/con-leche/con-ron refuses it. Without that
    # check in the double's stand-in, the canary must catch it (it could not while the double's
    # kernel had no delta and refused the canary as a type mismatch).
    double = _double(tmp_path)
    checkers = double / "bin" / "_double_checkers.py"
    text = checkers.read_text(encoding="utf-8")
    check = "        bad = [a for a in used_axioms(export) if a not in permitted]\n"
    assert check in text
    checkers.write_text(text.replace(check, "        bad = []\n"), encoding="utf-8")
    res = _graded(tmp_path, kernels="all", toolchain_dir=double)
    assert not res.judged
    assert "checker canary an axiom outside the list was accepted by nanoda" in res.reason, res.reason


# ---- the toolchain manifest --------------------------------------------------------------------


def test_runtime_mode_a_changed_byte_in_bin_lean_is_could_not_judge(tmp_path: Path) -> None:
    double = _double(tmp_path)
    first = _graded(tmp_path, toolchain_dir=double, grade_in="runtime")
    assert first.accepted, first.reason
    lean = double / "bin" / "lean"
    st = lean.stat()
    data = bytearray(lean.read_bytes())
    data[-2] = ord("#") if data[-2] != ord("#") else ord(" ")  # one byte, same size
    with open(lean, "r+b") as f:  # in place: same inode
        f.write(bytes(data))
    os.utime(lean, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the mtime set back
    assert lean.stat().st_size == st.st_size and lean.stat().st_ino == st.st_ino
    selftest._memo.clear()  # a new grading process: only what is on disk is known
    toolchain_manifest.forget()
    second = _graded(tmp_path, toolchain_dir=double, grade_in="runtime")
    assert not second.judged and "toolchain changed after its self-test: bin/lean" in second.reason


def test_on_a_host_a_changed_toolchain_runs_the_selftest_again(tmp_path: Path) -> None:
    double = _double(tmp_path)
    assert _graded(tmp_path, toolchain_dir=double).accepted
    canaries_before = len(list((tmp_path / "cache" / "toolchain-manifest").glob("*.json")))
    (double / "lib" / "lean" / "extra.olean").write_text("x")
    res = _graded(tmp_path, toolchain_dir=double)
    assert res.accepted, res.reason
    m = toolchain_manifest.recorded(double.resolve(), selftest_version(double))
    assert m is not None and "lib/lean/extra.olean" in m.files and canaries_before == 1


def selftest_version(double: Path) -> str:
    from lean_mod_add_proof.grading.toolchain import locate_toolchain

    found = locate_toolchain(double)
    return found.version  # type: ignore[union-attr]


def test_no_tool_is_resolved_through_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    decoys = tmp_path / "decoys"
    decoys.mkdir()
    hit = tmp_path / "decoy-ran"
    for tool in ("lean", "lake", "leanexport", "leanchecker", *(c.binary for c in K.CHECKERS)):
        (decoys / tool).write_text(f"#!/bin/sh\ntouch {hit}\nexit 0\n")
        (decoys / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{decoys}{os.pathsep}{os.environ['PATH']}")
    res = _graded(tmp_path, kernels="all")
    assert res.accepted, res.reason
    assert not hit.exists()
    double = Path(res.toolchain.split(" (")[0])  # type: ignore[union-attr]
    tools = {Path(c.argv[0]) for c in res.commands}
    assert all(t.is_absolute() and decoys not in t.parents for t in tools)
    assert any(t.parent == double / "bin" for t in tools)


def test_the_setting_reaches_the_taskset_and_the_cli() -> None:
    from lean_mod_add_proof.taskset import RUNTIME_SETTINGS, LeanTaskConfig

    assert GraderConfig(kernels="all").kernels == "all"
    assert "kernels" in LeanTaskConfig.model_fields and "kernels" in RUNTIME_SETTINGS
    with pytest.raises(ValueError):
        GraderConfig(kernels="some")  # type: ignore[arg-type]


def test_on_a_host_an_unchanged_toolchain_is_walked_at_most_once_per_recheck_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The per-grade walk of a real toolchain costs about 130 ms, so on a host a toolchain found
    unchanged is not walked again for `HOST_MANIFEST_RECHECK_S`; a change is then noticed at the
    next walk. (In the runtime box every grade walks: the test above.)"""
    from lean_mod_add_proof.grading import selftest

    double = _double(tmp_path)
    version = selftest_version(double)
    monkeypatch.setattr(selftest, "HOST_MANIFEST_RECHECK_S", 3600.0)
    assert _graded(tmp_path, toolchain_dir=double).accepted  # self-test passes, manifest recorded
    assert _graded(tmp_path, toolchain_dir=double).accepted  # walked: unchanged
    (double / "lib" / "lean" / "extra.olean").write_text("x")
    assert _graded(tmp_path, toolchain_dir=double).accepted  # inside the window: not walked
    m = toolchain_manifest.recorded(double.resolve(), version)
    assert m is not None and "lib/lean/extra.olean" not in m.files
    monkeypatch.setattr(selftest, "HOST_MANIFEST_RECHECK_S", 0.0)
    assert _graded(tmp_path, toolchain_dir=double).accepted  # walked: changed, self-test again
    m = toolchain_manifest.recorded(double.resolve(), version)
    assert m is not None and "lib/lean/extra.olean" in m.files
