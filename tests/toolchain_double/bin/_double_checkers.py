# TOOLCHAIN DOUBLE for tests (not Lean; decides nothing about proofs): the independent checkers a
# v4.35 toolchain ships, under their real binary names and command lines, each acting out what
# its own source says it prints and how it exits (lean_mod_add_proof/grading/kernels.py holds the
# table, with the source of every row; tests/toolchain_double/README.md lists each behaviour).
# Each replays the export with the double's kernel (_double_export.py `check_export`); nanoda,
# con-leche and con-ron also police axioms as their sources do (`refused_axioms`, `nanoda_parse`).
# Reviewed against the sources by someone who did not write it: docs/readings/double-checkers-review.md.
#
#   _double_checkers.py BINARY ARGS...
#
# Markers carried in the export (a `-- double: judge checker NAME VERB [ARG]` line of the
# submission, NAME a checker's name or `all`; see the README) script one checker on that export
# only, so the self-test's canaries (which carry none) still see each checker as its row says.
# A private copy of the double is scripted by a file `double-checker-BINARY` beside bin/ holding
# `wrong-row`: the checker exits 1 on every export it refuses, whatever its row says. Deleting
# bin/BINARY makes the checker missing.
from __future__ import annotations

import errno
import json
import os
import signal
import sys
import time
from typing import NoReturn

sys.dont_write_bytecode = True  # nothing written into the toolchain's bin/ (its manifest)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _double_export import (  # noqa: E402
    ParseError,
    Reader,
    Terms,
    carried_directives,
    check_export,
    expr_ids,
    name_str,
)

STANDARD_AXIOMS = ("propext", "Classical.choice", "Quot.sound")
#: con-leche's exception to "every other non-pinned axiom declines at its own record": a merely
#: declared `sorryAx` is accepted, a use declines (con-ron @2789de1c vendor/con-leche/Main.lean
#: `usage`, "THE sorryAx AXIOM").
SORRY_AX = "sorryAx"
#: The checker's name (kernels.py) for each binary.
NAMES = {
    "leanchecker-paranoid": "leanchecker-paranoid",
    "lean4lean": "lean4lean",
    "nanoda_bin": "nanoda",
    "con-leche": "con-leche",
    "con-ron": "con-ron",
}
LEAN_PROGRAMS = ("leanchecker-paranoid", "lean4lean", "con-leche")
#: nanoda_lib @f58f2f6 src/util.rs `Config` (serde; a key may be absent, unknown keys ignored;
#: `export_file_path`, `permitted_axioms` are `Option`s, so `null` is absent).
NANODA_CONFIG_TYPES = {
    "use_stdin": bool,
    "export_file_path": (str, type(None)),
    "permitted_axioms": (list, type(None)),
    "unpermitted_axiom_hard_error": bool,
    "num_threads": int,
    "nat_extension": bool,
    "string_extension": bool,
    "unsafe_permit_all_axioms": bool,
    "print_success_message": bool,
}
#: Rust's `io::ErrorKind` for an errno (library/std src/sys/pal/unix/mod.rs `decode_error_kind`),
#: as `{:?}` of an `io::Error` names it: `Os { code: 2, kind: NotFound, message: "..." }`.
RUST_ERROR_KINDS = {
    errno.ENOENT: "NotFound",
    errno.EACCES: "PermissionDenied",
    errno.EPERM: "PermissionDenied",
    errno.EISDIR: "IsADirectory",
    errno.ENOTDIR: "NotADirectory",
    errno.ELOOP: "FilesystemLoop",
    errno.ENAMETOOLONG: "InvalidFilename",
    errno.EINTR: "Interrupted",
    errno.ENOMEM: "OutOfMemory",
}
RUN_WITH_HELP = "\n\nrun with `-h` or `--help` for help"
RUST_NOTE = "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
#: Where the shipped nanoda panics (a third-party rc3 record, checkers-table.md T1: its line numbers
#: differ from nanoda_lib @f58f2f6's 925, 197 and 760; the grader matches none of them).
NANODA_DEF_EQ = "src/tc.rs:955:71"
NANODA_INFER_CONST = "src/tc.rs:230:13"
#: T1's `src/parser.rs:784:17` is the parser's safety assertion (f58f2f6 l.760), on the main thread:
#: the parse runs before any worker starts (src/main.rs `use_config`).
NANODA_PARSER_ASSERT = "src/parser.rs:784:17"
NANODA_SAFETY = "assertion failed: !matches!(safety, DefinitionSafety::Unsafe | DefinitionSafety::Partial)"
LEAN4LEAN_PRINTER_PANIC = (
    "PANIC at _private.Lean.Environment.0.Lean.EnvExtension.getStateImpl Lean.Environment:1376:4: "
    "invalid environment extension has been accessed"
)


