"""A cache or work directory whose path holds a space or a shell-special character grades as any
other: real Lean takes its paths as argv entries, so nothing may split or expand them, neither
the grader nor the toolchain double that stands in for Lean here (no Lean is run)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import double_config, grade_task, needs_comparator, submission

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


@needs_comparator
@pytest.mark.parametrize("name", ["with space", "quote'd", "star*"])
async def test_an_odd_directory_name_grades_on_the_comparator_route(tmp_path: Path, name: str) -> None:
    first = await grade(submission(), grade_task(), double_config(tmp_path / "plain", judge="comparator"))
    assert first.accepted, first.reason
    odd = await grade(submission(), grade_task(), double_config(tmp_path / name, judge="comparator"))
    assert odd.accepted and odd.judge == "comparator", odd.reason
