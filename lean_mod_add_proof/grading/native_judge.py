"""The judge as a native executable, built once per toolchain in a trusted step.

`lean --run Judge.lean` elaborates `import Lean` and the whole judge on every grade (seconds,
and about a gigabyte of its own). Instead, the first grade of a process compiles `Judge.lean`
once with the toolchain's own tools, with no submission anywhere near:

    lean -j 1 -c Judge.c Judge.lean      (`-c, --c=fname`: src/Lean/Shell.lean, src/util/shell.cpp)
    leanc -O3 -DNDEBUG -o judge Judge.c  (`leanc` links Init/Std/Lean statically: src/Leanc.lean)

The generated `main` runs every built-in initializer of Init, Std and Lean before the judge's
own `main` (`lean_initialize`, src/Lean/Compiler/IR/EmitC.lean), which is all `importModules`
needs; the judge sets its own search path. No Lake runs, and nothing here is reachable from a
grade's build.

The executable is kept as a cache entry (`judge-<key>/package/judge`, the same verified,
atomically installed entries as the Network/Weights prebuild), keyed by the toolchain and the
judge's source. It is hashed in full when a process first uses it; after that each grade checks
that the file is still the very inode it hashed, unchanged (device, inode, size, mtime, ctime:
a write or chmod moves ctime, which no unprivileged process can set back). Unsandboxed, where a
build can reach the cache, it is re-hashed in full before every use.

If the build fails, or the executable does not start (`judge` without arguments must refuse
them the way Judge.lean's `main` does), grading falls back to `lean --run Judge.lean`: every
result says which ran (`judge_mode`), and the self-test runs the mode that grades. A failure the
host caused (a program that could not be started, a sandbox that did not start, a deadline, a
cap or a signal, a cache that could not be written) is tried again once its back-off has passed
(backoff.py); a build that exits with an error, or an executable that answers wrongly, stays a
failure for the life of the process.

`lean --run` may not be able to run a judge text at all: the interpreter needs IR (or a native
symbol) for every declaration it calls, and the export text calls `LeanExport.parseStream`, which
the `lean` binary does not carry natively (it carries Init, Std and Lean). The stored sources say
it works: Judge.lean has no `module` header, so the frontend imports at `OLeanLevel.private`
(src/Lean/Elab/Import.lean `processHeaderCore`), which loads every transitive import's full `.ir`
(src/Lean/Environment.lean `importModulesCore`, "we import all transitively referenced modules
and ignore any module system annotations"); lean4 #8664/#8666 restrict imported IR for `module`
roots only (docs/readings/first-contact.md Q1). If a toolchain proves them wrong, the interpreter
says so in words only the toolchain writes (`interpreter_lacks_ir`), and that text's route is
then unavailable in interpreted mode for the life of the process (`mark_interpreter_unavailable`):
not a verdict (no submission caused it), not a wrong belief about Lean that condemns the route,
and not a host fault to retry (it is a property of the toolchain's files).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lean_mod_add_proof.grading import cache as cachemod
from lean_mod_add_proof.grading.backoff import Backoff
from lean_mod_add_proof.grading.hashing import sha256_file
from lean_mod_add_proof.grading.judge_source import judge_text
from lean_mod_add_proof.grading.oserrors import host_errno
from lean_mod_add_proof.grading.package import JUDGE_FILE
from lean_mod_add_proof.grading.process import CommandOutcome, HostFault
from lean_mod_add_proof.grading.result import CommandRecord, VerdictFrom
from lean_mod_add_proof.grading.toolchain import Toolchain

#: Bump when the build commands change: old executables stop matching.
BUILD_VERSION = "1"
C_FILE = "Judge.c"
EXECUTABLE = "judge"
#: What `main` says when it is given no arguments (Judge.lean): the start-up check looks for it.
NO_ARGUMENTS_REPLY = "judge: --olean, --theorem, --spec and --check are required"
#: The trusted build's own limits: compiling a program that imports Lean, then a static link.
BUILD_TIMEOUT_S = 900.0
BUILD_MEMORY_MB = 4096

#: Runs one trusted command: (argv, cwd, deadline, cwd writable, extra read-only paths) ->
#: outcome. The pipeline supplies it: the grades' sandbox and caps, a scratch /tmp of its own,
#: and at least BUILD_MEMORY_MB of memory.
RunTrusted = Callable[[Sequence[str], Path, float, bool, Sequence[Path]], Awaitable[CommandOutcome]]


@dataclass(frozen=True)
class NativeJudge:
    """A verified judge executable."""

    path: Path
    sha256: str
    ident: tuple[int, int, int, int, int]
    """(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns) when it was hashed."""
    records: tuple[CommandRecord, ...] = field(default=(), compare=False)
    """The commands that built or checked it, in the process that did (not part of its identity)."""


@dataclass(frozen=True)
class NoNativeJudge:
    """Why grading runs `lean --run Judge.lean` instead."""

    reason: str
    records: tuple[CommandRecord, ...] = field(default=(), compare=False)
    transient: bool = False
    """The host's doing (see the module docstring): built again after a back-off."""


