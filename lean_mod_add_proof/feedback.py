"""What the model is told after a failed attempt, when compiler feedback is on (pure).

Only the model's own errors: the failed stage, the grader's one-line reason, the first Lean
errors of its own file (positions and messages) and how many attempts are left. Never the
grader's internals: no paths on the grading host (they are replaced), no command lines, no
output of the trusted judge beyond its one-line reason, and a guard rejection keeps its plain
one-line reason.
"""

from __future__ import annotations

import re

from lean_mod_add_proof.grading.result import GradeResult

#: Marks the grader's feedback messages in a conversation (the baseline server looks for it).
FEEDBACK_HEADER = "Your proof was not accepted."

_STAGE_TEXT = {
    "extract": "finding the ```lean block in your reply",
    "guard": "the text rules (checked before Lean runs)",
    "build": "compiling your file",
    "leanchecker": "the kernel replay of your declarations",
    "statement": "checking that your theorem states exactly Spec",
    "axioms": "the axiom check",
}
# An absolute path (host directories, the toolchain, the grade's package): never shown.
_PATH_RE = re.compile(r"(?<![\w.])/(?:[\w.@+-]+/)*[\w.@+-]+")


def scrub(text: str) -> str:
    """`text` with every absolute path replaced by `<path>` (pure)."""
    return _PATH_RE.sub("<path>", text)


def feedback_message(result: GradeResult, attempts_left: int, feedback_chars: int) -> str:
    """The user message that answers a failed (judged) attempt."""
    stage = result.failed_stage or "axioms"
    lines = [
        FEEDBACK_HEADER,
        f"Failed at: {_STAGE_TEXT.get(stage, stage)}.",
        f"Reason: {scrub(result.reason)}",
    ]
    if result.lean_errors and stage == "build":
        errors, used = [], 0
        for error in result.lean_errors:
            text = scrub(error).strip()
            if used + len(text) > feedback_chars:
                text = text[: max(0, feedback_chars - used)].rstrip()
                if text:
                    errors.append(text + " …")
                break
            errors.append(text)
            used += len(text)
        if errors:
            lines += ["", "Lean's first errors (line:column: message):", *(f"- {e}" for e in errors)]
    lines += [
        "",
        f"You have {attempts_left} attempt{'s' if attempts_left != 1 else ''} left. Answer with the "
        "whole corrected file LeanCheckedNetwork/Submission.lean in one ```lean block.",
    ]
    return "\n".join(lines)
