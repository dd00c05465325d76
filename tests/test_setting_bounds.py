"""Every numeric grader setting has an upper bound (issue 39 item 7): what prlimit, the kernel and
the grader's own arithmetic take, checked once in `GraderSettings`, with the message naming the
setting. Past it, `timeout_s`, `memory_mb` and `max_file_mb` used to overflow prlimit: every command
failed as "the sandbox (bwrap) did not start", and with `judge = auto` an unusable `memory_mb`
moved grading to the comparator route. The per-task timeouts of the `--timeouts` file go through
the same check, and a bad file is named in one line. Against the toolchain double (not Lean)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pytest
from helpers import needs_bwrap, run_double, submission
from pydantic import ValidationError

from lean_mod_add_proof.cli.settings import add_grader_flags, config_from_args
from lean_mod_add_proof.grading import process
from lean_mod_add_proof.grading.result import (
    MAX_DISK_MB_MAX,
    MEMORY_MB_MAX,
    TIMEOUT_S_MAX,
    GraderConfig,
    GraderSettings,
    checked_setting,
)
from lean_mod_add_proof.taskset import LeanTaskConfig

NUMERIC = [
    name
    for name, field in GraderSettings.model_fields.items()
    if any(t in str(field.annotation) for t in ("int", "float"))
]
#: Past every bound (the overflow the issue found: prlimit parses at most 2^64 - 1).
TOO_BIG = {name: 2**64 for name in NUMERIC}
TOO_BIG["timeout_s"] = 1e20


def upper_bound(name: str) -> float:
    for meta in GraderSettings.model_fields[name].metadata:
        for attr in ("le", "lt"):
            if (value := getattr(meta, attr, None)) is not None:
                return value
    raise AssertionError(f"{name} has no upper bound")


def test_the_numeric_settings_are_found() -> None:
    assert {"timeout_s", "memory_mb", "max_file_mb", "max_disk_mb", "max_files", "threads"} <= set(NUMERIC)


@pytest.mark.parametrize("name", NUMERIC)
def test_every_numeric_setting_has_an_upper_bound_and_past_it_is_named(name: str) -> None:
    assert upper_bound(name) < TOO_BIG[name]
    with pytest.raises(ValidationError) as info:
        GraderConfig(**{name: TOO_BIG[name]})
    assert [e["loc"] for e in info.value.errors()] == [(name,)]
    parser = argparse.ArgumentParser()
    add_grader_flags(parser)
    args = parser.parse_args([f"--{name.replace('_', '-')}", str(TOO_BIG[name])])
    with pytest.raises(ValueError, match=f"--{name.replace('_', '-')}"):
        config_from_args(args)


def test_the_disk_cap_stays_below_what_an_unreadable_directory_costs() -> None:
    """The disk walk charges a directory it cannot read `UNREADABLE_BYTES`, "more than any cap":
    true only while the cap's bound is below it."""
    assert MAX_DISK_MB_MAX << 20 < process.UNREADABLE_BYTES


async def test_an_overflowing_memory_cap_is_refused_when_read_not_graded(tmp_path: Path) -> None:
    """The issue's case through the pipeline: `memory_mb` 2^45 grades nothing (prlimit cannot
    parse the address-space backstop); it is now refused when the settings are read, naming it."""
    with pytest.raises(ValidationError, match="memory_mb"):
        await run_double(submission(), tmp_path, memory_mb=2**45)


@pytest.mark.parametrize("mode", ["off", pytest.param("on", marks=needs_bwrap)])
async def test_a_grade_at_the_bounds_runs(tmp_path: Path, mode: str) -> None:
    """The bounds are what prlimit and the kernel take: a grade with the time, memory and file
    size at their bounds is accepted, sandboxed or not (prlimit gets every limit)."""
    res = await run_double(
        submission(),
        tmp_path,
        sandbox=mode,
        timeout_s=TIMEOUT_S_MAX,
        memory_mb=MEMORY_MB_MAX,
        max_file_mb=upper_bound("max_file_mb"),
        max_processes=upper_bound("max_processes"),
        threads=upper_bound("threads"),
    )
    assert res.accepted, res.reason


