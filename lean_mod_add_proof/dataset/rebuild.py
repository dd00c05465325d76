"""Rebuild the committed task set from scratch, or check that it rebuilds byte for byte.

`python -m lean_mod_add_proof.dataset.rebuild OUT_DIR` trains the whole grid (the seed's grid and
the hard split) into a temporary directory and generates OUT_DIR from it. `--check OUT_DIR`
generates into a scratch directory instead and compares the generated files (tasks.jsonl and
every task folder) with OUT_DIR; it exits 1 and lists the differing files if anything differs,
so a committed set that no longer matches its recipe is caught.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from lean_mod_add_proof.dataset.generator import TASK_DIR_RE, NpzError, generate
from lean_mod_add_proof.dataset.trainer import grid, hard_grid, summary_table, train_grid


def generated_files(tasks_dir: Path) -> dict[str, bytes]:
    """The generated part of a task set: tasks.jsonl and every file in a task folder."""
    files: dict[str, bytes] = {}
    if not tasks_dir.is_dir():
        return files
    index = tasks_dir / "tasks.jsonl"
    if index.is_file():
        files["tasks.jsonl"] = index.read_bytes()
    for child in sorted(tasks_dir.iterdir()):
        if child.is_dir() and TASK_DIR_RE.match(child.name):
            for f in sorted(child.rglob("*")):
                if f.is_file():
                    files[f.relative_to(tasks_dir).as_posix()] = f.read_bytes()
    return files


def diff_sets(expected: dict[str, bytes], actual: dict[str, bytes]) -> list[str]:
    """Relative paths that are missing, extra or different in `actual`, with a short reason."""
    out = []
    for name in sorted(set(expected) | set(actual)):
        if name not in actual:
            out.append(f"{name}: missing from the committed set")
        elif name not in expected:
            out.append(f"{name}: not produced by the rebuild")
        elif expected[name] != actual[name]:
            out.append(f"{name}: contents differ")
    return out


def build(out_dir: Path, workers: int) -> int:
    from rich.console import Console

    console = Console()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lean-mod-add-runs-") as runs_dir:
        results = train_grid(grid() + hard_grid(), Path(runs_dir), workers=workers)
        console.print(summary_table(results))
        paths = sorted(Path(runs_dir).glob("*.npz"))
        try:
            report = generate(out_dir, paths)
        except NpzError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    for source, reason in report.skipped:
        console.print(f"skipped {source.name}: {reason}")
    console.print(
        f"wrote {len(report.written)} task(s) to {out_dir} ({len(report.skipped)} skipped) "
        f"in {time.perf_counter() - start:.1f} s"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lean_mod_add_proof.dataset.rebuild",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    parser.add_argument("out_dir", type=Path)
    parser.add_argument(
        "--check", action="store_true", help="rebuild into a scratch directory and compare with OUT_DIR"
    )
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    if not args.check:
        return build(args.out_dir, args.workers)
    with tempfile.TemporaryDirectory(prefix="lean-mod-add-check-") as scratch:
        rc = build(Path(scratch), args.workers)
        if rc:
            return rc
        problems = diff_sets(generated_files(Path(scratch)), generated_files(args.out_dir))
    if problems:
        print(f"{args.out_dir} does not match a fresh rebuild:", file=sys.stderr)
        for line in problems:
            print(f"  {line}", file=sys.stderr)
        return 1
    print(f"{args.out_dir} matches a fresh rebuild byte for byte")
    return 0


if __name__ == "__main__":
    sys.exit(main())
