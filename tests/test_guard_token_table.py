"""The guard's token table held against the toolchain's (`grading/lean_tokens.py`,
`grading/token_canary.py`, `grading/TokenTable.lean`), and the line `lean-check` and
`doctor --selftest` print.

Against the toolchain double only: its `lean --run TokenTable.lean` prints the listing in the
file `double-token-table` beside its bin/ (tests/toolchain_double/README.md). What real Lean
prints is unknown here: TokenTable.lean has not run on Lean.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import pytest
from helpers import DOUBLE_DIR, copy_double

from lean_mod_add_proof.grading.lean_tokens import (
    APOSTROPHE_TOKEN_TEXTS,
    APOSTROPHE_TOKENS,
    LEAD_CHARACTERS,
    TOKEN_TABLE_LEAN,
    compare_token_table,
    parse_token_listing,
)
from lean_mod_add_proof.grading.token_canary import report_of, run_token_table, token_table_argv

ORDINARY = frozenset({"(", ")", ":=", "×", "Σ", "⊕", "[", "#[", "fun", "λ"})


def listing(tokens: list[str]) -> str:
    lines = [" ".join(str(ord(c)) for c in token) for token in tokens]
    return "\n".join(["noise before", "tokens-begin", *lines, "tokens-end", ""])


# --- the comparison (pure) ---------------------------------------------------------------------


def test_the_guards_own_table_matches_itself() -> None:
    check = compare_token_table(APOSTROPHE_TOKEN_TEXTS | ORDINARY)
    assert check.matches
    assert check.line() == f"guard token table: matches ({len(APOSTROPHE_TOKENS)} apostrophe tokens)"


def test_every_way_to_differ_is_named() -> None:
    check = compare_token_table((APOSTROPHE_TOKEN_TEXTS - {"]'"}) | {"''", 'x"', "a×"} | ORDINARY)
    assert not check.matches
    assert check.missing == ("]'",)
    assert check.unexpected == ("''", 'x"')
    assert check.lead_inside == ("a×",)
    assert check.line() == (
        "guard token table: differs: not in the toolchain: ]'; not in the guard's table: '' x\"; "
        "a lead character inside a longer token: a×"
    )


def test_each_apostrophe_token_is_cited_and_starts_with_its_lead() -> None:
    for source in APOSTROPHE_TOKENS:
        assert "'" in source.token and source.token[0] in LEAD_CHARACTERS
        assert source.path.startswith("src/") and source.read_at and source.token in source.declaration


def test_a_listing_is_read_whole_or_not_at_all() -> None:
    assert parse_token_listing(listing(["×'", "(", "fun"])) == {"×'", "(", "fun"}
    assert parse_token_listing("tokens-begin\n215 39\n") is None  # no end marker
    assert parse_token_listing("215 39\ntokens-end\n") is None  # no begin marker
    assert parse_token_listing("tokens-begin\n215 x\ntokens-end\n") is None  # not a number
    assert parse_token_listing("tokens-begin\n99999999\ntokens-end\n") is None  # no code point
    assert parse_token_listing("tokens-begin\ntokens-end\n") is None  # nothing listed


def test_a_run_is_reported_by_its_exit_code_and_listing() -> None:
    assert report_of(0, listing([*APOSTROPHE_TOKEN_TEXTS, "("])).matches
    failed = report_of(1, "line 1\nuncaught exception: token table: --toolchain-lib DIR is required\n")
    assert failed.line == (
        "guard token table: not checked: TokenTable.lean exited with 1: line 1 uncaught exception: "
        "token table: --toolchain-lib DIR is required"
    )
    assert not failed.matches and failed.check is None
    assert (
        report_of(0, "no listing").line
        == "guard token table: not checked: TokenTable.lean printed no whole listing"
    )
    assert report_of(None, "").line.endswith("exited with None: no output")


def test_the_command_puts_the_shell_options_before_run() -> None:
    argv = token_table_argv(Path("/t/bin/lean"), Path("/t"))
    assert argv == ["/t/bin/lean", "-j", "1", "--run", "TokenTable.lean", "--toolchain-lib", "/t/lib/lean"]
    assert TOKEN_TABLE_LEAN.is_file()


# --- against the double --------------------------------------------------------------------------


def test_the_doubles_listing_holds_every_apostrophe_token() -> None:
    table = (DOUBLE_DIR / "double-token-table").read_text(encoding="utf-8")
    tokens = parse_token_listing(f"tokens-begin\n{table}tokens-end\n")
    assert tokens is not None and APOSTROPHE_TOKEN_TEXTS <= tokens


def test_the_double_matches(tmp_path: Path) -> None:
    report = asyncio.run(run_token_table(DOUBLE_DIR, DOUBLE_DIR / "bin" / "lean", work_root=tmp_path))
    assert report.line == f"guard token table: matches ({len(APOSTROPHE_TOKENS)} apostrophe tokens)"
    assert list(tmp_path.iterdir()) == []  # its directory is gone


@pytest.mark.parametrize(
    ("change", "line"),
    [
        (lambda text: text.replace("93 39\n", ""), "guard token table: differs: not in the toolchain: ]'"),
        (lambda text: text + "97 39 39\n", "guard token table: differs: not in the guard's table: a''"),
        (
            lambda text: text + "97 215\n",
            "guard token table: differs: a lead character inside a longer token: a×",
        ),
    ],
    ids=["a-token-missing", "an-unknown-apostrophe-token", "a-lead-inside"],
)
def test_a_toolchain_whose_table_differs_says_how(tmp_path: Path, change, line: str) -> None:  # type: ignore[no-untyped-def]
    toolchain = copy_double(tmp_path / "toolchain")
    table = toolchain / "double-token-table"
    table.write_text(change(table.read_text()))
    report = asyncio.run(run_token_table(toolchain, toolchain / "bin" / "lean", work_root=tmp_path))
    assert report.line == line and not report.matches


def test_a_toolchain_without_init_is_not_checked(tmp_path: Path) -> None:
    toolchain = copy_double(tmp_path / "toolchain")
    (toolchain / "lib" / "lean" / "Init.olean").unlink()
    report = asyncio.run(run_token_table(toolchain, toolchain / "bin" / "lean", work_root=tmp_path))
    assert report.line.startswith("guard token table: not checked: TokenTable.lean exited with 1")
    assert "unknown module prefix 'Init'" in report.line


def test_a_reading_that_finds_no_init_token_is_not_checked_never_a_difference(tmp_path: Path) -> None:
    # audit F1: without the check, a reader that found no entry would blame the guard's table
    # ("differs: not in the toolchain: #' ]' ..."); the program stops instead
    assert "initTokens == 0" in TOKEN_TABLE_LEAN.read_text(encoding="utf-8")
    toolchain = copy_double(tmp_path / "toolchain")
    (toolchain / "double-token-table").write_text("")
    report = asyncio.run(run_token_table(toolchain, toolchain / "bin" / "lean", work_root=tmp_path))
    assert report.line.startswith("guard token table: not checked: TokenTable.lean exited with 1")
    assert "no token entries in Init's modules" in report.line and not report.matches


def test_a_program_that_cannot_start_is_not_checked(tmp_path: Path) -> None:
    report = asyncio.run(run_token_table(DOUBLE_DIR, tmp_path / "no-lean", work_root=tmp_path))
    assert report.line.startswith("guard token table: not checked: could not run TokenTable.lean")


# --- where the line is printed -------------------------------------------------------------------


def test_lean_check_reads_the_table_of_the_located_toolchain(tmp_path: Path) -> None:
    from lean_mod_add_proof.cli import leancheck

    args = argparse.Namespace(toolchain_dir=str(DOUBLE_DIR), work_root=str(tmp_path / "w"))
    assert leancheck.guard_token_table(args).matches
    args = argparse.Namespace(toolchain_dir=str(tmp_path / "none"), work_root=str(tmp_path / "w"))
    assert leancheck.guard_token_table(args).line.startswith("guard token table: not checked: no toolchain")


def test_doctor_selftest_prints_the_line(capsys: pytest.CaptureFixture[str]) -> None:
    from lean_mod_add_proof.cli.doctor import _print_selftest

    line = "guard token table: differs: not in the toolchain: ]'"
    _print_selftest({"passed": True, "route": "replay (export)", "canaries": [], "token_table": line})
    assert line in capsys.readouterr().out


def test_doctor_selftest_reports_the_table_beside_the_canaries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from lean_mod_add_proof.cli import main

    flags = ["--toolchain-dir", str(DOUBLE_DIR), "--sandbox", "off", "--work-root", str(tmp_path / "w")]
    assert main(["doctor", "--selftest", "--json", *flags]) == 0  # the canaries decide the status
    report = json.loads(capsys.readouterr().out)
    assert report["token_table"] == f"guard token table: matches ({len(APOSTROPHE_TOKENS)} apostrophe tokens)"
