"""The steps the routes share: the guard and the toolchain (every route, before the route is
chosen), and the fresh package with the submission built in it (both replay routes).

No Lake runs on the replay routes: the toolchain's own `lean` compiles the submission, with the
kernel's checks skipped (`SKIP_KERNEL_OPTION`, set here on the command line); the judge's replay
is then the single kernel check. What each step's failure is:
- the guard refusing the text, the build failing or being stopped by its caps or the deadline,
  a trusted file changed by the build: verdicts;
- no toolchain, no sandbox, no prlimit, the trusted Network/Weights not building, a full disk,
  the host's OOM killer, a host errno: could not judge.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lean_mod_add_proof.grading import cache as cachemod
from lean_mod_add_proof.grading import package as pkgmod
from lean_mod_add_proof.grading import signals, workdirs
from lean_mod_add_proof.grading.guard import check_guard
from lean_mod_add_proof.grading.lean_names import (
    LEAN_TOOLCHAIN,
    NETWORK_MODULE,
    SUBMISSION_MODULE,
    WEIGHTS_MODULE,
)
from lean_mod_add_proof.grading.messages import error_messages, one_line
from lean_mod_add_proof.grading.oserrors import host_errno
from lean_mod_add_proof.grading.process import (
    CommandOutcome,
    OwnUse,
    find_prlimit,
    host_fault_reason,
    kill_dead_graders_processes,
)
from lean_mod_add_proof.grading.routes import core
from lean_mod_add_proof.grading.routes.core import (
    CommandEnv,
    Grade,
    GradeTask,
    StageFailed,
    command_failure,
    not_judged,
)
from lean_mod_add_proof.grading.sandbox import decide_sandbox, probe_sandbox, prove_signal_filter
from lean_mod_add_proof.grading.signal_filter import signal_filter
from lean_mod_add_proof.grading.toolchain import Toolchain, locate_toolchain

#: What Lean prints for ENOSPC: `IO.Error.toString` (lean4 src/Init/System/IOError.lean) over
#: `lean_decode_io_error` (src/runtime/io.cpp: ENOSPC is "resource exhausted"), as read in
#: docs/readings/first-contact.md section (b). Text the submission can print too: it counts only
#: beside a disk that really was low (`ENOSPC_MARK_BYTES`).
LEAN_ENOSPC = "resource exhausted (error code: 28, no space left on device)"
#: Set by the grader on the build's command line, never by the submission (the guard bans
#: `set_option debug.*`): the judge's replay is then the single kernel check.
SKIP_KERNEL_OPTION = "-Ddebug.skipKernelTC=true"
#: How many of the build's Lean error messages the result keeps (for feedback to the model).
LEAN_ERRORS_KEPT = 10
SANDBOX_FIX = (
    "install bubblewrap (`apt-get install bubblewrap`), or set sandbox=off to accept running "
    "untrusted code unsandboxed"
)


def task_sources(task: GradeTask, lean_toolchain: str = LEAN_TOOLCHAIN) -> dict[str, bytes]:
    return pkgmod.package_sources(task.network_lean.encode("utf-8"), task.weights_lean, lean_toolchain)


def cache_key_for(task: GradeTask, toolchain: Toolchain, lean_toolchain: str = LEAN_TOOLCHAIN) -> str:
    """The key the task's prebuilt package is filed under in the cache (pure)."""
    return pkgmod.cache_key(toolchain.version, toolchain.dir, task_sources(task, lean_toolchain))


#: (pid, work root, cache root) already swept of what killed graders left behind.
_swept: set[tuple[int, str, str]] = set()


async def sweep_once(work_root: Path | None, cache_root: Path) -> None:
    """Once per process and place, before the first grade: remove the work and cache temp
    directories whose owner (recorded in their names) is a dead process, and end the processes
    a killed unsandboxed grader left running."""
    key = (os.getpid(), str(work_root), str(cache_root))
    if key not in _swept:
        _swept.add(key)  # before the sweep: concurrent first grades do not sweep twice
        try:
            await workdirs.run_in_thread(kill_dead_graders_processes, workdirs.work_scope(work_root))
            await workdirs.run_in_thread(workdirs.sweep_dead, work_root, cache_root)
        except BaseException:
            _swept.discard(key)  # a sweep the host cut short (a HostFault, say) is tried again
            raise


async def guard(g: Grade, submission: str, skip: bool) -> None:
    g.begin("guard")
    if skip:
        g.result.guard_skipped = True  # test-only path: the result shows it never ran
        return
    verdict = await asyncio.to_thread(check_guard, submission)  # off the event loop
    if not verdict.passed:
        raise StageFailed("guard", f"guard: {verdict.reason}")


