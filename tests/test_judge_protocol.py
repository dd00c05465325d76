"""The trusted judge's protocol as the grader reads it (lean_mod_add_proof/grading/judge.py):
its command line, how its output is split into lines, and how strictly its one verdict line is
parsed. Pure; no process runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import pytest
from helpers import GOOD_VERDICT
from pydantic import ValidationError

from lean_mod_add_proof.grading.judge import (
    JUDGE_OUTPUT_CAP,
    REPLAY_STARTED,
    JudgeOutputError,
    JudgeReport,
    Verdict,
    interpreted_judge,
    judge_argv,
    output_lines,
    parse_judge_output,
    replay_started,
)

GOOD = GOOD_VERDICT


def line(**changes: object) -> str:
    """The verdict line as Lean's `Json.compress` prints it: sorted keys, no spaces."""
    return json.dumps({**GOOD, **changes}, sort_keys=True, separators=(",", ":"))


# --- command line --------------------------------------------------------------------------------


def test_interpreted_judge() -> None:
    assert interpreted_judge("/tc/bin/lean", 4) == ["/tc/bin/lean", "-j", "4", "--run", "Judge.lean"]


def test_judge_argv_exactly() -> None:
    argv = judge_argv(
        ["./judge"],
        submission_module="LeanCheckedNetwork.Submission",
        theorem="T",
        spec="S",
        check="C",
        toolchain_dir=Path("/tc"),
        allowed_imports=("Init", "A"),
        required_imports=("B",),
    )
    assert argv == [
        "./judge",
        "--olean", "submission/Submission.olean",
        "--lib", "lib",
        "--toolchain-lib", "/tc/lib/lean",
        "--theorem", "T",
        "--spec", "S",
        "--check", "C",
        "--allow-import", "Init",
        "--allow-import", "A",
        "--require-import", "B",
    ]  # fmt: skip


def test_judge_argv_with_no_imports() -> None:
    argv = judge_argv(
        ["j"], submission_module="M.Sub", theorem="T", spec="S", check="C", toolchain_dir=Path("/t"),
        allowed_imports=(), required_imports=(),
    )  # fmt: skip
    assert "--allow-import" not in argv and "--require-import" not in argv and argv[-1] == "C"


def test_judge_argv_on_the_export_route_reads_the_export_and_not_the_olean() -> None:
    common = dict(
        submission_module="LeanCheckedNetwork.Submission", theorem="T", spec="S", check="C",
        toolchain_dir=Path("/tc"), allowed_imports=(), required_imports=(),
    )  # fmt: skip
    argv = judge_argv(["./judge"], verdict_from="export", **common)  # type: ignore[arg-type]
    assert argv[:3] == ["./judge", "--export", "submission/Submission.ndjson"]
    assert "--olean" not in argv
    olean = judge_argv(["./judge"], verdict_from="olean", **common)  # type: ignore[arg-type]
    assert olean[:3] == ["./judge", "--olean", "submission/Submission.olean"] and "--export" not in olean
    assert olean[3:] == argv[3:]


# --- lines ---------------------------------------------------------------------------------------


def test_output_lines_split_on_newline_only() -> None:
    text = "  a \n\n b\u2028c \r\nx\u0085y\n \t \nd"
    assert output_lines(text) == ["a", "b\u2028c", "x\u0085y", "d"]
    assert output_lines("") == [] and output_lines("\n \n") == []


def test_replay_started() -> None:
    assert REPLAY_STARTED == '{"phase":"replay"}'
    assert replay_started(f"log\n  {REPLAY_STARTED}  \n{line()}")
    assert not replay_started("log\n" + line())
    assert not replay_started(REPLAY_STARTED + " x")
    assert not replay_started(REPLAY_STARTED.replace("replay", "replay\u2028"))
    # a marker broken across a U+2028 is no marker (lines end at \n only)
    assert not replay_started('{"phase":\u2028"replay"}')


# --- the verdict line ----------------------------------------------------------------------------


def test_the_verdicts_are_exactly() -> None:
    # The grader accepts only "ok"; a new verdict (a future "error", say) must be a decision
    # made here, never a value that slips through as "not a known failure".
    assert get_args(Verdict) == ("ok", "imports", "replay", "statement")


