"""The independent checkers a v4.35 toolchain ships: how each is called, what each of its exit
statuses means, and the verdict each status gives (pure).

With `kernels = all`, once the grader's own judge accepted a submission on the export route, each
checker below reads the same export file, in the sandbox, from the verdict directory
(routes/checkers.py). Accepted only when every checker accepted (`combine`).

**The rule, by cause** (issue 36; the same as for the official judge). A checker's run is
*could not judge*, naming the checker, only when the host or the grader caused its outcome:
- its binary is missing from the toolchain's `bin/` (routes/checkers.py);
- the sandbox did not start it, or it could not be spawned (`process.HostFault`);
- a signal it did not raise itself ended it: the kernel's OOM killer, any SIGKILL the grader did
  not send, SIGTERM, ... (`signals.signal_origin` is `outside`);
- a host errno on a file the grader wrote (the export, nanoda's config), in the checker's own
  wording (the `host errno` readings below);
- its wall-clock backstop passed before its CPU budget ran out (`wall_backstop_s`): the host gave
  it no CPU;
- our own command line or config, or the toolchain's own build (a version its exporter writes, a
  prelude that does not parse), refused (the `setup` readings): constant over exports, so the
  self-test's reference already fails on them.
Everything the submission's export causes is a **rejection naming the checker**: its reject code
or panic, a decline, a cap of its own run, running out of its own CPU budget, any fault signal
(SIGABRT, SIGSEGV, ...), any exit status its row does not list. Lake's `--paranoid` rejects on
every non-zero exit too (lean4 src/lake/Lake/CLI/Check.lean @0243d9f4 `runExternalKernel`: "if
ret != 0 then ... kernel rejected the solution"; tests/lake/tests/check-paranoid/test.sh
@1fbba09c "One rejection rejects the solution"), but also rejects on a missing checker or a host
fault; the grader keeps those apart, so `kernels = all` grades on the export route only.

**Readings of the output.** Where one exit status mixes causes, the checker's own words tell them
apart. A reading is the *whole* output, line by line from the first, each line matched whole
(`Reading.lines`), and only when the output was not cut: each host or setup error is printed
before the checker reads a byte of the export, and the program stops right after it, so its text
is all there is. A name the export chooses can follow a checker's own first words anywhere, with
newlines in it, so a prefix or a later line proves nothing (docs/readings/checkers-table-review.md correction
3). Any other output is the export's. A reading's `setup` cause is constant over exports (our
command line, our config, the toolchain's build), so the self-test's reference fails on it first.

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

import errno
import json
import os
import re
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from lean_mod_add_proof.grading.messages import one_line
from lean_mod_add_proof.grading.oserrors import HOST_ERRNOS
from lean_mod_add_proof.grading.result import KernelKind, KernelRun
from lean_mod_add_proof.grading.signals import signal_name, signal_origin

Verdict = Literal["accepted", "rejected", "not judged"]
#: How a checker takes the export: its path as the last argument, or a nanoda config file.
InputStyle = Literal["path", "nanoda_config"]
#: What the self-test's checker canaries are, as each checker's row predicts its answer.
CanaryCase = Literal["reference", "missing dependency", "type mismatch", "unpermitted axiom"]

#: The verdict each kind of outcome gives (KernelKind in result.py says what each is).
VERDICT_OF: dict[KernelKind, Verdict] = {
    "accepted": "accepted",
    "rejected": "rejected",
    "panic": "rejected",
    "declined": "rejected",
    "aborted": "rejected",
    "crashed": "rejected",
    "capped": "rejected",
    "timed out": "rejected",
    "failed": "rejected",
    "missing": "not judged",
    "host fault": "not judged",
    "killed from outside": "not judged",
    "host errno": "not judged",
    "setup": "not judged",
}


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
                    Reading(
                        "setup",
                        "our config file cannot be opened",
                        "nanoda_lib @f58f2f6 src/util.rs `TryFrom<&Path>`",
                        lines=(r"Error: failed to open configuration file: .*", _NANODA_HELP),
                    ),
                    Reading(
                        "setup",
                        "our config contradicts itself",
                        "nanoda_lib @f58f2f6 src/util.rs",
                        lines=(r"Error: incompatible config options.*", _NANODA_HELP),
                    ),
                    Reading(
                        "host errno",
                        "the export file cannot be opened",
                        "nanoda_lib @f58f2f6 src/util.rs `to_export_file`",
                        lines=(r"Error: Failed to open export file.*", _NANODA_HELP),
                    ),
                    Reading(
                        "host errno",
                        "the export could not be read: an OS error (its Display, `(os error N)`)",
                        "nanoda_lib @f58f2f6 src/parser.rs l.393 `parse_export_file` "
                        "(`read_line(...)?`); RUST",
                        lines=(r"Error: " + _RUST_IO, _NANODA_HELP),
                    ),
                    Reading(
                        "setup",
                        "a pretty-printer destination (not in our config)",
                        "nanoda_lib @f58f2f6 src/util.rs `get_pp_destination`",
                        lines=(r"Error: Failed to open pretty printer destination file.*", _NANODA_HELP),
                    ),
                    Reading(
                        "setup",
                        "the toolchain's exporter writes a format version nanoda does not take",
                        "nanoda_lib @f58f2f6 src/parser.rs `check_semver`",
                        lines=(r"Error: export format version is .*", _NANODA_HELP),
                    ),
                    Reading(
                        "setup",
                        "our command line has no config path",
                        "nanoda_lib @f58f2f6 src/main.rs `main`",
                        lines=(r"Error: This program expects a path.*", _NANODA_HELP),
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
#: Where the nanoda config is written, relative to the judge's /tmp.
NANODA_CONFIG = "nanoda-config.json"
#: nanoda's worker threads at least (see its row's notes; Lake writes 4, Check.lean @0243d9f4).
NANODA_MIN_THREADS = 2


def checker_named(name: str) -> Checker:
    """The checker of that name (KeyError for another name)."""
    for c in CHECKERS:
        if c.name == name:
            return c
    raise KeyError(name)


def checker_path(toolchain_dir: Path, checker: Checker) -> Path:
    """Always the toolchain's own binary, never one found through PATH."""
    return toolchain_dir / "bin" / checker.binary


