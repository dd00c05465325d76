"""The grade: guard, toolchain, build, kernel replay, statement check, axioms. The first stage
that fails gives reward 0.0 and stops the grade. Nothing but cancellation escapes `grade`."""

from __future__ import annotations

import asyncio
import os
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lean_mod_add_proof.constants import CHECK_THEOREM, SUBMISSION_MODULE, WEIGHTS_MODULE, theorem_name
from lean_mod_add_proof.dataset.tasks import NETWORK_LEAN_PATH, TaskRecord, sha256_text
from lean_mod_add_proof.grading import package as pkgmod
from lean_mod_add_proof.grading.axioms import (
    AxiomReportError,
    check_axioms,
    error_messages,
    parse_axiom_report,
)
from lean_mod_add_proof.grading.extract import extract_submission
from lean_mod_add_proof.grading.guard import check_guard
from lean_mod_add_proof.grading.process import CommandOutcome, child_env, find_prlimit, run_command
from lean_mod_add_proof.grading.result import GraderConfig, GradeResult, Stage
from lean_mod_add_proof.grading.sandbox import bwrap_argv, decide_sandbox, host_layout, probe_sandbox
from lean_mod_add_proof.grading.toolchain import Toolchain, locate_toolchain

OnStage = Callable[[str], None]
_REASON_MAX = 300

# One semaphore per (event loop, size): asyncio primitives bind to the loop that first uses them.
_semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)


def _semaphore(size: int) -> asyncio.Semaphore:
    per_loop = _semaphores.setdefault(asyncio.get_running_loop(), {})
    return per_loop.setdefault(size, asyncio.Semaphore(size))


class _Failed(Exception):
    """A stage failed; carries the one-line reason (control flow inside this module only)."""

    def __init__(self, stage: Stage, reason: str) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason


def one_line(text: str, limit: int = _REASON_MAX) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def summarize_output(text: str) -> str:
    """The most telling line of a failed command's output: the first error, else the last line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower():
            return one_line(ln)
    return one_line(lines[-1]) if lines else "(no output)"


def command_failure(what: str, outcome: CommandOutcome, timeout_s: float) -> str | None:
    """Why a command counts as failed, or None when it exited 0 (pure)."""
    rec = outcome.record
    if outcome.timed_out:
        return f"{what} timed out: the {timeout_s:g} s limit for build, replay and check together ran out"
    if rec.exit_code != 0:
        code = rec.exit_code
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit {code}"
        return f"{what} failed ({how}): {summarize_output(outcome.text)}"
    return None


@dataclass
class _Env:
    """What every command of one grade shares."""

    toolchain: Toolchain
    config: GraderConfig
    sandboxed: bool
    bwrap: str | None
    prlimit: str

    async def run(
        self,
        stage: Stage,
        argv: Sequence[str],
        pkg: Path,
        deadline: float,
        readonly: Sequence[str] = (),
    ) -> CommandOutcome:
        env = child_env(pkg, self.toolchain.dir / "bin")
        full = list(argv)
        if self.sandboxed:
            assert self.bwrap is not None
            ro = [pkg / r for r in (*pkgmod.SANDBOX_READONLY, *readonly) if (pkg / r).exists()]
            full = (
                bwrap_argv(
                    self.bwrap,
                    layout=host_layout(),
                    toolchain_dir=self.toolchain.dir,
                    package_dir=pkg,
                    readonly_files=ro,
                    env=env,
                )
                + full
            )
        return await run_command(
            full,
            stage=stage,
            cwd=pkg,
            env=env,
            deadline=deadline,
            output_cap_bytes=self.config.output_cap_bytes,
            tail_chars=self.config.tail_chars,
            memory_mb=self.config.memory_mb,
            max_file_mb=self.config.max_file_mb,
            prlimit=self.prlimit,
            record_argv=argv,
        )


class _Grade:
    """One grade's mutable state; the stages are methods so the flow reads top to bottom."""

    def __init__(self, task: TaskRecord, weights_lean: str, config: GraderConfig, on_stage: OnStage | None):
        self.task = task
        self.weights_lean = weights_lean
        self.config = config
        self.on_stage = on_stage
        self.result = GradeResult(task_id=task.id, theorem=theorem_name(task.p))
        self.pkg: Path | None = None
        self._stage_start = time.monotonic()
        self._current: Stage | None = None

    # -- bookkeeping --
    def begin(self, stage: Stage) -> None:
        self.end()
        self._current = stage
        self._stage_start = time.monotonic()
        self.result.stage_reached = stage
        if self.on_stage is not None:
            self.on_stage(stage)

    def end(self) -> None:
        if self._current is not None:
            elapsed = time.monotonic() - self._stage_start
            key = self._current
            self.result.stage_seconds[key] = round(self.result.stage_seconds.get(key, 0.0) + elapsed, 4)
            self._current = None

    def record(self, outcome: CommandOutcome) -> CommandOutcome:
        self.result.commands.append(outcome.record)
        return outcome

    def fail(self, stage: Stage, reason: str) -> None:
        self.end()
        self.result.failed_stage = stage
        self.result.reason = one_line(reason, 2 * _REASON_MAX)
        self.result.reward = 0.0
        self.result.accepted = False

    # -- stages --
    def guard(self, submission: str, skip: bool) -> None:
        self.begin("guard")
        if skip:
            return  # test-only path: guard_passed stays False so the result shows it never ran
        verdict = check_guard(submission)
        if not verdict.passed:
            raise _Failed("guard", f"guard: {verdict.reason}")
        self.result.guard_passed = True

    async def locate(self) -> _Env:
        self.begin("toolchain")
        found = await asyncio.to_thread(locate_toolchain, self.config.toolchain_dir)
        if not isinstance(found, Toolchain):
            raise _Failed("toolchain", f"Lean toolchain not found: {found.reason}; {found.fix}")
        self.result.toolchain = f"{found.dir} ({found.version})"
        probe = None if self.config.sandbox == "off" else await asyncio.to_thread(probe_sandbox)
        use, error = decide_sandbox(self.config.sandbox, probe)
        if error is not None:
            raise _Failed("toolchain", error)
        prlimit = find_prlimit()
        if prlimit is None:
            raise _Failed("toolchain", "prlimit (util-linux) not found; it enforces the memory cap")
        self.result.sandboxed = use
        return _Env(found, self.config, use, probe.bwrap if probe else None, prlimit)

    async def prepare(self, env: _Env) -> dict[str, str]:
        """Fresh package = a copy of the prebuilt cache entry (built on first use) + Submission."""
        self.pkg = pkg = await asyncio.to_thread(pkgmod.new_grade_dir, self.config.work_root)
        if self.config.keep_packages:
            self.result.package_dir = str(pkg)
        sources = pkgmod.package_sources(NETWORK_LEAN_PATH.read_bytes(), self.weights_lean)
        key = pkgmod.cache_key(env.toolchain.version, env.toolchain.dir, sources)
        cache_root = (self.config.cache_dir or pkgmod.DEFAULT_CACHE_DIR).expanduser()

        async def prebuild(where: Path) -> pkgmod.PrebuildOutcome:
            # Trusted files only, but under the same limits and sandbox, with its own deadline: a
            # slow first build of the weights must not eat the submission's time.
            deadline = time.monotonic() + self.config.timeout_s
            out = await env.run("build", ["lake", "build", WEIGHTS_MODULE], where, deadline)
            failure = command_failure(f"lake build {WEIGHTS_MODULE}", out, self.config.timeout_s)
            return pkgmod.PrebuildOutcome(failure is None, failure or "", [out.record])

        try:
            try:
                cache_root.mkdir(parents=True, exist_ok=True, mode=0o700)
                usable = os.access(cache_root, os.W_OK)
            except OSError:
                usable = False
            if usable:
                entry = await pkgmod.ensure_entry(cache_root, key, sources, prebuild)
                self.result.commands.extend(entry.records)
                self.result.cache = entry.status
                await asyncio.to_thread(pkgmod.copy_package, entry.package, pkg)
                manifest = entry.manifest
            else:  # no writable cache: prebuild in place, same checks
                self.result.cache = "off"
                manifest, records = await pkgmod.prebuild_package(pkg, sources, prebuild)
                self.result.commands.extend(records)
        except pkgmod.PrebuildFailed as exc:
            self.result.commands.extend(exc.records)
            raise _Failed("build", f"could not prebuild Network/Weights: {exc.reason}") from None
        return manifest

    async def check_trusted(self, stage: Stage, manifest: dict[str, str], when: str) -> None:
        assert self.pkg is not None
        changed = await asyncio.to_thread(pkgmod.verify_trusted, self.pkg, manifest)
        if changed:
            raise _Failed(stage, f"trusted file changed during the {when}: {', '.join(changed[:5])}")

    async def run_checked(
        self, env: _Env, stage: Stage, argv: list[str], manifest: dict[str, str], deadline: float, when: str
    ) -> None:
        """Run one command that must exit 0 and leave every trusted file as it was."""
        assert self.pkg is not None
        out = self.record(await env.run(stage, argv, self.pkg, deadline))
        if failure := command_failure(" ".join(argv), out, self.config.timeout_s):
            raise _Failed(stage, failure)
        await self.check_trusted(stage, manifest, when)

    async def build(self, env: _Env, submission: str, manifest: dict[str, str], deadline: float) -> None:
        assert self.pkg is not None
        await asyncio.to_thread(pkgmod.write_submission, self.pkg, submission)
        # lake build only warns on sorry; the guard and the axiom check cover that.
        await self.run_checked(
            env, "build", ["lake", "build", SUBMISSION_MODULE], manifest, deadline, "build"
        )
        self.result.build_passed = True

    async def leanchecker(self, env: _Env, manifest: dict[str, str], deadline: float) -> None:
        self.begin("leanchecker")
        argv = ["lake", "env", "leanchecker", SUBMISSION_MODULE]
        await self.run_checked(env, "leanchecker", argv, manifest, deadline, "kernel replay")
        self.result.leanchecker_passed = True

    async def statement(self, env: _Env, manifest: dict[str, str], deadline: float) -> str:
        assert self.pkg is not None
        self.begin("statement")
        text = pkgmod.check_lean_text(self.task.p)
        await asyncio.to_thread(pkgmod.write_fresh, self.pkg, pkgmod.CHECK_PATH, text)
        argv = ["lake", "env", "lean", "--json", pkgmod.CHECK_PATH]
        out = self.record(await env.run("statement", argv, self.pkg, deadline, readonly=(pkgmod.CHECK_PATH,)))
        if out.timed_out:
            raise _Failed("statement", command_failure("statement check", out, self.config.timeout_s) or "")
        if out.record.truncated:
            raise _Failed("statement", "statement check printed more than the output cap")
        try:
            errors = error_messages(out.text)
        except AxiomReportError as exc:  # unreadable output never counts as "no errors"
            raise _Failed("statement", f"could not read Lean's messages: {exc}") from None
        if out.record.exit_code != 0 or errors:
            first = one_line(errors[0]) if errors else summarize_output(out.text)
            raise _Failed(
                "statement",
                f"statement check failed (exit {out.record.exit_code}): {first}",
            )
        after = await asyncio.to_thread(pkgmod.hash_files, self.pkg, [pkgmod.CHECK_PATH])
        if after[pkgmod.CHECK_PATH] != sha256_text(text):
            raise _Failed("statement", "Check.lean changed while it was being checked")
        await self.check_trusted("statement", manifest, "statement check")
        self.result.statement_passed = True
        return out.text

    def axioms(self, output: str) -> None:
        self.begin("axioms")
        names = [theorem_name(self.task.p), CHECK_THEOREM]
        try:
            found = parse_axiom_report(output, names)
        except AxiomReportError as exc:
            raise _Failed("axioms", f"could not read the axiom report: {exc}") from None
        self.result.axioms = list(found[names[0]])
        self.result.check_axioms = list(found[names[1]])
        for name in names:
            if (why := check_axioms(found[name], self.config.axioms_mode)) is not None:
                raise _Failed("axioms", f"{name}: {why}")
        self.result.axioms_passed = True

    def accept(self) -> None:
        self.end()
        self.result.reward = 1.0
        self.result.accepted = True
        self.result.failed_stage = None
        axioms = ", ".join(self.result.axioms or []) or "none"
        # Name the toolchain that said yes rather than asserting "Lean": under test it is a double.
        self.result.reason = (
            f"accepted: build, kernel replay, statement and axiom checks passed (axioms: {axioms}; "
            f"toolchain: {self.result.toolchain})"
        )