class Exit(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def out(text: str) -> None:
    sys.stdout.write(text + "\n")


def err(text: str) -> None:
    sys.stderr.write(text + "\n")


def rust_thread(name: str) -> str:
    """How the Rust that built the rc toolchains names a thread in a panic: `'main' (<tid>)`
    (library/std panicking.rs `default_hook`; T1 saw `thread 'main' (66072) panicked at`)."""
    return f"'{name}' ({os.getpid()})"


def die_of(sig: int) -> None:
    """Die of `sig` as a native process would (the grader sees the signal)."""
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
    time.sleep(5)  # (the signal is delivered before this returns)
    raise Exit(1)


def abort_on_panic() -> bool:
    # Any value turns it on (lean4 src/runtime/object.cpp `should_abort_on_panic`: getenv != null).
    return os.environ.get("LEAN_ABORT_ON_PANIC") is not None


def lean_backtrace() -> None:
    """After a Lean panic's message, `backtrace:` (and the frames) unless LEAN_BACKTRACE=0 (lean4
    src/runtime/object.cpp `lean_panic`, as checkers-table-review.md §1.1 L5 read it)."""
    if os.environ.get("LEAN_BACKTRACE") != "0":
        err("backtrace:")


# ---- command lines, as each program parses its own -------------------------------------------


def lean_io_error(path: str, exc: OSError) -> str:
    """A Lean IO error on opening `path` (lean4 src/Init/System/IOError.lean `fopenErrorToString`)."""
    gist = "no such file or directory" if exc.errno == 2 else (exc.strerror or "error").lower()
    return f"uncaught exception: {gist} (error code: {exc.errno})\n  file: {path}"


def parse_command(binary: str, args: list[str]) -> tuple[str, tuple[str, ...] | None, dict]:
    """(export path, permitted axioms or None for "no axiom check", nanoda config) or Exit."""
    if binary == "leanchecker-paranoid":
        # src/LeanChecker.lean @017bb1eb `main`/`checkExport`: flags are the words starting with
        # `-`, and the message lists the others as Lean prints a `List String`. (Stricter: only
        # the grader's own flags in its order are taken; rc2's flag handling was not found.)
        files = [a for a in args if not a.startswith("-")]
        if args[:2] == ["--silent", "--from-export"] and len(args) == 3 and files == args[2:]:
            return args[2], None, {}
        err(f"uncaught exception: Exactly one export file expected but got: [{', '.join(files)}]")
        raise Exit(1)
    if binary == "lean4lean":
        if len(args) == 2 and args[0] == "--import":
            return args[1], None, {}
        err("uncaught exception: --import expect a single file")
        raise Exit(1)
    if binary == "nanoda_bin":
        return parse_nanoda(args)
    tool = binary
    files = []
    mode = "--verified"
    for a in args:
        if a.startswith("--jobs="):
            n = a[len("--jobs=") :]
            if not n.isdigit() or int(n) == 0:
                err(f"{tool}: --jobs takes a worker count of at least 1 (a decimal numeral)")
                err(f"usage: {tool} [--verified|--trusted] [--jobs=<n>] FILE.ndjson")
                raise Exit(3)
        elif a in ("--verified", "--trusted"):
            mode = a
        elif a.startswith("-"):
            err(f"{tool}: unknown option {a}")
            err(f"usage: {tool} [--verified|--trusted] [--jobs=<n>] FILE.ndjson")
            raise Exit(3)
        else:
            files.append(a)
    if len(files) != 1:
        err(f"usage: {tool} [--verified|--trusted] [--jobs=<n>] FILE.ndjson")
        raise Exit(3)
    return files[0], STANDARD_AXIOMS, {"mode": mode}


def rust_io_debug(exc: OSError) -> str:
    """`{:?}` of a Rust `io::Error` from the OS (library/std src/io/error/repr_bitpacked.rs)."""
    kind = RUST_ERROR_KINDS.get(exc.errno or 0, "Uncategorized")
    return f'Os {{ code: {exc.errno}, kind: {kind}, message: "{exc.strerror}" }}'


def nanoda_error(message: str) -> NoReturn:
    """`main` returning `Err`: `Error: ` and `MainError`'s Debug, exit 1 (nanoda_lib @f58f2f6
    src/main.rs `MainError`; library/std process.rs `Termination for Result`)."""
    err(f"Error: {message}" + RUN_WITH_HELP)
    raise Exit(1)


def parse_nanoda(args: list[str]) -> tuple[str, tuple[str, ...] | None, dict]:
    """nanoda_lib @f58f2f6 src/main.rs `main` and src/util.rs `TryFrom<&Path>`: the config's
    export path, its permitted axioms (None: `unsafe_permit_all_axioms`) and the config."""
    if len(args) != 1:
        nanoda_error("This program expects a path to a configuration file.")
    try:
        with open(args[0], encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        nanoda_error(f"failed to open configuration file: {rust_io_debug(exc)}")
    try:
        config = json.loads(text)
        if not isinstance(config, dict):
            raise ValueError("invalid type: expected struct Config")
        for key, typ in NANODA_CONFIG_TYPES.items():
            value = config.get(key)
            if key in config and (not isinstance(value, typ) or (typ is int and isinstance(value, bool))):
                raise ValueError(f"invalid type for {key}")
    except ValueError as exc:  # `serde_json::from_reader(...).unwrap()`
        err(f"thread {rust_thread('main')} panicked at src/util.rs:924:57:")
        err(f'called `Result::unwrap()` on an `Err` value: Error("{exc}")')
        err(RUST_NOTE)
        raise Exit(101) from None
    path, stdin = config.get("export_file_path"), config.get("use_stdin", False)
    hard_error = config.get("unpermitted_axiom_hard_error", True)  # `default_true`
    if path is None and not stdin:
        nanoda_error(
            "incompatible config options: must specify a path to an export file OR set `use_stdin: true`"
        )
    if path is not None and stdin:
        nanoda_error(
            "incompatible config options: if an export file path is given, `use_stdin` cannot be `true`"
        )
    if config.get("unsafe_permit_all_axioms", False):
        if hard_error:
            nanoda_error(
                "incompatible config options: unsafe_permit_all_axioms && unpermitted_axioms_hard_error"
            )
        if config.get("permitted_axioms") is not None:
            nanoda_error(
                "incompatible config options: unsafe_permit_all_axioms && nonempty permitted_axioms list"
            )
        return path or "/dev/stdin", None, config
    return path or "/dev/stdin", tuple(config.get("permitted_axioms") or ()), config


def nanoda_parse(data: str, reader: Reader, permitted: tuple[str, ...] | None, config: dict) -> list[str]:
    """What nanoda's line-by-line parse refuses that LeanExport's reader does not, in line order
    (nanoda_lib @f58f2f6 src/parser.rs `go1`): a line serde cannot read, the first included (exit
    1, serde's Display); a literal its config does not enable; a declared axiom outside the list
    under `unpermitted_axiom_hard_error` (default true). Else the axioms it skips (not installed:
    named on stdout on success, src/main.rs `use_config`)."""
    hard_error = config.get("unpermitted_axiom_hard_error", True)
    skipped: list[str] = []
    lines = data.split("\n")
    for number, line in enumerate(lines, start=1):
        if number == len(lines) and line == "":
            break
        try:
            obj = json.loads(line)
        except ValueError as exc:
            column = getattr(exc, "colno", 1)
            what = "EOF while parsing a value" if not line.strip() else "expected value"
            nanoda_error(f"{what} at line 1 column {column}")  # each line is its own document
        if not isinstance(obj, dict):
            continue  # (the reader refuses it in LeanExport's words)
        if "natVal" in obj and not config.get("nat_extension", False):
            nanoda_error(
                "Nat lit extension disallowed by checker execution config, but export file contains "
                f"a nat literal {json.dumps(line + chr(10), ensure_ascii=False)}"
            )
        if "strVal" in obj and not config.get("string_extension", False):
            nanoda_error(
                "String lit extension disallowed by checker execution config, but export file contains "
                f"a string literal {json.dumps(line + chr(10), ensure_ascii=False)}"
            )
        decl = obj.get("axiom")
        if isinstance(decl, dict) and decl.get("name") in reader.names and permitted is not None:
            name = name_str(reader.names[decl["name"]])
            if name not in permitted:
                if hard_error:
                    nanoda_error(f"export file declares unpermitted axiom {json.dumps(name)}")
                skipped.append(name)
    return skipped


# ---- reading the export ----------------------------------------------------------------------


def read_export(binary: str, path: str) -> tuple[Reader, Terms, str | None, str]:
    """(reader, terms, parse error, text) or Exit for a file that cannot be opened, in each
    checker's own words. On a parse error the reader holds what it read before it."""
    terms = Terms()
    reader = Reader(terms)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        if binary in ("leanchecker-paranoid", "lean4lean", "con-leche"):
            err(lean_io_error(path, exc))
            raise Exit(1) from None
        if binary == "nanoda_bin":
            if exc.errno == errno.EISDIR:  # a directory opens; `read_line` fails (src/parser.rs l.393)
                nanoda_error(f"{exc.strerror} (os error {exc.errno})")
            nanoda_error(f"Failed to open export file: {rust_io_debug(exc)}")
        err(f"con-ron: {path}: {exc.strerror} (os error {exc.errno})")
        raise Exit(3) from None
    if binary == "nanoda_bin":
        try:  # `BufRead::read_line` refuses bytes that are not UTF-8 (io::ErrorKind::InvalidData)
            data = raw.decode("utf-8")
        except UnicodeDecodeError:
            nanoda_error("stream did not contain valid UTF-8")
        version = export_version(data)
        if version is not None and version < (3, 1, 0):  # src/parser.rs `check_semver`
            nanoda_error(
                "export format version is less than the minimum supported version. "
                f"Found {'.'.join(map(str, version))}, but min supported is 3.1.0"
            )
        if version is not None and version >= (3, 2, 0):
            nanoda_error(
                "export format version is greater than the maximum supported version. "
                f"Found {'.'.join(map(str, version))}, but max (exclusive) supported is 3.2.0"
            )
    else:
        data = raw.decode("utf-8", "replace")
    try:
        reader.parse(data)
    except ParseError as exc:
        return reader, terms, str(exc), data
    return reader, terms, None, data


def export_version(data: str) -> tuple[int, ...] | None:
    try:
        meta = json.loads(data.split("\n", 1)[0])["meta"]["format"]["version"]
        return tuple(int(x) for x in meta.split("."))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def used_axioms(reader: Reader, terms: Terms) -> list[str]:
    """Axioms some constant of the export refers to (a declared but unused one is not a use)."""
    axioms = {n for n, ci in reader.consts.items() if ci["kind"] == "axiom"}
    used: set = set()
    for ci in reader.consts.values():
        for e in expr_ids(ci):
            used |= {c for c in terms.consts(e) if c in axioms}
    return sorted(name_str(n) for n in used)


def refused_axioms(binary: str, reader: Reader, terms: Terms, permitted: tuple[str, ...] | None) -> list[str]:
    """The axioms outside `permitted` this checker refuses by itself, the first it meets first.
    nanoda (`unpermitted_axiom_hard_error: false`; the hard error is `nanoda_parse`'s): a use of
    one, which it did not install (src/tc.rs `infer_const`). con-leche: each at its own record,
    used or not, but for a `sorryAx` only declared (vendor/con-leche/Main.lean `usage`); con-ron,
    which ports it (con-ron.rs module docstring; its own axiom answer not found), the same."""
    if permitted is None:
        return []
    used = used_axioms(reader, terms)
    if binary == "nanoda_bin":
        return [a for a in used if a not in permitted]
    declared = [name_str(n) for n in reader.order if reader.consts[n]["kind"] == "axiom"]
    return [a for a in declared if a not in permitted and (a != SORRY_AX or a in used)]


def markers(reader: Reader | None, terms: Terms, name: str) -> tuple[list[tuple[str, str]], float]:
    """This checker's (verb, arg) markers carried in the export, and the seconds of the carried
    `judge spin` directives (the official judge's scripted replay work, in CPU seconds)."""
    if reader is None:
        return [], 0.0
    mine: list[tuple[str, str]] = []
    slept = 0.0
    for line in carried_directives(reader, terms):
        words = line.split()
        if words[:1] == ["spin"] and len(words) > 1:
            slept += number(words[1])
        if len(words) >= 3 and words[0] == "checker" and words[1] in (name, "all"):
            mine.append((words[2], " ".join(words[3:])))
    return mine, slept


def number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


# ---- what each checker prints and how it exits ---------------------------------------------


def rust_panic(location: str, message: str, threads: int) -> None:
    """A Rust panic (library/std rt.rs: exit 101); with worker threads (named `thread_<i>`:
    nanoda_lib @f58f2f6 src/tc.rs `check_all_declars_par` l.126; T1 shows `thread 'thread_0'`),
    main's join panic too (l.139-141)."""
    thread = "thread_0" if threads >= 2 else "main"
    err(f"thread {rust_thread(thread)} panicked at {location}:\n{message}")
    err(RUST_NOTE)
    if threads >= 2:
        err(f"thread {rust_thread('main')} panicked at src/tc.rs:140:46:")  # @f58f2f6 l.140
        err("A thread in `check_all_declars` panicked while being joined: Any { .. }")
    raise Exit(101)


def reject(
    binary: str, why: str, decl: str, threads: int, unknown: str | None, mode: str = "--verified"
) -> None:
    """Each checker's own rejection of an ill-typed export."""
    if binary == "leanchecker-paranoid":
        out(f"Lean default kernel rejects the solution: {why}")  # src/LeanChecker.lean `checkExport`
        raise Exit(1)
    if binary == "lean4lean":
        # Replay.lean `Kernel.Exception.mapEnvM` gives every kernel exception the fresh printing
        # environment but `declTypeMismatch`, which keeps the replay's own, extension-less one: its
        # printer panics, and under LEAN_ABORT_ON_PANIC that is an abort (src/runtime/object.cpp).
        # Every other exception prints and exits 1 (`replayConstant`: `at {name}: ...`).
        if why.startswith("(kernel) declaration type mismatch"):
            err(LEAN4LEAN_PRINTER_PANIC)
            lean_backtrace()
            if abort_on_panic():
                die_of(signal.SIGABRT)
            err(f"uncaught exception: at {decl}: {why}\n  [Error pretty printing expression]")
            raise Exit(1)
        err(f"uncaught exception: at {decl}: {why}")
        raise Exit(1)
    if binary == "nanoda_bin":
        if unknown is not None:
            rust_panic(NANODA_INFER_CONST, f"declaration not found in infer_const, {unknown}", threads)
        rust_panic(NANODA_DEF_EQ, "assertion failed: self.def_eq(u, v)", threads)
    if binary == "con-leche":
        err(f"con-leche: {why} [at thm {decl}, fold position 11] ({mode}) t=0.01s")
        raise Exit(1)
    err(f"con-ron: rejected: {why} [at thm {decl}, fold position 11] ({mode})")
    raise Exit(1)


def decline(binary: str) -> None:
    if binary == "nanoda_bin":  # nanoda_lib @698c869 src/parser.rs
        back_refs = "Back-refs must be continuous."
        err(f"Declined: Expr back-reference mismatch, expected Ie(7), found Ie(9). {back_refs}")
        raise Exit(2)
    if binary in ("con-leche", "con-ron"):  # Main.lean `checkMain`; con-ron.rs `check_main`
        tool = binary
        err(f"{tool}: declined: no install route for inductive block Double.T (--verified)")
        raise Exit(2)
    # leanchecker-paranoid and lean4lean have no decline (no exit 2 in their sources): ignored.


def out_of_memory(binary: str) -> None:
    if binary in LEAN_PROGRAMS:  # src/runtime/object.cpp `lean_internal_panic_out_of_memory`
        err("INTERNAL PANIC: out of memory")
        if abort_on_panic():
            die_of(signal.SIGABRT)
        raise Exit(1)
    err("memory allocation of 68719476736 bytes failed")  # library/std alloc.rs
    die_of(signal.SIGABRT)


def stack_overflow(binary: str, threads: int) -> None:
    if binary in LEAN_PROGRAMS:  # src/runtime/stack_overflow.cpp `segv_handler`
        err("\nStack overflow detected. Aborting.")
    else:  # library/std sys/pal/unix/stack_overflow.rs; the thread that overflows is the checking
        # one: con-ron's unnamed 1 GiB thread (con-ron.rs `main`), nanoda's worker or main
        thread = "<unnamed>" if binary == "con-ron" else "thread_0" if threads >= 2 else "main"
        err(f"\nthread {rust_thread(thread)} has overflowed its stack\nfatal runtime error: stack overflow")
    die_of(signal.SIGABRT)


def panic(binary: str, threads: int) -> None:
    """A crash of the checker's own code on this export."""
    if binary == "nanoda_bin":
        rust_panic(NANODA_PARSER_ASSERT, NANODA_SAFETY, 1)  # the parse's panic: main, no workers yet
    if binary == "con-ron":  # con-ron.rs `main`: a panic on the checking thread is exit 3
        where = "crates/con-ron-core/src/arena/checker.rs:1:1"
        err(f"thread {rust_thread('<unnamed>')} panicked at {where}:\ndouble says panic")
        err("con-ron: the checking thread died")
        raise Exit(3)
    err("PANIC at Double.check Double.Check:1:1: double says panic")  # src/runtime/object.cpp
    lean_backtrace()
    if abort_on_panic():
        die_of(signal.SIGABRT)
    # Without the variable a Lean panic goes on with a default value: the check carries on.


def spin(cpu_seconds: float) -> None:
    """Work: burn `cpu_seconds` of this process's CPU time (a checker's budget is CPU seconds)."""
    end = time.process_time() + cpu_seconds
    while time.process_time() < end:
        pass


def act(binary: str, verb: str, arg: str, slept: float, threads: int) -> None:
    """One marker, before the check (sleep, spin, slower, alloc) or instead of it."""
    if verb == "sleep":  # waits without working: only the wall-clock backstop sees it
        time.sleep(number(arg))
    elif verb == "spin":
        spin(number(arg))
    elif verb == "slower":  # this checker's work: ARG times the official replay's (scripted) work
        spin(number(arg) * slept)
    elif verb == "alloc":
        held = bytearray(int(number(arg)) << 20)  # bytearray(n) writes its n zero bytes
        time.sleep(3)
        del held
    elif verb == "reject":  # a type mismatch: each checker's own reject code or panic for it
        why = "(kernel) declaration type mismatch, 'Double.scripted' (double says no)"
        reject(binary, why, "Double.scripted", threads, None)
    elif verb == "decline":
        decline(binary)
    elif verb == "panic":
        panic(binary, threads)
    elif verb == "crash":
        die_of(signal.SIGSEGV)
    elif verb == "oom":
        out_of_memory(binary)
    elif verb == "stack":
        stack_overflow(binary, threads)


def accept(binary: str, count: int, mode: str, skipped: list[str]) -> None:
    if binary == "leanchecker-paranoid":
        out("Lean default kernel accepts the solution")
    elif binary == "lean4lean":
        out(f"checked {count} declarations")
    elif binary == "nanoda_bin" and skipped:  # src/main.rs `use_config` (no success message asked)
        out(f"Skipped exported but unpermitted axioms {json.dumps(skipped, ensure_ascii=False)}")
    elif binary in ("con-leche", "con-ron"):
        out(f"{binary}: accepted {count} declarations ({mode})")
    raise Exit(0)


def user_of(reader: Reader, terms: Terms, missing: str) -> str:
    """The first declaration (in the export's order) that mentions `missing`: the one whose
    replay meets it (lean4lean Replay.lean `replayConstant`: `at {name}: ...`)."""
    for n in reader.order:
        if any(name_str(c) == missing for e in expr_ids(reader.consts[n]) for c in terms.consts(e)):
            return name_str(n)
    return missing


def main(binary: str, args: list[str]) -> int:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    name = NAMES[binary]
    export, permitted, config = parse_command(binary, args)
    threads = int(config.get("num_threads", 1)) if binary == "nanoda_bin" else 1
    reader, terms, parse_error, data = read_export(binary, export)
    mine, slept = markers(None if parse_error else reader, terms, name)
    for verb, arg in mine:
        act(binary, verb, arg, slept, threads)
    switch = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", f"double-checker-{binary}")
    wrong_row = False
    if os.path.exists(switch):
        with open(switch, encoding="utf-8") as f:
            wrong_row = f.read().strip() == "wrong-row"
    skipped = nanoda_parse(data, reader, permitted, config) if binary == "nanoda_bin" else []
    if parse_error is not None:
        if wrong_row:
            err(f"{name} (wrong-row stand-in): rejected")
            raise Exit(1)
        if binary in ("leanchecker-paranoid", "lean4lean"):
            err(f"uncaught exception: {parse_error}")
            raise Exit(1)
        if binary == "nanoda_bin":
            nanoda_error(parse_error)
        err(f"{binary}: {export}:0: {parse_error}")
        raise Exit(3)
    mode = config.get("mode", "--verified")
    if binary == "con-leche" and os.environ.get("CON_LECHE_INMODEL_CENSUS") == "1":
        # Main.lean `checkMain`: the census stops after the parse and "always EXITS 2".
        err(f"con-leche: inmodel census: 0 modelled, 0 declined ({mode}, parse only)")
        raise Exit(2)
    why = check_export(export)
    bad = refused_axioms(binary, reader, terms, permitted)
    if why is None and not bad:
        accept(binary, len(reader.order), mode, skipped)
    if wrong_row:
        err(f"{name} (wrong-row stand-in): rejected")
        raise Exit(1)
    if why is None:  # an axiom outside the list
        if binary == "nanoda_bin":  # `unpermitted_axiom_hard_error: false`: not installed, so
            rust_panic(NANODA_INFER_CONST, f"declaration not found in infer_const, {bad[0]}", threads)
        if binary == "con-leche":  # Main.lean `usage`: "every other non-pinned axiom declines"
            err(
                f"con-leche: not implemented yet: non-standard axiom ({bad[0]}) [at axiom {bad[0]}, "
                f"fold position 11] ({mode}) t=0.01s"
            )
            raise Exit(2)
        err(f"con-ron: declined: non-standard axiom ({bad[0]}) ({mode})")
        raise Exit(2)
    unknown = why.split("'")[1] if why.startswith("(kernel) unknown constant '") else None
    decl = why.split("'")[1] if "'" in why else "Double.scripted"
    if unknown is not None:
        decl = user_of(reader, terms, unknown)
    reject(binary, why, decl, threads, unknown, mode)
    return 0


if __name__ == "__main__":
    try:
        code = main(sys.argv[1], sys.argv[2:])
    except Exit as done:
        code = done.code
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)
