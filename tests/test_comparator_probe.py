"""Issue 37, item 3: the comparator's probe checks its host (routes/comparator/probe.py): the
mount points Lake's sandbox needs, `git`, `which`, `env`, a `lake comparator` that answers
(`lake comparator --config <absent file>`: exit 2 "could not read the configuration" means it
exists), and Lake's sandbox starting with Lake's own bwrap arguments. `doctor` names what is
missing. Against the toolchain double (`bin/lake` acts out `mkContext` and the config read) and,
for a bwrap that cannot set the sandbox up, a stand-in bwrap printing real bwrap's words."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import copy_double, needs_comparator, run_double

from lean_mod_add_proof.constants import reference_submission
from lean_mod_add_proof.grading.routes import comparator as cmp
from lean_mod_add_proof.grading.routes.comparator import host, probe

pytestmark = pytest.mark.usefixtures("fresh_memos")

#: What bubblewrap 0.8.0 says when a mount point is missing from the read-only root (measured).
NO_RUN_USER = "bwrap: Can't mkdir /run/user: Read-only file system"


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def _bwrap_without_run_user(tmp_path: Path) -> Path:
    """A stand-in bwrap on a host without /run/user: it fails its set-up as bwrap does there,
    with bwrap's words, and records no `exit-code` (writes nothing to the status fd)."""
    return _script(tmp_path / "bwrap-no-run-user", f'echo "{NO_RUN_USER}" >&2\nexit 1\n')


def test_every_mount_point_lake_needs_must_exist(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for point in host.LAKE_MOUNT_POINTS:
        (root / point.lstrip("/")).mkdir(parents=True, exist_ok=True)
    assert not [m for m in probe.host_requirements(tmp_path, {}, root=root)[1] if "directory" in m]
    (root / "run" / "user").rmdir()
    _, missing = probe.host_requirements(tmp_path, {}, root=root)
    (said,) = [m for m in missing if "directory" in m]
    assert "/run/user" in said and "mkdir -p /run/user" in said
    assert set(host.LAKE_MOUNT_POINTS) == {
        "/home",
        "/root",
        "/run/user",
        "/tmp",
        "/run",
        "/var",
        "/dev",
        "/proc",
    }


def test_lakes_bwrap_arguments_are_check_leans(tmp_path: Path) -> None:
    build = host.lake_sandbox_argv("bwrap", tmp_path / "p", tmp_path / "tc")
    assert build[:4] == ["bwrap", "--ro-bind", "/", "/"]
    tmpfs = [build[i + 1] for i, a in enumerate(build) if a == "--tmpfs"]
    assert tmpfs == ["/home", "/root", "/run/user", "/tmp", "/run", "/var"]
    assert "--share-net" not in build and build[-2:] == ["--chdir", str(tmp_path / "p")]
    env = host.lake_sandbox_argv("bwrap", tmp_path / "p", tmp_path / "tc", env_step=True)
    assert [env[i + 1] for i, a in enumerate(env) if a == "--tmpfs"] == [
        "/home",
        "/root",
        "/run/user",
        "/tmp",
    ]
    assert "--share-net" in env


@needs_comparator
def test_a_lake_comparator_that_answers_is_found_by_asking_it(tmp_path: Path) -> None:
    tc = copy_double(tmp_path / "tc")
    found = cmp.probe_comparator(tc, refresh=True)
    assert found.available and found.subcommand == "comparator", found.reason
    assert probe.CONFIG_UNREADABLE in found.help_text  # the behavioural answer, not the usage
    (tc / "double-lake-challenge").write_text("")
    older = cmp.probe_comparator(tc, refresh=True)
    assert older.available and older.subcommand == "challenge", older.reason
    (tc / "double-lake-no-comparator").write_text("")
    none = cmp.probe_comparator(tc, refresh=True)
    assert not none.available and "knows neither" in none.reason


def test_lakes_own_words_name_what_its_context_lacks(tmp_path: Path) -> None:
    """Exit 2 with a message other than the config's: `mkContext` refused, in Lake's words."""
    lake = _script(
        tmp_path / "lake",
        'echo "error: \\`lake $1\\` needs \\`git\\` on PATH to build inside the sandbox" >&2\nexit 2\n',
    )
    (tmp_path / "p").mkdir()
    sub, lacking, _ = probe.ask_lake(str(lake), tmp_path / "p", {"PATH": "/usr/bin:/bin"})
    assert sub == "comparator" and lacking is not None and "needs `git` on PATH" in lacking
    unclear = _script(
        tmp_path / "lake2", 'case "$1" in --help) exit 0 ;; esac\necho "error: boom" >&2\nexit 1\n'
    )
    sub, lacking, _ = probe.ask_lake(str(unclear), tmp_path / "p", {"PATH": "/usr/bin:/bin"})
    assert sub is None and lacking is not None and "boom" in lacking


@needs_comparator
def test_a_sandbox_that_does_not_start_makes_the_route_unavailable(tmp_path: Path) -> None:
    """The probe runs bwrap with Lake's arguments: a host where it cannot set up is named with
    bwrap's own words, and the route is unavailable before any grade (not a run that fails)."""
    tc = copy_double(tmp_path / "tc")
    bad = _bwrap_without_run_user(tmp_path)
    found = cmp.probe_comparator(tc, environ={"COMPARATOR_BWRAP": str(bad)}, refresh=True)
    assert not found.available and NO_RUN_USER in found.reason, found.reason
    assert "a build step" in found.reason


@needs_comparator
async def test_the_grade_names_the_missing_mount_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COMPARATOR_BWRAP", str(_bwrap_without_run_user(tmp_path)))
    tc = copy_double(tmp_path / "tc")
    res = await run_double(reference_submission(5), tmp_path, toolchain_dir=tc, judge="comparator")
    assert not res.judged and res.failed_stage == "toolchain", res.reason
    assert NO_RUN_USER in res.reason and not res.commands


def test_a_failed_probe_is_asked_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(
        probe, "_probe", lambda tc, env: calls.append(1) or cmp.ComparatorProbe(False, "no", missing=("x",))
    )
    cmp.probe_comparator(tmp_path)
    cmp.probe_comparator(tmp_path)
    assert len(calls) == 1
    monkeypatch.setattr(probe, "PROBE_RETRY_S", 0.0)
    cmp.probe_comparator(tmp_path)
    assert len(calls) == 2


def test_doctor_names_what_the_comparator_lacks(tmp_path: Path) -> None:
    from lean_mod_add_proof.cli.doctor import comparator_check
    from lean_mod_add_proof.grading.result import GraderConfig

    tc = copy_double(tmp_path / "tc")
    (tc / "bin" / "leanchecker").unlink()
    check = comparator_check(tc, GraderConfig(judge="comparator"))
    assert not check.ok and check.required and "leanchecker (not in" in check.detail
    assert "mkdir -p /run/user" in check.fix
    assert not comparator_check(tc, GraderConfig()).required


def test_the_probe_gives_its_part_of_a_first_contact_report(tmp_path: Path) -> None:
    missing = cmp.ComparatorProbe(False, "no", missing=("git (…)",))
    report = probe.probe_report(missing)
    assert report["available"] is False and report["missing"] == ["git (…)"]
    assert "mkdir -p /run/user" in str(report["advice"])
    assert probe.probe_report(cmp.ComparatorProbe(True, "ok", "comparator"))["subcommand"] == "comparator"