async def locate(g: Grade) -> CommandEnv:
    g.begin("toolchain")
    config = g.config
    found = await asyncio.to_thread(locate_toolchain, config.toolchain_dir, None, config.lean_toolchain)
    if not isinstance(found, Toolchain):
        raise not_judged("toolchain", f"Lean toolchain not found: {found.reason}; {found.fix}")
    g.result.toolchain = found.label  # the double with its banner first: it must not pass for Lean
    probe = None if config.sandbox == "off" else await asyncio.to_thread(probe_sandbox)
    use, error = decide_sandbox(config.sandbox, probe)
    if error is not None:
        raise not_judged("toolchain", f"{error}; {SANDBOX_FIX}")
    prlimit = find_prlimit()
    if prlimit is None:
        raise not_judged("toolchain", "prlimit (util-linux) not found; it enforces the file-size cap")
    g.result.sandboxed = use
    # Compiled once per process, and used only once seen refusing a self-sent signal under bwrap
    # here (sandbox.py `prove_signal_filter`): where libseccomp cannot make it or the kernel does
    # not apply it, the attribution without it holds (`untrusted_failure`) and `doctor` says so.
    program = (await asyncio.to_thread(signal_filter)).program if use else None
    if program is not None:
        bwrap = probe.bwrap if probe is not None else None
        proof = None if bwrap is None else await asyncio.to_thread(prove_signal_filter, bwrap, program)
        if proof is None or not proof.in_force:
            program = None
    return CommandEnv(found, config, use, probe.bwrap if probe else None, prlimit, program)


async def compile_module(
    g: Grade,
    env: CommandEnv,
    where: Path,
    module: str,
    deadline: float,
    options: tuple[str, ...] = (),
    *,
    trusted: bool = False,
    tmp_name: str = pkgmod.GRADE_TMP,
    untrusted: bool = False,
) -> CommandOutcome:
    """`lean -o/-i` one module inside package `where`, the package's own lib on the path
    (`untrusted`: the submission's own module, built under the signal filter)."""
    # Waited for even when cancelled, so it cannot recreate a directory after clean-up.
    await workdirs.run_in_thread(
        (where / pkgmod.module_output(module, "olean")).parent.mkdir, parents=True, exist_ok=True
    )
    argv = pkgmod.compile_argv(str(env.toolchain.lean), module, options, threads=g.config.threads)
    assert g.grade_dir is not None
    return await env.run(
        "build",
        argv,
        where,
        deadline,
        search_path=[where / pkgmod.LIB_DIR],
        grade_dir=g.grade_dir,
        writable=True,
        trusted=trusted,
        tmp_name=tmp_name,
        untrusted=untrusted,
    )


async def prepare_package(g: Grade, env: CommandEnv) -> tuple[dict[str, str], Path | int]:
    """Fresh package = a copy of the prebuilt cache entry (built on first use). Returns the
    manifest and where the trusted outputs are copied from for the verdict: the cache entry,
    held (`entry_pin`) and read through its descriptor until the grade ends, so a discard of
    that entry by another grade cannot change what this one reads; or the package itself."""
    config = g.config
    cache_root = cachemod.cache_root(config.cache_dir)
    await sweep_once(config.work_root, cache_root)
    # Synchronous on purpose: a cancelled thread would create the directory after cleanup ran.
    g.grade_dir = workdirs.new_grade_dir(config.work_root, keep=config.keep_packages)
    (g.grade_dir / pkgmod.GRADE_TMP).mkdir(0o700)
    if config.keep_packages:
        g.result.package_dir = str(g.grade_dir)
    sources = task_sources(g.task, config.lean_toolchain)
    key = pkgmod.cache_key(env.toolchain.version, env.toolchain.dir, sources)

    async def prebuild(where: Path) -> cachemod.PrebuildOutcome:
        # Trusted files only, but under the same limits and sandbox, with its own deadline: a
        # slow first build of the weights must not eat the submission's time.
        deadline = time.monotonic() + config.timeout_s
        records = []
        for module in (NETWORK_MODULE, WEIGHTS_MODULE):
            out = await compile_module(g, env, where, module, deadline, trusted=True)
            records.append(out.record)
            if failure := command_failure(f"lean {module}", out, config.timeout_s):
                return cachemod.PrebuildOutcome(False, failure, records)
        return cachemod.PrebuildOutcome(True, "", records)

    try:
        unusable = ""  # why the cache cannot be used, for cache_note
        try:
            cache_root.mkdir(parents=True, exist_ok=True, mode=0o700)
            usable = os.access(cache_root, os.W_OK)
            if not usable:
                unusable = f"the cache directory {cache_root} is not writable"
        except OSError as exc:
            usable = False
            unusable = f"cannot create the cache directory {cache_root}: {exc.strerror or exc}"
        if usable:
            try:
                entry = await cachemod.ensure_entry(
                    cache_root, key, sources, prebuild, deadline=time.monotonic() + config.timeout_s
                )
            except cachemod.CacheUnusable as exc:
                g.result.commands.extend(exc.records)
                g.result.cache_note = one_line(f"cache unusable: {exc.reason}")
            except OSError as exc:  # a host error that persisted through the check's retries
                if (why := host_errno(exc)) is None:
                    raise
                raise not_judged("build", f"the cache entry could not be checked: {why}") from None
            else:
                g.result.commands.extend(entry.records)
                g.result.cache = entry.status
                g.entry_pin = entry.pin
                source: Path | int = entry.package if entry.pin is None else entry.pin.package_fd
                try:
                    await workdirs.copy_entry(source, g.pkg, entry.manifest)
                except workdirs.EntryChanged as exc:
                    # Checked, then changed before this grade copied it: nothing of this
                    # submission has run yet, so whoever changed it, it is not its doing.
                    raise not_judged("build", f"the cache entry changed while it was copied: {exc}") from None
                return entry.manifest, source
        g.result.cache = "off"  # no usable cache: prebuild in place, same checks
        if not g.result.cache_note:
            g.result.cache_note = one_line(f"cache unusable: {unusable or 'no reason given'}")
        manifest, records = await cachemod.prebuild_package(g.pkg, sources, prebuild)
        g.result.commands.extend(records)
        return manifest, g.pkg
    except cachemod.PrebuildFailed as exc:
        g.result.commands.extend(exc.records)
        raise not_judged("build", f"could not prebuild Network/Weights: {exc.reason}") from None


