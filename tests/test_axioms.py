"""Reading `#print axioms` output (JSON and plain) and judging the axiom list."""

from __future__ import annotations

import json

import pytest

from lean_mod_add_proof.constants import ALLOWED_AXIOMS, CHECK_THEOREM, theorem_name
from lean_mod_add_proof.grading.axioms import (
    AxiomReportError,
    check_axioms,
    error_messages,
    parse_axiom_report,
    parse_axiom_report_json,
    parse_axiom_report_plain,
)

THM = theorem_name(7)
THM_NONE = f"'{THM}' does not depend on any axioms"
THM_CYRILLIC = THM.replace("a", "\u0430")  # looks the same, is another name
NATIVE_AX = f"{THM}._native.native_decide.ax_1_1"
NAMES = [THM, CHECK_THEOREM]
ALL3 = "[propext, Classical.choice, Quot.sound]"


def msg(data: str, severity: str = "information", line: int = 3) -> str:
    """One line of `lean --json` output."""
    return json.dumps(
        {
            "fileName": "/pkg/Check.lean",
            "pos": {"line": line, "column": 0},
            "endPos": {"line": line, "column": 14},
            "keepFullRange": False,
            "severity": severity,
            "caption": "",
            "data": data,
            "kind": "[anonymous]",
        }
    )


def json_out(*lines: str) -> str:
    return "\n".join(lines) + "\n"


CHECK_NONE = f"'{CHECK_THEOREM}' does not depend on any axioms"


def thm_json(data: str, severity: str = "information") -> str:
    """JSON output with `data` for the theorem and a good report for the check theorem."""
    return json_out(msg(data, severity=severity), msg(CHECK_NONE))


def thm_plain(text: str) -> str:
    return f"{text}\n{CHECK_NONE}\n"


# --- JSON ----------------------------------------------------------------------------------------

JSON_OK: list[tuple[str, str, dict[str, list[str]]]] = [
    (
        "both-wordings",
        json_out(
            msg(f"'{THM}' depends on axioms: [propext]"),
            msg(f"'{CHECK_THEOREM}' does not depend on any axioms"),
        ),
        {THM: ["propext"], CHECK_THEOREM: []},
    ),
    (
        "all-three-in-lean-order",
        json_out(
            msg(f"'{THM}' depends on axioms: {ALL3}"), msg(f"'{CHECK_THEOREM}' depends on axioms: {ALL3}")
        ),
        {THM: list(ALLOWED_AXIOMS), CHECK_THEOREM: list(ALLOWED_AXIOMS)},
    ),
    (
        "wrapped-list",
        json_out(
            msg(f"'{THM}' depends on axioms: [propext,\n  Classical.choice,\n  Quot.sound]\n"),
            msg(f"'{CHECK_THEOREM}' depends on axioms:\n  [propext]"),
        ),
        {THM: list(ALLOWED_AXIOMS), CHECK_THEOREM: ["propext"]},
    ),
    (
        "other-messages-and-noise-ignored",
        json_out(
            "✔ [3/3] Built LeanCheckedNetwork.Submission",
            msg("declaration uses something", severity="warning"),
            msg(f"'{THM}x' depends on axioms: [sorryAx]"),
            msg(f"'Other.{THM}' depends on axioms: [sorryAx]"),
            msg(f"'{THM}' depends on axioms: [sorryAx]", severity="error"),
            msg(f"'{THM}' depends on axioms: [propext]"),
            msg(f"'{CHECK_THEOREM}' does not depend on any axioms"),
        ),
        {THM: ["propext"], CHECK_THEOREM: []},
    ),
    (
        "native-decide-auxiliary-axiom",
        json_out(
            msg(f"'{THM}' depends on axioms: [propext, {NATIVE_AX}]"),
            msg(f"'{CHECK_THEOREM}' does not depend on any axioms"),
        ),
        {THM: ["propext", NATIVE_AX], CHECK_THEOREM: []},
    ),
    (
        "escaped-names-kept-as-printed",
        json_out(
            msg(f"'{THM}' depends on axioms: [«propext», «a, b]», Foo.«x y».z]"),
            msg(f"'{CHECK_THEOREM}' does not depend on any axioms"),
        ),
        {THM: ["«propext»", "«a, b]»", "Foo.«x y».z"], CHECK_THEOREM: []},
    ),
]


