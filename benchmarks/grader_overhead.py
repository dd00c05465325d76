"""The grader's own overhead per grade, measured against the toolchain double (tests/
toolchain_double: shell scripts, not Lean), so what is left is the grader. Lean's own time is not
measured here; the floor for a real grade is the judge's single kernel check.

Paired and interleaved, because this machine is noisy: each round runs the grade's Lean commands
bare (the same argv, cwd and environment, started with subprocess, no limits, no sandbox, no
asyncio) and then one full cached grade, and the overhead of that round is the difference. The
figures are medians over the rounds.

    .venv/bin/python benchmarks/grader_overhead.py [--rounds N] [--throughput-grades N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers import DOUBLE_DIR, double_config, grade_task, submission  # noqa: E402

from lean_mod_add_proof.grading import native_judge  # noqa: E402
from lean_mod_add_proof.grading import package as pkgmod  # noqa: E402
from lean_mod_add_proof.grading.grader import grade  # noqa: E402
from lean_mod_add_proof.grading.result import GradeResult  # noqa: E402
from lean_mod_add_proof.grading.sandbox import probe_sandbox  # noqa: E402


def bare_commands(kept: GradeResult) -> list[tuple[list[str], Path, dict[str, str]]]:
    """The cached grade's Lean commands (the submission build and the judge) as the grader ran
    them, minus its wrappers: argv, working directory and environment."""
    grade_dir = Path(kept.package_dir or "")
    base = {"PATH": f"{DOUBLE_DIR / 'bin'}:/usr/bin:/bin", "LEAN_NUM_THREADS": "1", "TMPDIR": str(grade_dir)}
    build, judge = kept.commands[-2], kept.commands[-1]
    pkg, verdict = grade_dir / "package", grade_dir / "verdict"
    return [
        (build.argv, pkg, {**base, "LEAN_PATH": pkgmod.lean_path(DOUBLE_DIR, pkg / pkgmod.LIB_DIR)}),
        (judge.argv, verdict, {**base, "LEAN_PATH": pkgmod.lean_path(DOUBLE_DIR, verdict / "lib")}),
    ]


def run_bare(commands: list[tuple[list[str], Path, dict[str, str]]]) -> float:
    start = time.perf_counter()
    for argv, cwd, env in commands:
        subprocess.run(
            argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, check=True
        )
    return time.perf_counter() - start


async def paired(tmp: Path, rounds: int, sandbox: str) -> dict[str, float]:
    config = double_config(tmp, sandbox=sandbox, max_concurrent=1)
    task = grade_task()
    native_judge.forget()  # cold: as a new process with an empty cache
    first = await grade(submission(), task, config, skip_selftest=True)  # fills the cache
    assert first.accepted and first.judge_mode == "native", first.reason
    kept = await grade(
        submission(), task, config.model_copy(update={"keep_packages": True}), skip_selftest=True
    )
    commands = bare_commands(kept)
    overheads, totals, bares, setups, processes = [], [], [], [], []
    for _ in range(rounds):
        bare = run_bare(commands)
        res = await grade(submission(), task, config, skip_selftest=True)
        assert res.accepted and res.cache == "hit", res.reason
        bares.append(bare)
        totals.append(res.grader_seconds)
        overheads.append(res.grader_seconds - bare)
        setups.append(res.stage_seconds["build"] - res.commands[-2].seconds)
        processes.append(len(res.commands))
    return {
        "bare": statistics.median(bares),
        "total": statistics.median(totals),
        "overhead": statistics.median(overheads),
        "setup": statistics.median(setups),
        "processes": statistics.median(processes),
        "cold": len(first.commands),
        "cold_lean": sum(Path(c.argv[0]).name in ("lean", "leanc") for c in first.commands),
    }


async def throughput(tmp: Path, n: int, concurrency: int, sandbox: str) -> float:
    config = double_config(tmp, sandbox=sandbox, max_concurrent=concurrency)
    await grade(submission(), grade_task(), config, skip_selftest=True)
    start = time.perf_counter()
    results = await asyncio.gather(
        *(grade(submission(), grade_task(), config, skip_selftest=True) for _ in range(n))
    )
    elapsed = time.perf_counter() - start
    assert all(r.accepted for r in results)
    return n / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=30, help="paired rounds per sandbox mode (>= 30)")
    parser.add_argument("--throughput-grades", type=int, default=16, help="grades per concurrency level")
    args = parser.parse_args()
    console = Console()
    modes = ["off"] + (["on"] if probe_sandbox().available else [])
    console.print(
        f"[dim]machine: {os.cpu_count()} cores; sandbox modes: {', '.join(modes)}; "
        "toolchain: the test double (not Lean); cache hit; self-test already passed[/]"
    )
    with tempfile.TemporaryDirectory(prefix="lmap-bench-") as tmpdir:
        tmp = Path(tmpdir)
        figures = {mode: asyncio.run(paired(tmp / f"paired-{mode}", args.rounds, mode)) for mode in modes}
        table = Table(title=f"Per grade, paired with the same commands run bare (median of {args.rounds})")
        table.add_column("")
        for mode in modes:
            table.add_column(f"sandbox={mode}", justify="right")
        rows = [
            ("processes, first grade (judge build+check, prebuild, build, judge)", lambda f: f"{f['cold']}"),
            ("  of which lean/leanc (no grade elaborates Judge.lean)", lambda f: f"{f['cold_lean']}"),
            ("processes per cached grade (build, compiled judge)", lambda f: f"{f['processes']:.0f}"),
            ("the commands run bare (ms)", lambda f: f"{f['bare'] * 1000:.1f}"),
            ("the whole grade (ms)", lambda f: f"{f['total'] * 1000:.1f}"),
            ("grader overhead (grade - bare, paired) (ms)", lambda f: f"{f['overhead'] * 1000:.1f}"),
            ("  of which package set-up (ms)", lambda f: f"{f['setup'] * 1000:.1f}"),
        ]
        for label, cell in rows:
            table.add_row(label, *(cell(figures[m]) for m in modes))
        console.print(table)

        tput = Table(title=f"Throughput ({args.throughput_grades} grades per level, cache hit)")
        tput.add_column("max_concurrent", justify="right")
        for mode in modes:
            tput.add_column(f"sandbox={mode} [grades/s]", justify="right")
        for c in (1, 2, 4):
            rates = [
                asyncio.run(throughput(tmp / f"tp-{m}-{c}", args.throughput_grades, c, m)) for m in modes
            ]
            tput.add_row(str(c), *(f"{r:.1f}" for r in rates))
        console.print(tput)
    return 0


if __name__ == "__main__":
    sys.exit(main())
