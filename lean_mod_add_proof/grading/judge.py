"""The trusted judge's command line and the one JSON line it prints (pure).

`Judge.lean` (next to this module) runs once per grade after the build, in a fresh directory that
holds only itself, byte-verified Network/Weights outputs under `lib/` and, under `submission/`,
the submission's NDJSON export (`leanexport`'s text: nothing the build wrote is mapped) or, where
the toolchain has no working export, its olean (read without importing it, imports checked).
It replays the submission's constants through the kernel, kernel-checks `theorem <check> : Spec
:= <theorem>`, and walks the axioms itself. Its protocol:

- argv: `lean --run Judge.lean --export submission/Submission.ndjson` (or `--olean
  submission/Submission.olean`) `--lib lib --toolchain-lib D --theorem T --spec S --check C
  --allow-import M ... --require-import M`
- stdout: a `{"phase":"replay"}` line once its trusted set-up is done, then exactly one JSON
  object line with a `judge` key (in whatever key order `Json.compress`
  writes: the grader does not rely on it), the last line it prints; exit 0 whenever it printed a verdict
  (accepting or rejecting). Anything else (no such line, two, a non-zero exit, an unknown
  verdict) means the judge reached no verdict.
- The verdict line is printable ASCII (the judge escapes everything else as a `\\u` escape), its
  lists hold at most 16 names and its reason at most 1000 characters, so what the judge prints
  is bounded whatever the submission holds (JUDGE_OUTPUT_CAP). Lines are split on `\n` alone:
  `str.splitlines()` also breaks at U+2028, U+2029 and U+0085, which a submission controls.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from lean_mod_add_proof.grading.package import EXPORT_EXT, JUDGE_FILE, VERDICT_LIB, verdict_output
from lean_mod_add_proof.grading.result import VerdictFrom

#: What the judge concluded: `ok` (the caller still applies the axiom allow-list), or the first
#: check that failed.
Verdict = Literal["ok", "imports", "replay", "statement"]


class JudgeReport(BaseModel):
    """What the judge found, as it printed it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    judge: Literal[1]
    verdict: Verdict
    reason: str
    imports: list[str]
    replayed: int
    theorem_kind: str
    axioms: list[str]
    check_axioms: list[str]


#: The line the judge prints once its trusted set-up is done and the submission's data comes next.
REPLAY_STARTED = '{"phase":"replay"}'
#: The output cap of the judge's own run, whatever `output_cap_bytes` says: its verdict line is
#: bounded (16 names of at most 128 characters per list, a 1000-character reason, at most 12
#: bytes per escaped character: under 90 KiB), so a cap below this could only cut an honest
#: verdict, and a cut verdict would be "could not judge" chosen by the submission.
JUDGE_OUTPUT_CAP = 256 << 10


def output_lines(text: str) -> list[str]:
    """The stripped non-empty lines of a command's output, split on `\n` only (pure)."""
    return [ln.strip() for ln in text.split("\n") if ln.strip()]


def replay_started(text: str) -> bool:
    """Whether the judge got as far as the submission's data (pure)."""
    return REPLAY_STARTED in output_lines(text)


class JudgeOutputError(ValueError):
    """The judge's output holds no single well-formed verdict line."""


def interpreted_judge(lean: str, threads: int) -> list[str]:
    """`lean -j N --run Judge.lean`: the judge without a compiled executable (pure). `-j` must
    come before `--run`, where the shell stops reading its own options (src/util/shell.cpp)."""
    return [lean, "-j", str(threads), "--run", JUDGE_FILE]


def judge_argv(
    program: Sequence[str],
    *,
    submission_module: str,
    theorem: str,
    spec: str,
    check: str,
    toolchain_dir: Path,
    allowed_imports: Sequence[str],
    required_imports: Sequence[str],
    verdict_from: VerdictFrom = "olean",
) -> list[str]:
    """The judge's command line, run from inside the verdict directory (pure). `program` is the
    compiled executable, or `interpreted_judge(...)`; the arguments are the same. The judge reads
    the submission's export (`--export`) or its olean (`--olean`), never both."""
    if verdict_from == "export":
        source = ["--export", verdict_output(submission_module, EXPORT_EXT)]
    else:
        source = ["--olean", verdict_output(submission_module, "olean")]
    argv = [*program, *source, "--lib", VERDICT_LIB]
    argv += ["--toolchain-lib", str(toolchain_dir / "lib" / "lean")]
    argv += ["--theorem", theorem, "--spec", spec, "--check", check]
    for module in allowed_imports:
        argv += ["--allow-import", module]
    for module in required_imports:
        argv += ["--require-import", module]
    return argv


def _is_verdict_line(line: str) -> bool:
    """A JSON object with a `judge` key, whatever the key order."""
    if not line.startswith("{"):
        return False
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return line.replace(" ", "").find('"judge":') != -1  # a broken verdict still counts as one
    return isinstance(obj, dict) and "judge" in obj


def parse_judge_output(text: str) -> JudgeReport:
    """The verdict line: the last non-empty line, which must be the only JSON object line with a
    `judge` key. The judge never runs submitted code, but the line still has to parse strictly."""
    lines = output_lines(text)
    marked = [ln for ln in lines if _is_verdict_line(ln)]
    if not marked:
        raise JudgeOutputError("the judge printed no verdict")
    if len(marked) > 1:
        raise JudgeOutputError("the judge printed more than one verdict")
    if lines[-1] != marked[0]:
        raise JudgeOutputError("the judge printed something after its verdict")
    if not marked[0].isascii():
        raise JudgeOutputError("the verdict line is not ASCII")
    try:
        return JudgeReport.model_validate(json.loads(marked[0]))
    except (ValueError, RecursionError, ValidationError) as exc:
        raise JudgeOutputError(f"unreadable verdict line ({type(exc).__name__})") from None
