"""The verdict stage sees only what the grader placed: the toolchain's library, byte-verified
copies of the trusted Network/Weights outputs, and the submission's own olean (by file name, on
no search path). Whatever else the untrusted build writes is invisible to it. Shown against the
toolchain double, which resolves modules the way Lean's `findWithExt` does (first search-path
entry holding the module's root wins) and lists what it can see."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import DOUBLE_DIR, build_output, needs_bwrap, run_double, submission, toolchain_dir_of

from lean_mod_add_proof.grading.judge_source import judge_text

PLANTS = [
    ".lake/build/lib/lean/Init.olean",
    ".lake/build/lib/lean/Init/Prelude.olean",
    ".lake/build/lib/lean/LeanCheckedNetwork/Evil.olean",
    ".lake/build/lib/lean/Evil.olean",
    "Judge.lean",
]


def _judge_view(output: str) -> tuple[str, str]:
    """The judge's LEAN_PATH and its directory listing, from `judge env` output."""
    lean_path = next(line for line in output.splitlines() if line.startswith("LEAN_PATH="))
    return lean_path.removeprefix("LEAN_PATH="), output


@pytest.mark.parametrize("olean_route", [False, True], ids=["export", "olean"])
@pytest.mark.parametrize("mode", ["off", pytest.param("on", marks=needs_bwrap)])
async def test_planted_files_are_invisible_to_the_judge(tmp_path: Path, mode: str, olean_route: bool) -> None:
    directives = [f"build plant {p}" for p in PLANTS] + ["judge env"]
    # The guard would refuse `.lake` paths; it is off because this layer must hold without it.
    res = await run_double(
        submission(*directives),
        tmp_path,
        sandbox=mode,
        keep_packages=True,
        skip_guard=True,
        olean_route=olean_route,
    )
    assert res.accepted, res.reason
    build_out = build_output(res)
    assert all(f"planted {p}" in build_out for p in PLANTS)  # the plants really happened
    lean_path, listing = _judge_view(res.commands[-1].output_tail)
    entries = lean_path.split(":")
    toolchain = toolchain_dir_of(res) if res.toolchain else DOUBLE_DIR
    assert entries[0] == str(toolchain / "lib" / "lean")  # the toolchain first
    assert entries[1:] == [str(Path(res.package_dir or "") / "verdict" / "lib")]
    assert "package" not in lean_path and ".lake" not in lean_path
    verdict = Path(res.package_dir or "") / "verdict"
    found = sorted(str(p.relative_to(verdict)) for p in verdict.rglob("*") if p.is_file())
    # With the export, no file of the submission's build is there at all: only the text.
    submitted = (
        ["submission/Submission.ilean", "submission/Submission.olean"]
        if olean_route
        else ["submission/Submission.ndjson"]
    )
    assert found == [
        "Judge.lean",
        "lib/LeanCheckedNetwork/Network.ilean",
        "lib/LeanCheckedNetwork/Network.olean",
        "lib/LeanCheckedNetwork/Weights.ilean",
        "lib/LeanCheckedNetwork/Weights.olean",
        *submitted,
    ]
    assert res.verdict_from == ("olean" if olean_route else "export")
    judge_argv = res.commands[-1].argv
    assert olean_route or not any("olean" in a for a in judge_argv)
    # the judge program is the grader's text for the route, not the one the build planted
    expected = judge_text("olean" if olean_route else "export").encode("utf-8")
    assert (verdict / "Judge.lean").read_bytes() == expected
    assert "Evil" not in listing


async def test_a_forged_import_of_a_built_module_is_rejected_by_name(tmp_path: Path) -> None:
    res = await run_double(submission("build forge-dep LeanCheckedNetwork.Evil"), tmp_path, olean_route=True)
    assert res.judged and not res.accepted and res.failed_stage == "leanchecker"
    assert "LeanCheckedNetwork.Evil" in res.reason and "not allowed" in res.reason


async def test_the_build_resolves_init_from_the_toolchain_even_when_one_is_planted(tmp_path: Path) -> None:
    # A planted Init in the package must not shadow core for the build either: the toolchain's
    # library comes first on every LEAN_PATH the grader sets.
    first = await run_double(submission(), tmp_path, keep_packages=True)
    pkg = Path(first.package_dir or "") / "package"
    (pkg / ".lake/build/lib/lean/Init.olean").write_text("planted\n")
    olean = (pkg / ".lake/build/lib/lean/LeanCheckedNetwork/Submission.olean").read_text()
    assert f"import Init {DOUBLE_DIR / 'lib' / 'lean' / 'Init.olean'}" in olean


@needs_bwrap
async def test_the_judge_runs_read_only(tmp_path: Path) -> None:
    res = await run_double(submission("judge write Judge.lean", "judge write lib/x"), tmp_path, sandbox="on")
    assert res.accepted, res.reason
    assert "judge wrote" not in res.commands[-1].output_tail


@pytest.mark.parametrize("target", ["LeanCheckedNetwork/Weights.lean", "/etc/hostname", "/dev/zero"])
async def test_a_build_output_that_is_a_symlink_is_refused(tmp_path: Path, target: str) -> None:
    # Build-time code replaces the submission's olean with a link: the copy into the verdict
    # directory never follows links, so the judge cannot be pointed at another file. With the
    # export the exporter reads the link instead (inside the sandbox) and fails on its header.
    res = await run_double(
        submission(f"build olean-link {target}"), tmp_path, skip_guard=True, olean_route=True
    )
    assert res.judged and not res.accepted and res.failed_stage == "build"
    assert "cannot be judged" in res.reason and "Submission.olean" in res.reason
    res = await run_double(submission(f"build olean-link {target}"), tmp_path, skip_guard=True)
    assert res.judged and not res.accepted and res.failed_stage == "build" and "leanexport" in res.reason


@pytest.mark.parametrize("part", ["olean.server", "olean.private"])
async def test_module_system_olean_parts_mean_a_forged_build(tmp_path: Path, part: str) -> None:
    # A file without a `module` header never has these; the judge is not given a second olean.
    planted = f".lake/build/lib/lean/LeanCheckedNetwork/Submission.{part}"
    res = await run_double(submission(f"build plant {planted}"), tmp_path, skip_guard=True, olean_route=True)
    assert res.judged and not res.accepted and res.failed_stage == "build"
    assert "which no plain file has" in res.reason
