"""kernels.py's pure functions and its table, called directly: each classifies a checker's run by
cause, builds what a checker is told, or sets its budget, so a changed word, code or factor here
changes a verdict. The pipeline tests through the toolchain double are in test_kernels.py."""

from __future__ import annotations

import json
import signal
import typing
from pathlib import Path

import pytest

from lean_mod_add_proof.grading import kernels as K
from lean_mod_add_proof.grading.messages import REASON_MAX_CHARS, one_line
from lean_mod_add_proof.grading.result import KernelKind, KernelRun

EXPORT = "/g/verdict/Submission.ndjson"
CONFIG = "/tmp/nanoda-config.json"
OURS = (EXPORT, CONFIG)


def _make(path: Path, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(mode)


def run(name: str, code: int | None = None, output: str = "", *, sig: int | None = None, **kw: object):  # type: ignore[no-untyped-def]
    args: dict[str, object] = dict(timed_out=False, limit_exceeded=None, output=output, our_paths=OURS)
    args.update(kw)
    return K.classify(K.checker_named(name), exit_code=code, signal_no=sig, **args)  # type: ignore[arg-type]


# ---- shipped: only the toolchain's own executable files count ---------------------------------


def test_shipped_lists_exactly_the_executable_binaries_under_bin(tmp_path: Path) -> None:
    toolchain = tmp_path / "tc"
    _make(toolchain / "bin" / "lean4lean", 0o755)
    _make(toolchain / "bin" / "nanoda_bin", 0o755)
    _make(toolchain / "bin" / "con-ron", 0o644)  # present but not executable
    _make(toolchain / "con-leche", 0o755)  # executable but not under bin/
    _make(tmp_path / "bin" / "leanchecker-paranoid", 0o755)  # a sibling toolchain's bin/
    assert [c.name for c in K.shipped(toolchain)] == ["lean4lean", "nanoda"]


def test_shipped_is_empty_without_binaries_and_complete_with_all(tmp_path: Path) -> None:
    assert K.shipped(tmp_path) == []
    for c in K.CHECKERS:
        _make(tmp_path / "bin" / c.binary, 0o700)
    assert K.shipped(tmp_path) == list(K.CHECKERS)


def test_the_official_kernel_is_named_lean_and_is_no_checker() -> None:
    assert K.OFFICIAL == "lean" and K.OFFICIAL not in K.CHECKER_NAMES


def test_checker_path_is_the_toolchains_bin_never_path_lookup() -> None:
    assert K.checker_path(Path("/tc"), K.checker_named("nanoda")) == Path("/tc/bin/nanoda_bin")
    with pytest.raises(KeyError) as missing:
        K.checker_named("lean")
    assert missing.value.args == ("lean",)


# ---- what each checker is told ------------------------------------------------------------------


def test_command_lines_follow_lake_and_the_checkers_own_sources() -> None:
    b = Path("/t/bin")
    argv = {c.name: K.checker_argv(b / c.binary, c, EXPORT, CONFIG) for c in K.CHECKERS}
    assert argv == {
        "leanchecker-paranoid": ["/t/bin/leanchecker-paranoid", "--silent", "--from-export", EXPORT],
        "lean4lean": ["/t/bin/lean4lean", "--import", EXPORT],
        "nanoda": ["/t/bin/nanoda_bin", CONFIG],
        "con-leche": ["/t/bin/con-leche", "--jobs=1", EXPORT],
        "con-ron": ["/t/bin/con-ron", "--jobs=1", EXPORT],
    }
    assert K.CHECKER_NAMES == ("leanchecker-paranoid", "lean4lean", "nanoda", "con-leche", "con-ron")


def test_nanoda_config_is_what_lake_writes_with_at_least_two_threads() -> None:
    expected = {
        "use_stdin": False,
        "export_file_path": "/tmp/Sub.ndjson",
        "permitted_axioms": ["propext", "Quot.sound"],
        "unpermitted_axiom_hard_error": False,
        "num_threads": 2,
        "nat_extension": True,
        "string_extension": True,
    }
    assert json.loads(K.nanoda_config("/tmp/Sub.ndjson", ["propext", "Quot.sound"], 1)) == expected
    assert json.loads(K.nanoda_config("/e", (), 3))["num_threads"] == 3
    assert json.loads(K.nanoda_config("/e", (), 2))["num_threads"] == 2
    assert json.loads(K.nanoda_config("/e", (), 1))["permitted_axioms"] == []
    assert K.NANODA_CONFIG == "nanoda-config.json" and K.NANODA_MIN_THREADS == 2


def test_abort_on_panic_only_for_the_lean_programs() -> None:
    env = {c.name: K.checker_env(c) for c in K.CHECKERS}
    lean = {"LEAN_ABORT_ON_PANIC": "1"}
    assert env == {
        "leanchecker-paranoid": lean,
        "lean4lean": lean,
        "nanoda": {},
        "con-leche": lean,
        "con-ron": {},
    }


def test_a_checker_takes_the_export_path_unless_it_is_nanoda_like() -> None:
    plain = K.checker_named("con-ron")
    assert plain.input == "path"
    nanoda = K.checker_named("nanoda")
    assert K.checker_argv(Path("/b/y"), nanoda, "/e.ndjson", "/c.json") == ["/b/y", "/c.json"]


# ---- budgets -------------------------------------------------------------------------------------


def test_each_factor_is_the_one_the_table_gives() -> None:
    factors = {c.name: c.time_factor for c in K.CHECKERS}
    assert factors == {
        "leanchecker-paranoid": 3.0,
        "lean4lean": 4.0,
        "nanoda": 4.0,
        "con-leche": 8.0,
        "con-ron": 8.0,
    }
    assert all(c.time_factor_why for c in K.CHECKERS)


def test_the_wall_clock_backstop_is_three_times_the_cpu_budget() -> None:
    assert K.WALL_PER_CPU_S == 3
    assert K.wall_backstop_s(40) == 120
    assert K.CPU_CAP == "CPU time cap exceeded"


def test_the_budget_scales_with_the_official_replay_and_never_falls_below_the_floor() -> None:
    con_ron = K.checker_named("con-ron")
    assert K.budget_s(con_ron, official_s=50.0, floor_s=300.0) == 400.0
    assert K.budget_s(con_ron, official_s=10.0, floor_s=300.0) == 300.0
    assert K.budget_s(con_ron, official_s=None, floor_s=300.0) == 300.0
    assert K.budget_s(K.checker_named("nanoda"), official_s=100.0, floor_s=300.0) == 400.0
    assert K.budget_s(K.checker_named("nanoda"), official_s=75.0, floor_s=300.0) == 300.0
    assert K.budget_s(con_ron, official_s=None, floor_s=0.5) == 0.5
    assert K.budget_s(con_ron, official_s=0.125, floor_s=0.5) == 1.0


def test_a_checker_s_memory_is_the_judge_s_or_twice_the_official_peak() -> None:
    assert K.MEMORY_FACTOR == 2
    # The judge's memory (memory_mb + its fixed cost) when the official peak is small ...
    assert K.memory_extra_mb(judge_extra_mb=512, memory_mb=512, official_peak_mb=300) == 512
    # ... and twice the official peak on a heavier export: 2 x 900 = 1800 = 512 + 1288.
    assert K.memory_extra_mb(judge_extra_mb=512, memory_mb=512, official_peak_mb=900) == 1288
    assert K.memory_extra_mb(judge_extra_mb=1536, memory_mb=512, official_peak_mb=1024) == 1536
    assert K.memory_extra_mb(judge_extra_mb=1536, memory_mb=512, official_peak_mb=1025) == 1538


# ---- classify: by cause --------------------------------------------------------------------------


@pytest.mark.parametrize("name", K.CHECKER_NAMES)
def test_zero_accepts_and_the_grader_s_own_kills_are_the_export_s(name: str) -> None:
    assert run(name, 0) == K.Classification("accepted", "accepted", "accepted")
    # Its own budget is CPU seconds, its RLIMIT_CPU: running out of it is the export's doing.
    cpu = "CPU time cap exceeded (40 CPU seconds in one process)"
    timed = run(name, sig=signal.SIGXCPU, limit_exceeded=cpu, budget=40.0)
    assert timed == K.Classification("rejected", "timed out", "timed out (its own budget of 40 CPU s)")
    assert run(name, sig=9, limit_exceeded=cpu).detail == "timed out (its own budget)"
    # Its wall-clock backstop (3 x the CPU budget) passing first is the host's load.
    backstop = run(name, timed_out=True, sig=9, budget=40.0, wall_s=120.0)
    assert backstop == K.Classification(
        "not judged",
        "host fault",
        "its wall-clock backstop of 120 s passed before its CPU budget ran out (the host's load)",
    )
    assert run(name, timed_out=True, sig=9).detail.startswith("its wall-clock backstop passed before")
    capped = run(name, sig=9, limit_exceeded="memory cap exceeded (700 MiB > 600 MiB)", timed_out=True)
    assert capped == K.Classification(
        "rejected", "capped", "stopped by a cap of its own run: memory cap exceeded (700 MiB > 600 MiB)"
    )


@pytest.mark.parametrize("name", K.CHECKER_NAMES)
def test_a_signal_from_outside_is_could_not_judge_and_a_fault_is_a_rejection(name: str) -> None:
    kill = run(name, sig=signal.SIGKILL)
    assert kill == K.Classification(
        "not judged", "killed from outside", "killed by SIGKILL from outside its run (not sent by the grader)"
    )
    oom = run(name, None, oom_killer_acted=True, sig=signal.SIGKILL)
    assert oom.detail == "killed by SIGKILL from outside its run (the kernel's OOM killer acted)"
    assert run(name, sig=signal.SIGTERM).kind == "killed from outside"
    assert run(name, sig=signal.SIGSEGV) == K.Classification("rejected", "crashed", "crashed (SIGSEGV)")
    assert run(name, sig=signal.SIGBUS).kind == "crashed"
    assert run(name, sig=signal.SIGXCPU) == K.Classification(
        "rejected", "capped", "stopped by a cap of its own run (SIGXCPU)"
    )
    assert run(name, sig=signal.SIGABRT) == K.Classification("rejected", "aborted", "aborted (SIGABRT)")
    # The judge's reading too (signals.py): a trusted program runs without our seccomp filter, and
    # its output is a pipe, so neither SIGSYS nor SIGXFSZ can be its input's doing.
    assert run(name, sig=signal.SIGSYS).kind == "killed from outside"
    assert run(name, sig=signal.SIGXFSZ).kind == "killed from outside"


@pytest.mark.parametrize(
    ("output", "cause"),
    [
        ("INTERNAL PANIC: out of memory\n", "out of memory"),
        ("memory allocation of 64 bytes failed\n", "out of memory"),
        ("\nStack overflow detected. Aborting.\n", "stack overflow"),
        ("thread 'main' has overflowed its stack\nfatal runtime error: stack overflow\n", "stack overflow"),
        ("PANIC at X.y Z:1:2: boom\nbacktrace:\n", "a panic"),
        ("thread 'main' panicked at src/a.rs:1:1:\nboom\n", "a panic"),
    ],
)
def test_an_abort_says_what_its_text_says(output: str, cause: str) -> None:
    assert run("lean4lean", None, output, sig=signal.SIGABRT).detail == f"aborted (SIGABRT: {cause})"


def test_each_exit_code_has_the_class_its_row_gives() -> None:
    assert run("leanchecker-paranoid", 1).kind == "rejected"
    # A rejection quotes none of its output: the words are the export's, kept in the record.
    assert run("leanchecker-paranoid", 1, "Lean default kernel rejects the solution: x").detail == (
        "rejected (exit 1)"
    )
    bare = K.classify(
        K.checker_named("nanoda"), exit_code=7, signal_no=None, timed_out=False, limit_exceeded=None
    )
    assert bare.detail == "failed (exit 7, not in its row)"
    assert run("lean4lean", 1).kind == "rejected"
    assert run("nanoda", 101, "thread 'main' panicked at src/tc.rs:925:71:\nassertion failed") == (
        K.Classification("rejected", "panic", "panicked at src/tc.rs:925:71 (exit 101)")
    )
    # The Rust that built the rc toolchains names the thread's id too (checkers-table.md T1).
    tid = run("nanoda", 101, "thread 'main' (66072) panicked at src/tc.rs:955:71:\nassertion failed")
    assert tid.detail == "panicked at src/tc.rs:955:71 (exit 101)"
    assert run("nanoda", 101, "no panic line").detail == "panicked (exit 101)"
    assert run("nanoda", 2, "Declined: Expr back-reference mismatch").kind == "declined"
    assert run("nanoda", 1, "Error: missing field `str` at line 1").kind == "failed"
    assert run("con-leche", 1).kind == "rejected" and run("con-ron", 1).kind == "rejected"
    assert run("con-leche", 2, "con-leche: declined: x").detail == "declined (exit 2): con-leche: declined: x"
    assert run("con-ron", 2).verdict == "rejected"
    assert run("con-ron", 3, "thread '<unnamed>' panicked at x\ncon-ron: the checking thread died") == (
        K.Classification("rejected", "failed", "failed (exit 3): thread '<unnamed>' panicked at x")
    )
    assert run("con-leche", 3, "con-leche: /g/verdict/Submission.ndjson:4: bad").kind == "failed"


def test_a_quote_is_the_first_line_cut_to_100_characters_and_nothing_without_output() -> None:
    assert run("nanoda", 7, "").detail == "failed (exit 7, not in its row)"
    assert run("nanoda", 7, "  \n\n").detail == "failed (exit 7, not in its row)"
    long = run("nanoda", 7, "y" * 500 + "\nsecond").detail
    assert long == f"failed (exit 7, not in its row): {'y' * 99}…"
    assert run("con-ron", 3, "a\nb").detail == "failed (exit 3): a"


@pytest.mark.parametrize(("name", "code"), [("leanchecker-paranoid", 2), ("lean4lean", 101), ("nanoda", 3)])
def test_a_status_no_row_lists_is_the_export_s(name: str, code: int) -> None:
    got = run(name, code, "hello\n")
    assert got == K.Classification("rejected", "failed", f"failed (exit {code}, not in its row): hello")


HELP = "\n\nrun with `-h` or `--help` for help"
NOTE = "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
EAGAIN = 'Os { code: 11, kind: WouldBlock, message: "Resource temporarily unavailable" }'


@pytest.mark.parametrize(
    ("name", "code", "output", "kind"),
    [
        ("nanoda", 1, "Error: failed to open configuration file: Os { code: 2 }" + HELP, "setup"),
        ("nanoda", 1, "Error: incompatible config options: x" + HELP, "setup"),
        ("nanoda", 1, "Error: Failed to open export file: x" + HELP, "host errno"),
        ("nanoda", 1, "Error: Input/output error (os error 5)" + HELP, "host errno"),
        ("nanoda", 1, "Error: Failed to open pretty printer destination file" + HELP, "setup"),
        ("nanoda", 1, "Error: export format version is greater than the maximum" + HELP, "setup"),
        ("nanoda", 1, "Error: This program expects a path to a configuration file." + HELP, "setup"),
        (
            "nanoda",
            101,
            "thread 'main' (4242) panicked at src/tc.rs:136:14:\n"
            f"called `Result::unwrap()` on an `Err` value: {EAGAIN}\n{NOTE}",
            "host fault",
        ),
        ("con-ron", 3, "usage: con-ron [--verified|--trusted]\n  FILE.ndjson", "setup"),
        (
            "con-ron",
            3,
            "con-ron: cannot spawn the checking thread: Resource temporarily unavailable (os error 11)",
            "host fault",
        ),
        ("con-ron", 3, "con-ron: the reserved-name pins do not intern (x) (--verified)", "setup"),
        ("con-ron", 3, "con-ron: the built-in prelude does not parse (line 1: x)", "setup"),
        ("con-ron", 3, f"con-ron: {EXPORT}: No such file or directory (os error 2)", "host errno"),
        ("con-leche", 3, "usage: con-leche [--verified|--trusted]", "setup"),
        ("con-leche", 3, "con-leche: the built-in prelude does not parse (line 1: x)", "setup"),
        ("con-leche", 3, "con-leche: check phase: the worker failed: x", "host fault"),
        (
            "leanchecker-paranoid",
            1,
            "uncaught exception: Exactly one export file expected but got: []",
            "setup",
        ),
        ("lean4lean", 1, "uncaught exception: --import expect a single file", "setup"),
    ],
)
def test_the_readings_that_make_a_status_the_host_s_or_ours(
    name: str, code: int, output: str, kind: str
) -> None:
    got = run(name, code, output)
    assert got.kind == kind and got.verdict == "not judged"
    assert got.detail.endswith(f"(exit {code}): {output.splitlines()[0]}")


@pytest.mark.parametrize(
    ("name", "code", "output"),
    [
        # The same words after a line of the export's (a constant's name printed first) are no
        # reading: the whole output must be the reading's text, from its first line.
        (
            "nanoda",
            1,
            "Skipped exported but unpermitted axioms [a]\nError: Failed to open export file: x" + HELP,
        ),
        ("con-ron", 3, "con-ron: 2 declarations hoisted ahead: a\ncon-ron: cannot spawn the checking thread"),
        ("con-ron", 3, "con-ron: /other/file: No such file or directory (os error 2)"),
        ("con-ron", 3, f"con-ron: {EXPORT}:3: unexpected end of input"),
        ("con-leche", 3, "con-leche: 1 inductive blocks modelled\ncon-leche: x\nusage: con-leche"),
        # A reading's words followed by more (a name with a newline in it) are no reading.
        ("con-ron", 3, f"con-ron: {EXPORT}: No such file or directory (os error 2)\n(--verified)"),
        ("nanoda", 1, "Error: Input/output error (os error 5)" + HELP + "\nmore"),
        # A prefix is no reading: the line must be the reading's whole.
        ("con-ron", 3, "con-ron: cannot spawn the checking thread: x"),
        ("nanoda", 1, "Error: x (os error 5)" + HELP),  # not an OS error's message
        ("nanoda", 1, "Error: Failed to open export file: x"),  # without its help line
        # Review correction 1: a panic in src/util.rs is reachable from the export (a 31-bit index,
        # `replace_dbj_level`, the DAG reads), so it is no reading of our config.
        ("nanoda", 101, "thread 'main' panicked at src/util.rs:924:57:\ncalled `Result::unwrap()`"),
        ("nanoda", 101, "thread 'main' (7) panicked at src/util.rs:56:9:\nindex 3 exceeds 31-bit capacity"),
        # A worker's spawn failing for memory (ENOMEM) may be the export's; only EAGAIN is the host's.
        (
            "nanoda",
            101,
            "thread 'main' (1) panicked at src/tc.rs:136:14:\ncalled `Result::unwrap()` on an `Err` value: "
            f'Os {{ code: 12, kind: OutOfMemory, message: "Cannot allocate memory" }}\n{NOTE}',
        ),
        # ... and a worker's panic before it makes more lines: the export's.
        (
            "nanoda",
            101,
            "thread '<unnamed>' (2) panicked at src/tc.rs:955:71:\nassertion failed\n"
            "thread 'main' (1) panicked at src/tc.rs:136:14:\n"
            f"called `Result::unwrap()` on an `Err` value: {EAGAIN}\n{NOTE}",
        ),
    ],
)
def test_words_the_export_can_put_first_or_later_are_no_reading(name: str, code: int, output: str) -> None:
    assert run(name, code, output).verdict == "rejected"


def test_a_cut_output_has_no_reading() -> None:
    text = "Error: Failed to open export file: x" + HELP
    assert run("nanoda", 1, text).kind == "host errno"
    assert run("nanoda", 1, text, truncated=True).kind == "failed"
    assert (
        run("con-leche", None, "failed to create thread", sig=signal.SIGABRT, truncated=True).kind
        == "aborted"
    )


def test_con_leche_s_thread_creation_abort_is_the_host_s_only_as_its_whole_output() -> None:
    got = run("con-leche", None, "failed to create thread\n", sig=signal.SIGABRT)
    assert got.kind == "host fault" and got.verdict == "not judged"
    assert got.detail.endswith("(SIGABRT): failed to create thread")
    got = run("con-leche", None, "INTERNAL PANIC: failed to create thread\n", sig=signal.SIGABRT)
    assert got.kind == "host fault"
    assert got.detail.endswith("(SIGABRT): INTERNAL PANIC: failed to create thread")
    after = run("con-leche", None, "x\nINTERNAL PANIC: failed to create thread\n", sig=signal.SIGABRT)
    assert after.kind == "aborted"
    assert (
        run("con-leche", None, "failed to create thread\nbacktrace:\n", sig=signal.SIGABRT).kind == "aborted"
    )
    assert run("con-ron", None, "failed to create thread\n", sig=signal.SIGABRT).kind == "aborted"


@pytest.mark.parametrize("name", ["leanchecker-paranoid", "lean4lean", "con-leche"])
def test_a_lean_io_error_on_a_host_errno_or_on_our_file_is_could_not_judge(name: str) -> None:
    enospc = "uncaught exception: resource exhausted (error code: 28, no space left on device)\n  file: /x"
    assert run(name, 1, enospc).kind == "host errno"
    eio = "uncaught exception: hardware fault (error code: 5)"
    assert run(name, 1, eio).kind == "host errno"
    ours = f"uncaught exception: no such file or directory (error code: 2)\n  file: {EXPORT}"
    assert run(name, 1, ours).kind == "host errno"
    alone = "uncaught exception: no such file or directory (error code: 2)"  # no file named: not ours
    assert run(name, 1, alone).verdict == "rejected"
    other = "uncaught exception: no such file or directory (error code: 2)\n  file: /somewhere/else"
    assert run(name, 1, other).verdict == "rejected"
    parse = "uncaught exception: Name not found 3"
    assert run(name, 1, parse).verdict == "rejected"
    named = "uncaught exception: Invalid constructor Foo.mk (error code: 28)"  # a name is no gist
    assert run(name, 1, named).verdict == "rejected"
    later = f"PANIC at x\nuncaught exception: no such file or directory (error code: 2)\n  file: {EXPORT}"
    assert run(name, 1, later).verdict == "rejected"
    more = f"uncaught exception: no such file or directory (error code: 2)\n  file: {EXPORT}\nat x"
    assert run(name, 1, more).verdict == "rejected"  # a third line: not the IO error alone
    second = "uncaught exception: hardware fault (error code: 5)\nat x: (kernel) y"
    assert run(name, 1, second).verdict == "rejected"  # a second line that is no `file:` line


def test_every_kind_has_its_verdict() -> None:
    assert set(K.VERDICT_OF) == set(typing.get_args(KernelKind))
    unjudged = {k for k, v in K.VERDICT_OF.items() if v == "not judged"}
    assert unjudged == {"missing", "host fault", "killed from outside", "host errno", "setup"}
    assert {k for k, v in K.VERDICT_OF.items() if v == "accepted"} == {"accepted"}


def test_the_type_vocabularies_match_what_is_used() -> None:
    assert typing.get_args(K.Verdict) == typing.get_args(KernelRun.model_fields["verdict"].annotation)
    assert set(typing.get_args(K.InputStyle)) == {c.input for c in K.CHECKERS}
    cases = {"reference", "missing dependency", "type mismatch", "unpermitted axiom"}
    assert set(typing.get_args(K.CanaryCase)) == cases


# ---- the table itself ------------------------------------------------------------------------------


def test_every_row_cites_a_source_and_every_checker_predicts_every_canary() -> None:
    for c in K.CHECKERS:
        assert c.command_source and c.input_format and c.abort_on_panic_why
        assert set(c.predicts) == set(typing.get_args(K.CanaryCase)), c.name
        assert c.predicts["reference"] == K.Prediction("accepted", "exit 0")
        assert len({r.code for r in c.exits}) == len(c.exits), c.name
        for row in c.exits:
            assert row.source and row.meaning and row.code != 0
            for reading in row.readings:
                assert reading.source and reading.meaning
                assert reading.lean_io or reading.lines
                assert K.VERDICT_OF[reading.kind] == "not judged"  # a reading only ever moves to the host


def test_the_predictions_on_the_invalid_canaries() -> None:
    table = {c.name: {case: (p.kind, p.status) for case, p in c.predicts.items()} for c in K.CHECKERS}
    accept, reject = ("accepted", "exit 0"), ("rejected", "exit 1")
    panic, decline = ("panic", "exit 101"), ("declined", "exit 2")
    assert table == {
        "leanchecker-paranoid": {
            "reference": accept,
            "missing dependency": reject,
            "type mismatch": reject,
            "unpermitted axiom": accept,
        },
        # Review correction 7: only a declaration type mismatch aborts (Replay.lean `mapEnvM`).
        "lean4lean": {
            "reference": accept,
            "missing dependency": reject,
            "type mismatch": ("aborted", "SIGABRT"),
            "unpermitted axiom": accept,
        },
        "nanoda": {
            "reference": accept,
            "missing dependency": panic,
            "type mismatch": panic,
            "unpermitted axiom": panic,
        },
        # Review correction 8: a non-pinned axiom declines (exit 2).
        "con-leche": {
            "reference": accept,
            "missing dependency": reject,
            "type mismatch": reject,
            "unpermitted axiom": decline,
        },
        "con-ron": {
            "reference": accept,
            "missing dependency": reject,
            "type mismatch": reject,
            "unpermitted axiom": decline,
        },
    }
    nanoda = K.checker_named("nanoda")
    assert {p.detail_has for p in nanoda.predicts.values()} == {"", "panicked at src/tc.rs:"}
    assert {c.name for c in K.CHECKERS if c.polices_axioms} == {"nanoda", "con-leche", "con-ron"}
    assert K.Prediction("panic", "exit 101", "at x:", "at x").describe() == "panic (exit 101 at x)"
    assert K.Prediction("aborted", "SIGABRT").describe() == "aborted (SIGABRT)"


def test_run_status_says_how_the_process_ended() -> None:
    assert K.run_status(1, None) == "exit 1"
    assert K.run_status(0, None) == "exit 0"
    assert K.run_status(None, signal.SIGABRT) == "SIGABRT"
    assert K.run_status(None, None) == ""


def test_predicted_needs_the_kind_the_status_and_the_detail() -> None:
    nanoda = K.checker_named("nanoda")
    at_tc = KernelRun(
        name="nanoda",
        verdict="rejected",
        kind="panic",
        status="exit 101",
        detail="panicked at src/tc.rs:9:1 (exit 101)",
    )
    at_parser = at_tc.model_copy(update={"detail": "panicked at src/parser.rs:9:1 (exit 101)"})
    exit1 = at_tc.model_copy(
        update={"kind": "failed", "status": "exit 1", "detail": "failed (exit 1) at src/tc.rs:"}
    )
    assert K.predicted(nanoda, "type mismatch", at_tc)
    assert not K.predicted(nanoda, "type mismatch", at_parser)
    assert not K.predicted(nanoda, "type mismatch", exit1)
    assert not K.predicted(nanoda, "reference", at_tc)
    # Review correction 4: the same class with another status is no prediction met (a row that
    # says 101 where the checker exits 1 must show, even were both read as one class).
    assert not K.predicted(nanoda, "type mismatch", at_tc.model_copy(update={"status": "exit 1"}))
    paranoid = K.checker_named("leanchecker-paranoid")
    plain = KernelRun(
        name="leanchecker-paranoid",
        verdict="rejected",
        kind="rejected",
        status="exit 1",
        detail="rejected (exit 1)",
    )
    assert K.predicted(paranoid, "missing dependency", plain)
    assert not K.predicted(paranoid, "unpermitted axiom", plain)
    assert not K.predicted(paranoid, "missing dependency", plain.model_copy(update={"status": "SIGABRT"}))


# ---- combine ------------------------------------------------------------------------------------


def test_combine_names_every_rejecting_kernel_first() -> None:
    ok = KernelRun(name="a", verdict="accepted", detail="accepted")
    no1 = KernelRun(name="b", verdict="rejected", detail="rejected (exit 1)")
    no2 = KernelRun(name="c", verdict="rejected", detail="panicked (exit 101)")
    gone = KernelRun(name="d", verdict="not judged", detail="missing")
    assert K.combine([ok, no1, gone, no2]) == (
        "rejected",
        "kernel b rejected (exit 1); kernel c panicked (exit 101)",
    )
    assert K.combine([ok, gone]) == ("not judged", "kernel d missing")
    assert K.combine([gone, ok, gone]) == ("not judged", "kernel d missing; kernel d missing")
    assert K.combine([]) == ("accepted", "") and K.combine([ok]) == ("accepted", "")


def test_the_deciding_checker_survives_the_cut_to_length() -> None:
    long = "x" * 2000
    runs = [KernelRun(name="con-ron", verdict="rejected", detail=f"declined (exit 2): {long}")]
    verdict, why = K.combine(runs)
    assert verdict == "rejected"
    assert one_line(why, 2 * REASON_MAX_CHARS).startswith("kernel con-ron declined")