@pytest.mark.parametrize("verdict", ["ok", "imports", "replay", "statement"])
def test_every_verdict_parses(verdict: str) -> None:
    report = parse_judge_output(f"{REPLAY_STARTED}\n{line(verdict=verdict, reason='why')}\n")
    assert report == JudgeReport(**{**GOOD, "verdict": verdict, "reason": "why"})


def test_a_verdict_line_split_by_u2028_in_the_type_still_parses() -> None:
    # The judge escapes non-ASCII, so a raw U+2028 never reaches the line; if one did, the line
    # is still one line (split on \n only) and rejected as not ASCII, not taken apart.
    escaped = line(reason="\u2028")
    assert "\\u2028" in escaped and parse_judge_output(escaped).reason == "\u2028"
    raw = escaped.replace("\\u2028", "\u2028")
    with pytest.raises(JudgeOutputError, match=r"^the verdict line is not ASCII$"):
        parse_judge_output(raw)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the judge printed no verdict"),
        ("\n  \n", "the judge printed no verdict"),
        ("plain text", "the judge printed no verdict"),
        ('{"phase":"replay"}\n[1]', "the judge printed no verdict"),
        ('{"axioms": []}', "the judge printed no verdict"),
        (f"{line()}\n{line()}", "the judge printed more than one verdict"),
        (f'{line()}\n{{"judge" : 2, "x": ', "the judge printed more than one verdict"),
        (f"{line()}\ntrailing", "the judge printed something after its verdict"),
        (line(reason="é").replace("\\u00e9", "é"), "the verdict line is not ASCII"),
        ('{"axioms":[],"judge":1', "unreadable verdict line (JSONDecodeError)"),
        ('{"judge": 1, "verdict": "ok"', "unreadable verdict line (JSONDecodeError)"),
        ('{ "judge" : 1 ', "unreadable verdict line (JSONDecodeError)"),
        (line(verdict="yes"), "unreadable verdict line (ValidationError)"),
        (line(verdict="error"), "unreadable verdict line (ValidationError)"),
        (line(judge=2), "unreadable verdict line (ValidationError)"),
        (line(extra=1), "unreadable verdict line (ValidationError)"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "axioms"}),
         "unreadable verdict line (ValidationError)"),
        (line(replayed="x"), "unreadable verdict line (ValidationError)"),
    ],
    ids=["empty", "blank", "text", "list", "no-judge-key", "two", "two-one-broken", "after", "non-ascii",
         "cut", "cut-spaced", "cut-judge-key-only", "bad-verdict", "future-verdict", "judge-2", "extra-key",
         "missing-key", "bad-count"],
)  # fmt: skip
def test_parse_judge_output_is_strict(text: str, message: str) -> None:
    with pytest.raises(JudgeOutputError) as caught:
        parse_judge_output(text)
    assert str(caught.value) == message


def test_a_broken_json_line_without_a_judge_key_is_no_verdict() -> None:
    # Only a line that holds `"judge":` counts as a (possibly broken) verdict.
    assert parse_judge_output("{not json\n{ broken: 1\n" + line()).verdict == "ok"
    with pytest.raises(JudgeOutputError, match="more than one verdict"):
        parse_judge_output('{ "judge" :\n' + line())


def test_a_verdict_in_any_key_order_and_spacing_parses() -> None:
    assert parse_judge_output(json.dumps(GOOD, indent=None)).verdict == "ok"
    assert parse_judge_output("   " + line() + "   \n\n").verdict == "ok"


def test_the_report_is_strict_and_frozen() -> None:
    report = JudgeReport(**GOOD)
    with pytest.raises(ValidationError):
        report.verdict = "imports"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        JudgeReport(**{**GOOD, "unknown": 1})


def test_the_largest_verdict_fits_under_the_cap() -> None:
    # The judge's bounds (module docstring): 16 names of at most 128 characters per list, a
    # 1000-character reason, every character at worst a 12-byte escape (a surrogate pair).
    worst = "\\ud83d\\ude00"
    names = [worst * 128] * 16
    biggest = line(
        reason=worst * 1000, imports=names, axioms=names, check_axioms=names, theorem_kind=worst * 128
    )
    assert len(biggest.encode()) < JUDGE_OUTPUT_CAP
    assert JUDGE_OUTPUT_CAP == 256 * 1024
    assert parse_judge_output(f"{REPLAY_STARTED}\n{biggest}").replayed == 3
