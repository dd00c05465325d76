"""Sub-command `warm-cache`: build the grader's prebuilt Network/Weights cache entry of each
selected task now, exactly as the first grade of that task would (same toolchain, sandbox and
limits, through `pipeline.warm_cache`), so that later grades start from a cache hit. Used at
image build time (container/Containerfile) and on a grading host before a run.

Exit 0: every entry built or already there (hit); 1: some entry could not be built; 2: usage
error; 3: no Lean toolchain here (nothing built)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lean_mod_add_proof.cli import output
from lean_mod_add_proof.cli.exits import EXIT_OK, EXIT_PROBLEM
from lean_mod_add_proof.cli.settings import add_grader_flags
from lean_mod_add_proof.cli.taskrun import add_task_flags, start
from lean_mod_add_proof.dataset.tasks import TaskRecord
from lean_mod_add_proof.grading.steps_log import long_step

log = logging.getLogger(__name__)

#: How many hex digits of the cache key the table shows.
KEY_PREFIX = 12


@dataclass(frozen=True)
class WarmRow:
    """One task's outcome: `status` is `built`, `hit` or `failed`."""

    task: str
    key: str
    status: str
    seconds: float
    reason: str = ""


async def warm_one(grade_task: Any, config: Any, toolchain: Any) -> WarmRow:
    """Build or verify one task's cache entry through the pipeline's own prebuild path."""
    from lean_mod_add_proof.grading import cache as cachemod
    from lean_mod_add_proof.grading.grader import warm_cache
    from lean_mod_add_proof.grading.routes.steps import cache_key_for

    key = cache_key_for(grade_task, toolchain, config.lean_toolchain)
    started = time.monotonic()
    result = await warm_cache(grade_task, config)
    seconds = round(time.monotonic() - started, 2)
    if result.failed_stage is not None:
        return WarmRow(grade_task.task_id, key, "failed", seconds, result.reason)
    if result.cache not in ("built", "hit"):
        why = "the cache directory is not writable" if result.cache == "off" else f"cache={result.cache}"
        return WarmRow(grade_task.task_id, key, "failed", seconds, f"no cache entry kept: {why}")
    entry = cachemod.cache_root(config.cache_dir) / key
    if not entry.is_dir():
        return WarmRow(
            grade_task.task_id, key, "failed", seconds, f"reported {result.cache} but {entry} is missing"
        )
    return WarmRow(grade_task.task_id, key, result.cache, seconds)


async def warm(
    records: list[TaskRecord], tasks_dir: Path, config: Any, toolchain: Any, progress: Any = None
) -> list[WarmRow]:
    """Warm each task in turn (one Lean build at a time: each is memory-heavy)."""
    from lean_mod_add_proof.cli.grading import grade_task_for

    rows = []
    job = progress.add_task("warming the grader cache", total=len(records)) if progress else None
    for record in records:
        if progress is not None:
            progress.update(job, description=f"{record.id} (p={record.p}, H={record.hidden})")
        with long_step(log, f"warm-cache {record.id}", f"p={record.p}, H={record.hidden}") as step:
            row = await warm_one(grade_task_for(record.id, tasks_dir), config, toolchain)
            step.outcome, step.detail = row.status, row.reason
        rows.append(row)
        if progress is not None:
            progress.advance(job)
    return rows


def summary(rows: list[WarmRow]) -> str:
    """`<n> built, <n> already there, <n> failed` (pure)."""
    counts = {status: sum(r.status == status for r in rows) for status in ("built", "hit", "failed")}
    return f"{counts['built']} built, {counts['hit']} already there, {counts['failed']} failed"


def cmd_warm_cache(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from lean_mod_add_proof.grading import cache as cachemod

    console = output.console()
    started = start(args, console, "warm-cache", "nothing built")
    if isinstance(started, int):
        return started
    config, records, found = started
    cache_root = cachemod.cache_root(config.cache_dir)
    console.print(
        f"warming {len(records)} task(s) into {cache_root} with {found.label} (sandbox={config.sandbox})",
        highlight=False,
    )
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    # The bar is for a terminal; the log lines (grading/steps_log.py) also reach a pipe (CI, image builds).
    with (
        long_step(log, "warm-cache", f"{len(records)} task(s), sandbox {config.sandbox}") as step,
        Progress(*columns, console=console, transient=True) as progress,
    ):
        rows = asyncio.run(warm(records, args.tasks_dir, config, found, progress))
        step.detail = summary(rows)
    table = Table(title=f"grader cache in {cache_root}")
    for column in ("task", "cache key", "status", "seconds"):
        table.add_column(column, justify="right" if column == "seconds" else "left")
    colour = {"built": "green", "hit": "cyan", "failed": "red"}
    for row in rows:
        table.add_row(
            row.task, row.key[:KEY_PREFIX], f"[{colour[row.status]}]{row.status}[/]", f"{row.seconds:.1f}"
        )
    console.print(table)
    failed = [r for r in rows if r.status == "failed"]
    for row in failed:
        console.print(f"[red]{row.task}:[/] {row.reason}", highlight=False)
    console.print(summary(rows), highlight=False)
    return EXIT_PROBLEM if failed else EXIT_OK


def register(commands: argparse._SubParsersAction) -> None:
    """Add this module's sub-commands."""
    p = commands.add_parser(
        "warm-cache",
        help="prebuild the grader's Network/Weights cache entry of each task (image builds, hosts)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_task_flags(p, "which tasks (default: all, so one image serves training and evaluation)")
    add_grader_flags(p)
    p.set_defaults(handler=cmd_warm_cache)
