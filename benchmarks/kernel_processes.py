"""What `kernels = all` costs per cached grade, against the toolchain double (tests/
toolchain_double: shell scripts, not Lean): the commands each mode runs (the figure that carries
over to a real toolchain, where each bundled checker evaluates the network again), the double's
wall time per mode (for the shape only), and the per-grade cost of the toolchain manifest check
(toolchain_manifest.py): the stat walk on a host, plus the re-hash of bin/ in the runtime box.

    .venv/bin/python benchmarks/kernel_processes.py [--rounds N] [--toolchain DIR]

`--toolchain` times the manifest check on a real toolchain directory (bin/ and lib/lean) too.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers import DOUBLE_DIR, double_config, grade_task, submission  # noqa: E402

from lean_mod_add_proof.grading import toolchain_manifest  # noqa: E402
from lean_mod_add_proof.grading.grader import grade  # noqa: E402


def manifest_costs(directory: Path, rounds: int) -> tuple[int, float, float, float]:
    """(files, record s, stat-compare ms median, stat+rehash-bin ms median)."""
    t = time.perf_counter()
    m = toolchain_manifest.record(directory, "bench")
    recorded = time.perf_counter() - t
    stat_ms, rehash_ms = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        assert not toolchain_manifest.changed_files(m, directory)
        stat_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        assert not toolchain_manifest.changed_files(m, directory, rehash=("bin",))
        rehash_ms.append((time.perf_counter() - t) * 1000)
    return len(m.files), recorded, statistics.median(stat_ms), statistics.median(rehash_ms)


async def per_mode(rounds: int) -> dict[str, tuple[int, float]]:
    """kernels mode -> (commands per cached grade, median seconds per cached grade)."""
    out: dict[str, tuple[int, float]] = {}
    with tempfile.TemporaryDirectory(prefix="lmap-bench-kernels-") as tmp:
        for mode in ("official", "all"):
            config = double_config(Path(tmp) / mode, kernels=mode)
            await grade(submission(), grade_task(), config)  # self-test and cache entry
            seconds, commands = [], 0
            for _ in range(rounds):
                t = time.perf_counter()
                res = await grade(submission(), grade_task(), config)
                seconds.append(time.perf_counter() - t)
                assert res.accepted, res.reason
                commands = len(res.commands)
            out[mode] = (commands, statistics.median(seconds))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--toolchain", type=Path, default=None)
    args = parser.parse_args()
    console = Console()
    modes = asyncio.run(per_mode(args.rounds))
    table = Table(title="processes per cached grade (toolchain double)")
    for col in ("kernels", "commands", "median s (double)", "ratio to official"):
        table.add_column(col)
    base = modes["official"][1]
    for mode, (commands, seconds) in modes.items():
        table.add_row(mode, str(commands), f"{seconds:.3f}", f"{seconds / base:.2f}")
    console.print(table)
    dirs = [("double", DOUBLE_DIR)] + ([("toolchain", args.toolchain)] if args.toolchain else [])
    table = Table(title="toolchain manifest check per grade")
    for col in ("dir", "files", "record s (once)", "stat ms (host)", "stat+rehash bin ms (runtime)"):
        table.add_column(col)
    for label, directory in dirs:
        files, rec, stat_ms, rehash_ms = manifest_costs(directory, args.rounds)
        table.add_row(label, str(files), f"{rec:.3f}", f"{stat_ms:.2f}", f"{rehash_ms:.2f}")
    console.print(table)


if __name__ == "__main__":
    main()