def build_argvs(toolchain: Toolchain, threads: int) -> list[list[str]]:
    """The two trusted build commands, run in the directory holding Judge.lean (pure)."""
    lean = str(toolchain.lean)
    leanc = str(toolchain.dir / "bin" / "leanc")
    return [
        [lean, "-j", str(threads), "-c", C_FILE, JUDGE_FILE],
        [leanc, "-O3", "-DNDEBUG", "-o", EXECUTABLE, C_FILE],
    ]


def build_key(toolchain: Toolchain, judge_source: bytes) -> str:
    """The cache key of the executable: toolchain, judge source and build commands (pure)."""
    h = hashlib.sha256()
    for part in (BUILD_VERSION, toolchain.version, str(toolchain.dir)):
        h.update(part.encode() + b"\0")
    h.update(hashlib.sha256(judge_source).digest())
    return "judge-" + h.hexdigest()[:40]


def missing_executable(manifest: Mapping[str, str]) -> list[str]:
    """The entry must hold the executable (pure; the cache's `OutputsMissing`)."""
    return [] if EXECUTABLE in manifest else ["judge executable"]


def stat_ident(path: Path) -> tuple[int, int, int, int, int]:
    st = os.stat(path, follow_symlinks=False)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def unchanged(judge: NativeJudge, *, rehash: bool) -> bool:
    """Whether the executable is still exactly what was verified (blocking: run it in a thread).
    A host error (`oserrors.host_errno`) is raised: it is no evidence that the file changed."""
    try:
        if stat_ident(judge.path) != judge.ident:
            return False
        return not rehash or sha256_file(judge.path) == judge.sha256
    except OSError as exc:
        if host_errno(exc) is not None:
            raise
        return False


def started_as_expected(outcome: CommandOutcome) -> str | None:
    """None when the executable ran and refused empty arguments as Judge.lean's `main` does
    (pure); else what happened instead."""
    rec = outcome.record
    if outcome.limit_exceeded:
        return f"it stopped: {outcome.limit_exceeded}"
    if outcome.timed_out:
        return "it timed out"
    if rec.signal is not None:
        return f"it was killed by signal {rec.signal}"
    if rec.exit_code == 0 or NO_ARGUMENTS_REPLY not in outcome.text:
        return f"it answered no arguments with exit {rec.exit_code}: {outcome.text.strip()[-200:]!r}"
    return None


def _host_stopped(outcome: CommandOutcome) -> bool:
    """A deadline, a cap or a signal ended the trusted command: the host's doing, not the
    toolchain's answer (pure)."""
    return outcome.timed_out or bool(outcome.limit_exceeded) or outcome.record.signal is not None


_memo: dict[tuple[str, str], NativeJudge | NoNativeJudge] = {}
#: When a transiently failed build (`NoNativeJudge.transient`) is tried again.
retry = Backoff()
_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


def forget(judge: NativeJudge | None = None) -> None:
    """Drop what this process knows (all of it, or one executable found changed)."""
    for key, known in list(_memo.items()):
        if judge is None or known == judge:
            del _memo[key]
    if judge is None:
        retry.clear()
        _interpreter_unavailable.clear()