def shipped(toolchain_dir: Path) -> list[Checker]:
    """The checkers whose binaries the toolchain has (executable files)."""
    return [c for c in CHECKERS if os.access(checker_path(toolchain_dir, c), os.X_OK)]


def nanoda_config(export_path: str, permitted_axioms: Sequence[str], threads: int) -> str:
    """The config Lake's `runExternalKernel` writes for a nanoda-like checker (pure), as the
    rc2-era Lake writes it (`unpermitted_axiom_hard_error: false`), with `threads` workers but
    never fewer than NANODA_MIN_THREADS."""
    return json.dumps(
        {
            "use_stdin": False,
            "export_file_path": export_path,
            "permitted_axioms": list(permitted_axioms),
            "unpermitted_axiom_hard_error": False,
            "num_threads": max(NANODA_MIN_THREADS, threads),
            "nat_extension": True,
            "string_extension": True,
        }
    )


def checker_argv(binary: Path, checker: Checker, export_path: str, config_path: str) -> list[str]:
    """The command line (pure): the export's path, or the nanoda config's."""
    last = config_path if checker.input == "nanoda_config" else export_path
    return [str(binary), *checker.args, last]


def checker_env(checker: Checker) -> dict[str, str]:
    """What the checker's run adds to the grader's environment (pure): LEAN_ABORT_ON_PANIC=1 where
    its row says so (any value turns it on, so it is left out, not set to 0, elsewhere)."""
    return {"LEAN_ABORT_ON_PANIC": "1"} if checker.abort_on_panic else {}


def budget_s(checker: Checker, *, official_s: float | None, floor_s: float) -> float:
    """The checker's own budget, in CPU seconds (pure): its time factor times the CPU seconds the
    official kernel's replay of this same export used (`official_s`; None when the judge did not
    run, as for the self-test's checker canaries), and never less than `floor_s`, the time the
    official judge itself may take (the grade's `timeout_s`). Padding the export makes the
    official replay longer, and so the checkers' budgets with it. CPU seconds, not wall time
    (review correction 9): host load between the judge's run and the checker's cannot use them
    up, so it cannot turn an honest proof into a rejection."""
    work = checker.time_factor * official_s if official_s is not None else 0.0
    return max(floor_s, work)


#: A checker's wall-clock backstop is this many times its CPU budget: it passes only when the
#: checker got less than a third of a core for its whole run, which is the host's load (or a
#: checker blocked, not computing: no export makes a checker wait). Its expiry is could not judge.
WALL_PER_CPU_S = 3


def wall_backstop_s(cpu_budget_s: float) -> float:
    """The checker's wall-clock deadline, in seconds from its start (pure)."""
    return WALL_PER_CPU_S * cpu_budget_s


#: How process/ names the CPU cap's kill (`cpu_cap_reason`): a checker's own CPU budget.
CPU_CAP = "CPU time cap exceeded"


