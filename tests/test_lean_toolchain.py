"""The toolchains users have (issue 30 item 4): the `lean_toolchain` setting names the toolchain
to grade with. It is found the way the pinned one is (its `lean --version` must name exactly that
version) and grades only after its own self-test. Shown with a private copy of the toolchain
double whose `lean --version` says 4.35.0 (shell scripts, not Lean; nothing here says what any
Lean release accepts)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import copy_double, double_config, grade_task

from lean_mod_add_proof.cli import main
from lean_mod_add_proof.constants import reference_submission
from lean_mod_add_proof.grading import selftest, toolchain, toolchain_manifest
from lean_mod_add_proof.grading.grader import grade
from lean_mod_add_proof.grading.lean_names import LEAN_TOOLCHAIN
from lean_mod_add_proof.grading.result import GraderConfig, GraderSettings, flag_name
from lean_mod_add_proof.grading.routes.replay import JUDGE_MEMORY_MB
from lean_mod_add_proof.taskset import LeanTaskConfig

RELEASE = "leanprover/lean4:v4.35.0"


pytestmark = pytest.mark.usefixtures("fresh_memos")


def _release_double(tmp_path: Path) -> Path:
    tc = copy_double(tmp_path / "tc-4.35.0")
    (tc / "double-lean-version").write_text("4.35.0\n")
    return tc


def test_the_default_is_the_seed_pin_and_names_are_checked() -> None:
    assert GraderSettings().lean_toolchain == LEAN_TOOLCHAIN == "leanprover/lean4:v4.35.0-rc2"
    assert GraderConfig(lean_toolchain=RELEASE).lean_toolchain == RELEASE
    for bad in ("stable", "leanprover/lean4:nightly", "leanprover/lean4:v4.35", "v4.35.0"):
        with pytest.raises(ValueError, match="lean_toolchain"):
            GraderConfig(lean_toolchain=bad)


def test_a_version_names_exactly_one_release() -> None:
    assert toolchain.version_of(RELEASE) == "4.35.0"
    assert toolchain.version_matches("Lean (version 4.35.0, x86_64)", "4.35.0")
    assert not toolchain.version_matches("Lean (version 4.35.0-rc2, x86_64)", "4.35.0")
    assert not toolchain.version_matches("Lean (version 4.35.0, x86_64)", "4.35.0-rc2")
    assert toolchain.elan_dir_name(RELEASE) == "leanprover--lean4---v4.35.0"


async def test_a_named_release_grades_the_reference_after_its_own_selftest(tmp_path: Path) -> None:
    tc = _release_double(tmp_path)
    config = double_config(tmp_path, toolchain_dir=tc, lean_toolchain=RELEASE)
    res = await grade(reference_submission(5), grade_task(), config)
    assert res.accepted and res.judged, res.reason
    assert "version 4.35.0," in (res.toolchain or "") and res.verdict_from == "export"
    passes = list((tmp_path / "cache" / "selftest").glob("*.json"))
    assert len(passes) == 1  # its own self-test ran and passed
    # The pass is keyed by the toolchain: the same settings naming another one do not share it.
    found = toolchain.locate_toolchain(tc, lean_toolchain=RELEASE)
    assert isinstance(found, toolchain.Toolchain)
    from lean_mod_add_proof.grading import pipeline

    key = selftest.selftest_key(found, config, pipeline.EXPORT_ROUTE, "p")
    other = selftest.selftest_key(
        found, config.model_copy(update={"lean_toolchain": LEAN_TOOLCHAIN}), pipeline.EXPORT_ROUTE, "p"
    )
    assert key != other


async def test_a_toolchain_that_is_not_the_named_one_cannot_judge(tmp_path: Path) -> None:
    rc2 = copy_double(tmp_path / "tc-rc2")
    res = await grade(
        reference_submission(5),
        grade_task(),
        double_config(tmp_path, toolchain_dir=rc2, lean_toolchain=RELEASE),
    )
    assert not res.judged and res.failed_stage == "toolchain"
    assert "not version 4.35.0" in res.reason and f"--lean-toolchain {RELEASE}" in res.reason
    release = _release_double(tmp_path)
    res = await grade(reference_submission(5), grade_task(), double_config(tmp_path, toolchain_dir=release))
    assert not res.judged and "not version 4.35.0-rc2" in res.reason


def test_the_flags_come_from_the_setting(capsys: pytest.CaptureFixture[str]) -> None:
    assert flag_name("lean_toolchain") == "--lean-toolchain"
    assert "lean_toolchain" in LeanTaskConfig.model_fields  # --env.taskset.task.lean-toolchain
    with pytest.raises(SystemExit):
        main(["grade", "--help"])
    assert "--lean-toolchain" in capsys.readouterr().out


def test_install_lean_installs_the_named_toolchain(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An elan home that already holds the named release (the double stands in): found by its
    own elan directory name and version; a bad name is a usage error."""
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv(toolchain.TOOLCHAIN_ENV, raising=False)
    home = tmp_path / "elan"
    (home / "toolchains").mkdir(parents=True)
    (home / "toolchains" / toolchain.elan_dir_name(RELEASE)).symlink_to(_release_double(tmp_path))
    monkeypatch.setenv("ELAN_HOME", str(home))
    argv = ["install-lean", "--script-url", "http://127.0.0.1:9/x", "--timeout", "3"]
    assert main([*argv, "--lean-toolchain", RELEASE]) == 0
    out = capsys.readouterr().out
    assert f"{RELEASE} is already installed" in out and "version 4.35.0," in out
    assert main([*argv, "--lean-toolchain", "stable"]) == 2


