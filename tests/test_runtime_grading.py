"""Reading back a grade made inside the rollout's runtime box: only a well-formed result whose
verdict agrees with the grader's exit code counts; everything else is could-not-judge."""

from __future__ import annotations

import json

import pytest

from lean_mod_add_proof.grading.result import GradeResult
from lean_mod_add_proof.taskset import result_from_box


def _unjudged(reason: str) -> GradeResult:
    return GradeResult(reason=f"could not judge: {reason}", judged=False, failed_stage="toolchain")


ACCEPTED = json.dumps(GradeResult(stage_reached="axioms", reason="accepted").model_dump(mode="json"))
REJECTED = json.dumps(
    GradeResult(stage_reached="statement", failed_stage="statement").model_dump(mode="json")
)
UNJUDGED = json.dumps(
    GradeResult(stage_reached="toolchain", failed_stage="toolchain", judged=False).model_dump(mode="json")
)


@pytest.mark.parametrize(
    ("code", "stdout", "accepted", "judged"),
    [(0, ACCEPTED, True, True), (1, REJECTED, False, True), (3, UNJUDGED, False, False)],
)
def test_agreeing_results_are_taken(code: int, stdout: str, accepted: bool, judged: bool) -> None:
    res = result_from_box(code, stdout, "", _unjudged)
    assert (res.accepted, res.judged) == (accepted, judged)


@pytest.mark.parametrize(
    ("code", "stdout", "why"),
    [
        (1, ACCEPTED, "disagrees"),  # an acceptance with a failing exit code
        (0, REJECTED, "disagrees"),
        (0, "", "printed no result"),
        (127, "sh: lean-mod-add-proof: not found", "printed no result"),
        (0, "[1, 2]", "refused"),
        (2, json.dumps({"error": "unknown task id"}), "unknown task id"),
        (0, json.dumps({"stage_reached": "nowhere"}), "unreadable"),
        (0, ACCEPTED + "\ntrailing", "printed no result"),
    ],
)
def test_anything_else_is_could_not_judge(code: int, stdout: str, why: str) -> None:
    res = result_from_box(code, stdout, "", _unjudged)
    assert not res.accepted and not res.judged and why in res.reason
