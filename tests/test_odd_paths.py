"""A cache or work directory whose path holds a space or a shell-special character grades as any
other: real Lean takes its paths as argv entries, so nothing may split or expand them, neither
the grader nor the toolchain double that stands in for Lean here (no Lean is run)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import copy_double, double_config, grade_task, needs_comparator, submission

from lean_mod_add_proof.grading.grader import grade
from lean_mod_add_proof.grading.sandbox import probe_sandbox

PROBE = probe_sandbox()
MODES = [
    pytest.param("off", id="plain"),
    pytest.param("on", id="bwrap", marks=pytest.mark.skipif(not PROBE.available, reason=f"{PROBE.reason}")),
]


@pytest.mark.parametrize("sandbox", MODES)
@pytest.mark.parametrize("name", ["with space", "dollar$HOME", "quote'd", "star*", "semi;colon"])
async def test_an_odd_directory_name_grades_like_any_other(tmp_path: Path, name: str, sandbox: str) -> None:
    """The honest proof is accepted in `name`, also after a grade elsewhere in this process (then
    the self-test is remembered, and the grade builds its cache entry itself: where a double that
    split the import paths on spaces once rejected it at the statement check)."""
    first = await grade(submission(), grade_task(), double_config(tmp_path / "plain", sandbox=sandbox))
    assert first.accepted, first.reason
    odd = await grade(submission(), grade_task(), double_config(tmp_path / name, sandbox=sandbox))
    assert odd.accepted and odd.cache == "built", odd.reason
    # by the export route: under `auto` a broken replay route would pass unseen to the comparator
    # (review A of issue 37, D3)
    assert (odd.judge, odd.verdict_from) == ("replay", "export"), odd.reason


@pytest.mark.parametrize("name", ["tool chain", "dollar$HOME", "quote'd", "semi;colon", "tc[ab]", "st?r"])
async def test_an_odd_toolchain_directory_grades_on_the_replay_routes(tmp_path: Path, name: str) -> None:
    """The toolchain's own directory is on every `LEAN_PATH` (its `lib/lean`), and the only entry
    a glob could expand to something stable: a sibling `tca` (for `tc[ab]`) or `star` (for
    `st?r`) holding an empty `Init` is what a globbing double found instead (review A of issue 37,
    D1/D2). Pinned to the replay routes and checked to grade from the export, natively."""
    tc = copy_double(tmp_path / name)
    for sibling in ("tca", "star"):
        (tmp_path / sibling / "lib" / "lean" / "Init").mkdir(parents=True)
    res = await grade(
        submission(), grade_task(), double_config(tmp_path / "w", toolchain_dir=tc, judge="replay")
    )
    assert res.accepted and res.verdict_from == "export" and res.judge_mode == "native", res.reason


@needs_comparator
@pytest.mark.parametrize("name", ["with space", "quote'd", "star*"])
async def test_an_odd_directory_name_grades_on_the_comparator_route(tmp_path: Path, name: str) -> None:
    first = await grade(submission(), grade_task(), double_config(tmp_path / "plain", judge="comparator"))
    assert first.accepted, first.reason
    odd = await grade(submission(), grade_task(), double_config(tmp_path / name, judge="comparator"))
    assert odd.accepted and odd.judge == "comparator", odd.reason