def test_the_default_memory_cap_keeps_15241_out_of_reach() -> None:
    """lean4 #15241 (fixed in rc3, missing from rc2): a use-after-free in the kernel that needs at
    least 18 GB of free memory. The most a grade's process tree may hold by default (the cap on
    its summed resident memory, plus the judge's own allowance on top) must stay far below that
    (docs/trust-model.md)."""

    default_mib = GraderSettings.model_fields["memory_mb"].default
    most_bytes = (default_mib + max(JUDGE_MEMORY_MB.values())) * 1024 * 1024
    assert most_bytes < 18 * 10**9 * 2 / 3, most_bytes


def test_doctor_says_which_kernel_fixes_the_toolchain_lacks(tmp_path: Path) -> None:
    from lean_mod_add_proof.cli.doctor import doctor_checks, kernel_fixes_check, missing_kernel_fixes

    assert [f.pr for f in missing_kernel_fixes("4.35.0-rc2")] == ["#15241", "#15288", "#15289"]
    assert missing_kernel_fixes("4.34.0") and missing_kernel_fixes("4.35.0-rc1")
    assert missing_kernel_fixes("4.35.0-rc3") == () and missing_kernel_fixes("4.35.0") == ()
    assert missing_kernel_fixes("4.36.0") == ()
    default = kernel_fixes_check("4.35.0-rc2", 8192 + 1536)
    assert default.ok and "#15241" in default.detail and "out of reach" in default.detail
    big = kernel_fixes_check("4.35.0-rc2", 20_000)
    assert not big.ok and "REACHABLE" in big.detail and "--lean-toolchain" in big.fix
    assert kernel_fixes_check("4.35.0", 20_000).ok
    rows = {c.name: c for c in doctor_checks(double_config(tmp_path))}
    assert rows["kernel fixes"].ok and "4.35.0-rc2 lacks #15241" in rows["kernel fixes"].detail


def test_the_grade_command_takes_lean_toolchain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from helpers import submission
    from test_cli_grading import _common

    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the default cache dir lives under it
    good = tmp_path / "good.lean"
    good.write_text(submission())
    argv = [
        "grade",
        "p05_h08_s0",
        str(good),
        *_common(tmp_path),
        "--toolchain-dir",
        str(_release_double(tmp_path)),
    ]
    assert main([*argv, "--lean-toolchain", RELEASE, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["accepted"] is True
    assert main([*argv, "--json"]) == 3  # the default names rc2, which this toolchain is not
    assert "not version 4.35.0-rc2" in json.loads(capsys.readouterr().out)["reason"]
    assert main([*argv, "--lean-toolchain", "stable"]) == 2
    assert "bad setting: --lean-toolchain 'stable'" in capsys.readouterr().err


# ---- the toolchain manifest: lib/lean edited in place (issue 39 item 6) ---------------------------


async def test_runtime_mode_a_file_of_lib_lean_rewritten_in_place_is_could_not_judge(tmp_path: Path) -> None:
    """A file of `lib/lean` (on a real toolchain: the Init oleans the judge trusts, and
    libleanshared.so) rewritten in place, same size, same inode, its mtime set back: only
    `bin/` is hashed again before each grade, and size, mtime and inode all survive. Its
    st_ctime cannot be set back, and is now part of the identity."""
    tc = copy_double(tmp_path / "tc")
    config = double_config(tmp_path, toolchain_dir=tc, grade_in="runtime")
    first = await grade(reference_submission(5), grade_task(), config)
    assert first.accepted, first.reason
    init = tc / "lib" / "lean" / "Init.olean"
    st = init.stat()
    data = bytearray(init.read_bytes())
    data[-1] ^= 0x01  # one bit of the last byte, same size
    with open(init, "r+b") as f:  # in place: same inode
        f.write(bytes(data))
    os.utime(init, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = init.stat()
    assert (after.st_size, after.st_ino, after.st_mtime_ns) == (st.st_size, st.st_ino, st.st_mtime_ns)
    selftest._memo.clear()  # a new grading process: only what is on disk is known
    toolchain_manifest.forget()
    second = await grade(reference_submission(5), grade_task(), config)
    assert not second.judged, second.reason
    assert "the toolchain changed after its self-test: lib/lean/Init.olean" in second.reason, second.reason


@pytest.mark.parametrize("named", [RELEASE, LEAN_TOOLCHAIN])
async def test_the_kept_package_names_the_selected_toolchain(tmp_path: Path, named: str) -> None:
    """Issue 37 item 5: `lean-toolchain` is what elan reads (its first line, trimmed: leanprover/elan
    src/elan/toolchain.rs), so a kept package rebuilt with `lake build` uses the toolchain that
    graded it, not always rc2. The comparator's package already did (routes/comparator/package.py)."""
    from lean_mod_add_proof.grading import package as pkgmod

    tc = _release_double(tmp_path) if named == RELEASE else copy_double(tmp_path / "tc-rc2")
    config = double_config(tmp_path, toolchain_dir=tc, lean_toolchain=named, keep_packages=True)
    res = await grade(reference_submission(5), grade_task(), config, skip_selftest=True)
    assert res.accepted and res.package_dir, res.reason
    kept = Path(res.package_dir) / "package" / "lean-toolchain"
    assert kept.read_text(encoding="utf-8") == f"{named}\n"
    assert pkgmod.package_sources(b"n", "w", named)["lean-toolchain"] == f"{named}\n".encode()
    # the rc2 default keeps its cache key: the file's bytes did not change for it
    assert pkgmod.package_sources(b"n", "w") == pkgmod.package_sources(b"n", "w", LEAN_TOOLCHAIN)
