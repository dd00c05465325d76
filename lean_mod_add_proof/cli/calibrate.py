"""Sub-command `calibrate`: grade the reference proof of each task on the real toolchain and
record what it cost (seconds per stage, the judge's kernel replay time, peak resident memory), so
that `timeout_s` and `memory_mb` can be set from measurements instead of guesses."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from lean_mod_add_proof.cli.exits import EXIT_NOT_JUDGED, EXIT_OK, EXIT_PROBLEM
from lean_mod_add_proof.cli.settings import add_grader_flags
from lean_mod_add_proof.cli.taskrun import add_task_flags, start
from lean_mod_add_proof.dataset.tasks import TaskRecord


def timing_row(record: TaskRecord, result: Any) -> dict[str, Any]:
    """One task's measurements from its GradeResult (pure)."""
    judge = [c.seconds for c in result.commands if c.stage == "leanchecker"]
    return {
        "task": record.id,
        "p": record.p,
        "hidden": record.hidden,
        "kernel_mul_adds": record.kernel_mul_adds,
        "accepted": result.accepted,
        "judged": result.judged,
        "reason": result.reason,
        "stage_seconds": result.stage_seconds,
        "kernel_replay_seconds": judge[-1] if judge else None,
        "peak_memory_mb": result.peak_memory_mb,
        "grader_seconds": result.grader_seconds,
        "cache": result.cache,
    }


async def _calibrate(records: list[TaskRecord], tasks_dir: Path, config: Any, progress: Any) -> list[dict]:
    from lean_mod_add_proof.cli.grading import grade_task_for
    from lean_mod_add_proof.constants import reference_submission
    from lean_mod_add_proof.grading.grader import grade

    rows = []
    job = progress.add_task("calibrating", total=len(records))
    for record in records:
        progress.update(job, description=f"{record.id} (p={record.p}, H={record.hidden})")
        result = await grade(reference_submission(record.p), grade_task_for(record.id, tasks_dir), config)
        rows.append(timing_row(record, result))
        progress.advance(job)
        if not result.judged:
            break  # nothing will be judged on this machine: say so now
    return rows


def cmd_calibrate(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    console = Console()
    started = start(args, console, "calibrate", "nothing measured")
    if isinstance(started, int):
        return started
    config, records, found = started
    records = sorted(records, key=lambda r: (r.kernel_mul_adds, r.id))  # smallest kernel work first
    with Progress(console=console, transient=True) as progress:
        rows = asyncio.run(_calibrate(records, args.tasks_dir, config, progress))
    table = Table(title=f"reference proofs on {found.version}")
    for column in ("task", "mul-adds", "verdict", "build s", "replay s", "total s", "peak MiB"):
        table.add_column(column, justify="right" if column not in ("task", "verdict") else "left")
    for row in rows:
        verdict = "accepted" if row["accepted"] else ("REJECTED" if row["judged"] else "NOT JUDGED")
        replay = row["kernel_replay_seconds"]
        table.add_row(
            row["task"],
            f"{row['kernel_mul_adds']:,}",
            verdict,
            f"{row['stage_seconds'].get('build', 0):.1f}",
            "-" if replay is None else f"{replay:.1f}",
            f"{row['grader_seconds']:.1f}",
            str(row["peak_memory_mb"]),
        )
    console.print(table)
    payload = {"toolchain": found.version, "settings": config.model_dump(mode="json"), "tasks": rows}
    if args.out is not None:
        args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        console.print(f"wrote {args.out}", highlight=False)
    if any(not r["judged"] for r in rows):
        console.print(rows[-1]["reason"], style="yellow", markup=False, highlight=False)
        return EXIT_NOT_JUDGED
    if all(r["accepted"] for r in rows):
        worst = max(rows, key=lambda r: r["grader_seconds"])
        console.print(
            f"Largest: {worst['task']} took {worst['grader_seconds']:.1f} s and "
            f"{worst['peak_memory_mb']} MiB. Set timeout_s and memory_mb with headroom above the "
            "largest task you grade (docs/operations.md, Calibration).",
            highlight=False,
        )
        return EXIT_OK
    return EXIT_PROBLEM


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "calibrate",
        help="grade each task's reference proof on the real toolchain and record time and memory",
        description="Exit 0: every reference proof accepted; 1: some rejected; 3: could not judge "
        "(for example no toolchain); 2: usage error.",
    )
    add_task_flags(p, "which tasks (default: all)")
    p.add_argument("--out", type=Path, default=None, help="write the measurements as JSON here")
    add_grader_flags(p)
    p.set_defaults(handler=cmd_calibrate)