@pytest.mark.parametrize(
    ("output", "expected"), [(o, e) for _, o, e in JSON_OK], ids=[i for i, *_ in JSON_OK]
)
def test_json_reports(output: str, expected: dict[str, list[str]]) -> None:
    assert parse_axiom_report(output, NAMES) == expected
    assert parse_axiom_report_json(output, NAMES) == expected


JSON_BAD: list[tuple[str, str, str]] = [
    ("empty-output", "", "no '#print axioms' report"),
    ("garbage", "segmentation fault\n{not json\n", "no '#print axioms' report"),
    ("one-name-missing", json_out(msg(f"'{THM}' depends on axioms: [propext]")), f"for '{CHECK_THEOREM}'"),
    ("only-look-alike", thm_json(f"'{THM}0' does not depend on any axioms"), f"for '{THM}'"),
    ("cyrillic-look-alike", thm_json(f"'{THM_CYRILLIC}' does not depend on any axioms"), f"for '{THM}'"),
    ("only-as-warning", thm_json(f"'{THM}' does not depend on any axioms", "warning"), f"for '{THM}'"),
    ("duplicate", msg(f"'{THM}' depends on axioms: [propext]") + "\n" + thm_json(THM_NONE), "2 '#print"),
    ("truncated-list", thm_json(f"'{THM}' depends on axioms: [propext, Classical.choice"), "cut off"),
    ("truncated-escape", thm_json(f"'{THM}' depends on axioms: [«propext"), "inside a «» name"),
    ("no-bracket", thm_json(f"'{THM}' depends on axioms: propext"), "does not start with '['"),
    ("empty-entry", thm_json(f"'{THM}' depends on axioms: [propext, , Quot.sound]"), "unreadable entry"),
    ("empty-list", thm_json(f"'{THM}' depends on axioms: []"), "unreadable entry"),
    ("repeated-entry", thm_json(f"'{THM}' depends on axioms: [propext, propext]"), "listed twice"),
    ("space-inside-name", thm_json(f"'{THM}' depends on axioms: [propext Quot.sound]"), "unexpected 'Q'"),
    ("text-after-list", thm_json(f"'{THM}' depends on axioms: [propext] and more"), "unexpected text after"),
    ("text-after-none", thm_json(f"'{THM}' does not depend on any axioms, really"), "unexpected text after"),
    ("other-wording", thm_json(f"'{THM}' uses axioms: [propext]"), "unreadable axiom report"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("output", "reason"), [(o, r) for _, o, r in JSON_BAD], ids=[i for i, *_ in JSON_BAD]
)
def test_json_reports_rejected(output: str, reason: str) -> None:
    with pytest.raises(AxiomReportError, match=None) as info:
        parse_axiom_report(output, NAMES)
    assert reason in str(info.value)


def test_no_names_is_an_error() -> None:
    with pytest.raises(AxiomReportError):
        parse_axiom_report(msg(f"'{THM}' does not depend on any axioms"), [])


# --- plain text ----------------------------------------------------------------------------------

PLAIN_OK: list[tuple[str, str, dict[str, list[str]]]] = [
    (
        "both-wordings",
        f"'{THM}' depends on axioms: {ALL3}\n'{CHECK_THEOREM}' does not depend on any axioms\n",
        {THM: list(ALLOWED_AXIOMS), CHECK_THEOREM: []},
    ),
    (
        "wrapped-list",
        f"'{THM}' depends on axioms: [propext,\n  Classical.choice,\n  Quot.sound]\n"
        f"'{CHECK_THEOREM}' depends on axioms: [propext]",
        {THM: list(ALLOWED_AXIOMS), CHECK_THEOREM: ["propext"]},
    ),
    (
        "with-warnings-around",
        f"/pkg/Check.lean:2:0: warning: unused variable\n'{THM}' depends on axioms: [propext]\n"
        f"'{THM}2' depends on axioms: [sorryAx]\n'{CHECK_THEOREM}' does not depend on any axioms\n",
        {THM: ["propext"], CHECK_THEOREM: []},
    ),
]


@pytest.mark.parametrize(
    ("output", "expected"), [(o, e) for _, o, e in PLAIN_OK], ids=[i for i, *_ in PLAIN_OK]
)
def test_plain_reports(output: str, expected: dict[str, list[str]]) -> None:
    assert parse_axiom_report(output, NAMES) == expected
    assert parse_axiom_report_plain(output, NAMES) == expected


PLAIN_BAD: list[tuple[str, str, str]] = [
    ("duplicate", thm_plain(f"'{THM}' depends on axioms: [propext]\n{THM_NONE}"), "2 '#print"),
    ("truncated", f"{CHECK_NONE}\n'{THM}' depends on axioms: [propext,\n  Classical.choice,", "cut off"),
    ("not-at-line-start", thm_plain(f"note: '{THM}' does not depend on any axioms"), f"for '{THM}'"),
    ("text-after-bracket", thm_plain(f"'{THM}' depends on axioms: [propext] x"), "unexpected text after"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("output", "reason"), [(o, r) for _, o, r in PLAIN_BAD], ids=[i for i, *_ in PLAIN_BAD]
)
def test_plain_reports_rejected(output: str, reason: str) -> None:
    with pytest.raises(AxiomReportError) as info:
        parse_axiom_report(output, NAMES)
    assert reason in str(info.value)


def test_json_wins_when_present() -> None:
    # A plain-looking line beside JSON messages is ignored: JSON mode reads only JSON messages.
    output = json_out(
        f"'{THM}' depends on axioms: [sorryAx]",
        msg(f"'{THM}' depends on axioms: [propext]"),
        msg(f"'{CHECK_THEOREM}' does not depend on any axioms"),
    )
    assert parse_axiom_report(output, NAMES)[THM] == ["propext"]


# --- error messages ------------------------------------------------------------------------------


def test_error_messages_json_and_plain() -> None:
    output = "\n".join(
        [
            msg("unused variable", severity="warning"),
            msg("type mismatch\n  adds_mod_7\nhas type\n  True", severity="error", line=4),
            msg(f"'{THM}' depends on axioms: [propext]"),
            "/pkg/Check.lean:5:2: error: unknown constant 'X'",
            "  more detail",
            "/pkg/Check.lean:6:0-6:9: error(lean.unknownIdentifier): unknown identifier 'y'",
            "/pkg/Check.lean:7:0: warning: a warning",
            "  warning detail",
            "uncaught exception: boom",
        ]
    )
    assert error_messages(output) == [
        "4:0: type mismatch\n  adds_mod_7\nhas type\n  True",
        "5:2: unknown constant 'X'\n  more detail",
        "6:0: unknown identifier 'y'",
        "uncaught exception: boom",
    ]


def test_error_messages_none() -> None:
    assert error_messages(json_out(msg(f"'{THM}' does not depend on any axioms"))) == []
    assert error_messages("") == []


# --- judging -------------------------------------------------------------------------------------

CHECKS: list[tuple[str, list[str], str, str | None]] = [
    ("subset-none", [], "subset", None),
    ("subset-propext", ["propext"], "subset", None),
    ("subset-all", list(ALLOWED_AXIOMS), "subset", None),
    ("subset-sorryAx", ["propext", "sorryAx"], "subset", "axiom 'sorryAx' is not allowed"),
    ("subset-native", ["propext", NATIVE_AX], "subset", f"axiom '{NATIVE_AX}' is not allowed"),
    ("subset-escaped-propext", ["«propext»"], "subset", "axiom '«propext»' is not allowed"),
    ("subset-first-bad-named", ["Foo.ax", "sorryAx"], "subset", "axiom 'Foo.ax'"),
    ("subset-padded-name", [" propext"], "subset", "is not allowed"),
    ("exact-all", ["Quot.sound", "propext", "Classical.choice"], "exact", None),
    ("exact-missing", ["propext"], "exact", "missing axioms Classical.choice, Quot.sound"),
    ("exact-none", [], "exact", "missing axioms propext, Classical.choice, Quot.sound"),
    ("exact-extra", [*ALLOWED_AXIOMS, "sorryAx"], "exact", "axiom 'sorryAx' is not allowed"),
    ("unknown-mode", ["propext"], "some", "unknown axioms mode"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("found", "mode", "reason"), [(f, m, r) for _, f, m, r in CHECKS], ids=[i for i, *_ in CHECKS]
)
def test_check_axioms(found: list[str], mode: str, reason: str | None) -> None:
    result = check_axioms(found, mode)  # type: ignore[arg-type]
    if reason is None:
        assert result is None
    else:
        assert result is not None and reason in result