def test_checked_setting_is_the_settings_own_check() -> None:
    assert checked_setting("timeout_s", 61) == 61.0
    # one line: the setting, the value, pydantic's own words with a lower-case first letter
    with pytest.raises(ValueError) as info:
        checked_setting("timeout_s", -1)
    assert str(info.value) == "timeout_s -1: input should be greater than 0"
    with pytest.raises(ValueError) as info:
        checked_setting("timeout_s", "x")
    assert (
        str(info.value) == "timeout_s 'x': input should be a valid number, unable to parse string as a number"
    )
    for bad in (0, -1, math.inf, math.nan, TIMEOUT_S_MAX * 2):
        with pytest.raises(ValueError, match="timeout_s"):
            checked_setting("timeout_s", bad)


# ---- the per-task timeouts file ----------------------------------------------------------------


def timeouts_doc(limits: dict[str, object]) -> dict[str, object]:
    fit = {"intercept_s": 1.0, "seconds_per_mul_add": 1e-4, "n_tasks": 1}
    return {"toolchain": "test", "fit": fit, "headroom": 3.0, "floor_s": 60.0, "timeouts": limits}


def test_a_per_task_timeout_past_the_bound_is_refused_naming_the_file_and_task(tmp_path: Path) -> None:
    """Per-task timeouts were applied with `model_copy`, which validates nothing."""
    path = tmp_path / "t.json"
    path.write_text(json.dumps(timeouts_doc({"p05_h08_s0": TIMEOUT_S_MAX * 10})), encoding="utf-8")
    with pytest.raises(ValidationError) as info:
        LeanTaskConfig(timeouts=path)
    text = str(info.value)
    assert str(path) in text and "timeouts.p05_h08_s0" in text and "timeout_s" in text, text
    with pytest.raises(ValueError, match="timeout_s"):
        LeanTaskConfig().for_task("p05_h08_s0", {"p05_h08_s0": TIMEOUT_S_MAX * 10})


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"toolchain": "\xff"}', "not UTF-8"),
        (json.dumps(timeouts_doc({"x": 61})).replace("61", "1" * 5000).encode(), "not JSON"),
    ],
    ids=["deep", "not-utf8", "long-int"],
)
def test_a_bad_timeouts_file_is_one_line_naming_it(tmp_path: Path, content: bytes, problem: str) -> None:
    """A deeply nested file (RecursionError), bytes that are not UTF-8 (UnicodeDecodeError) and an
    integer longer than Python converts (ValueError) used to escape as themselves."""
    path = tmp_path / "t.json"
    path.write_bytes(content)
    with pytest.raises(ValidationError) as info:
        LeanTaskConfig(timeouts=path)
    [error] = info.value.errors()
    message = str(error["msg"])
    assert "\n" not in message and str(path) in message and problem in message, message


def test_each_bound_is_the_one_its_source_gives() -> None:
    """Each bound beside what result.py says it is (a week; x86-64's 128 TiB user address space;
    Linux's PID_MAX_LIMIT; 512 TiB, below the 1 PiB an unreadable directory is charged; ext4's 2^32
    inodes; ...): a bound moved by a slip changes what a host may be asked to run."""
    from lean_mod_add_proof.grading import result

    assert result.TIMEOUT_S_MAX == 604_800.0  # 7 days in seconds
    assert result.MEMORY_MB_MAX << 20 == 128 << 40  # 128 TiB, in bytes
    assert result.MAX_PROCESSES_MAX == 4 * 1024 * 1024  # include/linux/threads.h PID_MAX_LIMIT
    assert result.MAX_DISK_MB_MAX << 20 == 512 << 40 and result.MAX_FILE_MB_MAX == result.MAX_DISK_MB_MAX
    assert result.MAX_FILES_MAX == 2**32
    assert result.MAX_CONCURRENT_MAX == 4096
    assert result.OUTPUT_CAP_BYTES_MAX == 1 << 30 and result.TAIL_CHARS_MAX == 1 << 24
    # each bound is a value a setting may take, and one past it is refused
    for name, bound, over in (
        ("timeout_s", result.TIMEOUT_S_MAX, result.TIMEOUT_S_MAX + 1),
        ("memory_mb", result.MEMORY_MB_MAX, result.MEMORY_MB_MAX + 1),
        ("max_disk_mb", result.MAX_DISK_MB_MAX, result.MAX_DISK_MB_MAX + 1),
        ("max_files", result.MAX_FILES_MAX, result.MAX_FILES_MAX + 1),
    ):
        assert getattr(GraderConfig(**{name: bound}), name) == bound
        with pytest.raises(ValidationError):
            GraderConfig(**{name: over})
    for bad in (float("inf"), float("nan")):
        with pytest.raises(ValidationError):
            GraderConfig(timeout_s=bad)
