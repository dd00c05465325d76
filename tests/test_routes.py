"""Which judge decides (`judge` setting, routes/protocol.py `ROUTES`), through real commands against the
toolchain double (shell scripts, not Lean; nothing here says what Lean accepts). The self-test
runs in these tests: a route grades only once its own canaries passed."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import copy_double, double_config, grade_task, needs_comparator

from lean_mod_add_proof.constants import reference_submission, theorem_name
from lean_mod_add_proof.grading import pipeline
from lean_mod_add_proof.grading.grader import grade
from lean_mod_add_proof.grading.result import GradeResult

SORRY = f"import LeanCheckedNetwork.Weights\n\ntheorem {theorem_name(5)} : True := by\n  sorry\n"


pytestmark = pytest.mark.usefixtures("fresh_memos")


async def _grade(text: str, tmp_path: Path, **cfg: object) -> GradeResult:
    return await grade(text, grade_task(), double_config(tmp_path, **cfg), skip_guard=True)


def test_each_setting_tries_its_routes_in_order() -> None:
    assert pipeline.ROUTES["auto"] == (pipeline.EXPORT_ROUTE, pipeline.OLEAN_ROUTE, pipeline.COMPARATOR_ROUTE)
    assert pipeline.ROUTES["replay"] == (pipeline.EXPORT_ROUTE, pipeline.OLEAN_ROUTE)
    assert pipeline.ROUTES["comparator"] == (pipeline.COMPARATOR_ROUTE,)
    assert [r.label for r in pipeline.ROUTES["auto"]] == ["replay (export)", "replay (olean)", "comparator"]


async def test_the_default_grades_from_the_export_after_its_selftest(tmp_path: Path) -> None:
    res = await _grade(reference_submission(5), tmp_path)
    assert res.accepted, res.reason
    assert (res.judge, res.verdict_from) == ("replay", "export") and res.judge_note == ""
    judge = res.commands[-1]
    assert "--export" in judge.argv and "--olean" not in judge.argv
    assert not any(a.endswith(".olean") for a in judge.argv)


@needs_comparator
async def test_the_comparator_judges_the_reference_and_a_sorry(tmp_path: Path) -> None:
    ok = await _grade(reference_submission(5), tmp_path, judge="comparator")
    assert ok.accepted and ok.judge == "comparator" and ok.verdict_from is None, ok.reason
    assert ok.reason.startswith("accepted by lake comparator")
    lake = ok.commands[-1]
    assert Path(lake.argv[0]).name == "lake" and lake.argv[1] in ("comparator", "challenge")
    bad = await _grade(SORRY + "-- double: judge axioms sorryAx\n", tmp_path, judge="comparator")
    assert bad.judged and not bad.accepted and bad.judge == "comparator"
    assert bad.failed_stage == "leanchecker" and "lake comparator rejected" in bad.reason


async def test_the_comparator_without_a_toolchain_cannot_judge(tmp_path: Path) -> None:
    res = await _grade(reference_submission(5), tmp_path, judge="comparator", toolchain_dir=tmp_path / "none")
    assert not res.judged and res.reward == 0.0 and res.reason.startswith("could not judge")
    assert res.failed_stage == "toolchain"


async def test_a_toolchain_without_lake_comparator_cannot_judge_with_it(tmp_path: Path) -> None:
    toolchain = copy_double(tmp_path / "tc")
    (toolchain / "double-lake-no-comparator").write_text("")
    res = await _grade(reference_submission(5), tmp_path, judge="comparator", toolchain_dir=toolchain)
    assert not res.judged and "comparator" in res.reason


async def test_replay_without_leanexport_falls_back_to_the_olean_with_a_warning(tmp_path: Path) -> None:
    toolchain = copy_double(tmp_path / "tc")
    (toolchain / "double-no-leanexport").write_text("")
    res = await _grade(reference_submission(5), tmp_path, judge="replay", toolchain_dir=toolchain)
    assert res.accepted and (res.judge, res.verdict_from) == ("replay", "olean"), res.reason
    assert res.judge_note.startswith("warning: verdicts come from the build's olean")


def _broken_replay_judge(tmp_path: Path) -> Path:
    """A double whose judge cannot run (no native build, and `lean --run` fails before it
    reaches any submission): both replay routes fail their self-test; the comparator does not
    use that judge."""
    toolchain = copy_double(tmp_path / "tc")
    (toolchain / "double-leanc-fails").write_text("")
    lean = toolchain / "bin" / "lean"
    lean.rename(toolchain / "bin" / "lean-real")
    lean.write_text(
        '#!/bin/sh\ncase " $* " in *" --run "*) echo "judge: broken" >&2; exit 1 ;; esac\n'
        'exec "$(dirname "$0")/lean-real" "$@"\n'
    )
    lean.chmod(0o755)
    return toolchain


@needs_comparator
async def test_auto_falls_through_to_the_comparator_when_no_replay_route_passes(tmp_path: Path) -> None:
    toolchain = _broken_replay_judge(tmp_path)
    res = await _grade(reference_submission(5), tmp_path, toolchain_dir=toolchain)
    assert res.accepted and res.judge == "comparator", res.reason
    # nothing of the replay judge that failed is left on the comparator's result
    assert res.judge_mode is None and res.judge_note == "" and res.verdict_from is None
    bad = await _grade(SORRY + "-- double: judge axioms sorryAx\n", tmp_path, toolchain_dir=toolchain)
    assert bad.judged and not bad.accepted and bad.judge == "comparator"
    # `replay` alone does not fall through: every grade is could not judge, with the reasons
    res = await _grade(reference_submission(5), tmp_path, toolchain_dir=toolchain, judge="replay")
    assert not res.judged and res.failed_stage == "toolchain"
    assert "replay (export): toolchain self-test failed" in res.reason
    assert "replay (olean): toolchain self-test failed" in res.reason


async def test_no_route_passing_is_could_not_judge_naming_each(tmp_path: Path) -> None:
    toolchain = _broken_replay_judge(tmp_path)
    (toolchain / "double-lake-no-comparator").write_text("")
    res = await _grade(reference_submission(5), tmp_path, toolchain_dir=toolchain)
    assert not res.judged and res.reward == 0.0 and res.failed_stage == "toolchain"
    for label in ("replay (export)", "replay (olean)", "comparator"):
        assert f"{label}: " in res.reason


async def test_exact_axioms_cannot_be_judged_by_the_comparator(tmp_path: Path) -> None:
    res = await _grade(reference_submission(5), tmp_path, judge="comparator", axioms_mode="exact")
    assert not res.judged and "comparator" in res.reason
