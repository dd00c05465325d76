"""Running `lake comparator`: the trusted challenge built before the run (its own cache entry and
deadline), the outer `lake`'s environment and caps, and the run itself."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lean_mod_add_proof.grading import cache as cachemod
from lean_mod_add_proof.grading.lean_names import LEAN_TOOLCHAIN, SUBMISSION_PATH
from lean_mod_add_proof.grading.package import write_fresh
from lean_mod_add_proof.grading.process import (
    CommandOutcome,
    HostFault,
    Limits,
    child_env,
    run_command,
)
from lean_mod_add_proof.grading.result import AxiomsMode, CommandRecord, GraderSettings, Stage
from lean_mod_add_proof.grading.routes.comparator import host
from lean_mod_add_proof.grading.routes.comparator.output import last_error
from lean_mod_add_proof.grading.routes.comparator.package import (
    CHALLENGE_MODULE,
    CONFIG_FILE,
    HOME_DIR,
    PACKAGE_DIR,
    TMP_DIR,
    comparator_argv,
    comparator_files,
    config_json,
    prebuild_key,
    trusted_files,
    write_package,
)
from lean_mod_add_proof.grading.routes.comparator.probe import ComparatorProbe, probe_comparator
from lean_mod_add_proof.grading.routes.comparator.verdict import (
    SOLUTION_PHASE_ARGV,
    SOLUTION_PHASE_MARKS,
    ComparatorOutcome,
    RunFacts,
    Verdict,
    comparator_verdict,
    solution_phase_start,
)
from lean_mod_add_proof.grading.workdirs import copy_entry, run_in_thread

#: The comparator's trusted steps once the challenge is prebuilt: `lake env`, finding the
#: challenge up to date, exporting it (seconds, on top of the prebuild's own measured time).
TRUSTED_STEPS_S = 60.0
#: Memory floor of the trusted challenge build, as the replay route's prebuild has one
#: (routes/core.py `PREBUILD_MEMORY_MB`): a small cap meant for submissions must not stop it.
CHALLENGE_BUILD_MEMORY_MB = 2048
#: The prebuilt entry records how long `lake build Challenge` took (seconds, as text).
PREBUILD_SECONDS_FILE = "prebuild-seconds.txt"
#: Least output kept from the comparator, so its own progress lines survive a chatty build.
MIN_OUTPUT_CAP = 1 << 20


def comparator_limits(settings: GraderSettings, work_dir: Path) -> Limits:
    """The grade's caps for the comparator run, its disk counted under `work_dir`: resident
    memory, processes, disk and file size, but no address-space cap (module docstring)."""
    return Limits.from_settings(settings, work_dir, memory_mb=settings.memory_mb, address_space_cap=False)


# ---- the trusted challenge, built before the run ----------------------------------------------


@dataclass(frozen=True)
class PrebuiltChallenge:
    """A verified package with the trusted challenge (and what it imports) already built."""

    package: Path
    seconds: float
    """How long its `lake build Challenge` took when it was built."""
    records: tuple[CommandRecord, ...] = ()


def challenge_outputs_missing(manifest: Mapping[str, str]) -> list[str]:
    """The entry must hold the challenge's olean and the measured build time (pure)."""
    olean = f".lake/build/lib/lean/{CHALLENGE_MODULE}.olean"
    return [f for f in (olean, PREBUILD_SECONDS_FILE) if f not in manifest]


def prebuild_allowance(prebuilt: PrebuiltChallenge | None, timeout_s: float) -> float:
    """Time the run gets beyond the submission's `timeout_s` for its trusted steps: those
    steps, plus the challenge's build time in case the run does not find it up to date (or the
    prebuild's own limit, `timeout_s`, when there is no prebuilt challenge) (pure)."""
    return TRUSTED_STEPS_S + (prebuilt.seconds if prebuilt is not None else timeout_s)


