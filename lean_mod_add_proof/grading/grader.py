"""The grader's entry points: prove the toolchain, then grade.

Everything the grader believes about Lean is checked on the real toolchain before its verdicts
count: the self-test (selftest.py) grades its canaries through the pipeline, and the pipeline
runs it, as a `ToolchainCheck`, before the first grade. The dependency runs one way: this module
uses both, the self-test uses the pipeline, and the pipeline knows neither.
"""

from __future__ import annotations

from collections.abc import Mapping

from lean_mod_add_proof.grading import pipeline, selftest
from lean_mod_add_proof.grading.pipeline import GradeTask, OnStage, ToolchainCheck
from lean_mod_add_proof.grading.result import GraderConfig, GradeResult

__all__ = ["GradeTask", "grade", "grade_reply", "warm_cache"]


def _check(skip_selftest: bool) -> ToolchainCheck | None:
    return None if skip_selftest else selftest.ensure_selftest


async def grade(
    submission: str,
    task: GradeTask,
    config: GraderConfig,
    *,
    on_stage: OnStage | None = None,
    skip_guard: bool = False,
    skip_selftest: bool = False,
    extra_modules: Mapping[str, str] | None = None,
) -> GradeResult:
    """`pipeline.grade` behind the self-test. `skip_selftest` (and `skip_guard`,
    `extra_modules`) are test-only switches, reachable from no config field and no command line:
    the orchestration tests' double acts out only what each test scripts."""
    return await pipeline.grade(
        submission,
        task,
        config,
        toolchain_check=_check(skip_selftest),
        on_stage=on_stage,
        skip_guard=skip_guard,
        extra_modules=extra_modules,
    )


async def grade_reply(
    reply: str,
    task: GradeTask,
    config: GraderConfig,
    *,
    on_stage: OnStage | None = None,
    skip_guard: bool = False,
    skip_selftest: bool = False,
) -> GradeResult:
    """Extract the one ```lean block from a model reply, then `grade` it."""
    return await pipeline.grade_reply(
        reply, task, config, toolchain_check=_check(skip_selftest), on_stage=on_stage, skip_guard=skip_guard
    )


async def warm_cache(task: GradeTask, config: GraderConfig, *, selftest_too: bool = True) -> GradeResult:
    """Build what a first grade needs (the compiled judge, the task's cache entry) and, unless
    told not to, run the self-test, whose pass is remembered in the cache directory: a box made
    from an image warmed this way grades its first reply without running a canary, as long as
    the toolchain, the grader version, the judge and the settings are the same."""
    return await pipeline.warm_cache(task, config, toolchain_check=_check(not selftest_too))
