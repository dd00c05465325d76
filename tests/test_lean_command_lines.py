"""What every Lean process the grader starts is told, seen through a recording toolchain: a copy
of the double whose `lean` appends its argv (and LEAN_NUM_THREADS) to a log, then runs.

The `lean` shell sizes its task manager from `-j N` / `--threads=N`, defaulting to the hardware
concurrency; LEAN_NUM_THREADS is read only by compiled executables (`lean_init_task_manager`;
src/Lean/Shell.lean, src/util/shell.cpp). So every `lean` command line must carry `-j N` before
the file or `--run`, and the compiled judge must get LEAN_NUM_THREADS=N."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import copy_double, run_double, submission

from lean_mod_add_proof.grading import toolchain as toolchain_mod

LOG = "lean-invocations.log"


def recording_toolchain(dest: Path) -> Path:
    tc = copy_double(dest)
    lean = tc / "bin" / "lean"
    lean.rename(tc / "bin" / "lean.real")
    lean.write_text(
        "#!/bin/sh\n"
        "# Recording wrapper (tests only): log the command line, then run the double.\n"
        f'printf \'%s\\t%s\\n\' "${{LEAN_NUM_THREADS:-unset}}" "$*" >> "{tc / LOG}"\n'
        'exec "$(dirname "$0")/lean.real" "$@"\n'
    )
    lean.chmod(0o755)
    # the double's leanc links an executable that runs `<bin>/lean --double-native-judge`
    return tc


def invocations(tc: Path) -> list[tuple[str, list[str]]]:
    lines = (tc / LOG).read_text().splitlines()
    return [(threads, argv.split()) for threads, argv in (line.split("\t", 1) for line in lines)]


def _shell_options(argv: list[str]) -> list[str]:
    """The shell's own options: everything before `--run` or the file to compile."""
    for i, arg in enumerate(argv):
        if arg == "--run" or arg.endswith(".lean"):
            return argv[:i]
    return argv


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("native", [True, False])
async def test_every_lean_command_carries_the_thread_flag(tmp_path: Path, threads: int, native: bool) -> None:
    toolchain_mod.clear_probe_cache()
    tc = recording_toolchain(tmp_path / "tc")
    res = await run_double(
        submission(), tmp_path, toolchain_dir=tc, sandbox="off", threads=threads, native_judge=native
    )
    assert res.accepted, res.reason
    seen = invocations(tc)
    lean_runs = [argv for _, argv in seen if argv[:1] not in (["--version"], ["--double-native-judge"])]
    files = [next(a for a in argv if a.endswith(".lean")) for argv in lean_runs]
    trusted = ["LeanCheckedNetwork/Network.lean", "LeanCheckedNetwork/Weights.lean"]
    if native:  # the judge to C once, the two trusted modules, the submission
        assert files == ["Judge.lean", *trusted, "LeanCheckedNetwork/Submission.lean"]
    else:  # the two trusted modules, the submission, `lean --run Judge.lean`
        assert files == [*trusted, "LeanCheckedNetwork/Submission.lean", "Judge.lean"]
    for argv in lean_runs:
        opts = _shell_options(argv)
        assert opts[:2] == ["-j", str(threads)], argv
    natives = [t for t, argv in seen if argv[:1] == ["--double-native-judge"]]
    if native:
        assert len(natives) == 2  # the start-up check and the grade's judge
        assert natives == [str(threads)] * 2
    else:
        assert natives == []
        assert any("--run" in argv for argv in lean_runs)


async def test_lean_version_runs_once_per_process_not_per_grade(tmp_path: Path) -> None:
    toolchain_mod.clear_probe_cache()
    tc = recording_toolchain(tmp_path / "tc")
    for _ in range(3):
        res = await run_double(submission(), tmp_path, toolchain_dir=tc, sandbox="off")
        assert res.accepted, res.reason
    versions = [argv for _, argv in invocations(tc) if argv == ["--version"]]
    assert len(versions) == 1


@pytest.mark.parametrize("native", [True, False])
async def test_the_judges_own_memory_is_not_counted_against_the_submission(
    tmp_path: Path, native: bool
) -> None:
    """`memory_mb` bounds what the submission adds: the judge gets its own fixed cost on top
    (JUDGE_MEMORY_MB; estimates until a Lean run measures them), so even the smallest cap
    (64 MiB) cannot turn an honest proof into "memory cap exceeded" at the judge."""
    from lean_mod_add_proof.grading.routes.replay import JUDGE_MEMORY_MB

    mode = "native" if native else "interpreted"
    fits = JUDGE_MEMORY_MB[mode] // 2
    res = await run_double(submission(f"judge alloc {fits}"), tmp_path, memory_mb=64, native_judge=native)
    assert res.accepted and res.judge_mode == mode, res.reason
    res = await run_double(
        submission(f"judge alloc {JUDGE_MEMORY_MB[mode] + 200}"), tmp_path, memory_mb=64, native_judge=native
    )
    assert res.judged and res.failed_stage == "leanchecker" and "memory cap exceeded" in res.reason, (
        res.reason
    )