async def compile_extra(g: Grade, env: CommandEnv, modules: Mapping[str, str], deadline: float) -> None:
    """Self-test only: compile extra modules into the package before the submission, as if
    the build had made them (the judge must refuse a submission that imports one)."""
    for module, text in modules.items():
        await workdirs.run_in_thread(pkgmod.write_fresh, g.pkg, pkgmod.module_source(module), text)
        out = g.record(await compile_module(g, env, g.pkg, module, deadline, trusted=True))
        if failure := command_failure(f"lean {module}", out, g.config.timeout_s):
            raise not_judged("build", f"could not build the self-test module: {failure}")


async def build(
    g: Grade, env: CommandEnv, submission: str, manifest: dict[str, str], deadline: float
) -> None:
    assert g.grade_dir is not None
    # Before any of the submission's code runs: can the disk hold what its caps allow?
    config = g.config
    if short := await asyncio.to_thread(
        workdirs.room_for_caps, g.grade_dir, config.max_disk_mb, config.max_files
    ):
        raise not_judged("build", short)
    await workdirs.run_in_thread(pkgmod.write_submission, g.pkg, submission)
    g.fresh_tmp(pkgmod.BUILD_TMP)
    ooms = core.oom_kill_count()
    out = g.record(
        await compile_module(
            g,
            env,
            g.pkg,
            SUBMISSION_MODULE,
            deadline,
            (SKIP_KERNEL_OPTION,),
            tmp_name=pkgmod.BUILD_TMP,
            untrusted=True,
        )
    )
    errors = error_messages(out.text)
    g.result.lean_errors = errors[:LEAN_ERRORS_KEPT]
    what = f"lean {pkgmod.SUBMISSION_PATH}"
    failure = await untrusted_failure(g, env, what, out, ooms)
    if failure is None and errors:  # exit 0 is not enough: the olean may be missing parts
        failure = f"build reported an error: {one_line(errors[0])}"
    await raise_build_failure(g, failure, out)
    try:
        changed = await asyncio.to_thread(pkgmod.verify_trusted, g.pkg, manifest)
    except OSError as exc:  # only the host's errors escape the re-hash (oserrors.host_errno)
        why = host_fault_reason(exc) or str(exc)
        raise not_judged("build", f"the trusted files could not be re-hashed: {why}") from None
    if changed:
        raise StageFailed("build", f"trusted file changed during the build: {', '.join(changed[:5])}")


