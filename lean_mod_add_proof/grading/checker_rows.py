"""The independent checkers' table: one cited row per checker a v4.35 toolchain ships (pure
data; kernels.py runs, budgets and classifies them by these rows, and its docstring gives the
rule by cause the rows serve).

**Sources.** Each row cites the checker's own source as stored (repo @commit, path, function).
No stored source is the revision v4.35.0-rc2 pins: those pins were not found, nor are rc2's
`LeanChecker.lean` and `Check.lean` stored (the research note behind this table:
docs/readings/checkers-table.md, issue 36). Where the nearest source predates rc2 the row says so, and the
self-test decides: on the real toolchain each checker must accept the reference and reject every
invalid canary *with the class and the exit status its row predicts* (`Checker.predicts`,
selftest.py). The table was checked against the sources by a reviewer who did not write it
(docs/readings/checkers-table-review.md, 2026-12-06); its corrections are in the rows.
Shared runtime facts (cited once here, used by the rows):
- LEAN-EXC: a Lean `main` whose exception escapes prints `uncaught exception: <msg>` and exits 1
  (lean4 src/runtime/io.cpp @ce4ae37c `lean_io_result_show_error`; src/Lean/Compiler/IR/EmitC.lean
  @47d1e07c `emitMainFn`).
- LEAN-IO: an IO error's text is `<gist> (error code: <errno>[, <details>])`, then `\\n  file:
  <path>` for a file operation (lean4 src/Init/System/IOError.lean @10c32fcf `IO.Error.toString`,
  `fopenErrorToString`).
- LEAN-PANIC: with LEAN_ABORT_ON_PANIC set (any value) a Lean `panic!` prints `PANIC at ...` and
  calls abort() (SIGABRT); unset, the run goes on with a default value. A failed allocation
  prints `INTERNAL PANIC: out of memory`, then abort() with the variable, `exit(1)` without
  (lean4 src/runtime/object.cpp @2e66341f `should_abort_on_panic`, `lean_panic_fn`,
  `lean_internal_panic_out_of_memory`). A native stack overflow prints `Stack overflow detected.
  Aborting.` and aborts whatever the variable (src/runtime/stack_overflow.cpp @f2573dc5
  `segv_handler`).
- RUST: a panic prints `thread '<name>' panicked at <file>:<line>:<col>:` (`thread '<name>'
  (<tid>) panicked at ...` in the Rust that built the rc toolchains: checkers-table.md T1) and the
  process exits 101; `main` returning `Err(e)` prints `Error: {e:?}` and exits 1; a failed
  allocation prints `memory allocation of <n> bytes failed` and aborts (SIGABRT); a stack overflow
  prints `thread '<name>' has overflowed its stack` and aborts (rust-lang/rust
  library/std/src/rt.rs @17f41815 `lang_start_internal`; process.rs @7a40b316 `Termination for
  Result`; alloc.rs @441a33e8 `default_alloc_error_hook`; sys/pal/unix/stack_overflow.rs
  @6e1b2a54). Neither Rust checker's Cargo.toml sets `panic = "abort"` (nanoda_lib @f58f2f6,
  con-ron @32a60de7).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from lean_mod_add_proof.grading.result import KernelKind

#: How a checker takes the export: its path as the last argument, or a nanoda config file.
InputStyle = Literal["path", "nanoda_config"]
#: What the self-test's checker canaries are, as each checker's row predicts its answer.
CanaryCase = Literal["reference", "missing dependency", "type mismatch", "unpermitted axiom"]


@dataclass(frozen=True)
class Reading:
    """One text that moves an exit status to another class: the output's non-empty lines, from
    the first, are `lines` (each a regular expression matched against the whole line, `{path}`
    standing for one of our files' paths), with nothing after them unless `more`; or, `lean_io`,
    the output is a Lean IO error on a host errno or on one of our files (LEAN-IO)."""

    kind: KernelKind
    meaning: str
    source: str
    lines: tuple[str, ...] = ()
    more: bool = False
    """Further lines may follow (a usage text): only for a first line the export cannot make."""
    lean_io: bool = False


@dataclass(frozen=True)
class ExitRow:
    """One exit code of a checker: what it means, its class, its source, and the readings of the
    output that make it something else."""

    code: int
    kind: KernelKind
    meaning: str
    source: str
    readings: tuple[Reading, ...] = ()


@dataclass(frozen=True)
class Prediction:
    """What a checker's row predicts on a self-test canary: its class, its exact status (`exit 1`,
    `SIGABRT`: `run_status`), and a text its detail must hold (nanoda's panic location)."""

    kind: KernelKind
    status: str
    detail_has: str = ""
    where: str = ""
    """How `detail_has` reads in a report (`at src/tc.rs`)."""

    def describe(self) -> str:
        return f"{self.kind} ({self.status}{' ' + self.where if self.where else ''})"


@dataclass(frozen=True)
class Checker:
    """One bundled checker: its binary under the toolchain's bin/, how to call it, and its row."""

    name: str
    binary: str
    args: tuple[str, ...]
    """Fixed arguments before the input (the export path, or the config path)."""
    command_source: str
    input_format: str
    """The input it reads and the format versions it takes (as found, or "not found")."""
    exits: tuple[ExitRow, ...]
    predicts: Mapping[CanaryCase, Prediction]
    time_factor: float
    """Its budget is this times the official replay's time of the same export (`budget_s`)."""
    time_factor_why: str
    abort_on_panic: bool
    """Run with LEAN_ABORT_ON_PANIC=1 (Lake's setting for every kernel)."""
    abort_on_panic_why: str
    input: InputStyle = "path"
    abort_readings: tuple[Reading, ...] = ()
    """Readings of a SIGABRT whose text is the host's or our limits' (con-leche's threads)."""
    polices_axioms: bool = False
    """It refuses a use of an axiom outside the permitted list by itself."""
    notes: tuple[str, ...] = field(default=())


#: Where the Lean IO error reading comes from (a table constant, not a function: the rows are
#: built at import).
_LEAN_IO_SOURCE = "LEAN-EXC + LEAN-IO (module docstring); a parse error of the export is no IO error"
_LEAN_IO_UNREADABLE = Reading(
    "host errno",
    "the export could not be read: a host errno, or our own file missing",
    _LEAN_IO_SOURCE,
    lean_io=True,
)


#: Rust's `io::Error` Display for an OS error: the C library's message, then its number (library/std
#: src/io/error/repr_bitpacked.rs and error.rs `Display for Error`: "{detail} (os error {code})").
_RUST_IO = r"[A-Z][A-Za-z/ ,'-]* \(os error \d+\)"
#: nanoda's `MainError` Debug: the error's Display, a blank line, then this (nanoda_lib @f58f2f6
#: src/main.rs l.54-58).
_NANODA_HELP = r"run with `-h` or `--help` for help"
_RUST_NOTE = r"note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"


def _nanoda_main_error(kind: KernelKind, meaning: str, source: str, error: str) -> Reading:
    """A reading of nanoda's `main` returning `Err`: `Error: ` and the error (a regular
    expression), then its help line (`MainError` Debug, `_NANODA_HELP`; RUST)."""
    return Reading(kind, meaning, source, lines=(r"Error: " + error, _NANODA_HELP))


_ACCEPT = Prediction("accepted", "exit 0")
_LEAN_REJECT = Prediction("rejected", "exit 1")
_NANODA_PANIC = Prediction("panic", "exit 101", "panicked at src/tc.rs:", "at src/tc.rs")
_DECLINE = Prediction("declined", "exit 2")

#: The order in which Lake's `--paranoid` runs them (tests/lake/tests/check-paranoid/test.sh
#: @1fbba09c), then con-ron. Each factor is the floor of the independent review of the table
#: (docs/readings/checkers-table-review.md §1.8, correction 10), from the cost evidence cited in its row.
CHECKERS: tuple[Checker, ...] = (
    Checker(
        "leanchecker-paranoid",
        "leanchecker-paranoid",
        ("--silent", "--from-export"),
        command_source="lean4 tests/lake/tests/check-paranoid/test.sh @1fbba09c (its stub prints "
        "`leanchecker-paranoid stub got: --silent --from-export /`); the program is leanchecker built "
        "with a hardened allocator (reference-manual Manual/Releases/v4_35_0.lean @38eda35d, #14884); "
        "its own source was not found",
        input_format="the NDJSON export of the same toolchain (LeanExport.parseStream); version range "
        "not read",
        exits=(
            ExitRow(
                1,
                "rejected",
                "the kernel or the quotient post-check rejects (stdout `Lean default kernel rejects the "
                "solution: ...`), or an exception escaped: a parse error of the export (the export's), "
                "an IO error, our command line",
                "lean4 src/LeanChecker.lean @017bb1eb `checkExport`, `main` (pre-rc2: `--export`, no "
                "`--from-export`, no `--silent`); LEAN-EXC",
                readings=(
                    _LEAN_IO_UNREADABLE,
                    Reading(
                        "setup",
                        "our command line refused",
                        "lean4 src/LeanChecker.lean @017bb1eb `main`",
                        lines=(r"uncaught exception: Exactly one export file expected but got: .*",),
                    ),
                ),
            ),
        ),
        predicts={
            "reference": _ACCEPT,
            "missing dependency": _LEAN_REJECT,
            "type mismatch": _LEAN_REJECT,
            "unpermitted axiom": _ACCEPT,
        },
        time_factor=3.0,
        time_factor_why="the official kernel's code with a hardened allocator, usually slower than the "
        "default one; no measurement found (checkers-table.md §5; review §1.8: no evidence either way)",
        abort_on_panic=True,
        abort_on_panic_why="Lake sets it for every kernel (Check.lean @0243d9f4 `runExternalKernel`: "
        'envOverride ("LEAN_ABORT_ON_PANIC", "1")): a panic aborts instead of going on with a default '
        "value, and a runtime out of memory is SIGABRT rather than exit 1 (LEAN-PANIC)",
        notes=(
            "never declines: the program has no exit 2 (src/LeanChecker.lean @017bb1eb)",
            "a heap corruption found by the hardened allocator presumably aborts (SIGABRT): not found "
            "in a source; a fault signal is a rejection either way",
        ),
    ),
    Checker(
        "lean4lean",
        "lean4lean",
        ("--import",),
        command_source="lean4 tests/lake/tests/check-paranoid/test.sh @1fbba09c (`lean4lean stub got: "
        "--import /`); digama0/lean4lean branch arena @ecb3b666 Main.lean `main` (the only stored "
        "lean4lean with `--import`; it predates rc2)",
        input_format="NDJSON parsed by lean4export v4.30.0's `Export.parseStream` (lean4export @a3e35a58 "
        "Export/Parse.lean: no format-version check)",
        exits=(
            ExitRow(
                1,
                "rejected",
                "a kernel exception other than a declaration type mismatch (`uncaught exception: at "
                "<decl>: (kernel) ...`: an unknown constant, an application type mismatch, ...; its fuel "
                "ran out: `deterministicTimeout`, `deepRecursion`), a constructor or recursor record "
                "unlike the generated one, a parse error of the export, our command line, an IO error",
                "digama0/lean4lean @6ff16905 Lean4Lean/Replay.lean `Kernel.Exception.mapEnvM`, "
                "`throwKernelException`, `replayConstant` (`at {name}: ...`), "
                "`checkPostponedConstructors`, `checkPostponedRecursors`; @ecb3b666 "
                "Lean4Lean/FuelConfig.lean, Main.lean `main`; LEAN-EXC",
                readings=(
                    _LEAN_IO_UNREADABLE,
                    Reading(
                        "setup",
                        "our command line refused (`--import` takes exactly one file)",
                        "digama0/lean4lean @ecb3b666 Main.lean `main`",
                        lines=(r"uncaught exception: --import .*",),
                    ),
                ),
            ),
        ),
        predicts={
            "reference": _ACCEPT,
            # The theorem's use of a constant the export lacks: `unknownConstant`, printed against
            # the fresh environment `mapEnvM` gives every exception but one: no panic, exit 1.
            "missing dependency": _LEAN_REJECT,
            # `declTypeMismatch` is the one exception `mapEnvM` leaves with the replay's own
            # environment, which has no extension state: its printer panics (`getStateImpl`), and
            # under LEAN_ABORT_ON_PANIC that is SIGABRT (LEAN-PANIC; checkers-table.md T1 saw it).
            "type mismatch": Prediction("aborted", "SIGABRT"),
            "unpermitted axiom": _ACCEPT,
        },
        time_factor=4.0,
        time_factor_why="measured at +25 % to +188 % of the official kernel's time on real corpora "
        "(arena.lean-lang.org, before lean4lean @aaeeb15's replay fix; review §1.3); nothing on "
        "reduction-heavy shapes, where its fuel, not its time, is the likelier limit",
        abort_on_panic=True,
        abort_on_panic_why="Lake sets it for every kernel (Check.lean @0243d9f4 `runExternalKernel`). "
        "Unset, a panic in its own replay (`unreachable!`, `newConstants[n]!`, Replay.lean "
        "`replayConstant`) goes on with a default `ConstantInfo` (LEAN-PANIC); set, that and a "
        "declaration type mismatch end in SIGABRT, a rejection by the rule",
        notes=(
            "never declines: no exit 2 in its source (Main.lean @ecb3b666)",
            "its fuel (Lean4Lean/FuelConfig.lean: whnf 100000, lazyDelta 1000, ...) is Lake's "
            "default; running out is a rejection (exit 1) that the official kernel, which has no "
            "fuel, would not give: the grader passes no `--config` (an honest heavy proof the "
            "reference does not cover can be refused by lean4lean alone)",
        ),
    ),
    Checker(
        "nanoda",
        "nanoda_bin",
        (),
        input="nanoda_config",
        command_source="lean4 tests/lake/tests/check-paranoid/test.sh @1fbba09c (`nanoda_bin stub got: "
        "/`: one argument, a JSON config, as Check.lean @0243d9f4 `runExternalKernel` writes it); "
        "ammkrn/nanoda_lib @f58f2f6 (0.4.10-beta) src/main.rs `main` (the rc2 pin was not found; a "
        "third-party rc3 record shows its line numbers differ, checkers-table.md T1)",
        input_format="`export_file_path` in export format [3.1.0, 3.2.0) (nanoda_lib @f58f2f6 "
        "src/parser.rs `check_semver`); config keys of src/util.rs `Config` (unknown keys ignored)",
        exits=(
            ExitRow(
                101,
                "panic",
                "a panic: an ill-typed export (an assertion of the type checker, e.g. "
                "`assertion failed: self.def_eq(u, v)`), a use of an axiom outside the permitted list "
                "(`declaration not found in infer_const`), a construct it does not support, an index "
                "past 31 bits (src/util.rs), a config it cannot parse (constant: the self-test's "
                "reference fails on it first), or the reading below",
                "nanoda_lib @f58f2f6 src/tc.rs `check_declar`, `assert_def_eq`, `infer_const`; "
                "src/parser.rs `go1`; src/util.rs l.56, l.657, l.924; @698c869 commit message (panic 101 "
                "= not well typed); RUST",
                readings=(
                    Reading(
                        "host fault",
                        "a worker thread could not be created (EAGAIN: the host's thread limit); "
                        "`num_threads` is ours, constant over exports",
                        "nanoda_lib @f58f2f6 src/tc.rs `check_all_declars_par` l.128-136 "
                        "(`.spawn_scoped(...)...unwrap()` on the main thread); RUST",
                        lines=(
                            r"thread 'main'(?: \(\d+\))? panicked at src/tc\.rs:\d+:\d+:",
                            r"called `Result::unwrap\(\)` on an `Err` value: "
                            r'Os \{ code: 11, kind: WouldBlock, message: "[^"]*" \}',
                            _RUST_NOTE,
                        ),
                    ),
                ),
            ),
            ExitRow(
                2,
                "declined",
                "declined: discontiguous back-references in the export (`Declined: ... Back-refs must "
                "be continuous.`)",
                "nanoda_lib @698c869 src/parser.rs (the commit that made 2 a decline)",
            ),
            ExitRow(
                1,
                "failed",
                "`main` returned an error: a line of the export its schema refuses (serde, `... at line "
                "N column M`; the export's), or one of the readings below",
                "nanoda_lib @f58f2f6 src/main.rs `main`, `MainError`; src/parser.rs `go1` "
                "(`serde_json::from_str(line)?`); RUST",
                readings=(
                    _nanoda_main_error(
                        "setup",
                        "our config file cannot be opened",
                        "nanoda_lib @f58f2f6 src/util.rs `TryFrom<&Path>`",
                        r"failed to open configuration file: .*",
                    ),
                    _nanoda_main_error(
                        "setup",
                        "our config contradicts itself",
                        "nanoda_lib @f58f2f6 src/util.rs",
                        r"incompatible config options.*",
                    ),
                    _nanoda_main_error(
                        "host errno",
                        "the export file cannot be opened",
                        "nanoda_lib @f58f2f6 src/util.rs `to_export_file`",
                        r"Failed to open export file.*",
                    ),
                    _nanoda_main_error(
                        "host errno",
                        "the export could not be read: an OS error (its Display, `(os error N)`)",
                        "nanoda_lib @f58f2f6 src/parser.rs l.393 `parse_export_file` "
                        "(`read_line(...)?`); RUST",
                        _RUST_IO,
                    ),
                    _nanoda_main_error(
                        "setup",
                        "a pretty-printer destination (not in our config)",
                        "nanoda_lib @f58f2f6 src/util.rs `get_pp_destination`",
                        r"Failed to open pretty printer destination file.*",
                    ),
                    _nanoda_main_error(
                        "setup",
                        "the toolchain's exporter writes a format version nanoda does not take",
                        "nanoda_lib @f58f2f6 src/parser.rs `check_semver`",
                        r"export format version is .*",
                    ),
                    _nanoda_main_error(
                        "setup",
                        "our command line has no config path",
                        "nanoda_lib @f58f2f6 src/main.rs `main`",
                        r"This program expects a path.*",
                    ),
                ),
            ),
        ),
        predicts={
            "reference": _ACCEPT,
            # A constant the export lacks is not found in the environment (src/tc.rs `infer_const`).
            "missing dependency": _NANODA_PANIC,
            "type mismatch": _NANODA_PANIC,
            # `unpermitted_axiom_hard_error: false`: the axiom is not installed, so its use panics.
            "unpermitted axiom": _NANODA_PANIC,
        },
        time_factor=4.0,
        time_factor_why="0.4-0.7x the official kernel on real corpora (arena.lean-lang.org; con-ron "
        "OVERVIEW.md @00cf6cc8 §9, one worker), but nothing on reduction-heavy exports and its "
        "bignums are num-bigint, not GMP: 4x until measured (review §1.8)",
        abort_on_panic=False,
        abort_on_panic_why="irrelevant: nanoda reads no environment variable (nanoda_lib @f58f2f6: no "
        "`env::var` in src/); not set",
        polices_axioms=True,
        notes=(
            "config as Lake writes it: `unpermitted_axiom_hard_error: false` (check-paranoid/test.sh "
            "@1fbba09c `match_text '\"unpermitted_axiom_hard_error\":false'`), so exit 1 is never the "
            "export's axiom; our judge polices axioms",
            "`num_threads` >= 2: the check runs on worker threads with a fixed 16 MiB stack "
            "(src/tc.rs `check_all_declars`, src/lib.rs `STACK_SIZE`), so a deep term overflows the "
            "same way on every host; with 1 it runs on the main thread, whose stack is the host's",
            "a worker's panic is followed by main's `A thread in `check_all_declars` panicked while "
            "being joined: Any { .. }` (src/tc.rs l.139-141); the other workers go on checking "
            "until the list is done, so a rejection costs about a full check",
            "a panic's first line is `thread '<name>' (<tid>) panicked at <file>:<line>:<col>:` in the "
            "Rust that built rc3 (T1); no reading matches a line number, which differ by build",
        ),
    ),
    Checker(
        "con-leche",
        "con-leche",
        ("--jobs=1",),
        command_source="lean4 tests/lake/tests/check-paranoid/test.sh @1fbba09c (`con-leche stub got: "
        "/`: Lake passes no flag); leanprover/con-ron @2789de1c vendor/con-leche/Main.lean `main`, "
        "`parseArgs`, `usage` (nearest to rc2 by name; the rc2 pin was not found)",
        input_format="a raw lean4export NDJSON stream, read line by line; version range not found",
        exits=(
            ExitRow(
                1,
                "rejected",
                "a declaration rejected (`con-leche: invalid: ...` at the parse, `con-leche: <e> [at "
                "<decl>, fold position <i>]` at the fold, a mismatching basis block); a runtime out of "
                "memory without LEAN_ABORT_ON_PANIC; or the reading below",
                "con-ron @2789de1c vendor/con-leche/Main.lean header, `CheckError.exitCode`, `checkMain`, "
                "`usage` (a mismatching basis block still rejects)",
                readings=(
                    Reading(
                        "host errno",
                        "the export could not be opened or read: an IO error the parse does not catch "
                        "(`parseExportStreamD` opens and reads in plain IO; no input makes one)",
                        "con-leche frontend `parseExportStreamD` (index ids 67333512631, 67265860998; "
                        "review §1.6); " + _LEAN_IO_SOURCE,
                        lean_io=True,
                    ),
                ),
            ),
            ExitRow(
                2,
                "declined",
                "declined: a construct it does not support (`con-leche: declined: ...`, or `not "
                "implemented yet: ...` at the fold): an inductive block no route takes, a use of "
                "`sorryAx`, a non-pinned axiom (even one only declared, at its own record), a prelude "
                "declaration unlike its pinned one",
                'con-ron @2789de1c vendor/con-leche/Main.lean `CheckError.exitCode`, `usage` ("Every '
                'other non-pinned axiom declines at its own record")',
            ),
            ExitRow(
                3,
                "failed",
                "an internal error at the parse (`con-leche: <file>:<line>: <msg>`) or the fold, or one "
                "of the readings below",
                "con-ron @2789de1c vendor/con-leche/Main.lean `checkMain`, `checkPool`, `main`",
                readings=(
                    Reading(
                        "setup",
                        "our command line refused (the usage text)",
                        "con-ron @2789de1c vendor/con-leche/Main.lean `main`, `usage`",
                        lines=(r"usage: con-leche .*",),
                        more=True,
                    ),
                    Reading(
                        "setup",
                        "the toolchain's built-in prelude does not parse (a broken build)",
                        "con-ron @2789de1c vendor/con-leche/Main.lean `checkMain`",
                        lines=(r"con-leche: the built-in prelude .*",),
                    ),
                    Reading(
                        "host fault",
                        'a worker failed as an IO action: "never a verdict on the input" (its source); '
                        "the `con-leche: ` prefix is not confirmed",
                        "con-ron @2789de1c vendor/con-leche/Main.lean `checkDeclsIO`, `checkPool`",
                        lines=(r"(?:con-leche: )?check phase: (?:the|a) worker failed: .*",),
                    ),
                ),
            ),
        ),
        abort_readings=(
            Reading(
                "host fault",
                "the runtime could not create a worker thread (1 GiB of address space each; the "
                "host's thread limit, or our address-space limit, 16 GiB against a memory cap near "
                "1 GiB)",
                'con-ron @2789de1c vendor/con-leche/Main.lean `jobsCount` docstring ("the runtime '
                "aborts ('failed to create thread', exit 134)\"); LEAN-PANIC",
                lines=(r"(?:INTERNAL PANIC: )?failed to create thread.*",),
            ),
        ),
        predicts={
            "reference": _ACCEPT,
            "missing dependency": _LEAN_REJECT,
            "type mismatch": _LEAN_REJECT,
            # Its usage text: "Every other non-pinned axiom declines at its own record"; a
            # third-party rc3 record shows exit 2 (checkers-table.md T1; review correction 8).
            "unpermitted axiom": _DECLINE,
        },
        time_factor=8.0,
        time_factor_why="measured at 1.14-1.69x the official kernel's instructions on real workloads "
        "and up to 5.35x on synthetic worst cases, single worker, one run per cell (con-ron @1d005446 "
        "vendor/con-leche/PERF.md); 8x leaves room for the load between the judge's run and its own "
        "(review §1.8)",
        abort_on_panic=True,
        abort_on_panic_why="Lake sets it for every kernel (Check.lean @0243d9f4); with it a runtime "
        "out of memory is SIGABRT, apart from a rejection's exit 1 (Main.lean header: otherwise \"the "
        'message on stderr is what tells the two apart")',
        polices_axioms=True,
        notes=(
            "`--jobs=1`, unlike Lake: by default it starts one worker per hardware thread, each "
            "reserving 1 GiB of address space, which under the grader's 16 GiB address-space backstop "
            "aborts on a host with more than about ten threads, for every input (Main.lean "
            "`jobsCount`); PERF.md measures the `--jobs=1` lane",
            "it reads CON_LECHE_INMODEL* and CON_LECHE_PROJREC_TRACE; every checker runs in the "
            "grader's complete environment (process/commands.py `child_env`: nothing inherited), as "
            "Lake's `--clearenv` does",
            "primitive projections: a decline in its README, but `checkMain` rewrites projection "
            "functions to recursor form (`projRewrites`); not found as a decline (review §1.6)",
        ),
    ),
    Checker(
        "con-ron",
        "con-ron",
        ("--jobs=1",),
        command_source="leanprover/con-ron @05321985 crates/con-ron/src/bin/con-ron.rs `USAGE`, "
        "`parse_args`, `main`; Lake's own arguments for con-ron in rc2 were not found (check-paranoid "
        "@1fbba09c lists four checkers without it)",
        input_format="a raw lean4export NDJSON stream, read 4 MiB at a time; version range not found",
        exits=(
            ExitRow(
                1,
                "rejected",
                "rejected (`CheckError::Invalid`: `con-ron: invalid: ...` at the parse, the fold's "
                "verdict line otherwise)",
                "con-ron @05321985 crates/con-ron/src/bin/con-ron.rs `classify`, `frontend_exit`, "
                "`check_main`",
            ),
            ExitRow(
                2,
                "declined",
                "declined (`NotImplemented`, an inductive block whose shape the installer does not "
                "recognise, `CheckError::Native` including the arena's 2^27-handle cap)",
                "con-ron @05321985 crates/con-ron/src/bin/con-ron.rs `USAGE`, `classify`",
            ),
            ExitRow(
                3,
                "failed",
                "a panic on the checking thread (`con-ron: the checking thread died`), an internal "
                "error (`con-ron: <file>:<line>: <msg>`, `Internal`), or one of the readings below",
                "con-ron @05321985 crates/con-ron/src/bin/con-ron.rs `main`, `check_main`",
                readings=(
                    Reading(
                        "setup",
                        "our command line refused (the usage text alone: not exactly one file)",
                        "con-ron @05321985 con-ron.rs `main`",
                        lines=(r"usage: con-ron .*",),
                        more=True,
                    ),
                    Reading(
                        "host fault",
                        "the 1 GiB-stack checking thread could not be spawned (before the input is read)",
                        "con-ron @05321985 con-ron.rs `main`",
                        lines=(r"con-ron: cannot spawn the checking thread: " + _RUST_IO,),
                    ),
                    Reading(
                        "setup",
                        "the reserved-name pins do not intern (a broken build)",
                        "con-ron @05321985 con-ron.rs `check_main`",
                        lines=(r"con-ron: the reserved-name pins do not intern .*",),
                    ),
                    Reading(
                        "setup",
                        "the built-in prelude does not parse (a broken build)",
                        "con-ron @05321985 con-ron.rs `check_main`",
                        lines=(r"con-ron: the built-in prelude .*",),
                    ),
                    Reading(
                        "host errno",
                        "the export file cannot be read (`con-ron: <file>: <io error>`)",
                        "con-ron @05321985 con-ron.rs `check_main` (`parse_export_stream_d` `Err`; that "
                        "this arm is only an IO error is not verified: the reading asks for an OS error)",
                        lines=(r"con-ron: {path}: " + _RUST_IO,),
                    ),
                ),
            ),
        ),
        predicts={
            "reference": _ACCEPT,
            "missing dependency": _LEAN_REJECT,
            "type mismatch": _LEAN_REJECT,
            # Not found in con-ron's own source: its exit codes are con-leche's (con-ron.rs module
            # docstring), whose usage says a non-pinned axiom declines. The self-test decides.
            "unpermitted axiom": _DECLINE,
        },
        time_factor=8.0,
        time_factor_why="about 0.47x con-leche's instructions and wall time on Init and Mathlib, one "
        "worker (con-ron OVERVIEW.md @00cf6cc8 §9; the 1.6x of README @07552312 is the old design's); "
        "nothing on reduction-heavy shapes, so con-leche's factor (review §1.8)",
        abort_on_panic=False,
        abort_on_panic_why='irrelevant: "The binary reads no environment variable" (con-ron.rs @05321985 '
        "`USAGE`); not set. Later revisions read CON_LECHE_* (OVERVIEW.md @00cf6cc8 §2.1): the "
        "grader's environment has none (process/commands.py `child_env`)",
        polices_axioms=True,
        notes=(
            "`--jobs=1`: one phase-B worker, each reserving 1 GiB of stack (con-ron.rs `USAGE`); the "
            "checking thread itself has a 1 GiB stack (`driver::STACK_BYTES`)",
            "out of memory aborts (SIGABRT, `memory allocation of <n> bytes failed`): a rejection",
            "the set of inductive shapes it declines changes between revisions (review §1.5)",
        ),
    ),
)
CHECKER_NAMES: tuple[str, ...] = tuple(c.name for c in CHECKERS)
#: The name the official kernel (the grader's replay judge) goes by on a result.
OFFICIAL = "lean"