async def ensure_prebuilt_challenge(
    *,
    p: int,
    network_lean: str | bytes,
    weights_lean: str,
    toolchain_dir: Path,
    toolchain_version: str,
    probe: ComparatorProbe,
    cache_root: Path,
    scratch: Path,
    settings: GraderSettings,
    prlimit: str | None,
    scope: str = "",
) -> PrebuiltChallenge:
    """The cache entry with `Challenge` built by `lake build Challenge` (trusted files only; the
    grader's own deadline `settings.timeout_s`, the grade's caps without an address-space cap),
    built on first use. `scratch` (an empty directory of the grade) holds HOME and TMPDIR.
    Raises `cache.PrebuildFailed` when the trusted build fails, `cache.CacheUnusable` when the
    cache cannot serve it (the run then builds the challenge itself)."""
    files = trusted_files(p, network_lean, weights_lean, settings.lean_toolchain)
    key = prebuild_key(toolchain_version, toolchain_dir, files)
    records: list[CommandRecord] = []

    async def prebuild(where: Path) -> cachemod.PrebuildOutcome:
        if probe.lake is None:
            return cachemod.PrebuildOutcome(False, probe.reason, [])
        home, tmpdir = scratch / HOME_DIR, scratch / TMP_DIR
        home.mkdir(mode=0o700, exist_ok=True)
        tmpdir.mkdir(mode=0o700, exist_ok=True)
        started = time.monotonic()
        try:
            out = await run_command(
                [probe.lake, "build", CHALLENGE_MODULE],
                stage="build",
                cwd=where,
                env=comparator_env(toolchain_dir, home, tmpdir, probe),
                deadline=started + settings.timeout_s,
                output_cap_bytes=settings.output_cap_bytes,
                tail_chars=settings.tail_chars,
                limits=dataclasses.replace(
                    comparator_limits(settings, where),
                    memory_mb=max(settings.memory_mb, CHALLENGE_BUILD_MEMORY_MB),
                ),
                prlimit=prlimit,
                sandboxed=False,
                scope=scope,
            )
        except HostFault as exc:
            return cachemod.PrebuildOutcome(False, f"lake build {CHALLENGE_MODULE}: {exc.reason}", [])
        seconds = time.monotonic() - started
        records.append(out.record)
        rec = out.record
        if out.timed_out or out.limit_exceeded or rec.signal is not None or rec.exit_code != 0:
            why = out.limit_exceeded or ("timed out" if out.timed_out else f"exit {rec.exit_code}")
            return cachemod.PrebuildOutcome(
                False, f"lake build {CHALLENGE_MODULE} failed ({why}): {last_error(out.text)}", records
            )
        (where / PREBUILD_SECONDS_FILE).write_text(f"{seconds:.3f}\n", encoding="ascii")
        return cachemod.PrebuildOutcome(True, "", records)

    entry = await cachemod.ensure_entry(
        cache_root,
        key,
        files,
        prebuild,
        deadline=time.monotonic() + settings.timeout_s,
        outputs_missing=challenge_outputs_missing,
    )
    try:
        seconds = float((entry.package / PREBUILD_SECONDS_FILE).read_text(encoding="ascii"))
    except (OSError, ValueError) as exc:
        raise cachemod.CacheUnusable(f"the prebuilt challenge has no build time: {exc}") from None
    return PrebuiltChallenge(entry.package, seconds, tuple(entry.records))


def comparator_env(
    toolchain_dir: Path, home: Path, tmpdir: Path, probe: ComparatorProbe, bwrap: Path | None = None
) -> dict[str, str]:
    """The outer `lake`'s whole environment: nothing inherited from the grader, the toolchain's
    bin first (Lake finds its Lean next to itself), the tools' directories, and as
    `COMPARATOR_BWRAP` (an absolute path `which` resolves) `bwrap`, the run's recording wrapper
    (host.py `bwrap_wrapper`), or else the bwrap the probe found."""
    env = child_env(home, toolchain_dir / "bin", tmpdir)
    env["PATH"] = ":".join(dict.fromkeys((str(toolchain_dir / "bin"), *probe.path_dirs, "/usr/bin", "/bin")))
    if bwrap is not None:
        env["COMPARATOR_BWRAP"] = str(bwrap)
    elif probe.bwrap:
        env["COMPARATOR_BWRAP"] = probe.bwrap
    return env