@dataclass(frozen=True)
class LowWater:
    """The least free space and free inodes the work disk had while a command ran, and the
    grade's own usage measured then: the process watcher's low-water mark, sampled at each of its
    polls (`CommandOutcome.low_free_bytes`; issue 39: a disk that was full when the build failed
    may have room again by the time the grader looks, as the reaper removes finished grades'
    directories). A reading under a mark of full is kept only once the watcher has measured the
    grade's own usage right around it, the files its tree held open with no name left included
    (process/disk.py; the review of the signal filter, finding 4: build-time code filled the disk
    on purpose with an unlinked open file the walk could not see, then failed its build)."""

    path: Path
    free_bytes: int | None = None
    free_inodes: int | None = None
    """None: the filesystem counts no inodes (or was never asked)."""
    own: OwnUse | None = None
    """The grade's own usage measured when a reading under a mark was kept (None: none was)."""
    max_disk_mb: int = 0
    max_files: int = 0

    @classmethod
    def of(cls, path: Path, out: CommandOutcome, max_disk_mb: int, max_files: int) -> LowWater:
        return cls(path, out.low_free_bytes, out.low_free_inodes, out.low_own, max_disk_mb, max_files)

    def full_while_running(self, output: str) -> str | None:
        """Why the disk counts as full while the command ran, or None (pure). `room_for_caps`
        made sure before the build that nothing the submission may write within its caps brings
        the disk to either mark, so a mark reached while the grade's own usage, measured then,
        was within its caps is someone else's doing; its usage over them, or not measured, is
        no such proof."""
        own = self.own
        if own is None or own.bytes > self.max_disk_mb << 20 or own.entries > self.max_files:
            return None
        held = f"this grade held {own.bytes >> 20} MiB"
        if self.free_inodes == 0:
            return f"the work disk was full while it ran (no free inode under {self.path}; {held})"
        if self.free_bytes is None:
            return None
        lowest = f"{self.free_bytes >> 20} MiB free at the lowest, under {self.path}; {held}"
        if self.free_bytes < workdirs.FULL_DISK_BYTES:
            return f"the work disk was full while it ran ({lowest})"
        if LEAN_ENOSPC in output and self.free_bytes < workdirs.ENOSPC_MARK_BYTES:
            return f"the work disk was nearly full while it ran ({lowest}) and Lean reported no space left"
        return None


async def untrusted_failure(
    g: Grade, env: CommandEnv, what: str, out: CommandOutcome, ooms: int | None
) -> str | None:
    """Why a command that ran the submission's code (the build, the export) failed, or None;
    raises for a signal from outside the grader (the host's, or the submission's own)."""
    signum = out.record.signal
    if (
        signum is not None
        and signals.sent_only_from_outside(signum)
        and not out.timed_out
        and not out.limit_exceeded
    ):
        # The grader's own kills are its deadline and its caps (cancellation propagates): this
        # signal came from outside the grader. A tree seen over its memory cap makes a SIGKILL
        # the submission's doing (the OOM killer raced the cap).
        assert g.grade_dir is not None
        cap = env.limits(g.grade_dir).memory_mb
        if signum == signal.SIGKILL and out.peak_rss_mb > cap:
            over = f"memory cap exceeded ({out.peak_rss_mb} MiB > {cap} MiB)"
            raise StageFailed("build", f"{what} stopped: {over}")
        oom = signum == signal.SIGKILL and core.oom_killer_acted(ooms)
        by = f"the host's OOM killer, at {out.peak_rss_mb} MiB of its {cap} MiB memory cap" if oom else ""
        if env.filters_signals:
            # Under the signal filter the submission cannot send itself this signal, nor exit
            # with the status that reads as it (signal_filter.py): the host sent it.
            raise not_judged(
                "build",
                f"{what} was killed by {core.signal_name(signum)} from outside the grader"
                + (f" ({by})" if by else ""),
            )
        # Without the filter (sandbox off, no libseccomp, or not seen in force) the submission
        # can send itself any signal or exit 128 + N, so no signal is provably the host's, and a
        # submission must never be able to choose "could not judge" (docs/trust-model.md). Not
        # even a SIGKILL while the OOM counter moved: the counter moves for any process the OOM
        # killer takes on the host and names none (mm/oom_kill.c `oom_kill_process`), and memory
        # no cap sees (memfd_create) is not refused (docs/readings/no-filter-reading.md).
        if oom:
            raise StageFailed(
                "build",
                f"{what} was killed by SIGKILL while the host's OOM killer acted; without the signal"
                " filter that cannot be told from the submission killing itself, so it counts as its own",
            )
        if signum == signal.SIGKILL:
            raise StageFailed(
                "build", f"{what} was killed by a SIGKILL that neither the grader nor the OOM killer sent"
            )
    return command_failure(what, out, g.config.timeout_s)


async def raise_build_failure(g: Grade, failure: str | None, out: CommandOutcome) -> None:
    """A failed build step is the submission's, unless the grade's disk was full while it ran
    (the watcher's low-water mark) or is full now."""
    if failure is not None:
        if not out.timed_out and not out.limit_exceeded:
            assert g.grade_dir is not None
            config = g.config
            low = LowWater.of(g.grade_dir, out, config.max_disk_mb, config.max_files)
            if (was := low.full_while_running(out.text)) is not None:
                raise not_judged("build", f"{was}; {failure}")
            if (full := await asyncio.to_thread(workdirs.disk_full, g.grade_dir)) is not None:
                raise not_judged("build", f"{full}; {failure}")
        raise StageFailed("build", failure)
