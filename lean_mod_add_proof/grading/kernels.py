"""The independent checkers a v4.35 toolchain ships, and what their exit statuses mean (pure).

With `kernels = all`, after the grader's own judge accepted a submission on the export route,
each checker below reads the same export file in the sandbox, under the grade's limits. The
verdict rule (`combine`): accepted only when every checker accepted; a checker that rejects
gives a rejection naming it; one that is missing, crashes (a signal), declines, runs out of
memory, hits a cap or the host's deadline gives "could not judge" naming it. Lake's own
`--paranoid` is not used: it reports any non-zero exit of a checker, a missing one included, as
a rejection (lean4 src/lake/Lake/CLI/Check.lean `runExternalKernel`, tests/lake/tests/
check-paranoid/test.sh @1fbba09c: "A toolchain missing one of them fails the run"), so the
comparator route cannot keep these classes apart and `kernels = all` grades on the export route
only.

Where each interface comes from (binary names as the toolchain ships them and command lines:
lean4 tests/lake/tests/check-paranoid/test.sh @1fbba09c, whose stubs print what Lake hands them;
Lake's `runExternalKernel` passes nanoda a config file and every other checker the export path):
- `leanchecker-paranoid --silent --from-export FILE` (the official kernel with extra checks);
- `lean4lean --import FILE`;
- `nanoda_bin CONFIG.json`, the config a nanoda-like JSON (`export_file_path`,
  `permitted_axioms`, `unpermitted_axiom_hard_error`, `num_threads`, `nat_extension`,
  `string_extension`: Check.lean `runExternalKernel`);
- `con-leche FILE` and `con-ron --jobs=1 FILE` (leanprover/con-ron crates/con-ron/src/bin/
  con-ron.rs @05321985: "exit codes: 0 accepted, 1 rejected, 2 declined, 3
  usage/malformed/internal", out of memory aborts (SIGABRT) and a panic exits 3; the same codes as
  con-leche's Main.lean; a worker reserves 1 GiB of stack, so one worker).
The exit codes of leanchecker-paranoid, lean4lean and nanoda were not found in stored sources;
they are read by the Lean kernel arena's convention (0 accept, 1 reject, 2 decline) and every
other status is "could not judge". Both beliefs are checked per checker by the self-test on the
real toolchain (`selftest.checker_canaries`): the reference must exit 0 and no canary may be
accepted; a checker that fails that is reported and never used.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lean_mod_add_proof.grading.result import KernelRun

Verdict = Literal["accepted", "rejected", "not judged"]
#: How a checker takes the export: its path as the last argument, or a nanoda config file.
InputStyle = Literal["path", "nanoda_config"]


@dataclass(frozen=True)
class Checker:
    """One bundled checker: its binary under the toolchain's bin/, and how to call and read it."""

    name: str
    binary: str
    args: tuple[str, ...]
    """Fixed arguments before the input (the export path, or the config path)."""
    input: InputStyle = "path"
    reject_codes: frozenset[int] = frozenset({1})
    decline_codes: frozenset[int] = frozenset({2})
    oom_signals: frozenset[int] = frozenset()
    polices_axioms: bool = False
    """It refuses an axiom outside the permitted list by itself (the axiom canary applies)."""


#: The order in which Lake's `--paranoid` runs them (Check.lean; the record of check-paranoid).
CHECKERS: tuple[Checker, ...] = (
    Checker("leanchecker-paranoid", "leanchecker-paranoid", ("--silent", "--from-export")),
    Checker("lean4lean", "lean4lean", ("--import",)),
    Checker("nanoda", "nanoda_bin", (), input="nanoda_config", polices_axioms=True),
    # con-leche "accepts only the three standard Lean axioms ... will reject any other axiom"
    # (leanprover/con-ron vendor/con-leche/README.md @1d005446); con-ron is its port.
    Checker("con-leche", "con-leche", (), oom_signals=frozenset({signal.SIGABRT}), polices_axioms=True),
    Checker(
        "con-ron", "con-ron", ("--jobs=1",), oom_signals=frozenset({signal.SIGABRT}), polices_axioms=True
    ),
)
CHECKER_NAMES: tuple[str, ...] = tuple(c.name for c in CHECKERS)
#: The name the official kernel (the grader's replay judge) goes by on a result.
OFFICIAL = "lean"
#: Where the nanoda config is written, relative to the judge's /tmp.
NANODA_CONFIG = "nanoda-config.json"


def checker_path(toolchain_dir: Path, checker: Checker) -> Path:
    """Always the toolchain's own binary, never one found through PATH."""
    return toolchain_dir / "bin" / checker.binary


def shipped(toolchain_dir: Path) -> list[Checker]:
    """The checkers whose binaries the toolchain has (executable files)."""
    return [c for c in CHECKERS if os.access(checker_path(toolchain_dir, c), os.X_OK)]


def nanoda_config(export_path: str, permitted_axioms: Sequence[str]) -> str:
    """The config Lake's `runExternalKernel` writes for a nanoda-like checker (pure); one thread."""
    return json.dumps(
        {
            "use_stdin": False,
            "export_file_path": export_path,
            "permitted_axioms": list(permitted_axioms),
            "unpermitted_axiom_hard_error": True,
            "num_threads": 1,
            "nat_extension": True,
            "string_extension": True,
        }
    )


def checker_argv(binary: Path, checker: Checker, export_path: str, config_path: str) -> list[str]:
    """The command line (pure): the export's path, or the nanoda config's."""
    last = config_path if checker.input == "nanoda_config" else export_path
    return [str(binary), *checker.args, last]


def classify(
    checker: Checker,
    *,
    exit_code: int | None,
    signal_no: int | None,
    timed_out: bool,
    limit_exceeded: str | None,
) -> tuple[Verdict, str]:
    """What one checker's run says (pure): only its own reject code is a rejection, only 0 an
    acceptance; everything else (a decline, an error code, a signal, a cap, the deadline) is "could
    not judge", with why."""
    if limit_exceeded:
        return "not judged", f"stopped: {limit_exceeded}"
    if timed_out:
        return "not judged", "timed out (the grade's deadline)"
    if signal_no is not None:
        if signal_no in checker.oom_signals:
            return "not judged", f"ran out of memory (signal {signal_no})"
        return "not judged", f"crashed (killed by signal {signal_no})"
    if exit_code == 0:
        return "accepted", "accepted"
    if exit_code in checker.reject_codes:
        return "rejected", f"rejected (exit {exit_code})"
    if exit_code in checker.decline_codes:
        return "not judged", f"declined (exit {exit_code})"
    return "not judged", f"failed (exit {exit_code})"


def combine(runs: Sequence[KernelRun]) -> tuple[Verdict, str]:
    """The verdict of all checkers together (pure): a rejection wins over "could not judge" (the
    export itself was refused by a kernel), and both over acceptance."""
    rejected = [r for r in runs if r.verdict == "rejected"]
    if rejected:
        return "rejected", "; ".join(f"kernel {r.name} {r.detail}" for r in rejected)
    unjudged = [r for r in runs if r.verdict == "not judged"]
    if unjudged:
        return "not judged", "; ".join(f"kernel {r.name} {r.detail}" for r in unjudged)
    return "accepted", ""
