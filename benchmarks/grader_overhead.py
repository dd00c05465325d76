"""The grader's own overhead per grade, and its throughput, measured against the toolchain double
(tests/toolchain_double: shell scripts, not Lean). Lean's own run time is not measured here; the
point is what the orchestration adds on top of whatever the toolchain takes.

    .venv/bin/python benchmarks/grader_overhead.py [--grades N] [--throughput-grades N]
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

from conftest import DOUBLE_DIR, double_config, make_task, submission, weights_text  # noqa: E402

from lean_mod_add_proof.grading import package as pkgmod  # noqa: E402
from lean_mod_add_proof.grading.pipeline import grade  # noqa: E402
from lean_mod_add_proof.grading.result import GradeResult  # noqa: E402
from lean_mod_add_proof.grading.sandbox import probe_sandbox  # noqa: E402


def bare_command_seconds(pkg: Path, repeats: int) -> float:
    """The double's own time for the three commands of a grade, run directly (no prlimit, no
    bwrap, no asyncio), median of `repeats`."""
    (pkg / "Check.lean").write_text(pkgmod.check_lean_text(5))
    env = {"PATH": f"{DOUBLE_DIR / 'bin'}:/usr/bin:/bin", "HOME": str(pkg), "LEAN_NUM_THREADS": "1"}
    argvs = [
        ["lake", "build", "LeanCheckedNetwork.Submission"],
        ["lake", "env", "leanchecker", "LeanCheckedNetwork.Submission"],
        ["lake", "env", "lean", "--json", "Check.lean"],
    ]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for argv in argvs:
            subprocess.run(argv, cwd=pkg, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                           check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def breakdown(results: list[GradeResult]) -> dict[str, float]:
    def med(values: list[float]) -> float:
        return statistics.median(values)

    cmd = [sum(c.seconds for c in r.commands if c.stage != "build" or c.argv[-1].endswith("Submission"))
           for r in results]
    build_cmd = [next(c.seconds for c in r.commands if c.argv[-1].endswith("Submission")) for r in results]
    return {
        "guard": med([r.stage_seconds.get("guard", 0.0) for r in results]),
        "toolchain": med([r.stage_seconds.get("toolchain", 0.0) for r in results]),
        "setup": med([r.stage_seconds["build"] - b for r, b in zip(results, build_cmd, strict=True)]),
        "commands": med(cmd),
        "total": med([r.grader_seconds for r in results]),
    }


async def sequential(tmp: Path, n: int, sandbox: str) -> list[GradeResult]:
    config = double_config(tmp, sandbox=sandbox, max_concurrent=1)
    task, weights = make_task(), weights_text()
    first = await grade(submission(), task, weights, config)  # fills the cache
    assert first.accepted, first.reason
    out = []
    for _ in range(n):
        res = await grade(submission(), task, weights, config)
        assert res.accepted and res.cache == "hit", res.reason
        out.append(res)
    return out


async def throughput(tmp: Path, n: int, concurrency: int, sandbox: str) -> float:
    config = double_config(tmp, sandbox=sandbox, max_concurrent=concurrency)
    task, weights = make_task(), weights_text()
    await grade(submission(), task, weights, config)
    start = time.perf_counter()
    results = await asyncio.gather(*(grade(submission(), task, weights, config) for _ in range(n)))
    elapsed = time.perf_counter() - start
    assert all(r.accepted for r in results)
    return n / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--grades", type=int, default=20, help="sequential grades per sandbox mode")
    parser.add_argument("--throughput-grades", type=int, default=24, help="grades per concurrency level")
    args = parser.parse_args()
    console = Console()
    modes = ["off"] + (["on"] if probe_sandbox().available else [])
    console.print(f"[dim]machine: {os.cpu_count()} cores; sandbox modes measured: {', '.join(modes)}; "
                  "toolchain: the test double (not Lean)[/]")

    with tempfile.TemporaryDirectory(prefix="lmap-bench-") as tmpdir:
        tmp = Path(tmpdir)
        warm = tmp / "warm"
        warm_cfg = double_config(warm, keep_packages=True)
        kept = asyncio.run(grade(submission(), make_task(), weights_text(), warm_cfg))
        assert kept.package_dir is not None
        bare = bare_command_seconds(Path(kept.package_dir), args.grades)

        table = Table(title=f"Grader overhead per grade (median of {args.grades}, cache hit)")
        table.add_column("component")
        for mode in modes:
            table.add_column(f"sandbox={mode} [ms]", justify="right")
        rows: dict[str, list[str]] = {}
        figures = {}
        for mode in modes:
            b = breakdown(asyncio.run(sequential(tmp / f"seq-{mode}", args.grades, mode)))
            figures[mode] = b
        labels = [
            ("guard", "guard (text scan)"),
            ("toolchain", "toolchain + sandbox lookup (cached)"),
            ("setup", "package set-up: cache verify + copy + Submission"),
            ("commands", "3 commands as run by the grader"),
            ("bare", "same 3 commands run bare (the double's own time)"),
            ("process", "process handling (commands minus bare)"),
            ("total", "total grade wall time"),
            ("overhead", "grader overhead (total minus bare)"),
            ("ratio", "total / bare"),
        ]
        for key, label in labels:
            rows[label] = []
            for mode in modes:
                f = figures[mode]
                value = {
                    "bare": bare, "process": f["commands"] - bare, "overhead": f["total"] - bare,
                }.get(key, f.get(key))
                if key == "ratio":
                    rows[label].append(f"{f['total'] / bare:.2f}×")
                else:
                    assert value is not None
                    rows[label].append(f"{value * 1000:.1f}")
        for label, cells in rows.items():
            table.add_row(label, *cells)
        console.print(table)

        tput = Table(title=f"Throughput ({args.throughput_grades} grades per level, cache hit)")
        tput.add_column("max_concurrent", justify="right")
        for mode in modes:
            tput.add_column(f"sandbox={mode} [grades/s]", justify="right")
            tput.add_column("vs c=1", justify="right")
        base: dict[str, float] = {}
        for c in (1, 2, 4, 8):
            cells = []
            for mode in modes:
                rate = asyncio.run(throughput(tmp / f"tp-{mode}-{c}", args.throughput_grades, c, mode))
                base.setdefault(mode, rate)
                cells += [f"{rate:.1f}", f"{rate / base[mode]:.2f}×"]
            tput.add_row(str(c), *cells)
        console.print(tput)
    return 0


if __name__ == "__main__":
    sys.exit(main())
