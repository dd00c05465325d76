"""The double's five bundled checkers (tests/toolchain_double/bin/_double_checkers.py) made no
kinder than the programs they stand in for, where the independent review found them kinder
(docs/readings/double-checkers-review.md). Each test runs a stand-in on a small hand-written
export (the double's, not Lean's) and names the source of the behaviour; each failed on the
double before the change.

- nanoda reads its config as its source does (nanoda_lib @f58f2f6 src/util.rs `Config`,
  `TryFrom<&Path>`): `unpermitted_axiom_hard_error` defaults to true, and then a declared
  axiom outside the list is `Error: export file declares unpermitted axiom "A"`, exit 1, used or
  not (src/parser.rs `go1`); with false it is skipped and named on stdout on success
  (src/main.rs `use_config`); `nat_extension`/`string_extension` off refuse a literal; a config
  without an export path is `incompatible config options`, exit 1, not a panic;
- nanoda parses every line with serde, the first included (src/parser.rs `go1`): a first line
  that is not JSON is exit 1, not skipped as LeanExport's `parseMdata` skips it;
- con-leche declines a non-pinned axiom at its own record, used or not; a merely declared
  `sorryAx` is accepted (con-ron @2789de1c vendor/con-leche/Main.lean `usage`); con-ron, which
  ports that program (con-ron.rs module docstring), follows it;
- con-leche's `CON_LECHE_INMODEL_CENSUS=1` run stops after the parse and exits 2 (Main.lean
  `checkMain`), so a grader that leaked it would see no accept;
- nanoda's workers are named `thread_<i>` (src/tc.rs `check_all_declars_par`; the rc3 record
  T1 shows `thread 'thread_0' panicked at src/tc.rs:230:13:`);
- lean4lean names the declaration whose replay meets a missing constant (Replay.lean
  `replayConstant`), and a Lean panic's `backtrace:` line follows LEAN_BACKTRACE (lean4
  src/runtime/object.cpp `lean_panic`).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import DOUBLE_DIR

META = (
    '{"meta":{"exporter":{"name":"lean4export","version":"3.1.0"},"format":{"version":"3.1.0"},'
    '"lean":{"githash":"0000000000000000000000000000000000000000","version":"4.35.0-rc2"}}}'
)
#: `axiom P : Prop`, declared and used by nothing.
UNUSED_AXIOM = [
    '{"in":1,"str":{"pre":0,"str":"P"}}',
    '{"ie":0,"sort":0}',
    '{"axiom":{"isUnsafe":false,"levelParams":[],"name":1,"type":0}}',
]
#: ... and `axiom h : P`, `theorem t : P := h`: P and h are used.
USED_AXIOMS = [
    *UNUSED_AXIOM,
    '{"in":2,"str":{"pre":0,"str":"h"}}',
    '{"ie":1,"const":{"name":1,"us":[]}}',
    '{"axiom":{"isUnsafe":false,"levelParams":[],"name":2,"type":1}}',
    '{"in":3,"str":{"pre":0,"str":"t"}}',
    '{"ie":2,"const":{"name":2,"us":[]}}',
    '{"thm":{"all":[3],"levelParams":[],"name":3,"type":1,"value":2}}',
]
#: `def n : Nat := 7` spelled with a literal, and `def s : String := "x"` (their types are not
#: declared: nanoda's parse refuses the literal before anything looks them up).
NAT_LITERAL = [
    '{"in":1,"str":{"pre":0,"str":"Nat"}}',
    '{"ie":0,"const":{"name":1,"us":[]}}',
    '{"ie":1,"natVal":"7"}',
]
STR_LITERAL = ['{"ie":0,"strVal":"x"}']
STANDARD = ["propext", "Classical.choice", "Quot.sound"]


def _export(tmp_path: Path, lines: list[str], first: str = META) -> Path:
    path = tmp_path / "export.ndjson"
    path.write_text("\n".join([first, *lines]) + "\n", encoding="utf-8")
    return path


def _run(binary: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LEAN_", "CON_LECHE_"))}
    return subprocess.run(
        [str(DOUBLE_DIR / "bin" / binary), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**base, **(env or {})},
    )


def _nanoda(tmp_path: Path, export: Path | None, **config: object) -> subprocess.CompletedProcess[str]:
    cfg: dict[str, object] = {"permitted_axioms": STANDARD, **config}
    if export is not None:
        cfg["export_file_path"] = str(export)
    path = tmp_path / "nanoda.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return _run("nanoda_bin", str(path))


HELP = "\n\nrun with `-h` or `--help` for help\n"


# ---- nanoda's config ------------------------------------------------------------------------


def test_nanoda_by_default_refuses_a_declared_axiom_outside_the_list(tmp_path: Path) -> None:
    # `#[serde(default = "default_true")] unpermitted_axiom_hard_error` (src/util.rs `Config`).
    got = _nanoda(tmp_path, _export(tmp_path, UNUSED_AXIOM))
    assert (got.returncode, got.stdout) == (1, "")
    assert got.stderr == 'Error: export file declares unpermitted axiom "P"' + HELP
    got = _nanoda(tmp_path, _export(tmp_path, USED_AXIOMS), unpermitted_axiom_hard_error=True)
    assert got.returncode == 1 and got.stderr.startswith('Error: export file declares unpermitted axiom "P"')


def test_nanoda_without_the_hard_error_skips_an_unused_axiom_and_names_it(tmp_path: Path) -> None:
    got = _nanoda(tmp_path, _export(tmp_path, UNUSED_AXIOM), unpermitted_axiom_hard_error=False)
    assert (got.returncode, got.stdout, got.stderr) == (
        0,
        'Skipped exported but unpermitted axioms ["P"]\n',
        "",
    )
    # used, it is not installed: `infer_const` panics in a worker named `thread_0`
    got = _nanoda(tmp_path, _export(tmp_path, USED_AXIOMS), unpermitted_axiom_hard_error=False, num_threads=2)
    assert got.returncode == 101
    first = got.stderr.splitlines()[0]
    assert first.startswith("thread 'thread_0' (") and first.endswith(" panicked at src/tc.rs:230:13:")
    assert "\ndeclaration not found in infer_const, " in got.stderr  # P or h: neither installed


def test_nanoda_permits_every_axiom_only_when_told_so(tmp_path: Path) -> None:
    export = _export(tmp_path, USED_AXIOMS)
    got = _nanoda(tmp_path, export, permitted_axioms=None, unsafe_permit_all_axioms=True,
                  unpermitted_axiom_hard_error=False)  # fmt: skip
    assert (got.returncode, got.stderr) == (0, "")
    for contradiction in ({}, {"unpermitted_axiom_hard_error": False}):  # a list, or the hard error
        got = _nanoda(tmp_path, export, unsafe_permit_all_axioms=True, **contradiction)
        assert got.returncode == 1 and got.stderr.startswith("Error: incompatible config options: ")


@pytest.mark.parametrize(("lines", "word"), [(NAT_LITERAL, "Nat"), (STR_LITERAL, "String")])
def test_nanoda_refuses_a_literal_its_config_does_not_enable(
    tmp_path: Path, lines: list[str], word: str
) -> None:
    got = _nanoda(tmp_path, _export(tmp_path, lines), unpermitted_axiom_hard_error=False)
    assert got.returncode == 1, got.stderr
    assert got.stderr.startswith(f"Error: {word} lit extension disallowed by checker execution config")
    flag = "nat_extension" if word == "Nat" else "string_extension"
    got = _nanoda(tmp_path, _export(tmp_path, lines), unpermitted_axiom_hard_error=False, **{flag: True})
    assert (got.returncode, got.stderr) == (0, "")


def test_nanoda_without_an_export_path_is_a_contradictory_config_not_a_panic(tmp_path: Path) -> None:
    got = _nanoda(tmp_path, None)
    assert got.returncode == 1
    assert got.stderr == (
        "Error: incompatible config options: must specify a path to an export file OR set "
        "`use_stdin: true`" + HELP
    )


def test_nanoda_parses_the_first_line_too(tmp_path: Path) -> None:
    got = _nanoda(tmp_path, _export(tmp_path, [], first="not json"), unpermitted_axiom_hard_error=False)
    assert got.returncode == 1 and got.stderr.startswith("Error: expected ")
    assert got.stderr.endswith(HELP)
    # LeanExport's reader skips it (lean4 src/LeanExport/Parse.lean `parseMdata`): accepted
    got = _run("leanchecker-paranoid", "--silent", "--from-export", str(_export(tmp_path, [], first="x")))
    assert got.returncode == 0


def test_nanoda_names_an_os_error_as_rust_debug_prints_it(tmp_path: Path) -> None:
    got = _nanoda(tmp_path, tmp_path / "absent.ndjson", unpermitted_axiom_hard_error=False)
    assert got.returncode == 1
    assert got.stderr == (
        'Error: Failed to open export file: Os { code: 2, kind: NotFound, message: "No such file or '
        'directory" }' + HELP
    )


# ---- con-leche and con-ron: a non-pinned axiom declines at its own record ------------------------


@pytest.mark.parametrize("binary", ["con-leche", "con-ron"])
def test_a_declared_unused_axiom_declines(tmp_path: Path, binary: str) -> None:
    got = _run(binary, "--jobs=1", str(_export(tmp_path, UNUSED_AXIOM)))
    assert got.returncode == 2, (got.stdout, got.stderr)
    assert "non-standard axiom (P)" in got.stderr


#: `axiom sorryAx : Prop` and `def d : Prop := sorryAx` (a use).
SORRY_USED = [
    '{"in":1,"str":{"pre":0,"str":"sorryAx"}}',
    '{"ie":0,"sort":0}',
    '{"axiom":{"isUnsafe":false,"levelParams":[],"name":1,"type":0}}',
    '{"in":2,"str":{"pre":0,"str":"d"}}',
    '{"ie":1,"const":{"name":1,"us":[]}}',
    '{"def":{"all":[2],"hints":"abbrev","levelParams":[],"name":2,"safety":"safe","type":0,"value":1}}',
]


@pytest.mark.parametrize("binary", ["con-leche", "con-ron"])
def test_a_declared_unused_sorry_axiom_is_accepted_and_a_used_one_declines(
    tmp_path: Path, binary: str
) -> None:
    got = _run(binary, "--jobs=1", str(_export(tmp_path, SORRY_USED[:3])))
    assert got.returncode == 0, got.stderr
    got = _run(binary, "--jobs=1", str(_export(tmp_path, SORRY_USED)))
    assert got.returncode == 2 and "(sorryAx)" in got.stderr, got.stderr


def test_con_leche_census_run_exits_2_after_the_parse(tmp_path: Path) -> None:
    export = str(_export(tmp_path, []))
    assert _run("con-leche", "--jobs=1", export).returncode == 0
    got = _run("con-leche", "--jobs=1", export, env={"CON_LECHE_INMODEL_CENSUS": "1"})
    assert (got.returncode, got.stdout) == (2, "")
    assert got.stderr.endswith("con-leche: inmodel census: 0 modelled, 0 declined (--verified, parse only)\n")


# ---- the Lean programs' texts ------------------------------------------------------------------


def test_lean4lean_names_the_declaration_that_uses_a_missing_constant(tmp_path: Path) -> None:
    # `replayConstant`: `at {name}: {e}`, name the declaration being added (Replay.lean).
    missing = [line for line in USED_AXIOMS if '"name":2,"type"' not in line]  # h's record gone
    got = _run("lean4lean", "--import", str(_export(tmp_path, missing)))
    assert (got.returncode, got.stderr) == (1, "uncaught exception: at t: (kernel) unknown constant 'h'\n")


#: `_double.judgeDirectives := "checker all panic"`: the double's marker (README, "The bundled checkers").
PANIC_MARKER = [
    '{"in":1,"str":{"pre":0,"str":"_double"}}',
    '{"in":2,"str":{"pre":1,"str":"judgeDirectives"}}',
    '{"ie":0,"sort":0}',
    '{"ie":1,"strVal":"checker all panic"}',
    '{"def":{"all":[2],"hints":"abbrev","levelParams":[],"name":2,"safety":"safe","type":0,"value":1}}',
]


@pytest.mark.parametrize("binary", ["leanchecker-paranoid", "lean4lean"])
def test_a_lean_panic_prints_a_backtrace_line_unless_lean_backtrace_is_0(tmp_path: Path, binary: str) -> None:
    # src/runtime/object.cpp `lean_panic` (checkers-table-review.md §1.1 L5); without
    # LEAN_ABORT_ON_PANIC the run goes on with a default value, here to an accept.
    flag = "--import" if binary == "lean4lean" else "--from-export"
    args = [*(["--silent"] if binary != "lean4lean" else []), flag, str(_export(tmp_path, PANIC_MARKER))]
    got = _run(binary, *args)
    assert got.returncode == 0 and got.stderr.startswith("PANIC at ")
    assert got.stderr.splitlines()[1] == "backtrace:"
    got = _run(binary, *args, env={"LEAN_BACKTRACE": "0"})
    assert got.returncode == 0 and "backtrace:" not in got.stderr
