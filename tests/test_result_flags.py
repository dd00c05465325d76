"""The grader's configuration and result (lean_mod_add_proof/grading/result.py): unknown settings
are errors, bounds hold, and the verdict and per-stage flags are derived from where a grade
stopped. GradeResult objects are built directly; no grade runs."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest
from pydantic import ValidationError

from lean_mod_add_proof.grading.result import (
    EXIT_ACCEPTED,
    EXIT_NOT_JUDGED,
    EXIT_REJECTED,
    STAGES,
    AxiomsMode,
    CommandRecord,
    GradeIn,
    GraderConfig,
    GradeResult,
    GraderSettings,
    JudgeChoice,
    JudgeMode,
    JudgeName,
    KernelRun,
    KernelsChoice,
    SandboxMode,
    Stage,
    VerdictFrom,
    flag_name,
    verdict_exit_code,
)

# --- configuration -------------------------------------------------------------------------------


@pytest.mark.parametrize("typo", ["timout_s", "timeout", "memory", "sandboxed", "axiom_mode"])
def test_a_misspelt_setting_is_an_error_not_dropped(typo: str) -> None:
    with pytest.raises(ValidationError, match=typo):
        GraderConfig(**{typo: 1})  # type: ignore[arg-type]


def test_the_issue_typo_raises() -> None:
    with pytest.raises(ValidationError, match="timout_s"):
        GraderConfig(timout_s=1)  # type: ignore[call-arg]
    assert GraderConfig(timeout_s=1).timeout_s == 1.0


def test_config_is_frozen() -> None:
    config = GraderConfig()
    with pytest.raises(ValidationError):
        config.timeout_s = 1.0  # type: ignore[misc]


def test_defaults() -> None:
    assert GraderConfig().model_dump() == {
        "timeout_s": 300.0,
        "axioms_mode": "subset",
        "work_root": None,
        "keep_packages": False,
        "memory_mb": 8192,
        "max_processes": 64,
        "max_disk_mb": 4096,
        "max_file_mb": 1024,
        "max_files": 20000,
        "max_concurrent": None,
        "threads": 1,
        "judge": "auto",
        "native_judge": True,
        "sandbox": "on",
        "cache_dir": None,
        "toolchain_dir": None,
        "lean_toolchain": "leanprover/lean4:v4.35.0-rc2",
        "output_cap_bytes": 1 << 20,
        "tail_chars": 4000,
        "kernels": "official",
        "grade_in": "host",
    }
    assert set(GraderConfig.model_fields) == set(GraderSettings.model_fields)


#: (setting, the smallest allowed value, a value just below it)
BOUNDS: list[tuple[str, float, float]] = [
    ("memory_mb", 64, 63),
    ("max_processes", 2, 1),
    ("max_disk_mb", 16, 15),
    ("max_file_mb", 1, 0),
    ("max_files", 100, 99),
    ("max_concurrent", 1, 0),
    ("threads", 1, 0),
    ("output_cap_bytes", 1024, 1023),
    ("tail_chars", 0, -1),
]


@pytest.mark.parametrize(("setting", "lowest", "below"), BOUNDS, ids=[b[0] for b in BOUNDS])
def test_lower_bounds(setting: str, lowest: float, below: float) -> None:
    assert getattr(GraderConfig(**{setting: lowest}), setting) == lowest  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=setting):
        GraderConfig(**{setting: below})  # type: ignore[arg-type]


def test_threads_upper_bound() -> None:
    assert GraderConfig(threads=256).threads == 256
    with pytest.raises(ValidationError, match="threads"):
        GraderConfig(threads=257)


def test_timeout_must_be_positive_and_finite() -> None:
    assert GraderConfig(timeout_s=0.001).timeout_s == 0.001
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ValidationError, match="timeout_s"):
            GraderConfig(timeout_s=bad)


CHOICES: dict[str, tuple[str, ...]] = {"axioms_mode": ("subset", "exact"), "sandbox": ("auto", "on", "off")}


@pytest.mark.parametrize("setting", list(CHOICES))
def test_choices(setting: str) -> None:
    for choice in CHOICES[setting]:
        assert getattr(GraderConfig(**{setting: choice}), setting) == choice  # type: ignore[arg-type]
    for bad in ("some", "", "ON"):
        with pytest.raises(ValidationError, match=setting):
            GraderConfig(**{setting: bad})  # type: ignore[arg-type]


def test_paths_are_paths() -> None:
    config = GraderConfig(work_root="/w", cache_dir="/c", toolchain_dir="/t")  # type: ignore[arg-type]
    assert (config.work_root, config.cache_dir, config.toolchain_dir) == (Path("/w"), Path("/c"), Path("/t"))


def test_every_setting_has_help_text() -> None:
    for name, field in GraderSettings.model_fields.items():
        assert field.description and field.description.strip(), name


@pytest.mark.parametrize(
    ("setting", "flag"),
    [("timeout_s", "--timeout-s"), ("max_file_mb", "--max-file-mb"), ("sandbox", "--sandbox")],
)
def test_flag_name(setting: str, flag: str) -> None:
    assert flag_name(setting) == flag


# --- per-stage flags -----------------------------------------------------------------------------


def test_stages_in_order() -> None:
    assert STAGES == ("extract", "guard", "toolchain", "build", "leanchecker", "statement", "axioms")


def test_literal_choices_are_exactly() -> None:
    # A widened choice (a new stage, mode or cache state) must be a decision made here too.
    assert get_args(Stage) == STAGES
    assert get_args(AxiomsMode) == ("subset", "exact")
    assert get_args(SandboxMode) == ("auto", "on", "off")
    assert get_args(JudgeMode) == ("native", "interpreted")
    assert get_args(GradeResult.model_fields["cache"].annotation) == ("hit", "built", "off", "unused")
    assert get_args(JudgeChoice) == ("auto", "replay", "comparator")
    assert get_args(JudgeName) == ("replay", "comparator")
    assert get_args(VerdictFrom) == ("export", "olean")
    assert get_args(KernelsChoice) == ("official", "all")
    assert get_args(GradeIn) == ("host", "runtime")
    assert get_args(KernelRun.model_fields["verdict"].annotation) == ("accepted", "rejected", "not judged")


@pytest.mark.parametrize(
    ("setting", "choice"),
    [("judge", c) for c in ("auto", "replay", "comparator")]
    + [("kernels", c) for c in ("official", "all")]
    + [("grade_in", c) for c in ("host", "runtime")],
)
def test_every_choice_of_a_setting_is_accepted(setting: str, choice: str) -> None:
    assert getattr(GraderConfig(**{setting: choice}), setting) == choice  # type: ignore[arg-type]


@pytest.mark.parametrize("verdict", ["accepted", "rejected", "not judged"])
def test_a_kernel_run_records_each_verdict_and_defaults_to_no_time_and_no_detail(verdict: str) -> None:
    run = KernelRun(name="lean", verdict=verdict)  # type: ignore[arg-type]
    assert (run.verdict, run.seconds, run.detail) == (verdict, 0.0, "")


@pytest.mark.parametrize("judge", ["replay", "comparator"])
def test_a_result_names_either_judge(judge: str) -> None:
    assert GradeResult(judge=judge).judge == judge  # type: ignore[arg-type]


@pytest.mark.parametrize("source", ["export", "olean"])
def test_a_result_records_either_source(source: str) -> None:
    assert GradeResult(verdict_from=source).verdict_from == source  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "name", ["leanprover/lean4:v4.35.0", "leanprover/lean4:v4.35.0-rc2", "leanprover/lean4:v10.0.11"]
)
def test_a_release_or_release_candidate_toolchain_is_accepted(name: str) -> None:
    assert GraderConfig(lean_toolchain=name).lean_toolchain == name


@pytest.mark.parametrize(
    "name",
    [
        "stable",
        "leanprover/lean4:nightly-2025-01-01",
        "leanprover/lean4:v4.35.0-rc2 ",
        "xleanprover/lean4:v4.35.0",
    ],
)
def test_an_alias_or_nightly_toolchain_is_refused(name: str) -> None:
    with pytest.raises(ValidationError, match="lean_toolchain"):
        GraderConfig(lean_toolchain=name)


FLAGS = ("guard_passed", "build_passed", "leanchecker_passed", "statement_passed", "axioms_passed")

#: The stage a grade failed at (None: accepted) -> the five stage flags it must show.
AT_EACH_STAGE: list[tuple[str | None, tuple[bool, bool, bool, bool, bool]]] = [
    ("extract", (False, False, False, False, False)),
    ("guard", (False, False, False, False, False)),
    ("toolchain", (True, False, False, False, False)),
    ("build", (True, False, False, False, False)),
    ("leanchecker", (True, True, False, False, False)),
    ("statement", (True, True, True, False, False)),
    ("axioms", (True, True, True, True, False)),
    (None, (True, True, True, True, True)),
]


@pytest.mark.parametrize(("failed", "flags"), AT_EACH_STAGE, ids=[str(f) for f, _ in AT_EACH_STAGE])
@pytest.mark.parametrize("judged", [True, False], ids=["judged", "not-judged"])
def test_flags_of_a_grade_that_fails_at_each_stage(
    failed: str | None, flags: tuple[bool, ...], judged: bool
) -> None:
    result = GradeResult(
        stage_reached=failed or "axioms",
        failed_stage=failed,  # type: ignore[arg-type]
        judged=judged,
        grader_seconds=1.5,
    )
    accepted = failed is None and judged
    shown = tuple(getattr(result, flag) for flag in FLAGS)
    if failed is None and not judged:
        # a grade that reached no verdict passed nothing, even with no failed stage
        assert shown == (False,) * 5
    else:
        assert shown == flags
    assert result.accepted is accepted
    assert result.reward == (1.0 if accepted else 0.0)
    # A grade with no verdict has a value only for the stages it passed (issue 41: never a 0.0
    # for a stage it did not get to).
    assert result.stage_flags() == {
        "judged": 1.0 if judged else 0.0,
        **{flag: float(value) for flag, value in zip(FLAGS, shown, strict=True) if judged or value},
        "grader_seconds": 1.5,
    }
    exit_code = EXIT_ACCEPTED if accepted else EXIT_REJECTED if judged else EXIT_NOT_JUDGED
    assert verdict_exit_code(result) == exit_code
    dumped = result.model_dump(mode="json")
    assert {flag: dumped[flag] for flag in FLAGS} == dict(zip(FLAGS, shown, strict=True))
    assert (dumped["accepted"], dumped["reward"]) == (accepted, result.reward)


@pytest.mark.parametrize("stage", STAGES[:-1])
def test_a_grade_that_stopped_early_without_a_failure_is_not_accepted(stage: str) -> None:
    result = GradeResult(stage_reached=stage)  # type: ignore[arg-type]
    assert not result.accepted and result.reward == 0.0
    assert not any(getattr(result, flag) for flag in FLAGS)
    assert verdict_exit_code(result) == EXIT_REJECTED


def test_a_skipped_guard_never_counts_as_passed() -> None:
    accepted = GradeResult(stage_reached="axioms", guard_skipped=True)
    assert accepted.accepted and not accepted.guard_passed and accepted.build_passed
    assert accepted.stage_flags()["guard_passed"] == 0.0
    at_build = GradeResult(stage_reached="build", failed_stage="build", guard_skipped=True)
    assert not at_build.guard_passed


def test_exit_codes() -> None:
    assert (EXIT_ACCEPTED, EXIT_REJECTED, EXIT_NOT_JUDGED) == (0, 1, 3)


def test_the_verdict_is_derived_when_read_back() -> None:
    rejected = GradeResult(stage_reached="axioms", failed_stage="axioms").model_dump(mode="json")
    forged = {**rejected, "accepted": True, "reward": 1.0, "axioms_passed": True}
    read = GradeResult.model_validate(forged)
    assert not read.accepted and read.reward == 0.0 and not read.axioms_passed


def test_result_defaults() -> None:
    result = GradeResult()
    assert (result.stage_reached, result.failed_stage, result.judged, result.reason) == (
        "extract",
        None,
        True,
        "",
    )
    assert (result.axioms, result.check_axioms, result.commands, result.lean_errors) == (None, None, [], [])
    assert (result.cache, result.cache_note, result.sandboxed, result.peak_memory_mb) == (
        "unused",
        "",
        False,
        0,
    )
    assert not result.accepted


def test_result_choices() -> None:
    for stage in STAGES:
        assert GradeResult(stage_reached=stage, failed_stage=stage).failed_stage == stage
    for cache in ("hit", "built", "off", "unused"):
        assert GradeResult(cache=cache).cache == cache  # type: ignore[arg-type]
    for mode in ("native", "interpreted", None):
        assert GradeResult(judge_mode=mode).judge_mode == mode  # type: ignore[arg-type]
    for field, bad in (
        ("stage_reached", "lean"),
        ("failed_stage", "done"),
        ("cache", "cold"),
        ("judge_mode", "x"),
    ):
        with pytest.raises(ValidationError, match=field):
            GradeResult(**{field: bad})  # type: ignore[arg-type]


def test_result_text_and_time_defaults() -> None:
    result = GradeResult()
    assert (result.task_id, result.theorem, result.judge_note, result.package_dir, result.toolchain) == (
        "",
        "",
        "",
        None,
        None,
    )
    assert (result.grader_seconds, result.queued_seconds, result.stage_seconds) == (0.0, 0.0, {})
    assert (result.guard_skipped, result.judge_mode) == (False, None)


def test_command_record_signal_defaults_to_none() -> None:
    record = CommandRecord(
        stage="build",
        argv=["lean"],
        exit_code=0,
        seconds=0.1,
        output_tail="",
        output_bytes=0,
        truncated=False,
    )
    assert record.signal is None
    with pytest.raises(ValidationError):
        CommandRecord(
            stage="nope", argv=[], exit_code=0, seconds=0, output_tail="", output_bytes=0, truncated=False
        )  # type: ignore[arg-type]
