"""No submission chooses its verdict class: whatever the submission's text, build or proof can
cause is a verdict (`judged=True`), never "could not judge".

Each case is a trigger a red-team pass found (issue 18), acted out with the toolchain double the
way the Lean sources say real Lean behaves. The mechanisms under test:
- the judge's verdict line is printable ASCII (Judge.lean `asciiOnly`) and the grader splits on
  `\\n` alone, so U+2028, U+2029 and U+0085 in a submission's names cannot break the line;
- the judge's output is bounded (names deduplicated and capped, reasons clipped) and read under
  its own fixed cap, so no submission can push it past `output_cap_bytes`;
- the judge's /tmp is made after the build, where the build's sandbox never reaches, so nothing
  the build writes stands on a path the judge's set-up uses;
- every parser of build output is total, so hostile output is plain text.
Host-side faults (the other half of the rule) are in test_host_faults.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import needs_bwrap, run_double, submission

from lean_mod_add_proof.grading.judge import parse_judge_output

SEPARATORS = ["\u2028", "\u2029", "\u0085"]


@pytest.mark.parametrize("char", SEPARATORS, ids=["U+2028", "U+2029", "U+0085"])
async def test_a_line_separator_in_the_verdict_is_still_a_verdict(tmp_path: Path, char: str) -> None:
    # A theorem stated as `"\u2028" = "\u2028"`: the kernel's message quotes the type.
    reason = f'the type is "{char}" = "{char}", not Spec'
    res = await run_double(submission(f"judge statement-fail {reason}"), tmp_path, skip_guard=True)
    assert res.judged and res.failed_stage == "statement", res.reason
    assert "not Spec" in res.reason  # (the one-line reason folds the separator into a space)
    verdict_line = res.commands[-1].output_tail.strip().split("\n")[-1]
    assert verdict_line.isascii()


def test_the_verdict_parser_splits_on_newline_only() -> None:
    line = '{"axioms":[],"check_axioms":[],"imports":[],"judge":1,"reason":"a\u2028b","replayed":1,'
    line += '"theorem_kind":"theorem","verdict":"statement"}'
    # Raw, the separator inside the line is not a line break for the grader; but the judge never
    # prints it raw, and a non-ASCII verdict line is refused as not the judge's.
    with pytest.raises(ValueError, match="ASCII"):
        parse_judge_output('{"phase":"replay"}\n' + line + "\n")
    escaped = line.replace("\u2028", "\\u2028")
    assert parse_judge_output('{"phase":"replay"}\n' + escaped + "\n").reason == "a\u2028b"


@pytest.mark.parametrize("mode", ["off", pytest.param("on", marks=needs_bwrap)])
async def test_a_build_that_writes_beside_its_package_gets_a_verdict(tmp_path: Path, mode: str) -> None:
    # `../verdict`: sandboxed, that is inside the build's own /tmp (where bwrap made the mount
    # points of its binds), which the judge no longer uses; unsandboxed, it is the grade's verdict
    # directory itself, and the grade refuses the build's output (a rejection).
    res = await run_double(submission("build write ../verdict"), tmp_path, sandbox=mode, skip_guard=True)
    assert res.judged, res.reason
    if mode == "on":
        assert res.accepted, res.reason
    else:
        assert res.failed_stage == "build" and "outside its package" in res.reason


async def test_an_unsandboxed_build_that_plants_the_export_file_gets_a_verdict(tmp_path: Path) -> None:
    # The export's file is the grader's, beside the package; only an unsandboxed build can reach
    # it. Planting it first is the submission's doing: a rejection, never "could not judge".
    res = await run_double(submission("build write ../export.ndjson"), tmp_path, skip_guard=True)
    assert res.judged and res.failed_stage == "build", res.reason
    assert "export.ndjson exists already" in res.reason


async def test_many_duplicate_imports_stay_under_the_smallest_output_cap(tmp_path: Path) -> None:
    text = "import LeanCheckedNetwork.Weights\n" * 400 + submission()
    res = await run_double(text, tmp_path, output_cap_bytes=1024, skip_guard=True)
    assert res.accepted and res.judged, res.reason
    judge = res.commands[-1]
    assert not judge.truncated and judge.output_bytes < 1024


async def test_more_imports_than_the_verdict_lists_end_in_a_marker(tmp_path: Path) -> None:
    # 20 distinct (unknown) modules: the judge lists 16 and a marker, and it is a rejection.
    extra = "".join(f"import LeanCheckedNetwork.Extra{i}\n" for i in range(20))
    res = await run_double(extra + submission(), tmp_path, skip_guard=True)
    assert res.judged and not res.accepted


async def test_deeply_nested_json_from_the_build_is_plain_text(tmp_path: Path) -> None:
    res = await run_double(
        submission("build nested 100000", "build fail it stopped"), tmp_path, skip_guard=True
    )
    assert res.judged and res.failed_stage == "build", res.reason
    assert "internal grader error" not in res.reason


async def test_a_judge_that_crashes_on_the_submissions_data_is_a_rejection(tmp_path: Path) -> None:
    # After `{"phase":"replay"}` the judge is reading the submission: its crash is a verdict.
    res = await run_double(submission("judge crash"), tmp_path)
    assert res.judged and res.failed_stage == "leanchecker" and not res.accepted, res.reason


async def test_a_flood_of_panics_in_the_judge_is_a_verdict(tmp_path: Path) -> None:
    # Crafted module data can make the replay panic once per absent name (a `get!` lookup) and go
    # on; the judge runs with LEAN_ABORT_ON_PANIC=1, so the first panic aborts it on the
    # submission's data: a rejection, not "more output than the cap".
    res = await run_double(submission("judge panics 20000"), tmp_path)
    assert res.judged and res.failed_stage == "leanchecker" and not res.accepted, res.reason
    assert "signal 6" in res.reason


async def test_a_judge_output_past_the_cap_still_ends_in_its_verdict(tmp_path: Path) -> None:
    # Whatever comes before it, the verdict line is last and bounded: the kept tail holds it.
    # (Without LEAN_ABORT_ON_PANIC the double's panics go on, as Lean's would.)
    from lean_mod_add_proof.grading.routes import core

    real = core.CommandEnv.run

    async def no_abort(self, *args, **kw):  # type: ignore[no-untyped-def]
        kw.pop("extra_env", None)
        return await real(self, *args, **kw)

    mp = pytest.MonkeyPatch()
    mp.setattr(core.CommandEnv, "run", no_abort)
    try:
        res = await run_double(submission("judge panics 20000"), tmp_path, output_cap_bytes=1024)
    finally:
        mp.undo()
    assert res.accepted and res.commands[-1].truncated, res.reason


@pytest.mark.parametrize("mode", ["off", pytest.param("on", marks=needs_bwrap)])
async def test_many_empty_files_hit_the_disk_cap(tmp_path: Path, mode: str) -> None:
    # An empty file holds no blocks but an inode: each entry costs the cap at least 4 KiB, so a
    # build cannot exhaust the inodes or stall the clean-up under the cap.
    res = await run_double(
        submission("build manyfiles 5000"), tmp_path, sandbox=mode, max_disk_mb=16, skip_guard=True
    )
    assert res.judged and res.failed_stage == "build" and "disk cap exceeded" in res.reason, res.reason


@needs_bwrap
async def test_dev_shm_is_on_the_grades_disk(tmp_path: Path) -> None:
    # /dev/shm in the sandbox is the grade's own tmp/ (disk, counted by the disk cap), not RAM.
    res = await run_double(
        submission("build bigfile-at /dev/shm/x 40"), tmp_path, sandbox="on", max_disk_mb=16, skip_guard=True
    )
    assert res.judged and res.failed_stage == "build" and "disk cap exceeded" in res.reason, res.reason


def test_a_deeply_nested_line_in_the_judges_output_is_no_verdict_not_a_crash() -> None:
    nested = '{"judge":' * 100_000 + "1" + "}" * 100_000
    with pytest.raises(ValueError, match="verdict"):
        parse_judge_output('{"phase":"replay"}\n' + nested + "\n")
