"""What commands that run over many tasks share (`calibrate`, `warm-cache`): the task-selection
flags, choosing the tasks, and the start-up checks (settings, a match, a toolchain)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lean_mod_add_proof.cli.exits import EXIT_NOT_JUDGED, EXIT_USAGE, print_error
from lean_mod_add_proof.cli.settings import config_from_args, select_tasks
from lean_mod_add_proof.dataset.tasks import (
    DEFAULT_TASKS_DIR,
    SPLIT_CHOICES,
    TaskRecord,
    TaskSetError,
    in_split,
    load_tasks,
)


def add_task_flags(parser: argparse.ArgumentParser, split_help: str) -> None:
    parser.add_argument("--split", choices=SPLIT_CHOICES, default=None, help=split_help)
    parser.add_argument("--max-p", type=int, default=None, help="only tasks with p <= N")
    parser.add_argument(
        "--task", action="append", default=[], metavar="ID", help="only this task (repeatable)"
    )
    parser.add_argument(
        "--tasks-dir",
        type=Path,
        default=DEFAULT_TASKS_DIR,
        help="the task set to read (default: the packaged one)",
    )


def choose(
    records: list[TaskRecord], split: str | None, max_p: int | None, ids: list[str]
) -> list[TaskRecord]:
    """The selected tasks, in task-set order (pure). `--task` ids name tasks of any split (a hard
    one too) unless `--split` is given, and then each must be in it; without ids, `--split`
    (default `all`). ValueError names any unknown id, any id outside the given split, or a
    `--max-p` vf-eval would refuse."""
    if ids:
        by_id = {r.id: r for r in records}
        if unknown := [i for i in ids if i not in by_id]:
            raise ValueError(f"unknown task id(s): {', '.join(unknown)} (see `lean-mod-add-proof tasks`)")
        if split is not None and (outside := [i for i in ids if not in_split(by_id[i].split, split)]):
            raise ValueError(
                f"task(s) {', '.join(outside)} not in --split {split} "
                f"({', '.join(sorted({by_id[i].split for i in outside}))}); drop --split to select by id"
            )
        chosen = [r for r in records if r.id in ids]
        return select_tasks(chosen, "any", max_p)
    return select_tasks(records, split or "all", max_p)


def start(args: argparse.Namespace, console: Any, command: str, nothing: str) -> tuple[Any, list, Any] | int:
    """(config, tasks, toolchain), or the exit code after saying why not: 2 for a bad setting or
    no matching task, 3 when there is no toolchain (`nothing` says what was therefore not done)."""
    from lean_mod_add_proof.grading import toolchain

    try:
        config = config_from_args(args)
        records = choose(load_tasks(args.tasks_dir), args.split, args.max_p, args.task)
    except (ValueError, TaskSetError) as exc:
        print_error(f"{command}: {exc}")
        return EXIT_USAGE
    if not records:
        print_error(f"{command}: no task matches split={args.split or 'all'}, max_p={args.max_p}")
        return EXIT_USAGE
    found = toolchain.locate_toolchain(config.toolchain_dir, lean_toolchain=config.lean_toolchain)
    if not isinstance(found, toolchain.Toolchain):
        console.print(f"[yellow]{command}: no Lean toolchain, {nothing}:[/] {found.reason}", highlight=False)
        console.print(f"Install it: {found.fix}, then run {command} again.")
        return EXIT_NOT_JUDGED
    return config, records, found