#: A checker's memory is at least this many times the official judge's peak on the same export
#: (review §3, "memory budget should scale with the grade"): the measured peaks of con-ron,
#: con-leche and nanoda are at most about the official kernel's (con-leche PERF.md @1d005446:
#: Mathlib 7.87 against 9.16 GiB; con-ron OVERVIEW.md @00cf6cc8 §9: Init 0.36-0.65 GB), so twice
#: it leaves room for a checker whose allocator or representation costs more.
MEMORY_FACTOR = 2


def memory_extra_mb(*, judge_extra_mb: int, memory_mb: int, official_peak_mb: int) -> int:
    """What a checker gets on top of `memory_mb` (pure): the judge's own fixed cost (so at least
    the judge's memory), or enough for MEMORY_FACTOR times the official judge's peak on this
    export, whichever is more. A heavier honest export raises the checkers' memory with it, as
    a longer official replay raises their time (`budget_s`)."""
    return max(judge_extra_mb, MEMORY_FACTOR * official_peak_mb - memory_mb)


@dataclass(frozen=True)
class Classification:
    """What one checker's run came to: the verdict, the class (`KernelKind`) and a few words."""

    verdict: Verdict
    kind: KernelKind
    detail: str


def _lines(output: str) -> list[str]:
    """The output's non-empty lines, stripped."""
    return [ln.strip() for ln in output.splitlines() if ln.strip()]


#: LEAN-IO's first line: a gist of lowercase words (a fixed gist, or the C library's strerror with
#: its first letter lowered), then the errno; no Lean name (dots, capitals) fits the gist.
_LEAN_IO_ERROR = re.compile(r"uncaught exception: [a-z][a-z ]* \(error code: (\d+)(?:, [^()]*)?\)")
#: A missing or unreadable file of ours (the export, the config) is the host's or the grader's:
#: the submission cannot reach the verdict directory (routes/checkers.py).
_OWN_FILE_ERRNOS = frozenset({errno.ENOENT, errno.EACCES, errno.EPERM, errno.EISDIR, errno.ENOTDIR})


def _lean_io_on_ours(output: str, our_paths: Sequence[str]) -> bool:
    """Whether the whole output is a Lean IO error (LEAN-IO: its line, then at most a `file:`
    line) on a host errno, or on a file of ours (the `file:` line names one of `our_paths`)."""
    lines = _lines(output)
    if not 1 <= len(lines) <= 2 or (m := _LEAN_IO_ERROR.fullmatch(lines[0])) is None:
        return False
    named = lines[1].removeprefix("file: ") if len(lines) == 2 else None
    if named is not None and not lines[1].startswith("file: "):
        return False
    code = int(m.group(1))
    return code in HOST_ERRNOS or (code in _OWN_FILE_ERRNOS and named in our_paths)


def _matches(reading: Reading, output: str, our_paths: Sequence[str]) -> bool:
    """Whether the output is the reading's text: its lines from the first, each whole, and no
    other line unless `more` (review correction 3: a name the export chooses can stand anywhere
    after a checker's own first words, so a prefix or a later line proves nothing)."""
    if reading.lean_io:
        return _lean_io_on_ours(output, our_paths)
    lines = _lines(output)
    if len(lines) < len(reading.lines) or (len(lines) > len(reading.lines) and not reading.more):
        return False
    paths = "|".join(re.escape(p) for p in our_paths) or "(?!)"
    for line, pattern in zip(lines, reading.lines, strict=False):
        if re.fullmatch(pattern.replace("{path}", f"(?:{paths})"), line) is None:
            return False
    return bool(reading.lines)


def _quote(output: str) -> str:
    lines = _lines(output)
    return f": {one_line(lines[0], 100)}" if lines else ""


_RUST_PANIC = re.compile(r"^thread '[^']*'(?: \(\d+\))? panicked at ([^\s:]+:\d+:\d+):?")


def _panic_location(output: str) -> str:
    """Where the first Rust panic of the output happened (`src/tc.rs:925:71`), else ""."""
    for ln in output.splitlines():
        if m := _RUST_PANIC.match(ln.strip()):
            return m.group(1)
    return ""


def _abort_cause(output: str) -> str:
    """What an abort's text says it was (pure): out of memory, a stack overflow, a panic."""
    if "INTERNAL PANIC: out of memory" in output or "memory allocation of" in output:
        return "out of memory"
    if "Stack overflow detected" in output or "has overflowed its stack" in output:
        return "stack overflow"
    if "PANIC" in output or "panicked at" in output:
        return "a panic"
    return ""