async def grade(
    submission: str,
    task: TaskRecord,
    weights_lean: str,
    config: GraderConfig,
    *,
    on_stage: OnStage | None = None,
    skip_guard: bool = False,
) -> GradeResult:
    """Grade `submission` (the whole text of LeanCheckedNetwork/Submission.lean) for `task`.

    `skip_guard` is for tests only (the Lean integration tests need to show that the later stages
    catch what the guard would have caught first); never set it when grading rollouts.

    Returns a GradeResult for every outcome, including toolchain problems and internal errors
    ("internal grader error: ..."). Only cancellation propagates, after every process this grade
    started has been killed and its package directory removed."""
    started = time.monotonic()
    g = _Grade(task, weights_lean, config, on_stage)
    try:
        g.guard(submission, skip_guard)
        env = await g.locate()
        limit = config.max_concurrent or os.cpu_count() or 1
        async with _semaphore(limit):
            g.begin("build")
            manifest = await g.prepare(env)
            # One deadline for build, replay and check, starting once the package is ready.
            deadline = time.monotonic() + config.timeout_s
            await g.build(env, submission, manifest, deadline)
            await g.leanchecker(env, manifest, deadline)
            output = await g.statement(env, manifest, deadline)
        g.axioms(output)
        g.accept()
    except _Failed as failed:
        g.fail(failed.stage, failed.reason)
    except asyncio.CancelledError:
        g.fail(g.result.stage_reached, "cancelled")
        raise
    except Exception as exc:  # a grader bug must not crash the rollout; it still scores 0
        g.fail(g.result.stage_reached, f"internal grader error: {type(exc).__name__}: {exc}")
    finally:
        g.end()
        if g.pkg is not None and not config.keep_packages:
            pkgmod.remove_tree(g.pkg)  # synchronous on purpose: must also run during cancellation
        g.result.grader_seconds = round(time.monotonic() - started, 4)
    return g.result


