"""The grade's entry points: `grade` (one submission's text), `grade_reply` (a model's reply:
extract the one ```lean block, then grade), `warm_cache` and `prepare_judge_only`; the watchdog
that ends a grade that stalls; and the route choice. What happens on each way to a verdict lives
in `routes/` (one module per route, see `routes/__init__.py`); nothing here is route-specific.

A grade runs the guard and locates the toolchain (`routes/steps.py`), chooses its route (the first
of the `judge` setting's `ROUTES` that is available here and passes the self-test), then lets the
route run under the watchdog, one slot of `max_concurrent` held while it runs. On the export route
(tried first) the toolchain's `leanexport` writes the submission's declarations as NDJSON text,
and the judge reads that text, with no byte of the submission's olean crossing into the verdict
process. Only on the olean route (the weaker boundary, named on every result) does the judge read
the submission's olean. The comparator route runs the toolchain's own `lake comparator`. Every
failed stage gives reward 0.0 and stops the grade. Nothing but cancellation escapes `grade`.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import os
import sys
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from lean_mod_add_proof.grading import workdirs
from lean_mod_add_proof.grading.extract import Extraction, extract_submission
from lean_mod_add_proof.grading.lean_names import theorem_name
from lean_mod_add_proof.grading.messages import REASON_MAX_CHARS, one_line
from lean_mod_add_proof.grading.package import grade_dir_bytes
from lean_mod_add_proof.grading.process import CommandGroup, HostFault, command_group, host_fault_reason
from lean_mod_add_proof.grading.result import GraderConfig, GradeResult
from lean_mod_add_proof.grading.routes import steps
from lean_mod_add_proof.grading.routes.checkers import EXPORT_ROUTE_ONLY
from lean_mod_add_proof.grading.routes.comparator import ComparatorRoute
from lean_mod_add_proof.grading.routes.core import (
    CommandEnv,
    Grade,
    GradeTask,
    OnStage,
    StageFailed,
    not_judged,
)
from lean_mod_add_proof.grading.routes.export import ExportRoute
from lean_mod_add_proof.grading.routes.olean import OleanRoute
from lean_mod_add_proof.grading.routes.protocol import (
    COMPARATOR_ROUTE,
    EXPORT_ROUTE,
    OLEAN_ROUTE,
    ROUTES,
    ExportEdit,
    Route,
    RouteRunner,
    TestSwitches,
)
from lean_mod_add_proof.grading.toolchain import Toolchain

__all__ = [
    "COMPARATOR_ROUTE",
    "EXPORT_ROUTE",
    "OLEAN_ROUTE",
    "ROUTES",
    "ExportEdit",
    "GradeTask",
    "OnStage",
    "Route",
    "ToolchainCheck",
    "grade",
    "grade_reply",
    "prepare_judge_only",
    "warm_cache",
]

#: What must hold before a route's verdicts count, given (toolchain, config, the task's
#: Network.lean, the route, and how its verdicts are reached: which judge program, and whether
#: the sandbox is in use): None, or the reason that route may not grade.
#: The grader's entry points (grader.py) pass the self-test; the pipeline knows no more of it.
ToolchainCheck = Callable[[Toolchain, GraderConfig, str, Route, str], Awaitable[str | None]]
#: Each route's runner, by route (`routes/protocol.py`).
RUNNERS: dict[Route, type[RouteRunner]] = {r.route: r for r in (ExportRoute, OleanRoute, ComparatorRoute)}

# One semaphore per (event loop, size): asyncio primitives bind to the loop that first uses them.
_semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)


def _semaphore(size: int) -> asyncio.Semaphore:
    per_loop = _semaphores.setdefault(asyncio.get_running_loop(), {})
    return per_loop.setdefault(size, asyncio.Semaphore(size))


def default_concurrency(threads: int) -> int:
    """How many grades run Lean at once when `max_concurrent` is unset: one per `threads` cores."""
    return max(1, (os.cpu_count() or 1) // threads)


async def choose_route(
    g: Grade, env: CommandEnv, toolchain_check: ToolchainCheck | None, forced: Route | None
) -> RouteRunner:
    """The first route of the `judge` setting that is available here and passes
    `toolchain_check` (the self-test), or `forced` (the self-test's own canaries), made ready for
    this grade. None passing is "could not judge", with each route's reason."""
    skipped: list[str] = []
    routes = (forced,) if forced is not None else ROUTES[g.config.judge]
    if g.config.kernels == "all":
        # Lake's `--paranoid` reports a missing or crashed checker as a rejection (kernels.py),
        # so the external checkers run only on a route whose export they can read.
        routes = tuple(r for r in routes if RUNNERS[r].runs_checkers)
        if not routes:
            raise not_judged("toolchain", EXPORT_ROUTE_ONLY)
    for route in routes:
        runner = RUNNERS[route](g, env)
        # What an earlier route's judge left on the result says nothing about this one.
        g.result.judge_mode, g.result.judge_note = None, ""
        if (why := await runner.prepare()) is None and toolchain_check is not None:
            why = await toolchain_check(
                env.toolchain, g.config, g.task.network_lean, route, runner.verdict_path
            )
            runner.self_tested = why is None
        if why is not None:  # each route's reason short enough that all of them show
            skipped.append(f"{route.label}: {one_line(why, 170)}")
            continue
        g.result.judge = route.judge
        g.result.verdict_from = route.verdict_from
        runner.chosen(skipped)
        return runner
    raise not_judged("toolchain", "; ".join(skipped))


#: The last-resort watchdog's slack: how long past its own deadlines a grade may still run before
#: it is ended as "could not judge: the grader stalled" (killing its processes, removing its
#: directory). Its deadlines: once it holds a slot, 3 x timeout_s (cache check, prebuild, build
#: and judge, each bounded by timeout_s), then, once its package is ready, the build-and-judge
#: deadline. Waiting for a slot is not a stall: each grade ahead holds its slot for a bounded time.
STALL_SLACK_S = 60.0
#: After a stall, how long the grade's own clean-up (cancellation) gets before it is abandoned.
STALL_GRACE_S = 5.0
#: Grades abandoned by the watchdog, kept referenced until they end (a task is only weakly held).
_abandoned: set[asyncio.Future[None]] = set()


class _Watchdog:
    """When a grade counts as stalled: `STALL_SLACK_S` past the deadline last armed (none while it
    waits for a slot)."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.deadline: float | None = None
        self.cancelled = False
        """A cancellation came during an uninterruptible wait."""
        self.commands: CommandGroup | None = None
        """The grade's running commands (set by the grade's own task)."""
        self._rearmed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def arm(self, deadline: float) -> None:
        self.deadline = deadline + STALL_SLACK_S
        if not self._rearmed.done():
            self._rearmed.set_result(None)

    async def wait(self, run: asyncio.Future[None], *, uninterruptible: bool = False) -> bool:
        """Wait for `run`: True once it is done, False once it stalled. `uninterruptible` (the
        caller is being cancelled): a further cancellation is ignored, and the wait ends no later
        than `STALL_GRACE_S` past the deadline, or from now while none is armed."""
        if uninterruptible:
            end = max(self.deadline or 0.0, time.monotonic()) + STALL_GRACE_S
            while not run.done() and time.monotonic() < end:
                try:
                    await asyncio.wait((run,), timeout=end - time.monotonic())
                except asyncio.CancelledError:
                    self.cancelled = True  # the caller re-raises it once done
            return run.done()
        while not run.done():
            left = None if self.deadline is None else self.deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            rearmed = self._rearmed
            await asyncio.wait((run, rearmed), timeout=left, return_when=asyncio.FIRST_COMPLETED)
            if rearmed.done():
                self._rearmed = asyncio.get_running_loop().create_future()
        return True


async def _abandon(g: Grade, run: asyncio.Future[None], watchdog: _Watchdog) -> None:
    """Give up on a grade that does not end: kill every process it still runs, keep its task
    referenced until it ends, and remove its directory."""
    if watchdog.commands is not None:
        watchdog.commands.kill_all()
    _abandoned.add(run)
    run.add_done_callback(_abandoned.discard)
    run.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved: no warning
    if g.grade_dir is not None and not g.config.keep_packages:
        await workdirs.remove_tree_off_loop(g.grade_dir)


async def _stalled(g: Grade, run: asyncio.Future[None], watchdog: _Watchdog, started: float) -> GradeResult:
    """The watchdog fired: cancel the grade, give its clean-up `STALL_GRACE_S`, then abandon it;
    the result is "could not judge: the grader stalled" either way."""
    stage = g.result.stage_reached
    run.cancel()
    cleaned = await watchdog.wait(run, uninterruptible=True)
    if not cleaned:
        await _abandon(g, run, watchdog)
    result = g.result.model_copy(deep=True)  # an abandoned grade may still write to its own
    result.failed_stage = stage
    result.judged = False
    how = "it ended when cancelled" if cleaned else "it was abandoned, its processes killed"
    result.reason = one_line(
        f"could not judge: the grader stalled: no result {STALL_SLACK_S:g} s past the grade's "
        f"deadline (stage {stage}); {how} and its directory removed",
        2 * REASON_MAX_CHARS,
    )
    result.grader_seconds = round(time.monotonic() - started, 4)
    if watchdog.cancelled:
        raise asyncio.CancelledError
    return result


async def grade(
    submission: str,
    task: GradeTask,
    config: GraderConfig,
    *,
    toolchain_check: ToolchainCheck | None,
    on_stage: OnStage | None = None,
    skip_guard: bool = False,
    extra_modules: Mapping[str, str] | None = None,
    route: Route | None = None,
    export_edit: ExportEdit | None = None,
    checkers_only: bool = False,
) -> GradeResult:
    """Grade `submission` (the whole text of LeanCheckedNetwork/Submission.lean) for `task`.

    `toolchain_check` runs once the toolchain and judge are known, before anything is built;
    it has no default, so no caller skips it by omission (`grader.grade` passes the self-test;
    None is for the self-test's own canaries and the orchestration tests, whose double acts
    out only what each test scripts).

    Test-only switches, reachable from no config field and no command line; never set them when
    grading rollouts:
    - `skip_guard`: the later stages must be shown to catch what the guard would catch first
      (the Lean integration tests and the self-test's canaries use it);
    - `extra_modules`: modules compiled into the package before the submission (a canary);
    - `route`: grade by this route, untried by `toolchain_check` (the self-test's canaries);
    - `export_edit`: rewrite the export before the judge reads it (crafted-export canaries);
    - `checkers_only`: with `kernels = all`, only the external checkers judge the export (the
      self-test's per-checker canaries).

    Returns a GradeResult for every outcome, including toolchain problems and internal errors
    ("internal grader error: ..."). Only cancellation propagates, after every process this grade
    started has been killed and its directory removed."""
    started = time.monotonic()
    g = Grade(task, config, on_stage)
    watchdog = _Watchdog(config.timeout_s)
    run = asyncio.ensure_future(
        _grade_body(
            g,
            watchdog,
            submission,
            toolchain_check,
            skip_guard,
            TestSwitches(extra_modules or {}, route, export_edit, checkers_only),
            started,
        )
    )
    try:
        finished = await watchdog.wait(run)
    except asyncio.CancelledError:
        # Cancelled: the grade's own clean-up kills its processes and removes its directory; the
        # watchdog still bounds the wait for it.
        run.cancel()
        if not await watchdog.wait(run, uninterruptible=True):
            await _abandon(g, run, watchdog)
        raise
    if not finished:
        return await _stalled(g, run, watchdog, started)
    if not run.cancelled():
        run.result()  # (the body catches everything but cancellation)
    return g.result


async def _grade_body(
    g: Grade,
    watchdog: _Watchdog,
    submission: str,
    toolchain_check: ToolchainCheck | None,
    skip_guard: bool,
    switches: TestSwitches,
    started: float,
) -> None:
    """`grade` itself, run as a task the watchdog looks after."""
    config = g.config
    watchdog.commands = command_group()  # this task's commands, for the watchdog to kill
    try:
        await steps.guard(g, submission, skip_guard)
        env = await steps.locate(g)
        runner = await choose_route(g, env, toolchain_check, switches.route)
        limit = config.max_concurrent or default_concurrency(config.threads)
        queued = time.monotonic()
        async with _semaphore(limit):
            g.result.queued_seconds = round(time.monotonic() - queued, 4)
            await runner.run(submission, switches, watchdog.arm)
        g.end()
        g.result.reason = runner.accepted_reason()
    except StageFailed as failed:
        g.fail(failed.stage, failed.reason, judged=failed.judged)
    except asyncio.CancelledError:
        g.fail(g.result.stage_reached, "cancelled", judged=False)
        raise
    except HostFault as fault:  # the host or the grader, never the submission
        g.fail(g.result.stage_reached, fault.reason, judged=False)
    except Exception as exc:  # a grader bug must not crash the rollout, nor look like a verdict
        why = host_fault_reason(exc)  # a full disk, out of memory, ...: named, not a "bug"
        reason = why or f"internal grader error: {type(exc).__name__}: {exc}"
        g.fail(g.result.stage_reached, reason, judged=False)
    finally:
        g.end()
        g.release_entry()
        try:
            if g.grade_dir is not None and not config.keep_packages:
                # Queued for the reaper threads (the result does not wait for it; why that is
                # safe: `workdirs.reap_later`), or, past the backlog, removed here off the loop.
                await workdirs.remove_grade_dir(g.grade_dir, grade_dir_bytes(config.max_disk_mb))
        finally:
            g.result.grader_seconds = round(time.monotonic() - started, 4)


#: Replies longer than this (in characters) are scanned in a child process: extraction is a few
#: whole-text regex passes, each one C call that holds the GIL (83 ms for 5 MB of prose), so a
#: thread would not free the event loop. Shorter replies are scanned in a thread.
EXTRACT_IN_CHILD_CHARS = 256 * 1024
_CHUNK_CHARS = 1 << 20
_EXTRACT_CHILD = """
import codecs, json, sys
sys.path.insert(0, sys.argv[1])  # where this grader's own package is
from lean_mod_add_proof.grading.extract import extract_submission
reply = codecs.decode(sys.stdin.buffer.read(), "utf-8", "surrogatepass")
ex = extract_submission(reply)
head = {"code": ex.code is not None, "reason": ex.reason, "blocks": ex.blocks_found}
sys.stdout.buffer.write(json.dumps(head).encode() + b"\\n")
if ex.code is not None:
    sys.stdout.buffer.write(ex.code.encode("utf-8", "surrogatepass"))
"""


async def _extract_off_loop(reply: str) -> Extraction:
    """`extract_submission(reply)` without holding the event loop: a thread for a short reply, a
    child process for a long one (the reply goes to it and the code comes back in pieces of at
    most 1 Mi characters, so no single step holds the loop long). A child that cannot do it
    (cannot start, crashes, answers garbage) changes nothing but speed: the thread does it."""
    if len(reply) <= EXTRACT_IN_CHILD_CHARS:
        return await asyncio.to_thread(extract_submission, reply)
    here = Path(extract_submission.__code__.co_filename).resolve().parents[2]
    try:
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _EXTRACT_CHILD,
            str(here),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
    except OSError:
        return await asyncio.to_thread(extract_submission, reply)
    assert child.stdin is not None and child.stdout is not None
    stdin, stdout = child.stdin, child.stdout

    async def feed() -> None:
        try:
            for at in range(0, len(reply), _CHUNK_CHARS):
                stdin.write(reply[at : at + _CHUNK_CHARS].encode("utf-8", "surrogatepass"))
                await stdin.drain()
        finally:
            stdin.close()

    feeding = asyncio.ensure_future(feed())
    try:
        head = json.loads(await stdout.readline())
        decoder = codecs.getincrementaldecoder("utf-8")("surrogatepass")
        parts = []
        while chunk := await stdout.read(1 << 16):
            parts.append(decoder.decode(chunk))
        parts.append(decoder.decode(b"", final=True))
        await feeding
        if await child.wait() != 0 or not isinstance(head, dict):
            raise ValueError("the extraction child failed")
        code = "".join(parts) if head["code"] else None
        return Extraction(code, str(head["reason"]), int(head["blocks"]))
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return await asyncio.to_thread(extract_submission, reply)
    finally:
        if not feeding.done():
            feeding.cancel()
        feeding.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved
        if child.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                child.kill()
            await child.wait()


async def grade_reply(
    reply: str,
    task: GradeTask,
    config: GraderConfig,
    *,
    toolchain_check: ToolchainCheck | None,
    on_stage: OnStage | None = None,
    skip_guard: bool = False,
) -> GradeResult:
    """Extract the one ```lean block from a model reply, then `grade` it."""
    started = time.monotonic()
    if on_stage is not None:
        on_stage("extract")
    try:
        extraction = await _extract_off_loop(reply)
    except Exception as exc:
        extraction = None
        why = host_fault_reason(exc)
        reason = why or f"internal grader error: {type(exc).__name__}: {exc}"
    else:
        reason = extraction.reason
    extract_s = round(time.monotonic() - started, 4)
    if extraction is None or extraction.code is None:
        result = GradeResult(
            task_id=task.task_id,
            theorem=theorem_name(task.p),
            stage_reached="extract",
            failed_stage="extract",
            judged=extraction is not None,
            reason=one_line(f"extract: {reason}" if extraction is not None else f"could not judge: {reason}"),
        )
        result.stage_seconds["extract"] = extract_s
        result.grader_seconds = extract_s
        return result
    result = await grade(
        extraction.code,
        task,
        config,
        toolchain_check=toolchain_check,
        on_stage=on_stage,
        skip_guard=skip_guard,
    )
    result.stage_seconds = {"extract": extract_s, **result.stage_seconds}
    result.grader_seconds = round(result.grader_seconds + extract_s, 4)
    return result


async def _get_ready(g: Grade, toolchain_check: ToolchainCheck | None, *, task_entry: bool) -> None:
    """What a first grade does before it builds anything of the submission's: locate the
    toolchain, get the judge ready, run `toolchain_check`, and (`task_entry`) build or verify the
    task's cache entry. Every failure is `judged=False` (nothing was graded)."""
    try:
        env = await steps.locate(g)
        runner = await choose_route(g, env, toolchain_check, None)
        if task_entry:
            await runner.warm()
    except StageFailed as failed:
        g.fail(failed.stage, failed.reason, judged=False)
    except HostFault as fault:
        g.fail(g.result.stage_reached, fault.reason, judged=False)
    except Exception as exc:
        why = host_fault_reason(exc) or f"internal grader error: {type(exc).__name__}: {exc}"
        g.fail(g.result.stage_reached, why, judged=False)
    finally:
        g.end()
        g.release_entry()
        if g.grade_dir is not None:
            workdirs.remove_tree(g.grade_dir)


async def warm_cache(
    task: GradeTask, config: GraderConfig, *, toolchain_check: ToolchainCheck | None
) -> GradeResult:
    """Build or verify what a first grade of `task` would (same toolchain, sandbox and limits):
    the compiled judge, the task's prebuilt Network/Weights cache entry, and, with
    `toolchain_check`, the toolchain's check (a self-test pass is remembered on disk), without
    grading anything. `result.cache` says `built` or `hit`; a failure is `judged=False` with the
    reason (`warm-cache`, image builds)."""
    started = time.monotonic()
    g = Grade(task, config, None)
    await _get_ready(g, toolchain_check, task_entry=True)
    g.result.grader_seconds = round(time.monotonic() - started, 4)
    if g.result.failed_stage is None:
        judge = g.result.judge if g.result.judge != "replay" else f"replay from the {g.result.verdict_from}"
        g.result.reason = f"cache {g.result.cache}; judge {judge}" + (
            f" ({g.result.judge_mode})" if g.result.judge_mode else ""
        )
    return g.result


async def prepare_judge_only(config: GraderConfig) -> GradeResult:
    """Locate the toolchain and get its judge ready exactly as a grade would (built once per
    toolchain, else `lean --run`), grading nothing: `judge_mode` and `judge_note` say which
    judge grades on this machine and why (`doctor`). A failure is `judged=False` with the reason."""
    g = Grade(GradeTask(task_id="", p=0, network_lean="", weights_lean=""), config, None)
    await _get_ready(g, None, task_entry=False)
    return g.result