# ---- the interpreted judge: a toolchain whose `lean --run` cannot run a judge text -------------

#: What `lean --run` prints, at the start of a line on stderr, when its interpreter meets a
#: declaration it has neither IR nor a native symbol for (lean4 src/library/ir_interpreter.cpp,
#: stored 016de2dc: `interpreter::call` for an opaque extern, `interpreter::get_decl` for no IR at
#: all; the C++ exception reaches `lean_main`'s `catch (lean::throwable & ex) { std::cerr <<
#: ex.what() ... }`, exit 1, src/util/shell.cpp stored 0283b20d). Only the toolchain writes them
#: at a line's start: the judge prints what it read of a submission inside its one-line,
#: escaped verdict (`asciiOnly`), or after `uncaught exception: `.
INTERPRETER_NO_IR: tuple[str, ...] = (
    "Could not find native implementation of external declaration ",
    "(interpreter) unknown declaration ",
)
#: The frontend's error when an import's `.ir` file is missing (lean4 src/Lean/Environment.lean
#: `finalizeImport`, `missing IR data file for module {mod.module}`): printed at the header, before
#: the judge's `main` runs, so before its replay marker.
MISSING_IR_FILE = "missing IR data file for module "
#: libstdc++'s `std::terminate` prefix, should the exception fail to unwind a native frame (then
#: SIGABRT; not established, first-contact.md Q1).
_TERMINATE_PREFIX = "what():"


def interpreter_lacks_ir(text: str, *, replay_started: bool) -> str | None:
    """The line of a failed `lean --run Judge.lean` that says its interpreter cannot run a
    declaration the judge imports, or None (pure). After the judge's replay marker only the
    interpreter's own wordings count, at the start of a line; before it also the frontend's
    missing `.ir` file (nothing of the submission has been read then)."""
    for raw in text.split("\n"):
        line = raw.strip()
        if line.startswith(_TERMINATE_PREFIX):
            line = line.removeprefix(_TERMINATE_PREFIX).strip()
        if line.startswith(INTERPRETER_NO_IR):
            return line
        if not replay_started and MISSING_IR_FILE in line:
            return line
    return None


#: (toolchain dir, version, lean's identity, judge text) -> why that text cannot run interpreted.
_interpreter_unavailable: dict[tuple[str, str, str, str], str] = {}


def _interpreter_key(toolchain: Toolchain, verdict_from: VerdictFrom) -> tuple[str, str, str, str]:
    try:
        st = toolchain.lean.stat()
        lean = f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        lean = "?"
    return (str(toolchain.dir), toolchain.version, lean, verdict_from)


def mark_interpreter_unavailable(toolchain: Toolchain, verdict_from: VerdictFrom, why: str) -> str:
    """Remember for the life of the process (a changed `lean` binary is asked again) that
    `lean --run` cannot run the `verdict_from` judge text on this toolchain; returns `why`."""
    _interpreter_unavailable[_interpreter_key(toolchain, verdict_from)] = why
    return why


def interpreter_unavailable(toolchain: Toolchain, verdict_from: VerdictFrom) -> str | None:
    """Why `lean --run` cannot run the `verdict_from` judge text on this toolchain, or None."""
    return _interpreter_unavailable.get(_interpreter_key(toolchain, verdict_from))


def needs_native_judge(verdict_from: VerdictFrom, line: str, native_note: str) -> str:
    """The reason a route is unavailable without the native judge (pure): what the interpreter
    said, and why there is no native judge (`native_note`: the judge's note, empty when the
    setting turned it off)."""
    native = native_note or "native_judge is off; set native_judge = true"
    return (
        f"unavailable: the {verdict_from} route needs the native judge here, because `lean --run` "
        f"cannot run its judge on this toolchain ({line}); native judge: {native}"
    )


