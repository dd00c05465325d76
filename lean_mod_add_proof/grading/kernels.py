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

The table itself, one cited row per checker, is checker_rows.py (`CHECKERS`).
"""

from __future__ import annotations

import errno
import json
import os
import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

# The table's names, re-exported: kernels is where callers find the checkers (`as` marks it).
from lean_mod_add_proof.grading.checker_rows import CHECKER_NAMES as CHECKER_NAMES
from lean_mod_add_proof.grading.checker_rows import CHECKERS as CHECKERS
from lean_mod_add_proof.grading.checker_rows import OFFICIAL as OFFICIAL
from lean_mod_add_proof.grading.checker_rows import CanaryCase as CanaryCase
from lean_mod_add_proof.grading.checker_rows import Checker as Checker
from lean_mod_add_proof.grading.checker_rows import ExitRow as ExitRow
from lean_mod_add_proof.grading.checker_rows import InputStyle as InputStyle
from lean_mod_add_proof.grading.checker_rows import Prediction as Prediction
from lean_mod_add_proof.grading.checker_rows import Reading as Reading
from lean_mod_add_proof.grading.messages import one_line
from lean_mod_add_proof.grading.oserrors import HOST_ERRNOS
from lean_mod_add_proof.grading.result import KernelKind, KernelRun
from lean_mod_add_proof.grading.signals import signal_name, signal_origin

Verdict = Literal["accepted", "rejected", "not judged"]

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
