"""The feedback message after a failed attempt: the model's own errors, never the grader's
internals."""

from __future__ import annotations

from lean_mod_add_proof.feedback import FEEDBACK_HEADER, feedback_message, scrub
from lean_mod_add_proof.grading.result import GradeResult


def _build_failure(*errors: str) -> GradeResult:
    return GradeResult(
        stage_reached="build",
        failed_stage="build",
        reason="lean /tmp/lean-mod-add-proof-grade-x/package/LeanCheckedNetwork/Submission.lean "
        "failed (exit 1): 3:4: unknown identifier 'foo'",
        lean_errors=list(errors),
    )


def test_build_failure_gives_stage_reason_errors_and_attempts_left() -> None:
    text = feedback_message(_build_failure("3:4: unknown identifier 'foo'", "9:0: type mismatch"), 2, 2000)
    assert text.startswith(FEEDBACK_HEADER)
    assert "Failed at: compiling your file." in text
    assert "- 3:4: unknown identifier 'foo'" in text and "- 9:0: type mismatch" in text
    assert "You have 2 attempts left." in text
    assert "/tmp" not in text and "lean-mod-add-proof-grade" not in text and "<path>" in text


def test_errors_are_capped() -> None:
    text = feedback_message(_build_failure("1:0: " + "x" * 500, "2:0: " + "y" * 500), 1, 300)
    assert "x" * 290 in text and "yyy" not in text and "1 attempt left" in text


def test_guard_rejection_keeps_its_plain_reason() -> None:
    res = GradeResult(
        stage_reached="guard", failed_stage="guard", reason="guard: forbidden word 'sorry' on line 4"
    )
    text = feedback_message(res, 1, 2000)
    assert "Reason: guard: forbidden word 'sorry' on line 4" in text
    assert "Lean's first errors" not in text


def test_judge_failures_give_only_the_one_line_reason() -> None:
    res = GradeResult(
        stage_reached="statement",
        failed_stage="statement",
        reason="statement check: LeanCheckedNetwork.Net.adds_mod_5 does not have type "
        "LeanCheckedNetwork.Net.Spec",
        lean_errors=["never shown for a judge stage"],
    )
    text = feedback_message(res, 3, 2000)
    assert "checking that your theorem states exactly Spec" in text
    assert "never shown" not in text


def test_scrub_replaces_absolute_paths_only() -> None:
    assert scrub("at /root/.elan/toolchains/x/lib/lean/Init.olean: bad") == "at <path>: bad"
    assert scrub("(a + b) % 5 and a/b and ./rel") == "(a + b) % 5 and a/b and ./rel"