async def ensure_native_judge(
    toolchain: Toolchain, cache_root: Path, threads: int, run: RunTrusted, verdict_from: VerdictFrom
) -> NativeJudge | NoNativeJudge:
    """The verified executable for this toolchain and judge text (the export judge or the olean
    judge, judge_source.py), building it on first use; else why not. Remembered for the life of
    the process (a failure too, but for one the host caused, tried again after its back-off; the
    next process tries again anyway)."""
    source = judge_text(verdict_from).encode("utf-8")
    key = (str(cache_root), build_key(toolchain, source))
    if (known := _settled(key)) is not None:
        return known
    per_loop = _locks.setdefault(asyncio.get_running_loop(), {})
    async with per_loop.setdefault(key, asyncio.Lock()):
        if (known := _settled(key)) is not None:
            return known
        found = await _build_or_load(toolchain, cache_root, key[1], source, threads, run)
        if isinstance(found, NoNativeJudge) and found.transient:
            wait = retry.failed(key)
            found = dataclasses.replace(found, reason=f"(a host fault: retried in {wait:g} s) {found.reason}")
        else:
            retry.succeeded(key)
        _memo[key] = dataclasses.replace(found, records=())  # the commands go on one grade only
        return found


def _settled(key: tuple[str, str]) -> NativeJudge | NoNativeJudge | None:
    """What stands for `key`, or None when it must be built (again: a host fault's back-off passed)."""
    known = _memo.get(key)
    if isinstance(known, NoNativeJudge) and known.transient and retry.due(key):
        return None
    return known


async def _build_or_load(
    toolchain: Toolchain, cache_root: Path, key: str, source: bytes, threads: int, run: RunTrusted
) -> NativeJudge | NoNativeJudge:
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    host_fault = False  # the prebuild stopped for a reason of the host (see the module docstring)

    async def prebuild(where: Path) -> cachemod.PrebuildOutcome:
        nonlocal host_fault
        records: list[CommandRecord] = []
        for argv in build_argvs(toolchain, threads):
            try:
                out = await run(argv, where, deadline, True, ())
            except HostFault as fault:  # e.g. no `leanc` in this toolchain: grade with `lean --run`
                host_fault = True
                return cachemod.PrebuildOutcome(False, str(fault), records)
            records.append(out.record)
            if out.timed_out or out.limit_exceeded or out.record.exit_code != 0:
                host_fault = _host_stopped(out)
                why = out.limit_exceeded or ("timed out" if out.timed_out else f"exit {out.record.exit_code}")
                tail = " ".join(out.text.split())[-300:]
                return cachemod.PrebuildOutcome(
                    False, f"`{Path(argv[0]).name}` failed ({why}): {tail}", records
                )
        return cachemod.PrebuildOutcome(True, "", records)

    try:
        entry = await cachemod.ensure_entry(
            cache_root,
            key,
            {JUDGE_FILE: source},
            prebuild,
            deadline=deadline,
            outputs_missing=missing_executable,
            step="native judge build",
        )
    except cachemod.PrebuildFailed as exc:
        return NoNativeJudge(f"the native judge did not build: {exc.reason}", tuple(exc.records), host_fault)
    except cachemod.CacheUnusable as exc:
        return NoNativeJudge(f"the native judge could not be cached: {exc.reason}", tuple(exc.records), True)
    path = entry.package / EXECUTABLE
    records = list(entry.records)
    try:
        ident = await asyncio.to_thread(stat_ident, path)
    except OSError as exc:
        return NoNativeJudge(f"the native judge vanished: {exc.strerror}", tuple(records), True)
    judge = NativeJudge(path, entry.manifest[EXECUTABLE], ident)
    # `ensure_entry` re-hashed the whole entry; a change since shows in the identity.
    if not await asyncio.to_thread(unchanged, judge, rehash=True):
        return NoNativeJudge("the native judge changed while it was being checked", tuple(records), True)
    try:
        out = await run([str(path)], path.parent, deadline, False, (path.parent,))
    except HostFault as fault:
        return NoNativeJudge(f"the native judge does not run here: {fault}", tuple(records), True)
    records.append(out.record)
    if (problem := started_as_expected(out)) is not None:
        return NoNativeJudge(
            f"the native judge does not run here: {problem}", tuple(records), _host_stopped(out)
        )
    return NativeJudge(path, judge.sha256, judge.ident, tuple(records))