async def run_comparator(
    submission: str,
    *,
    p: int,
    network_lean: str | bytes,
    weights_lean: str,
    toolchain_dir: Path,
    work_dir: Path,
    deadline: float,
    limits: Limits | None,
    prlimit: str | None,
    axioms_mode: AxiomsMode = "subset",
    output_cap_bytes: int = MIN_OUTPUT_CAP,
    tail_chars: int = 4000,
    timeout_s: float | None = None,
    scope: str = "",
    probe: ComparatorProbe | None = None,
    stage: Stage = "leanchecker",
    paranoid: bool = False,
    prebuilt: PrebuiltChallenge | None = None,
    lean_toolchain: str = LEAN_TOOLCHAIN,
) -> ComparatorOutcome:
    """Judge `submission` with the toolchain's `lake comparator` (or `lake challenge`).

    `work_dir` is the grade's own directory (it must exist); the package goes into a fresh
    `work_dir/comparator-package` (a copy of `prebuilt`, the challenge already built, when
    given), the config, HOME, TMPDIR and the bwrap wrapper (host.py) beside it. The command runs
    unsandboxed by the grader (the comparator nests its own bwrap) under `deadline` (a
    `time.monotonic()` value: the submission's `timeout_s` plus `prebuild_allowance`) and
    `limits`, the work disk watched meanwhile. Never raises for a host fault: that is not judged."""
    if probe is None:
        probe = await run_in_thread(probe_comparator, Path(toolchain_dir))
    if not probe.available or probe.lake is None or probe.subcommand is None:
        return ComparatorOutcome(verdict="not_judged", reason=probe.reason, subcommand=probe.subcommand)
    try:
        package = work_dir / PACKAGE_DIR
        if prebuilt is not None:
            await copy_entry(prebuilt.package, package)
            write_fresh(package, SUBMISSION_PATH, submission)
        else:
            files = comparator_files(p, network_lean, weights_lean, submission, lean_toolchain)
            write_package(package, files)
        config_path = work_dir / CONFIG_FILE
        config_path.write_text(config_json(p, axioms_mode), encoding="utf-8")
        home, tmpdir = work_dir / HOME_DIR, work_dir / TMP_DIR
        home.mkdir(mode=0o700)
        tmpdir.mkdir(mode=0o700)
        wrapper = host.bwrap_wrapper(work_dir, probe.bwrap) if probe.bwrap else None
    except OSError as exc:
        return ComparatorOutcome(
            verdict="not_judged",
            reason=f"could not write the comparator's package: {exc}",
            subcommand=probe.subcommand,
        )
    argv = comparator_argv(probe.lake, probe.subcommand, config_path, paranoid=paranoid)
    ooms = host.oom_kills()
    disk = host.DiskWatch(work_dir)
    disk.start()
    run_from = time.monotonic()  # run_command's own start, to within a call (no await between)
    try:
        out: CommandOutcome = await run_command(
            argv,
            stage=stage,
            cwd=package,
            env=comparator_env(Path(toolchain_dir), home, tmpdir, probe, wrapper),
            deadline=deadline,
            output_cap_bytes=max(output_cap_bytes, MIN_OUTPUT_CAP),
            tail_chars=tail_chars,
            limits=limits,
            prlimit=prlimit,
            sandboxed=False,
            scope=scope,
            watch_for=[m.encode() for m in SOLUTION_PHASE_MARKS],
            watch_argv=SOLUTION_PHASE_ARGV,
        )
    except HostFault as exc:
        return ComparatorOutcome(
            verdict="not_judged",
            reason=f"could not run lake {probe.subcommand}: {exc.reason}",
            subcommand=probe.subcommand,
        )
    finally:
        full = await disk.stop()
    if not out.started:
        verdict: Verdict = "not_judged"
        reason = "no time was left to run lake comparator"
    else:
        status = await run_in_thread(host.read_status, work_dir)
        facts = RunFacts(
            exit_code=out.record.exit_code,
            signal=out.record.signal,
            timed_out=out.timed_out,
            limit_exceeded=out.limit_exceeded,
            solution_phase_at=solution_phase_start(out.first_seen, argv_seen_at=out.argv_seen_at),
            seconds=out.record.seconds,
            deadline_s=round(deadline - run_from, 3),
            oom_killer_acted=(moved := host.oom_kills_moved(ooms, host.oom_kills())) is not False,
            oom_kills_seen=moved is True,
            peak_rss_mb=out.peak_rss_mb,
            memory_cap_mb=limits.memory_mb if limits is not None else None,
            sandboxes_unstarted=status.unstarted,
            step_killed=status.killed > 0,
            disk_full=full,
        )
        verdict, reason = comparator_verdict(facts, out.text, axioms_mode=axioms_mode, timeout_s=timeout_s)
    return ComparatorOutcome(
        verdict=verdict,
        reason=reason,
        subcommand=probe.subcommand,
        commands=[out.record],
        peak_rss_mb=out.peak_rss_mb,
    )