def classify(
    checker: Checker,
    *,
    exit_code: int | None,
    signal_no: int | None,
    timed_out: bool,
    limit_exceeded: str | None,
    output: str = "",
    truncated: bool = False,
    oom_killer_acted: bool = False,
    budget: float | None = None,
    wall_s: float | None = None,
    our_paths: Sequence[str] = (),
) -> Classification:
    """What one checker's run on the export says, by cause (pure; the module docstring's rule).
    `limit_exceeded` is the grader's kill at a cap of the checker's own run, its CPU budget
    (`budget` CPU seconds, `CPU_CAP`) among them; `timed_out`, the grader's kill at its wall-clock
    backstop (`wall_s` seconds), which only the host's load reaches first; `output` is its
    output as kept (`truncated`: cut to its end);
    `oom_killer_acted`: the kernel's OOM-kill counter moved while it ran (or cannot be read);
    `our_paths`: the export's and the config's paths as the checker sees them."""

    def verdict(kind: KernelKind, detail: str) -> Classification:
        return Classification(VERDICT_OF[kind], kind, detail)

    if limit_exceeded and limit_exceeded.startswith(CPU_CAP):
        within = f" of {budget:.0f} CPU s" if budget is not None else ""
        return verdict("timed out", f"timed out (its own budget{within})")
    if limit_exceeded:
        return verdict("capped", f"stopped by a cap of its own run: {limit_exceeded}")
    if timed_out:
        backstop = f" of {wall_s:.0f} s" if wall_s is not None else ""
        return verdict(
            "host fault",
            f"its wall-clock backstop{backstop} passed before its CPU budget ran out (the host's load)",
        )
    if signal_no is not None:
        name = signal_name(signal_no)
        origin = signal_origin(signal_no)
        if origin == "outside":
            why = "the kernel's OOM killer acted" if oom_killer_acted else "not sent by the grader"
            return verdict("killed from outside", f"killed by {name} from outside its run ({why})")
        if origin == "cap":
            return verdict("capped", f"stopped by a cap of its own run ({name})")
        if signal_no == signal.SIGABRT:
            if not truncated:
                for r in checker.abort_readings:
                    if _matches(r, output, our_paths):
                        return verdict(r.kind, f"{r.meaning} ({name}){_quote(output)}")
            cause = _abort_cause(output)
            return verdict("aborted", f"aborted ({name}{': ' + cause if cause else ''})")
        return verdict("crashed", f"crashed ({name})")
    if exit_code == 0:
        return verdict("accepted", "accepted")
    row = next((r for r in checker.exits if r.code == exit_code), None)
    if row is None:
        return verdict("failed", f"failed (exit {exit_code}, not in its row){_quote(output)}")
    if not truncated:
        for r in row.readings:
            if _matches(r, output, our_paths):
                return verdict(r.kind, f"{r.meaning} (exit {exit_code}){_quote(output)}")
    if row.kind == "panic":
        where = _panic_location(output)
        return verdict("panic", f"panicked{' at ' + where if where else ''} (exit {exit_code})")
    quote = "" if row.kind == "rejected" else _quote(output)  # a rejection's words are the export's
    return verdict(row.kind, f"{row.kind} (exit {exit_code}){quote}")


def run_status(exit_code: int | None, signal_no: int | None) -> str:
    """How a run ended, as a prediction states it (pure): `exit 1`, `SIGABRT`, or "" (neither)."""
    if signal_no is not None:
        return signal_name(signal_no)
    return f"exit {exit_code}" if exit_code is not None else ""


def predicted(checker: Checker, case: CanaryCase, run: KernelRun) -> bool:
    """Whether `run` came out as the checker's row predicts for a canary of `case` (pure): the
    same class *and* the same status (a row that says 101 where the checker exits 1 shows here,
    even though both are rejections), and the detail's text where the row names one."""
    p = checker.predicts[case]
    return run.kind == p.kind and run.status == p.status and p.detail_has in run.detail


def combine(runs: Sequence[KernelRun]) -> tuple[Verdict, str]:
    """The verdict of all checkers together (pure): a rejection wins over "could not judge" (the
    export itself was refused by a kernel), and both over acceptance. The reason names each
    deciding checker first, so that a reason cut to length still names it."""
    rejected = [r for r in runs if r.verdict == "rejected"]
    if rejected:
        return "rejected", "; ".join(f"kernel {r.name} {r.detail}" for r in rejected)
    unjudged = [r for r in runs if r.verdict == "not judged"]
    if unjudged:
        return "not judged", "; ".join(f"kernel {r.name} {r.detail}" for r in unjudged)
    return "accepted", ""
