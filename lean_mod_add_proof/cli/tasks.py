"""Sub-commands: `tasks` (list a task set), `prompt TASK_ID`, `reference TASK_ID`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lean_mod_add_proof.dataset.tasks import DEFAULT_TASKS_DIR, TaskRecord, TaskSetError, load_tasks

#: The split `vf-eval lean-mod-add-proof` loads when none is given (`LeanTasksetConfig.split`'s
#: default, spelt out here so the CLI does not import verifiers; a test keeps the two equal).
DEFAULT_SPLIT = "train"


def _tasks_dir_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tasks-dir",
        type=Path,
        default=DEFAULT_TASKS_DIR,
        help="a generated task set (tasks.jsonl + <id>/Weights.lean); default: the packaged one",
    )


def select(records: list[TaskRecord], split: str, max_p: int | None) -> list[TaskRecord]:
    """The same filter the taskset applies (`--env.taskset.split`, `--env.taskset.max-p`)."""
    return [r for r in records if (split == "all" or r.split == split) and (max_p is None or r.p <= max_p)]


def _find(task_id: str, tasks_dir: Path) -> TaskRecord:
    for record in load_tasks(tasks_dir):
        if record.id == task_id:
            return record
    raise TaskSetError(f"unknown task id {task_id!r} in {tasks_dir} (see `lean-mod-add-proof tasks`)")


def cmd_tasks(args: argparse.Namespace) -> int:
    records = select(load_tasks(args.tasks_dir), args.split, args.max_p)
    if args.sort == "kernel-mul-adds":
        records = sorted(records, key=lambda r: (r.kernel_mul_adds, r.id))
    if args.json:
        print(json.dumps([r.to_json() for r in records], indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"{len(records)} task(s) in {args.tasks_dir} (split={args.split}, max_p={args.max_p})",
        caption=None
        if args.split == "all"
        else f"showing the {args.split} split; `--split all` lists every task",
    )
    for column in ("id", "p", "H", "seed", "split", "train fraction", "margin", "kernel mul-adds"):
        table.add_column(column, justify="left" if column in ("id", "split") else "right")
    for r in records:
        table.add_row(
            r.id,
            str(r.p),
            str(r.hidden),
            str(r.seed),
            r.split,
            f"{r.train_fraction:g}",
            f"{r.min_margin:,}",
            f"{r.kernel_mul_adds:,}",
        )
    Console().print(table)
    return 0


def cmd_prompt(args: argparse.Namespace) -> int:
    from lean_mod_add_proof.grading.result import GraderConfig
    from lean_mod_add_proof.prompt import SYSTEM_PROMPT, task_prompt

    defaults = GraderConfig()
    record = _find(args.task_id, args.tasks_dir)
    timeout_s = args.timeout_s if args.timeout_s is not None else defaults.timeout_s
    prompt = task_prompt(
        record,
        args.tasks_dir,
        timeout_s=timeout_s,
        axioms_mode=args.axioms_mode,
        memory_mb=defaults.memory_mb,
    )
    if args.system:
        print(f"[system]\n{SYSTEM_PROMPT}\n\n[user]")
    sys.stdout.write(prompt)
    return 0


def cmd_reference(args: argparse.Namespace) -> int:
    from lean_mod_add_proof.constants import reference_submission

    record = _find(args.task_id, args.tasks_dir)
    sys.stdout.write(reference_submission(record.p))
    return 0


def _guarded(handler):
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except TaskSetError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2

    return run


def register(commands: argparse._SubParsersAction) -> None:
    """Add this module's sub-commands."""
    p = commands.add_parser("tasks", help="list the tasks of a task set")
    p.add_argument(
        "--split",
        choices=("train", "eval", "all"),
        default=DEFAULT_SPLIT,
        help=f"which split (default: {DEFAULT_SPLIT}, as in vf-eval; `all` lists every task)",
    )
    p.add_argument("--max-p", type=int, default=None, help="only tasks with p <= N")
    _tasks_dir_arg(p)
    p.add_argument("--json", action="store_true", help="print the rows of tasks.jsonl as a JSON list")
    p.add_argument(
        "--sort",
        choices=("id", "kernel-mul-adds"),
        default="id",
        help="row order: by task id, or by the kernel's work (Int multiply-adds of the brute force)",
    )
    p.set_defaults(handler=_guarded(cmd_tasks))

    p = commands.add_parser("prompt", help="print the user prompt of one task, as the model sees it")
    p.add_argument("task_id")
    _tasks_dir_arg(p)
    p.add_argument("--timeout-s", type=float, default=None, help="time limit stated in the rules")
    p.add_argument("--axioms-mode", choices=("subset", "exact"), default="subset")
    p.add_argument("--system", action="store_true", help="also print the system prompt")
    p.set_defaults(handler=_guarded(cmd_prompt))

    p = commands.add_parser("reference", help="print the reference proof (the whole Submission.lean)")
    p.add_argument("task_id")
    _tasks_dir_arg(p)
    p.set_defaults(handler=_guarded(cmd_reference))
