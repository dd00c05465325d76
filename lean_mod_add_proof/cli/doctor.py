"""Sub-command `doctor`: can this machine grade for real? With `--selftest`, run the canaries on
the real toolchain now and show what each got."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lean_mod_add_proof.cli import output
from lean_mod_add_proof.cli.exits import EXIT_NOT_JUDGED, EXIT_OK, EXIT_PROBLEM, EXIT_USAGE, print_error
from lean_mod_add_proof.cli.settings import add_grader_flags, config_from_args
from lean_mod_add_proof.grading import package as pkgmod
from lean_mod_add_proof.grading import workdirs
from lean_mod_add_proof.grading.result import GraderConfig
from lean_mod_add_proof.grading.sandbox import FilterProof
from lean_mod_add_proof.grading.signal_filter import SignalFilter
from lean_mod_add_proof.grading.toolchain import DOUBLE_BANNER

#: What each sandbox mode means in force, for the report.
SANDBOX_IN_FORCE = {"on": "required", "auto": "used where it works", "off": "never used"}
SANDBOX_FIX = (
    "install bubblewrap (`apt-get install bubblewrap`) and allow unprivileged user namespaces; or "
    "set --sandbox off (vf-eval: --env.taskset.task.sandbox off) to accept running untrusted code "
    "unsandboxed"
)
#: Said plainly wherever the sandbox is off: what the process handling cannot promise alone.
UNSANDBOXED_LIMIT = (
    "without the sandbox, build-time code runs with this user's rights, and a process that leaves "
    "both the process group and the tracked process tree between two polls can outlive the grade"
)


#: What bubblewrap needs inside Docker (and what to do about it), said once for doctor and the docs.
USERNS_FIX = (
    "bubblewrap needs unprivileged user namespaces. On the host: `sysctl user.max_user_namespaces` "
    "> 0 (and `kernel.unprivileged_userns_clone=1` or `kernel.apparmor_restrict_unprivileged_userns=0` "
    "where those exist). In Docker, whose default seccomp and AppArmor profiles refuse them: run the "
    "container with `--security-opt seccomp=unconfined --security-opt apparmor=unconfined` (or a "
    "seccomp profile that allows unshare and clone with CLONE_NEWUSER)"
)
#: Host switches that turn user namespaces off: (file, value meaning off).
USERNS_SWITCHES = (
    ("/proc/sys/user/max_user_namespaces", "0"),
    ("/proc/sys/kernel/unprivileged_userns_clone", "0"),
    ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"),
)


@dataclass(frozen=True)
class KernelFix:
    """A runtime or kernel soundness fix a toolchain may lack (docs/trust-model.md)."""

    pr: str
    what: str
    needs_bytes: int | None
    """The free memory the bug needs to be reached, where its report names one."""


#: Fixed in v4.35.0-rc3 (2026-09-24; rc3 release notes), so missing from rc2 and everything older.
RC3_FIXES: tuple[KernelFix, ...] = (
    KernelFix(
        "#15241",
        "deletion cascades could free frozen objects: a use-after-free in the kernel, extendable to "
        "a proof of False",
        18 * 10**9,
    ),
    KernelFix("#15288", "objects shared between threads freed too early", None),
    KernelFix("#15289", "maximal sharing at INT_MAX references (inputs beyond 100 GB)", 100 * 10**9),
)


def missing_kernel_fixes(version: str) -> tuple[KernelFix, ...]:
    """The known fixes a Lean `version` (`4.35.0-rc2`) lacks (pure): rc3's three for anything
    before 4.35.0-rc3; none known after."""
    core, _, pre = version.partition("-")
    try:
        numbers = tuple(int(x) for x in core.split("."))
        rc = int(pre.removeprefix("rc")) if pre else None
    except ValueError:
        return RC3_FIXES  # unknown shape: assume the worst
    if numbers < (4, 35, 0) or (numbers == (4, 35, 0) and rc is not None and rc < 3):
        return RC3_FIXES
    return ()


def kernel_fixes_check(version: str, most_memory_mb: int) -> Check:
    """Which kernel fixes the toolchain lacks, and whether the grade's memory cap keeps each one
    that needs a known amount of memory out of reach (`most_memory_mb`: the most one grade's
    process tree may hold) (pure)."""
    missing = missing_kernel_fixes(version)
    if not missing:
        return Check("kernel fixes", True, f"{version} has #15241, #15288 and #15289 (fixed in 4.35.0-rc3)")
    cap = most_memory_mb * 1024 * 1024
    reachable = [f for f in missing if f.needs_bytes is not None and cap >= f.needs_bytes]
    parts = []
    for f in missing:
        if f.needs_bytes is None:
            reach = "no memory bound known"
        else:
            far = "out of reach" if cap < f.needs_bytes else "REACHABLE"
            reach = f"needs {f.needs_bytes // 10**9} GB, the grade's cap is {most_memory_mb} MiB: {far}"
        parts.append(f"{f.pr} ({f.what}; {reach})")
    return Check(
        "kernel fixes",
        not reachable,
        f"{version} lacks " + "; ".join(parts),
        "lower --memory-mb, or grade with --lean-toolchain leanprover/lean4:v4.35.0 (it grades "
        "once its own self-test passes)",
        required=False,
    )


@dataclass(frozen=True)
class UsernsFacts:
    """What decides whether bubblewrap can create its namespaces here."""

    in_container: str | None
    """Why this looks like a container (`/.dockerenv`, ...), or None."""
    switches_off: tuple[str, ...]
    """Host switches found set to "off", as `file=value`."""
    unshare: bool | None
    """Whether `unshare --user true` worked as this user (None: could not try)."""
    unshare_error: str = ""


def check_word(ok: bool, required: bool) -> str:
    """The one word `doctor` and `lean-check` both print for a check: "yes", "NO" (required,
    failed: grading cannot work) or "optional: no" (failed, but grading still works) (pure)."""
    return "yes" if ok else ("NO" if required else "optional: no")


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True


def _version_of(binary: Path, flag: str = "--version") -> str:
    try:
        done = subprocess.run(
            [str(binary), flag],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
            env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"},
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"({type(exc).__name__})"
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0] if lines else f"(exit {done.returncode})"


def _mem_total_mb() -> int | None:
    """MemTotal from /proc/meminfo, in MiB."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def userns_facts() -> UsernsFacts:
    """Look at this machine: container markers, the host's switches, and one `unshare --user`."""
    in_container = None
    for marker in ("/.dockerenv", "/run/.containerenv"):
        if Path(marker).exists():
            in_container = marker
            break
    if in_container is None:
        cgroup = _read("/proc/1/cgroup") or ""
        if any(word in cgroup for word in ("docker", "containerd", "kubepods", "libpod")):
            in_container = "/proc/1/cgroup"
    off = tuple(f"{path}={value}" for path, value in USERNS_SWITCHES if (_read(path) or "").strip() == value)
    unshare = shutil.which("unshare", path="/usr/bin:/bin:/usr/sbin:/sbin")
    if unshare is None:
        return UsernsFacts(in_container, off, None, "unshare (util-linux) not found")
    try:
        done = subprocess.run(
            [unshare, "--user", "true"], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return UsernsFacts(in_container, off, None, f"{type(exc).__name__}: {exc}")
    lines = (done.stderr or done.stdout).strip().splitlines()
    why = lines[-1] if lines else f"exit {done.returncode}"
    return UsernsFacts(in_container, off, done.returncode == 0, why)


def userns_check(facts: UsernsFacts, sandbox_mode: str) -> Check:
    """The `user namespaces` row: bubblewrap's precondition, with the Docker fix (pure)."""
    where = f"in a container ({facts.in_container})" if facts.in_container else "not in a container"
    if facts.unshare:
        detail = f"available ({where}; `unshare --user` works as this user)"
        ok = True
    else:
        tried = (
            f"`unshare --user` failed: {facts.unshare_error}"
            if facts.unshare is False
            else f"not tried: {facts.unshare_error}"
        )
        detail = f"{'NOT available' if facts.unshare is False else 'unknown'} ({where}; {tried}"
        if facts.switches_off:
            detail += f"; switched off by {', '.join(facts.switches_off)}"
        detail += ")"
        ok = facts.unshare is None and not facts.switches_off
    if not ok and sandbox_mode == "off":
        detail += "; unused with sandbox=off"
    # The sandbox row says whether a grade can run; this row says why bwrap cannot.
    return Check("user namespaces", ok, detail, USERNS_FIX, required=False)


def _grade_dirs(concurrent: int, backlog: int) -> str:
    return f"{concurrent} concurrent grades + {backlog} finished, awaiting removal"


def _disk_check(work: Path, st: os.statvfs_result, max_disk_mb: int, concurrent: int, backlog: int) -> Check:
    """Free space of the work disk against what every grade directory on it may hold at once
    (issue 39): each running grade's disk cap and the grader's copies into its verdict directory
    (the submission's outputs, up to `package.MAX_SUBMISSION_OUTPUT_BYTES` each), for the grades
    running and for the `backlog` finished ones whose removal the reaper has queued
    (`workdirs.reap_backlog`: as many as fit in `REAP_BACKLOG_BYTES` at that size), plus the
    low-water mark a grade needs beyond its cap before its build starts (`workdirs.room_for_caps`)."""
    free_mb = st.f_bavail * st.f_frsize >> 20
    per_grade = pkgmod.grade_dir_bytes(max_disk_mb)
    copies_mb = (per_grade >> 20) - max_disk_mb
    mark_mb = workdirs.ENOSPC_MARK_BYTES >> 20
    needed_mb = (per_grade >> 20) * (concurrent + backlog) + mark_mb
    return Check(
        "work disk",
        free_mb >= needed_mb,
        f"{work}: {free_mb} MiB free; (max_disk_mb {max_disk_mb} + verdict copies {copies_mb}) x "
        f"({_grade_dirs(concurrent, backlog)}) + {mark_mb} = {needed_mb} MiB",
        "give the work root that much room (--work-root), or lower --max-disk-mb: on a "
        "smaller disk a submission's own files, within its cap, can fill it, and a build "
        "that fails on a full disk is could-not-judge",
        required=False,
    )


def _inode_check(work: Path, st: os.statvfs_result, max_files: int, concurrent: int, backlog: int) -> Check:
    """Free inodes of the work disk against `max_files` for every grade directory it may hold at
    once (issue 26: the disk cap charges bytes, so a flood of empty files could exhaust a disk
    with few inodes inside it; issue 39: the finished directories awaiting removal count too).
    A filesystem that reports no inode count (f_files 0: btrfs, some network disks) has no limit."""
    needed = max_files * (concurrent + backlog)
    if not st.f_files:
        return Check("work disk inodes", True, f"{work}: the filesystem reports no inode limit", "")
    return Check(
        "work disk inodes",
        st.f_favail >= needed,
        f"{work}: {st.f_favail} inodes free; max_files {max_files} x "
        f"({_grade_dirs(concurrent, backlog)}) = {needed}",
        "give the work root a disk with that many free inodes (--work-root), or lower --max-files: "
        "a build that fails for want of an inode is could-not-judge",
        required=False,
    )


#: What grading falls back to without the signal filter, said once for doctor and the docs.
SIGNAL_FALLBACK = (
    "a SIGKILL from outside the grader (systemd-oomd, earlyoom, a job scheduler, an operator, the "
    "kernel's OOM killer) or a SIGTERM ending the build or the export is then the submission's (a "
    "0.0): without the filter the grader cannot tell it from the submission killing itself, and a "
    "submission must never be able to choose could-not-judge"
)


def signal_filter_check(made: SignalFilter, sandboxed: bool, proof: FilterProof | None) -> Check:
    """Whether the build and the export run under the seccomp filter that makes a signal from
    outside provably the host's (grading/signal_filter.py), as seen here (`proof`: sandbox.py
    `prove_signal_filter`, None when it could not be tried), and what holds without it (pure)."""
    if made.program is not None and sandboxed and proof is not None and proof.in_force:
        return Check(
            "signal filter",
            True,
            f"libseccomp {made.libseccomp}; seen in force here: {proof.why}. A build or export that dies "
            "of such a signal (SIGKILL, SIGTERM, ...) the grader did not send is the host's doing",
        )
    if made.program is None:
        why = made.why_not
    elif not sandboxed:
        why = "the sandbox is not in force (bwrap loads the filter)"
    else:
        why = f"made, but not seen in force: {proof.why if proof is not None else 'the proof could not run'}"
    return Check(
        "signal filter",
        False,
        f"not in force: {why}; {SIGNAL_FALLBACK}",
        "install libseccomp (`apt-get install libseccomp2`) and use the sandbox",
        required=False,
    )


def doctor_checks(config: GraderConfig) -> list[Check]:
    from lean_mod_add_proof.grading import cache, pipeline, process, sandbox, signal_filter, toolchain
    from lean_mod_add_proof.grading import kernels as kernelsmod
    from lean_mod_add_proof.grading.routes.replay import JUDGE_MEMORY_MB
    from lean_mod_add_proof.grading.toolchain import INSTALL_FIX

    checks: list[Check] = []
    elan = toolchain.elan_home() / "bin" / "elan"
    elan_path = str(elan) if elan.is_file() else shutil.which("elan")
    checks.append(
        Check(
            "elan",
            elan_path is not None,
            f"{elan_path}: {_version_of(Path(elan_path))}" if elan_path else "not found",
            f"`{INSTALL_FIX}`",
            required=False,  # the grader calls the toolchain's binaries directly
        )
    )
    found = toolchain.locate_toolchain(config.toolchain_dir, lean_toolchain=config.lean_toolchain)
    if isinstance(found, toolchain.Toolchain) and found.is_double:
        # Every check below still runs against it (the grader's machinery works here), but it
        # is not Lean: this machine cannot grade for real (issue 41: it used to read "Ready").
        checks.append(
            Check(
                "lean",
                False,
                f"{toolchain.DOUBLE_BANNER}: {found.lean}: {found.version} is the test double",
                f"install Lean: {toolchain.install_fix(config.lean_toolchain)}",
            )
        )
    elif isinstance(found, toolchain.Toolchain):
        checks.append(Check("lean", True, f"{found.lean}: {found.version}"))
    if isinstance(found, toolchain.Toolchain):
        checks.append(Check("core library", True, str(found.dir / "lib" / "lean")))
        checks.append(Check("toolchain dir", True, f"{found.dir} (found via {found.source})"))
        most_mb = config.memory_mb + max(JUDGE_MEMORY_MB.values())
        checks.append(kernel_fixes_check(toolchain.version_of(config.lean_toolchain), most_mb))
        # The independent checkers (`kernels = all`, grading/kernels.py): required only then.
        have = {c.name for c in kernelsmod.shipped(found.dir)}
        listed = ", ".join(f"{c.name}{'' if c.name in have else ' (missing)'}" for c in kernelsmod.CHECKERS)
        factors = ", ".join(f"{c.name} {c.time_factor:g}x" for c in kernelsmod.CHECKERS)
        worst = sum(c.time_factor for c in kernelsmod.CHECKERS) * config.timeout_s
        checks.append(
            Check(
                "checkers",
                len(have) == len(kernelsmod.CHECKERS) or config.kernels == "official",
                f"kernels={config.kernels}; the toolchain ships: {listed}; with kernels=all each runs "
                f"after the judge under its own budget, its factor x the official replay's CPU "
                f"seconds ({factors}): at worst {worst:g} CPU s more per grade, about as many "
                f"seconds on a free core; its wall-clock backstop is {kernelsmod.WALL_PER_CPU_S}x "
                "that (docs/grading.md)",
                "a v4.35 release toolchain ships all five; with kernels=all a missing one makes "
                "every grade could-not-judge",
                required=config.kernels == "all",
            )
        )
    else:
        checks.append(Check("Lean toolchain", False, found.reason, found.fix))
    mode = config.sandbox
    probe = sandbox.probe_sandbox(refresh=True)
    in_force = SANDBOX_IN_FORCE[mode]
    used = mode != "off" and probe.available
    detail = (
        f"sandbox={mode} ({in_force}); {probe.reason}; grades run {'sandboxed' if used else 'UNSANDBOXED'}"
    )
    if not used:
        detail += f" ({UNSANDBOXED_LIMIT})"
    if mode == "on" and not probe.available:
        detail += "; every grade is could-not-judge until this is fixed"
    checks.append(Check("sandbox (bwrap)", probe.available or mode == "off", detail, SANDBOX_FIX))
    checks.append(userns_check(userns_facts(), mode))
    made = signal_filter.signal_filter()
    proof = None
    if used and made.program is not None and probe.bwrap is not None:
        proof = sandbox.prove_signal_filter(probe.bwrap, made.program)
    checks.append(signal_filter_check(made, used, proof))
    prlimit = process.find_prlimit()
    checks.append(
        Check(
            "prlimit",
            prlimit is not None,
            prlimit or "not found",
            "install util-linux (`apt-get install util-linux`)",
        )
    )
    checks.append(
        Check(
            "limits per grade",
            True,
            f"memory {config.memory_mb} MiB (summed RSS, watched), {config.max_processes} processes, "
            f"disk {config.max_disk_mb} MiB, files {config.max_file_mb} MiB, {config.timeout_s:g} s",
        )
    )
    judge_mode = "interpreted"
    if isinstance(found, toolchain.Toolchain):
        ready = asyncio.run(pipeline.prepare_judge_only(config))
        judge_mode = ready.judge_mode or judge_mode
        if not ready.judged:
            detail = ready.reason
        elif ready.judge == "comparator":
            detail = "comparator: the toolchain's `lake comparator` decides"
        elif judge_mode == "native":
            detail = "native: compiled once for this toolchain (lean -c + leanc), verified before each use"
        else:
            why = ready.judge_note or "native_judge is off"
            detail = f"interpreted: `lean --run Judge.lean` on every grade ({why})"
        if ready.judged and ready.judge == "replay":
            detail = f"replay from the {ready.verdict_from}; {detail}"
            if ready.verdict_from == "olean":
                detail += f"; {ready.judge_note}"
        detail += " (before the self-test: `doctor --selftest` shows the route that grades)"
        checks.append(
            Check(
                "judge",
                ready.judged,
                detail,
                "see the reason; `--native-judge false` grades with `lean --run`",
                required=False,  # an interpreted judge grades as well, only slower
            )
        )
    if isinstance(found, toolchain.Toolchain):
        checks.append(comparator_check(found.dir, config))
    cores = os.cpu_count() or 1
    concurrent = config.max_concurrent or pipeline.default_concurrency(config.threads)
    checks.append(
        Check(
            "cores budget",
            config.threads * concurrent <= cores,
            f"threads {config.threads} x {concurrent} concurrent grades = "
            f"{config.threads * concurrent} cores; this machine has {cores}",
            "lower --threads or --max-concurrent: oversubscribed grades slow each other down",
            required=False,
        )
    )
    total_mb = _mem_total_mb()
    if total_mb is not None:
        judge_mb = JUDGE_MEMORY_MB[judge_mode]
        per_grade = config.memory_mb + judge_mb
        budget = per_grade * concurrent
        checks.append(
            Check(
                "memory budget",
                budget <= total_mb,
                f"(memory_mb {config.memory_mb} + the judge's own {judge_mb}, an estimate) x "
                f"{concurrent} concurrent grades = {budget} MiB; this machine has {total_mb} MiB",
                "lower --memory-mb or --max-concurrent, or the host's OOM killer may end grades "
                "(which are then could-not-judge)",
                required=False,
            )
        )
    work = config.work_root or Path(tempfile.gettempdir())
    try:
        st = os.statvfs(work if work.exists() else work.parent)
        # the finished directories the reaper may hold at once, at this grade's size (one figure
        # for both rows)
        backlog = workdirs.reap_backlog(pkgmod.grade_dir_bytes(config.max_disk_mb))
        checks.append(_disk_check(work, st, config.max_disk_mb, concurrent, backlog))
        checks.append(_inode_check(work, st, config.max_files, concurrent, backlog))
    except OSError as exc:
        checks.append(
            Check("work disk", False, f"{work}: {exc.strerror or exc}", "set --work-root", required=False)
        )
    root = cache.cache_root(config.cache_dir)
    try:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        writable = os.access(root, os.W_OK)
        detail = str(root) if writable else f"{root} is not writable"
    except OSError as exc:
        writable, detail = False, f"{root}: {exc.strerror or exc}"
    checks.append(
        Check(
            "cache dir",
            writable,
            detail,
            "set --cache-dir (vf-eval: --env.taskset.task.cache-dir) to a writable directory",
            required=False,  # without it each grade prebuilds Network/Weights itself
        )
    )
    return checks


def _print_checks(checks: list[Check], ready: bool) -> None:
    from rich.table import Table

    table = Table(title="lean-mod-add-proof grader: can this machine grade for real?")
    for column in ("check", "ok", "detail", "fix"):
        table.add_column(column, overflow="fold")
    for c in checks:
        word = check_word(c.ok, c.required)
        mark = {"yes": "[green]yes[/]", "NO": "[red]NO[/]"}.get(word, f"[yellow]{word}[/]")
        table.add_row(c.name, mark, c.detail, "" if c.ok else c.fix)
    console = output.console()
    console.print(table)
    double = next((c for c in checks if c.name == "lean" and c.detail.startswith(DOUBLE_BANNER)), None)
    if double is not None:
        console.print(
            f"[bold yellow]{DOUBLE_BANNER}.[/] The toolchain found is the test double "
            "(tests/toolchain_double: scripts that check no proof), so the checks above show only "
            "that the grader's machinery runs here. Not ready to grade for real: every grade of the "
            "taskset is could-not-judge until Lean is installed (`lean-mod-add-proof install-lean`).",
            highlight=False,
        )
    elif ready:
        # Say which toolchain is ready: a test double passes these checks too, and it is not Lean.
        lean = next((c.detail for c in checks if c.name == "lean"), "the located toolchain")
        console.print(f"[bold green]Ready:[/] the grader can run here with {lean}.")
        console.print("Run `lean-mod-add-proof doctor --selftest` to see it prove itself on the canaries.")
    else:
        console.print(
            "[bold red]Not ready:[/] every grade is could-not-judge until the items marked NO are fixed."
        )


def comparator_check(toolchain_dir: Path, config: GraderConfig) -> Check:
    """The comparator route's host, as its probe finds it now: what is missing, in Lake's or
    bwrap's own words (grading/routes/comparator/probe.py). Required only with judge=comparator."""
    from lean_mod_add_proof.grading.routes.comparator import probe_comparator

    probe = probe_comparator(toolchain_dir, refresh=True)
    fix = (
        "install what is missing (git: `apt-get install git`); create a missing directory as root "
        "(`mkdir -p /run/user`); a runtime that mounts a fresh /run removes /run/user again, so "
        "this is checked before each grade; or grade with the replay routes (`--judge replay`)"
    )
    return Check(
        "comparator (lake comparator)",
        probe.available,
        probe.reason,
        fix,
        required=config.judge == "comparator",
    )


def run_selftest_report(config: GraderConfig) -> tuple[int, dict[str, object]]:
    """Run the canaries now (nothing remembered is reused). Exit 0 passed, 1 a canary got the
    wrong verdict, 3 no toolchain (nothing was run)."""
    from lean_mod_add_proof.dataset.tasks import NETWORK_LEAN_PATH
    from lean_mod_add_proof.grading import pipeline, toolchain
    from lean_mod_add_proof.grading.selftest import run_selftest
    from lean_mod_add_proof.grading.token_canary import run_token_table

    found = toolchain.locate_toolchain(config.toolchain_dir, lean_toolchain=config.lean_toolchain)
    if not isinstance(found, toolchain.Toolchain):
        return EXIT_NOT_JUDGED, {"passed": False, "reason": f"no toolchain: {found.reason}", "canaries": []}
    network = NETWORK_LEAN_PATH.read_text(encoding="utf-8")
    # The routes of the `judge` setting in the order grading tries them; the first that passes
    # is the one that grades.
    canaries: list[dict[str, object]] = []
    reasons: list[str] = []
    failed_checkers: list[str] = []
    route_used = None
    for route in pipeline.ROUTES[config.judge]:
        report = asyncio.run(run_selftest(found, config, network, route))
        for c in report.model_dump(mode="json")["canaries"]:
            canaries.append({**c, "name": f"[{route.label}] {c['name']}"})
        failed_checkers += [n for n in report.failed_checkers if n not in failed_checkers]
        if report.passed:
            route_used = route.label
            break
        reasons.append(report.reason)
    # The guard's beliefs about Lean's tokens, held against this toolchain's table: reported, and
    # no part of the exit status (a mismatch does not stop grading, docs/trust-model.md).
    tokens = asyncio.run(run_token_table(found.dir, found.lean, work_root=config.work_root))
    return (EXIT_OK if route_used else EXIT_PROBLEM), {
        "toolchain": found.label,
        "toolchain_double": found.is_double,
        "passed": route_used is not None,
        "route": route_used,
        "reason": "" if route_used else "; ".join(reasons),
        "canaries": canaries,
        "failed_checkers": failed_checkers,
        "token_table": tokens.line,
    }


def _print_selftest(report: dict[str, object]) -> None:
    from rich.table import Table

    console = output.console()
    canaries = report["canaries"]
    if canaries:  # none ran (no toolchain): no empty table
        table = Table(title=f"self-test on {report.get('toolchain', 'no toolchain')}")
        for column in ("canary", "expected", "got", "ok", "s"):
            table.add_column(column, overflow="fold")
        for c in canaries:  # type: ignore[union-attr]
            mark = "[green]yes[/]" if c["passed"] else "[red]NO[/]"
            table.add_row(c["name"], c["expected"], c["got"], mark, f"{c['seconds']:.1f}")
        console.print(table)
    if report.get("failed_checkers"):  # kernels = all: each checker whose row was wrong, by name
        names = ", ".join(report["failed_checkers"])  # type: ignore[arg-type]
        console.print(
            f"[bold red]Checkers that failed their self-test:[/] {names} (with kernels=all every grade "
            "is could-not-judge until the toolchain changes)",
            highlight=False,
        )
    if "token_table" in report:  # the guard's token table on this toolchain (not a canary)
        console.print(str(report["token_table"]), markup=False, highlight=False)
    if report["passed"] and report.get("toolchain_double"):
        console.print(
            f"[bold yellow]{DOUBLE_BANNER}.[/] Self-test passed on the test double "
            f"({report.get('route')}), which acts out what the canaries script: the grader's "
            "machinery works, and no verdict of the double counts. Install Lean "
            "(`lean-mod-add-proof install-lean`) and run this again.",
            highlight=False,
        )
    elif report["passed"]:
        console.print(
            f"[bold green]Self-test passed:[/] this toolchain's verdicts count ({report.get('route')})."
        )
    elif not canaries:
        console.print("[bold yellow]Self-test not run:[/] ", end="")
        console.print(report["reason"], markup=False, highlight=False)
        console.print("Install the toolchain with `lean-mod-add-proof install-lean`, then run this again.")
    else:
        console.print("[bold red]Self-test failed:[/] ", end="")
        console.print(report["reason"], markup=False, highlight=False)
        console.print("Every grade is could-not-judge on this toolchain until the self-test passes.")


def cmd_doctor(args: argparse.Namespace) -> int:
    try:
        config = config_from_args(args)
    except ValueError as exc:
        if args.json:
            print(json.dumps({"error": f"bad setting: {exc}", "exit_code": EXIT_USAGE}))
        print_error(f"doctor: bad setting: {exc}")
        return EXIT_USAGE
    if args.selftest:
        code, report = run_selftest_report(config)
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            _print_selftest(report)
        return code
    checks = doctor_checks(config)
    ready = all(c.ok for c in checks if c.required)
    if args.json:
        double = any(c.name == "lean" and c.detail.startswith(DOUBLE_BANNER) for c in checks)
        report = {"ready": ready, "toolchain_double": double, "checks": [c.__dict__ for c in checks]}
        print(json.dumps(report, indent=2))
    else:
        _print_checks(checks, ready)
    return EXIT_OK if ready else EXIT_PROBLEM


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "doctor",
        help="check the toolchain, sandbox, limits and cache the grader needs (--selftest: run the canaries)",
        description="Exit 0 only if the grader can run Lean for real on this machine, 1 otherwise. With "
        "--selftest: 0 if every canary got its expected verdict, 1 if one did not, 3 without a toolchain.",
    )
    p.add_argument("--json", action="store_true", help="print the checks as JSON on stdout (no table)")
    p.add_argument("--selftest", action="store_true", help="grade the canaries now and print a table")
    add_grader_flags(p)
    p.set_defaults(handler=cmd_doctor)
