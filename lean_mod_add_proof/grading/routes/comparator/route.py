"""The comparator route as the pipeline runs it (`RouteRunner`): the probe, the trusted challenge
prebuilt with its own deadline, then one run of `lake comparator` on the submission."""

from __future__ import annotations

import asyncio
import time
from typing import ClassVar

from lean_mod_add_proof.grading import cache as cachemod
from lean_mod_add_proof.grading import kernels as kernelsmod
from lean_mod_add_proof.grading import workdirs
from lean_mod_add_proof.grading.messages import one_line
from lean_mod_add_proof.grading.result import KernelRun
from lean_mod_add_proof.grading.routes.comparator.probe import ComparatorProbe, probe_comparator
from lean_mod_add_proof.grading.routes.comparator.run import (
    PrebuiltChallenge,
    comparator_limits,
    ensure_prebuilt_challenge,
    prebuild_allowance,
    run_comparator,
)
from lean_mod_add_proof.grading.routes.core import CommandEnv, Grade, StageFailed, not_judged
from lean_mod_add_proof.grading.routes.protocol import COMPARATOR_ROUTE, Arm, Route, TestSwitches


class ComparatorRoute:
    route: ClassVar[Route] = COMPARATOR_ROUTE
    runs_checkers: ClassVar[bool] = False

    def __init__(self, g: Grade, env: CommandEnv) -> None:
        self.g = g
        self.env = env
        self.probe: ComparatorProbe | None = None
        """The comparator's probe, once the route was considered."""
        self.self_tested = False

    async def prepare(self) -> str | None:
        self.probe = await asyncio.to_thread(probe_comparator, self.env.toolchain.dir)
        return None if self.probe.available else self.probe.reason

    @property
    def verdict_path(self) -> str:
        """How verdicts are reached, for a remembered self-test pass: the comparator's Lake and
        whether bubblewrap is in use (in effect, not the setting)."""
        probe = self.probe
        judge = f"lake:{probe.lake}:{probe.subcommand}" if probe is not None else "lake:?"
        return f"{self.route.label};{judge};sandboxed={self.env.sandboxed}"

    def chosen(self, skipped: list[str]) -> None:
        """Nothing to add: the result names the route."""

    async def warm(self) -> None:
        self.g.grade_dir = workdirs.new_grade_dir(self.g.config.work_root)
        await self.prepare_challenge()

    async def run(self, submission: str, switches: TestSwitches, arm: Arm) -> None:
        g, config = self.g, self.g.config
        g.grade_dir = workdirs.new_grade_dir(config.work_root, keep=config.keep_packages)
        # The trusted challenge first, with its own deadline (the cache check and the
        # build `timeout_s` each); then the run: the submission's `timeout_s` plus an
        # allowance for the run's trusted steps (run.py, the deadline).
        arm(time.monotonic() + 2 * config.timeout_s)
        prebuilt = await self.prepare_challenge()
        allowance = prebuild_allowance(prebuilt, config.timeout_s)
        deadline = time.monotonic() + config.timeout_s + allowance
        arm(deadline)
        await self.compare(submission, deadline, prebuilt)

    def accepted_reason(self) -> str:
        # Name the toolchain that said yes rather than asserting "Lean": under test it is a double.
        return f"accepted by lake comparator (toolchain: {self.g.result.toolchain})"

    async def prepare_challenge(self) -> PrebuiltChallenge | None:
        """The trusted challenge, built (or found) in the cache before the run, so that its build
        does not eat the submission's time; None when the cache cannot be used (the run then
        builds it, and gets the time for that). A failed trusted build is "could not judge"."""
        g, env = self.g, self.env
        g.begin("build")
        assert g.grade_dir is not None and self.probe is not None
        scratch = g.grade_dir / "comparator-prebuild"
        await workdirs.run_in_thread(scratch.mkdir, 0o700)
        try:
            prebuilt = await ensure_prebuilt_challenge(
                p=g.task.p,
                network_lean=g.task.network_lean,
                weights_lean=g.task.weights_lean,
                toolchain_dir=env.toolchain.dir,
                toolchain_version=env.toolchain.version,
                probe=self.probe,
                cache_root=cachemod.cache_root(g.config.cache_dir),
                scratch=scratch,
                settings=g.config,
                prlimit=env.prlimit,
                scope=workdirs.work_scope(g.config.work_root),
            )
        except cachemod.PrebuildFailed as exc:
            g.result.commands.extend(exc.records)
            why = f"could not prebuild the comparator's challenge: {exc.reason}"
            raise not_judged("build", why) from None
        except cachemod.CacheUnusable as exc:
            g.result.commands.extend(exc.records)
            g.result.cache_note = one_line(f"cache unusable: {exc.reason}")
            g.result.cache = "off"
            return None
        g.result.commands.extend(prebuilt.records)
        g.result.cache = "built" if prebuilt.records else "hit"
        return prebuilt

    async def compare(self, submission: str, deadline: float, prebuilt: PrebuiltChallenge | None) -> None:
        """The toolchain's own judge (`lake comparator`) on a package it builds itself: exit 0
        accepted, 1 rejected once the solution's build began, anything else not judged
        (verdict.py). Every rejection is reported at the leanchecker stage: its output does
        not say reliably which of its steps refused."""
        g, env, config = self.g, self.env, self.g.config
        g.begin("leanchecker")
        assert g.grade_dir is not None
        outcome = await run_comparator(
            submission,
            p=g.task.p,
            network_lean=g.task.network_lean,
            weights_lean=g.task.weights_lean,
            toolchain_dir=env.toolchain.dir,
            work_dir=g.grade_dir,
            deadline=deadline,
            limits=comparator_limits(config, g.grade_dir),  # no address-space cap
            prlimit=env.prlimit,
            axioms_mode=config.axioms_mode,
            output_cap_bytes=config.output_cap_bytes,
            tail_chars=config.tail_chars,
            timeout_s=config.timeout_s,
            scope=workdirs.work_scope(config.work_root),
            probe=self.probe,
            prebuilt=prebuilt,
            lean_toolchain=config.lean_toolchain,
        )
        g.result.commands.extend(outcome.commands)
        g.result.peak_memory_mb = max(g.result.peak_memory_mb, outcome.peak_rss_mb)
        if outcome.verdict in ("accepted", "rejected"):
            seconds = sum(c.seconds for c in outcome.commands)
            g.result.kernels.append(
                KernelRun(
                    name=f"{kernelsmod.OFFICIAL} (lake comparator)", verdict=outcome.verdict, seconds=seconds
                )
            )
        if outcome.verdict == "rejected":
            raise StageFailed("leanchecker", outcome.reason)
        if outcome.verdict != "accepted":
            raise not_judged("leanchecker", outcome.reason)
        for stage in ("statement", "axioms"):
            g.begin(stage)
