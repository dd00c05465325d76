"""Sub-commands `guard FILE` and `grade TASK_ID FILE`: the text guard and the full pipeline."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from lean_mod_add_proof.cli import output
from lean_mod_add_proof.cli.exits import EXIT_OK, EXIT_PROBLEM, EXIT_USAGE, print_error
from lean_mod_add_proof.cli.settings import add_grader_flags, config_from_args
from lean_mod_add_proof.cli.tasks import TASK_ID_HELP
from lean_mod_add_proof.dataset.tasks import DEFAULT_TASKS_DIR
from lean_mod_add_proof.grading.result import verdict_exit_code
from lean_mod_add_proof.grading.toolchain import DOUBLE_BANNER

#: Every could-not-judge reason starts with this (the grader's own wording).
NOT_JUDGED_PREFIX = "could not judge: "
#: What a grade by the toolchain double is, said before its verdict.
DOUBLE_EXPLAINED = (
    "This grade ran on the toolchain double (tests/toolchain_double): scripts that act out what the "
    "test scripted and check no proof. The verdict below says nothing about Lean; the taskset scores "
    "no such grade. Install Lean with `lean-mod-add-proof install-lean`."
)


#: The FILE argument that means standard input (`grade TASK -`, `guard -`).
STDIN = Path("-")


def _read_utf8(path: Path) -> str:
    """The file (`-`: standard input) as text; raises ValueError with a one-line message for I/O
    and encoding errors."""
    try:
        data = sys.stdin.buffer.read() if path == STDIN else path.read_bytes()
        return data.decode("utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        name = "standard input" if path == STDIN else str(path)
        raise ValueError(f"{name} is not UTF-8 (byte {exc.start})") from None


# ---- guard -------------------------------------------------------------------------------------


def cmd_guard(args: argparse.Namespace) -> int:
    from lean_mod_add_proof.grading.guard import check_guard

    try:
        text = _read_utf8(args.file)
    except ValueError as exc:
        if args.json:  # --json always prints a result, errors included (as `grade --json` does)
            print(json.dumps({"error": str(exc), "exit_code": EXIT_USAGE}))
        print_error(f"guard: {exc}")
        return EXIT_USAGE
    verdict = check_guard(text)
    if args.json:
        print(
            json.dumps(
                {
                    "passed": verdict.passed,
                    "reason": verdict.reason,
                    "word": verdict.word,
                    "line": verdict.line,
                }
            )
        )
    elif verdict.passed:
        print(f"guard: {args.file}: passed")
    else:
        where = f" (line {verdict.line})" if verdict.line is not None else ""
        print(f"guard: {args.file}{where}: {verdict.reason}", file=sys.stderr)
    return EXIT_OK if verdict.passed else EXIT_PROBLEM


# ---- grade -------------------------------------------------------------------------------------


_STAGE_TEXT = {
    "guard": "text guard",
    "toolchain": "locating the Lean toolchain",
    "build": "lean LeanCheckedNetwork/Submission.lean (kernel checks left to the judge)",
    "leanchecker": "trusted judge: import check and kernel replay of the submission's olean",
    "statement": "trusted judge: kernel-checked `theorem check : Spec := <theorem>`",
    "axioms": "trusted judge: axiom walk (allow-list)",
}


def grade_task_for(task_id: str, tasks_dir: Path, weights_sha256: str | None = None) -> Any:
    """The GradeTask of a packaged or generated task; TaskSetError/ValueError with a clear message.
    With `weights_sha256`, the task's Weights.lean must have exactly that hash (a grader in a
    runtime box must grade the very task the rollout was given)."""
    from lean_mod_add_proof.dataset.tasks import NETWORK_LEAN_PATH, find_task, sha256_text, weights_path
    from lean_mod_add_proof.grading.pipeline import GradeTask

    task = find_task(task_id, tasks_dir)
    weights = _read_utf8(weights_path(tasks_dir, task.id))
    if weights_sha256 is not None and sha256_text(weights) != weights_sha256:
        raise ValueError(
            f"task {task.id} here has other weights than expected (sha256 {weights_sha256[:12]}…)"
        )
    return GradeTask(
        task_id=task.id, p=task.p, network_lean=_read_utf8(NETWORK_LEAN_PATH), weights_lean=weights
    )


def command_note(record: Any) -> str:
    """What a command line alone does not say (pure): the compiled judge's start-up check, run
    once per process with no arguments, where refusing them (exit 1) is the right answer
    (grading/native_judge.py) and no verdict."""
    from lean_mod_add_proof.grading.native_judge import EXECUTABLE

    if len(record.argv) == 1 and Path(record.argv[0]).name == EXECUTABLE:
        return " (the compiled judge's start-up check: without arguments it must refuse, exit 1)"
    return ""


def result_json(result: Any) -> dict[str, Any]:
    """What `grade --json` prints: the whole GradeResult, except that `reward` is null when no
    verdict was reached, so that a script reading `reward` cannot count a grade that could not
    be judged as a wrong proof (the model's own `reward` stays 0.0 there; pure)."""
    data = result.model_dump(mode="json")
    if not result.judged:
        data["reward"] = None
    return data


def verdict_line(result: Any) -> str:
    """The one line `grade` ends with, saying each thing once: no "COULD NOT JUDGE ...: could not
    judge: ..." and no "REJECTED at guard ...: guard: ..."; a verdict of the toolchain double
    says so first, in the headline itself (pure)."""
    reason = result.reason
    if result.accepted:
        line = f"ACCEPTED (reward 1.0): {reason}"
    elif not result.judged:
        line = f"COULD NOT JUDGE (no verdict; not a rejection): {reason.removeprefix(NOT_JUDGED_PREFIX)}"
    else:
        stage = result.failed_stage
        line = f"REJECTED at {stage} (reward 0.0): {reason.removeprefix(f'{stage}: ')}"
    if getattr(result, "toolchain_double", False) and not line.startswith(DOUBLE_BANNER):
        return f"{DOUBLE_BANNER}. {line}"
    return line


def _usage_error(args: argparse.Namespace, message: str, hint: str = "") -> int:
    if args.json:  # --json always prints a result, errors included
        print(json.dumps({"error": message, "exit_code": EXIT_USAGE}))
    print_error(f"grade: {message}")
    if hint:
        print(hint, file=sys.stderr)
    return EXIT_USAGE


def cmd_grade(args: argparse.Namespace) -> int:
    from rich.markup import escape

    from lean_mod_add_proof.dataset.tasks import TaskSetError
    from lean_mod_add_proof.grading.grader import grade, grade_reply

    try:
        grade_task = grade_task_for(args.task_id, args.tasks_dir, args.weights_sha256)
        text = _read_utf8(args.file)
    except (TaskSetError, ValueError) as exc:
        hint = "List the task ids with `lean-mod-add-proof tasks`." if "unknown task id" in str(exc) else ""
        return _usage_error(args, str(exc), hint)
    try:
        config = config_from_args(args)
    except ValueError as exc:
        return _usage_error(args, f"bad setting: {exc}")

    console = output.console(stderr=args.json)  # with --json, stdout carries only the JSON

    def on_stage(stage: str) -> None:
        console.print(f"[cyan]→ {stage}[/]: {_STAGE_TEXT.get(stage, stage)}", highlight=False)

    run = grade_reply if args.reply else grade
    result = asyncio.run(run(text, grade_task, config, on_stage=on_stage))
    if args.json:
        print(json.dumps(result_json(result), indent=2))
        return verdict_exit_code(result)
    for rec in result.commands:
        code = "killed" if rec.exit_code is None else f"exit {rec.exit_code}"
        if rec.signal is not None:
            code = f"signal {rec.signal}"
        line = f"{' '.join(rec.argv)}: {code}, {rec.seconds:.2f} s{command_note(rec)}"
        console.print(f"  [dim]{escape(line)}[/]", highlight=False)  # a `[` in a path is no markup
    if not result.accepted and result.commands and result.commands[-1].output_tail.strip():
        console.print("[dim]--- output tail of the last command ---[/]")
        console.print(result.commands[-1].output_tail[-2000:], markup=False, highlight=False)
    colour = "green" if result.accepted else ("red" if result.judged else "yellow")
    if result.toolchain_double:
        colour = "yellow"
        console.print(f"[bold yellow]{DOUBLE_BANNER}.[/] {DOUBLE_EXPLAINED}", highlight=False)
    verdict, _, reason = verdict_line(result).partition(": ")
    console.print(f"[bold {colour}]{verdict}[/]: ", end="", highlight=False)
    console.print(reason, markup=False, highlight=False)
    console.print(
        f"[dim]grader time {result.grader_seconds:.2f} s, sandboxed={result.sandboxed}, "
        f"cache={result.cache}, peak memory {result.peak_memory_mb} MiB[/]",
        highlight=False,
    )
    if result.package_dir:
        console.print(f"package kept at {result.package_dir}", highlight=False)
    return verdict_exit_code(result)


def register(commands: argparse._SubParsersAction) -> None:
    """Add this module's sub-commands."""
    p = commands.add_parser(
        "guard",
        help="run the text guard on a Submission.lean file",
        description="Exit 0: passed; 1: rejected; 2: the file cannot be read.",
    )
    p.add_argument("file", type=Path, help="the Submission.lean to check (`-`: read it from standard input)")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON on stdout")
    p.set_defaults(handler=cmd_guard)

    p = commands.add_parser(
        "grade",
        help="grade a Submission.lean (or a whole model reply) for one task with the real pipeline",
        description="Exit 0: accepted; 1: rejected; 2: usage error; 3: could not judge (no verdict).",
    )
    p.add_argument("task_id", help=TASK_ID_HELP)
    p.add_argument(
        "file",
        type=Path,
        help="the Submission.lean, or with --reply a whole model reply (`-`: read it from standard input)",
    )
    p.add_argument("--reply", action="store_true", help="FILE is a model reply: take its ```lean block")
    p.add_argument(
        "--tasks-dir",
        type=Path,
        default=DEFAULT_TASKS_DIR,
        help="the task set to read (default: the packaged one)",
    )
    p.add_argument(
        "--weights-sha256", default=None, help="refuse unless the task's Weights.lean has this hash"
    )
    p.add_argument("--json", action="store_true", help="print the full GradeResult as JSON on stdout")
    add_grader_flags(p, in_runtime_box=True)
    p.set_defaults(handler=cmd_grade)