async def grade_reply(
    reply: str,
    task: TaskRecord,
    weights_lean: str,
    config: GraderConfig,
    *,
    on_stage: OnStage | None = None,
    skip_guard: bool = False,
) -> GradeResult:
    """Extract the one ```lean block from a model reply, then `grade` it."""
    started = time.monotonic()
    if on_stage is not None:
        on_stage("extract")
    try:
        extraction = extract_submission(reply)
    except Exception as exc:
        extraction = None
        reason = f"internal grader error: {type(exc).__name__}: {exc}"
    else:
        reason = extraction.reason
    extract_s = round(time.monotonic() - started, 4)
    if extraction is None or extraction.code is None:
        result = GradeResult(
            task_id=task.id,
            theorem=theorem_name(task.p),
            stage_reached="extract",
            failed_stage="extract",
            reason=one_line(f"extract: {reason}"),
        )
        result.stage_seconds["extract"] = extract_s
        result.grader_seconds = extract_s
        return result
    result = await grade(
        extraction.code, task, weights_lean, config, on_stage=on_stage, skip_guard=skip_guard
    )
    result.stage_seconds = {"extract": extract_s, **result.stage_seconds}
    result.grader_seconds = round(result.grader_seconds + extract_s, 4)
    return result


def grade_sync(
    submission: str,
    task: TaskRecord,
    weights_lean: str,
    config: GraderConfig | None = None,
    *,
    on_stage: OnStage | None = None,
    skip_guard: bool = False,
) -> GradeResult:
    """`grade` for synchronous callers (starts its own event loop)."""
    return asyncio.run(
        grade(
            submission, task, weights_lean, config or GraderConfig(), on_stage=on_stage, skip_guard=skip_guard
        )
    )
